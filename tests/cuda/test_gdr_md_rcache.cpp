// Host test of md gdr's registration-cache lookup (gdr_rcache_get_usable(), gdr_md_rcache.c, the
// md's own code linked here) on host memory, where what decides is the access rule: a cached
// region that allows less than a request asks is dropped and registered again with the rights of
// both, and a cache that keeps returning unusable regions ends in an error, not a loop.  The
// rcache's registration is counted, not made (no HCA is needed); the CUDA half of the rule runs
// on the GPU machine (test_gdr_cuda_rcache).
#include <gtest/gtest.h>

#include "md_rcache_fixture.hpp"

#include <infiniband/verbs.h>

#include <sys/mman.h>
#include <unistd.h>

#include <climits>
#include <cstdint>

namespace {

/// Counts registrations instead of making them (no HCA needed).
struct HostRegistrar : gdr_test::registration_counts {
    bool ignore_arg = false;  ///< register without the rights asked: a cache that never serves

    ucs_status_t register_region(gdr_rcache_region_t *gdr, void *arg)
    {
        gdr->cuda_buffer_id = 0;  // host memory
        gdr->memh.access    = ignore_arg ? 0 : static_cast<gdr_rcache_reg_arg_t *>(arg)->access;
        return UCS_OK;
    }

    void describe(const gdr_rcache_region_t *region, char *buf, size_t max)
    {
        snprintf(buf, max, "access 0x%x", region->memh.access);
    }
};

class MdRcache : public gdr_test::MdRcacheFixture<HostRegistrar> {
protected:
    void SetUp() override
    {
        page_   = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        buffer_ = mmap(nullptr, 4 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                       0);
        ASSERT_NE(buffer_, MAP_FAILED);

        ASSERT_EQ(create_rcache("gdr_md_rcache_test", page_), UCS_OK);
    }

    void TearDown() override
    {
        MdRcacheFixture::TearDown();  // the cache goes before its memory
        if (buffer_ != MAP_FAILED) {
            munmap(buffer_, 4 * page_);
        }
    }

    /// the md's lookup of the buffer's first two pages asking for @a access; nullptr on error
    gdr_rcache_region_t *get(int access, ucs_status_t *status_p = nullptr)
    {
        gdr_rcache_reg_arg_t arg{0, access};
        gdr_rcache_region_t *region = nullptr;
        ucs_status_t status = gdr_rcache_get_usable(rcache_, buffer_, 2 * page_, &arg, &region);
        if (status_p != nullptr) {
            *status_p = status;
        }
        return (status == UCS_OK) ? region : nullptr;
    }

    size_t page_  = 0;
    void *buffer_ = MAP_FAILED;
};

}  // namespace

TEST_F(MdRcache, HitServesTheSameOrFewerRights)
{
    gdr_rcache_region_t *first = get(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ASSERT_NE(first, nullptr);
    ucs_rcache_region_put(rcache_, &first->super);
    gdr_rcache_region_t *hit = get(IBV_ACCESS_LOCAL_WRITE);
    EXPECT_EQ(hit, first);
    EXPECT_EQ(registrar_.registered, 1);
    if (hit != nullptr) {
        ucs_rcache_region_put(rcache_, &hit->super);
    }
}

TEST_F(MdRcache, RegionLackingRightsIsReplacedByOneWithTheRightsOfBoth)
{
    gdr_rcache_region_t *write_only = get(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ASSERT_NE(write_only, nullptr);
    ucs_rcache_region_put(rcache_, &write_only->super);

    gdr_rcache_region_t *both = get(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    ASSERT_NE(both, nullptr);
    EXPECT_EQ(registrar_.registered, 2);  // (the new region may reuse the freed one's address)
    EXPECT_EQ(registrar_.deregistered, 1);  // the dropped one had no holder left
    EXPECT_EQ(both->memh.access,
              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    ucs_rcache_region_put(rcache_, &both->super);

    // the old region's users asking again are served by the new one
    gdr_rcache_region_t *again = get(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    EXPECT_EQ(again, both);
    EXPECT_EQ(registrar_.registered, 2);
    if (again != nullptr) {
        ucs_rcache_region_put(rcache_, &again->super);
    }
}

TEST_F(MdRcache, CacheThatNeverServesEndsInAnErrorNotALoop)
{
    registrar_.ignore_arg = true;
    ucs_status_t status   = UCS_OK;
    EXPECT_EQ(get(IBV_ACCESS_LOCAL_WRITE, &status), nullptr);
    EXPECT_EQ(status, UCS_ERR_IO_ERROR);
    EXPECT_EQ(registrar_.registered, 3);  // GDR_RCACHE_GET_ATTEMPTS, every one dropped
    EXPECT_EQ(registrar_.deregistered, 3);
}
