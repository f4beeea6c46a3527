// No C++ exception crosses an extern "C" entry point (gdr_status.hpp): gdr::guard turns each kind
// into a ucs_status_t and its what() into the reason line, and topo's entry points run in it --
// checked by making every allocation of a real call fail in turn (a replaced operator new).
#include "gdr_status.hpp"
#include "gdr_topo.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace {

// Allocations left before the injected std::bad_alloc; -1: none is injected
thread_local long g_allocs_before_failure = -1;

} // namespace

void *operator new(std::size_t size)
{
    if (g_allocs_before_failure == 0) {
        g_allocs_before_failure = -1;
        throw std::bad_alloc();
    }
    if (g_allocs_before_failure > 0) {
        --g_allocs_before_failure;
    }
    if (void *p = std::malloc(size ? size : 1)) {
        return p;
    }
    throw std::bad_alloc();
}

void operator delete(void *p) noexcept
{
    std::free(p);
}

void operator delete(void *p, std::size_t) noexcept
{
    std::free(p);
}

namespace {

std::string fixture(const std::string &name)
{
    return std::string(GDR_FIXTURES_DIR) + "/" + name;
}

TEST(Guard, EveryExceptionBecomesAStatusAndAReason)
{
    gdr_reason_t why;
    gdr_reason_set(&why, UCS_OK, "left over from an earlier call");

    EXPECT_EQ(gdr::guard(&why, [] { return UCS_OK; }), UCS_OK);
    EXPECT_STREQ(why.text, "") << "cleared first";
    EXPECT_EQ(gdr::guard(&why, []() -> ucs_status_t {
                  throw gdr::error(UCS_ERR_NO_DEVICE, "no device mlx5_7");
              }),
              UCS_ERR_NO_DEVICE);
    EXPECT_STREQ(why.text, "no device mlx5_7");
    EXPECT_EQ(gdr::guard(&why, []() -> ucs_status_t { throw std::bad_alloc(); }),
              UCS_ERR_NO_MEMORY);
    EXPECT_STREQ(why.text, "out of memory");
    EXPECT_EQ(gdr::guard(&why, []() -> ucs_status_t { throw std::out_of_range("index 9"); }),
              UCS_ERR_IO_ERROR);
    EXPECT_STREQ(why.text, "index 9");
    EXPECT_EQ(gdr::guard(&why, []() -> ucs_status_t { throw 42; }), UCS_ERR_IO_ERROR);
    EXPECT_STREQ(why.text, "unknown C++ exception");
    EXPECT_EQ(gdr::guard(nullptr, []() -> ucs_status_t { throw std::runtime_error("x"); }),
              UCS_ERR_IO_ERROR) << "a NULL reason is allowed";
}

TEST(Guard, LongReasonsAreCutNotOverrun)
{
    const std::string text(3 * GDR_REASON_MAX, 'r');
    gdr_reason_t why[2];
    std::memset(why, 0x5a, sizeof(why));

    EXPECT_EQ(gdr::guard(&why[0], [&]() -> ucs_status_t {
                  throw gdr::error(UCS_ERR_INVALID_PARAM, text);
              }),
              UCS_ERR_INVALID_PARAM);
    EXPECT_EQ(std::strlen(why[0].text), size_t(GDR_REASON_MAX - 1));
    EXPECT_EQ(why[1].text[0], 0x5a) << "wrote past the reason";
}

// Every allocation of each call fails in turn: the call returns UCS_ERR_NO_MEMORY with the reason
// (and leaves nothing half-done to crash on), until it has allocated all it needs and succeeds.
template <typename Call> void every_allocation_fails_in_turn(const char *what, Call call)
{
    long failures = 0;
    for (long n = 0;; ++n) {
        gdr_reason_t why;
        g_allocs_before_failure = n;
        ucs_status_t status     = call(&why);
        bool injected           = (g_allocs_before_failure == -1);
        g_allocs_before_failure = -1;
        if (!injected) {
            ASSERT_EQ(status, UCS_OK) << what << " with every allocation succeeding: " << why.text;
            break;
        }
        ASSERT_EQ(status, UCS_ERR_NO_MEMORY) << what << ", allocation " << n << " failed";
        EXPECT_STREQ(why.text, "out of memory") << what << ", allocation " << n;
        ++failures;
    }
    EXPECT_GT(failures, 0) << what << " allocates nothing?";
}

TEST(CApiGuard, SelectGidUnderAllocationFailures)
{
    const std::string root = fixture("two_socket");
    every_allocation_fails_in_turn("gdr_select_gid", [&](gdr_reason_t *why) {
        gdr_gid_selection_t sel;
        return gdr_select_gid(root.c_str(), "mlx5_0", 1, -1, &sel, why);
    });
}

TEST(CApiGuard, ClassifyAndDevicePciUnderAllocationFailures)
{
    const std::string root = fixture("dgx");
    every_allocation_fails_in_turn("gdr_topo_classify", [&](gdr_reason_t *why) {
        gdr_topo_link_t link;
        return gdr_topo_classify(root.c_str(), "0000:09:00.0", "0000:06:00.0", &link, why);
    });
    every_allocation_fails_in_turn("gdr_topo_rdma_device_pci", [&](gdr_reason_t *why) {
        gdr_pci_addr_t addr;
        return gdr_topo_rdma_device_pci(root.c_str(), "mlx5_1", &addr, nullptr, why);
    });
}

} // namespace
