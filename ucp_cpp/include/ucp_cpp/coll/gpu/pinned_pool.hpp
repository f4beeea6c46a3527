/**
 * @file coll/gpu/pinned_pool.hpp
 * @brief Pinned host bounce buffers (cuMemHostAlloc, one segment each) for transfers of CUDA
 *        buffers staged through host memory; a block still read by an H2D copy comes back once
 *        the copy's event has passed.
 *
 * Threading: one thread at a time (the owning lane's engine).
 */
#pragma once

#include <ucp_cpp/coll/gpu/driver.hpp>
#include <ucp_cpp/coll/gpu/streams.hpp>

#include <utility>
#include <vector>

namespace ucp_cpp::coll::gpu {

class pinned_pool {
public:
    /// Blocks of @p segment_bytes in context @p ctx; @p events follows the copies (outlives this).
    pinned_pool(const driver &cu, CUcontext ctx, size_t segment_bytes, streams &events)
        : cu_(cu), context_(ctx), segment_(segment_bytes), events_(events)
    {}

    /// Frees every block (the copies reading them must have completed).
    ~pinned_pool()
    {
        gdr::cuda_driver::scoped_context scope(cu_, context_);
        for (void *block : all_)
            cu_.cuMemFreeHost(block);
    }
    pinned_pool(const pinned_pool &)            = delete;
    pinned_pool &operator=(const pinned_pool &) = delete;

    /// @return the size of every block.
    [[nodiscard]] size_t segment_bytes() const noexcept { return segment_; }

    /// @return a block: a free one, one whose copy completed, or a new one.
    void *take()
    {
        if (free_.empty())
            reclaim();
        if (!free_.empty()) {
            void *b = free_.back();
            free_.pop_back();
            return b;
        }
        context_scope scope(cu_, context_);
        void *b = nullptr;
        check(cu_.cuMemHostAlloc(&b, segment_, gdr::cuda_driver::CU_MEMHOSTALLOC_PORTABLE),
              "cuMemHostAlloc");
        all_.push_back(b);
        return b;
    }

    /// Returns @p block to the pool now.
    void give(void *block) { free_.push_back(block); }

    /// Returns @p block once the work before @p e (an H2D copy still reading the block) has
    /// completed; the event goes back with it.
    void give_after(void *block, CUevent e) { busy_.emplace_back(e, block); }

private:
    /// Moves the blocks of give_after() whose copies completed back to the pool.
    void reclaim()
    {
        context_scope scope(cu_, context_);
        for (size_t i = 0; i < busy_.size();) {
            if (!events_.passed(busy_[i].first)) {
                ++i;
                continue;
            }
            events_.release(busy_[i].first);
            free_.push_back(busy_[i].second);
            busy_[i] = busy_.back();
            busy_.pop_back();
        }
    }

    const driver &cu_;
    CUcontext context_;
    size_t segment_;
    streams &events_;
    std::vector<void *> all_, free_;
    std::vector<std::pair<CUevent, void *>> busy_;  ///< give_after(): (copy, block)
};

}  // namespace ucp_cpp::coll::gpu
