// Bad arguments from the caller: registrations of a NULL, an unmapped or a
// half-mapped range and of a length no memory has, and an atomic at an unaligned remote
// address.  Each is an error status (at the call, or through the error handler for the atomic);
// never a crash, and the atomic's target is left alone.
#include "pair_fixture.h"

#include <sys/mman.h>
#include <unistd.h>

namespace uctest {
namespace {

using HostileArgs = PairTest;

TEST_F(HostileArgs, RegistrationOfMemoryThatIsNotThereFails)
{
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    // a mapping of which the second page is released: a range straddling the hole
    void *map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, map);
    ASSERT_EQ(0, munmap(static_cast<uint8_t *>(map) + page, page));
    struct Case {
        const char *what;
        void *address;
        size_t length;
    } cases[] = {
        {"NULL", nullptr, page},
        {"an unmapped page", static_cast<uint8_t *>(map) + page, page},
        {"a range running into an unmapped page", map, 2 * page},
        {"2^50 bytes", map, size_t(1) << 50},
        {"SIZE_MAX bytes", map, SIZE_MAX},
    };
    for (const Case &c : cases) {
        uct_mem_h memh            = nullptr;
        const ucs_status_t status = uct_md_mem_reg(a_->md().md(), c.address, c.length,
                                                   UCT_MD_MEM_ACCESS_ALL, &memh);
        std::printf("[   INFO   ] register %s: %s\n", c.what, status_name(status).c_str());
        EXPECT_TRUE(UCS_STATUS_IS_ERR(status)) << "registered " << c.what;
        if (status == UCS_OK) {
            uct_md_mem_dereg(a_->md().md(), memh);
        }
    }
    munmap(map, page);
}

TEST_F(HostileArgs, UnalignedAtomicFailsAndLeavesMemoryAlone)
{
    if (!(a_->attr().cap.atomic64.op_flags & UCS_BIT(UCT_ATOMIC_OP_ADD))) {
        GTEST_SKIP() << "no 64-bit atomic add";
    }
    if (res_.component_name != "gdr") {
        // UCX 1.13's rc_verbs posts it and aborts the process when rxe refuses the work request
        // ("Fatal: ibv_post_send() returned 22"): nothing to learn from running it there
        GTEST_SKIP() << "an unaligned atomic aborts " << res_.tl_name << " (UCX's own)";
    }
    RegisteredBuffer remote(b_->md(), 64, 4096);
    remote.fill(0x11);
    RemoteKey rkey(a_->md().component(), remote.registration().packed_rkey());
    EpPair victim             = connect_pair(*a_, *b_);
    const ucs_status_t posted = post_with_retry(
        [&] {
            return uct_ep_atomic64_post(victim.ab, UCT_ATOMIC_OP_ADD, 1, remote.address() + 3,
                                        rkey.rkey());
        },
        {a_.get(), b_.get()});
    ASSERT_NE(UCS_ERR_TIMED_OUT, posted);
    if (!UCS_STATUS_IS_ERR(posted)) {
        Completion flush_comp;
        const ucs_status_t fs = start_flush(victim.ab, 0, flush_comp, {a_.get(), b_.get()});
        ASSERT_TRUE(wait([&] { return a_->failed(victim.ab) && flush_comp.done(); },
                         "error report of the unaligned atomic", Seconds(30)));
        EXPECT_TRUE(UCS_STATUS_IS_ERR(flush_comp.status()) || UCS_STATUS_IS_ERR(fs));
    }
    std::printf("[   INFO   ] unaligned atomic64_add: %s\n",
                UCS_STATUS_IS_ERR(posted) ? ("refused at post with " + status_name(posted)).c_str()
                                          : "reported to the error handler");
    for (size_t i = 0; i < 64; ++i)
        ASSERT_EQ(0x11, remote.data()[i]) << "the unaligned atomic changed byte " << i;
    a_->destroy_ep(victim.ab);
    b_->destroy_ep(victim.ba);
}

}  // namespace
}  // namespace uctest
