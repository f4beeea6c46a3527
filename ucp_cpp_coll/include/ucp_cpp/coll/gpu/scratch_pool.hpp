/**
 * @file coll/gpu/scratch_pool.hpp
 * @brief Device scratch blocks for collective schedules, by power-of-two size, kept for reuse
 *        until the pool goes.
 *
 * Threading: one thread at a time (the owning lane's engine).
 */
#pragma once

#include <ucp_cpp/coll/gpu/driver.hpp>

#include <map>
#include <utility>
#include <vector>

namespace ucp_cpp::coll::gpu {

/**
 * @brief Device memory for a collective schedule's temporaries (a reduction's partial results,
 *        a received segment), cached by power-of-two size so repeated collectives do not pay
 *        cuMemAlloc/cuMemFree (cuMemFree can synchronize the device) each time.
 *
 * Lifetime: blocks are freed with the pool, which belongs to one lane; not copyable.
 * Threading: one thread at a time.
 */
class scratch_pool {
public:
    /// @brief An empty pool: take() allocates as needed.
    /// @param cu  the driver (cuda()).
    /// @param ctx the context the blocks are allocated in.
    scratch_pool(const driver &cu, CUcontext ctx) : cu_(cu), context_(ctx) {}

    /// Frees every block (the work using them must have completed).
    ~scratch_pool()
    {
        gdr::cuda_driver::scoped_context scope(cu_, context_);
        for (auto &[size, blocks] : free_) {
            for (CUdeviceptr p : blocks)
                cu_.cuMemFree_v2(p);
        }
    }
    scratch_pool(const scratch_pool &)            = delete;
    scratch_pool &operator=(const scratch_pool &) = delete;

    /// @brief A device block for a schedule, reused when one of its size class is free.
    /// @param bytes the size needed.
    /// @return a block of at least @p bytes and its size class (pass both to give()).
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when a CUDA call (cuMemAlloc) fails.
    std::pair<CUdeviceptr, size_t> take(size_t bytes)
    {
        size_t rounded = 256;
        while (rounded < bytes)
            rounded <<= 1;
        auto &blocks = free_[rounded];
        if (!blocks.empty()) {
            const CUdeviceptr p = blocks.back();
            blocks.pop_back();
            return {p, rounded};
        }
        context_scope scope(cu_, context_);
        CUdeviceptr p = 0;
        check(cu_.cuMemAlloc_v2(&p, rounded), "cuMemAlloc");
        return {p, rounded};
    }

    /// @brief Returns a block of take() for reuse (the schedule that used it is done with it).
    /// @param block   the block.
    /// @param rounded its size class, as take() returned it.
    void give(CUdeviceptr block, size_t rounded) { free_[rounded].push_back(block); }

private:
    const driver &cu_;
    CUcontext context_;
    std::map<size_t, std::vector<CUdeviceptr>> free_;
};

}  // namespace ucp_cpp::coll::gpu
