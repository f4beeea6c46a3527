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

/**
 * @brief Pinned host blocks of one size, the bounce buffers of a lane's staged transfers.
 *
 * UCX moves a CUDA buffer through host memory in segments; pinned memory lets the D2H and H2D
 * copies run asynchronously.  Allocating it is slow, so blocks are kept until the pool goes.
 * Lifetime: the pool and its blocks belong to one lane (and its context); not copyable.
 * Threading: one thread at a time.
 */
class pinned_pool {
public:
    /**
     * @brief An empty pool: blocks are allocated by take() as needed.
     * @param cu            the driver (cuda()).
     * @param ctx           the context the blocks are allocated in (portable to all contexts).
     * @param segment_bytes the size of every block.
     * @param events        the lane's streams, whose events tell when give_after()'s copies
     *                      have completed; it must outlive the pool.
     */
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

    /// @brief A block of segment_bytes() for one staged segment; give it back with give() or
    ///        give_after().
    /// @return a block: a free one, one whose copy completed, or a new one.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when a CUDA call (cuMemHostAlloc) fails.
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

    /// @brief Returns @p block to the pool now (nothing queued reads it any more).
    /// @param block a block of take().
    void give(void *block) { free_.push_back(block); }

    /// @brief Returns @p block once the work before @p e (an H2D copy still reading the block)
    ///        has completed; the event goes back with it.
    /// @param block a block of take().
    /// @param e     an event of streams::record() after the copy; the pool releases it.
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
