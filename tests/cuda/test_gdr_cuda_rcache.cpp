// GPU test: md gdr's registration-cache lookup (gdr_rcache_get_usable(), gdr_md_rcache.c: the
// md's own code, linked here) over CUDA memory.  No HCA is needed: the rcache's registration is
// the dma-buf export half of the md's real one, and what is checked is which region a lookup
// returns.  Shows (1) hits, (2) that ucs_rcache alone returns a stale region after cuMemFree +
// cuMemAlloc at the same address (no UCM CUDA hooks in Debian's UCX), and (3) that the md's
// lookup — gdr_cuda_region_is_stale() on every hit, invalidate and look up again
// (docs/gpu-memory.md) — registers the new allocation.
#include "gdr_cuda.h"

#include <gdr_cuda_driver/driver.hpp>

#include <gtest/gtest.h>

#include "md_rcache_fixture.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <climits>
#include <cstdint>

using namespace gdr::cuda_driver;

namespace {

const driver_api &cu()
{
    return driver::instance().api();
}

/// The dma-buf export half of the md's registration: no HCA needed.
struct CudaRegistrar : gdr_test::registration_counts {
    ucs_status_t register_region(gdr_rcache_region_t *cuda, void *arg)
    {
        void *start   = reinterpret_cast<void *>(cuda->super.super.start);
        size_t length = cuda->super.super.end - cuda->super.super.start;
        gdr_cuda_mem_info_t info;
        if (gdr_cuda_mem_query(start, length, &info) != UCS_OK ||
            info.kind != GDR_CUDA_MEM_DEVICE) {
            return UCS_ERR_INVALID_ADDR;
        }
        int fd = -1;
        uint64_t offset;
        if (gdr_cuda_dmabuf_export(start, length, &fd, &offset, nullptr) != UCS_OK) {
            return UCS_ERR_IO_ERROR;
        }
        close(fd);
        cuda->cuda_buffer_id = info.buffer_id;
        // the raw ucs_rcache_get() below passes no arg; it only ever hits
        cuda->memh.access = (arg != nullptr) ? static_cast<gdr_rcache_reg_arg_t *>(arg)->access : 0;
        return UCS_OK;
    }

    void describe(const gdr_rcache_region_t *region, char *buf, size_t max)
    {
        snprintf(buf, max, "buffer_id %llu", (unsigned long long)region->cuda_buffer_id);
    }
};

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

/** The md's lookup: a hit whose allocation is gone or replaced is invalidated, then missed. */
gdr_rcache_region_t *get_fresh(ucs_rcache_t *rcache, void *address, size_t length)
{
    gdr_rcache_reg_arg_t arg{0, IBV_ACCESS_LOCAL_WRITE};
    gdr_rcache_region_t *region = nullptr;
    return (gdr_rcache_get_usable(rcache, address, length, &arg, &region) == UCS_OK) ? region
                                                                                     : nullptr;
}

class CudaRcache : public gdr_test::MdRcacheFixture<CudaRegistrar> {
protected:
    void SetUp() override
    {
        gdr_reason_t reason;
        if (gdr_cuda_available(&reason) != UCS_OK) {
            GTEST_SKIP() << reason.text;
        }
        ASSERT_EQ(cu().cuDeviceGet(&device_, 0), CUDA_SUCCESS);
        ASSERT_EQ(cu().cuDevicePrimaryCtxRetain(&context_, device_), CUDA_SUCCESS);
        ASSERT_EQ(cu().cuCtxSetCurrent(context_), CUDA_SUCCESS);

        ASSERT_EQ(create_rcache("gdr_cuda_test", kPage), UCS_OK);
    }

    void TearDown() override
    {
        MdRcacheFixture::TearDown();  // the cache goes before the context
        if (context_ != nullptr) {
            cu().cuCtxSetCurrent(nullptr);
            cu().cuDevicePrimaryCtxRelease_v2(device_);
        }
    }

    CUdevice device_   = 0;
    CUcontext context_ = nullptr;
};

}  // namespace

TEST_F(CudaRcache, HitsThenInvalidatesOnFreeAndReallocationAtTheSameAddress)
{
    const size_t size = 8 << 20, length = 1 << 20;
    CUdeviceptr first = 0;
    ASSERT_EQ(cu().cuMemAlloc_v2(&first, size), CUDA_SUCCESS);
    void *address = reinterpret_cast<void *>(first);

    gdr_rcache_region_t *region = get_fresh(rcache_, address, length);
    ASSERT_NE(region, nullptr);
    EXPECT_EQ(registrar_.registered, 1);
    const uint64_t first_id = region->cuda_buffer_id;
    ucs_rcache_region_put(rcache_, &region->super);

    gdr_rcache_region_t *hit = get_fresh(rcache_, address, length);  // cache hit, still valid
    ASSERT_EQ(hit, region);
    EXPECT_EQ(registrar_.registered, 1);
    ucs_rcache_region_put(rcache_, &hit->super);

    ASSERT_EQ(cu().cuMemFree_v2(first), CUDA_SUCCESS);
    CUdeviceptr again = 0;
    ASSERT_EQ(cu().cuMemAlloc_v2(&again, size), CUDA_SUCCESS);
    if (again != first) {
        cu().cuMemFree_v2(again);
        GTEST_SKIP() << "the driver did not reuse the address";
    }

    // The problem: ucs_rcache on its own hands back the old allocation's registration.
    ucs_rcache_region_t *raw = nullptr;
    ASSERT_EQ(gdr_compat_rcache_get(rcache_, address, length, kPage, PROT_READ | PROT_WRITE,
                                    nullptr, &raw),
              UCS_OK);
    EXPECT_EQ(ucs_derived_of(raw, gdr_rcache_region_t)->cuda_buffer_id, first_id);
    uint64_t current_id = 0;
    ASSERT_EQ(gdr_cuda_buffer_id(address, &current_id), UCS_OK);
    EXPECT_NE(current_id, first_id);
    ucs_rcache_region_put(rcache_, raw);

    // The recipe: stale hit -> invalidate -> fresh registration of the new allocation.
    gdr_rcache_region_t *fresh = get_fresh(rcache_, address, length);
    ASSERT_NE(fresh, nullptr);
    EXPECT_EQ(fresh->cuda_buffer_id, current_id);
    EXPECT_EQ(registrar_.registered, 2);
    EXPECT_EQ(registrar_.deregistered, 1);  // the stale one is gone once unreferenced
    ucs_rcache_region_put(rcache_, &fresh->super);

    gdr_rcache_region_t *hit_again = get_fresh(rcache_, address, length);
    EXPECT_EQ(hit_again, fresh);
    EXPECT_EQ(registrar_.registered, 2);
    if (hit_again != nullptr)
        ucs_rcache_region_put(rcache_, &hit_again->super);
    ASSERT_EQ(cu().cuMemFree_v2(again), CUDA_SUCCESS);
}
