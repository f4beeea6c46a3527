// No C++ exception crosses an extern "C" entry point (gdr_status.hpp): gdr::guard turns each kind
// into a ucs_status_t and its what() into the reason line, and topo's entry points run in it --
// checked by making every allocation of a real call fail in turn (tests/common/alloc_failures).
#include "gdr_status.hpp"
#include "gdr_topo.h"
#include "../common/alloc_failures.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace {

using gdr_test::every_allocation_fails_in_turn;

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
    EXPECT_EQ(gdr::guard(&why,
                         []() -> ucs_status_t {
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
              UCS_ERR_IO_ERROR)
        << "a NULL reason is allowed";
}

TEST(Guard, LongReasonsAreCutNotOverrun)
{
    const std::string text(3 * GDR_REASON_MAX, 'r');
    gdr_reason_t why[2];
    std::memset(why, 0x5a, sizeof(why));

    EXPECT_EQ(gdr::guard(&why[0],
                         [&]() -> ucs_status_t { throw gdr::error(UCS_ERR_INVALID_PARAM, text); }),
              UCS_ERR_INVALID_PARAM);
    EXPECT_EQ(std::strlen(why[0].text), size_t(GDR_REASON_MAX - 1));
    EXPECT_EQ(why[1].text[0], 0x5a) << "wrote past the reason";
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

}  // namespace
