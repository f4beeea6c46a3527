/**
 * @file coll/gpu/streams.hpp
 * @brief A lane's streams and events: copies, kernels and H2D copies on the main stream, D2H
 *        copies on a second one (so both directions overlap), and a cache of events recorded on
 *        either to follow the work.
 *
 * Threading: one thread at a time (the owning lane's engine).
 */
#pragma once

#include <ucp_cpp/coll/gpu/driver.hpp>

#include <cstdint>
#include <vector>

namespace ucp_cpp::coll::gpu {

/**
 * @brief A lane's two streams and its event cache.
 *
 * Copies, reduction kernels and H2D copies run in order on the main stream; D2H copies run on a
 * second stream, so a segment can leave the device while the next one arrives.  Events mark
 * points of either stream so that the engine can poll progress without blocking; they are
 * recycled (release()) because creating one costs a driver call.
 * Lifetime: belongs to one lane, in its context; not copyable.
 * Threading: one thread at a time.
 */
class streams {
public:
    /// @brief Creates both streams in @p ctx (non-blocking: they do not wait for the legacy
    ///        stream).
    /// @param cu  the driver (cuda()).
    /// @param ctx the lane's context.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when cuStreamCreate fails.
    streams(const driver &cu, CUcontext ctx) : cu_(cu), context_(ctx)
    {
        context_scope scope(cu_, context_);
        check(cu_.cuStreamCreate(&main_, gdr::cuda_driver::CU_STREAM_NON_BLOCKING),
              "cuStreamCreate");
        check(cu_.cuStreamCreate(&d2h_, gdr::cuda_driver::CU_STREAM_NON_BLOCKING),
              "cuStreamCreate");
    }

    /// Destroys the events and streams (work still queued completes first: see synchronize()).
    ~streams()
    {
        gdr::cuda_driver::scoped_context scope(cu_, context_);
        for (CUevent e : events_all_)
            cu_.cuEventDestroy_v2(e);
        cu_.cuStreamDestroy_v2(main_);
        cu_.cuStreamDestroy_v2(d2h_);
    }
    streams(const streams &)            = delete;
    streams &operator=(const streams &) = delete;

    /// @return the stream of copies, kernels and H2D copies.
    [[nodiscard]] CUstream main() const noexcept { return main_; }

    /// @brief Queues device -> pinned host on the D2H stream; with @p wait_main after everything
    ///        queued so far on the main stream.
    /// @param host      pinned destination (a pinned_pool block).
    /// @param device    device source.
    /// @param bytes     how much to copy.
    /// @param wait_main true when the source is written by work on the main stream (a kernel,
    ///                  a copy) that the D2H copy must follow.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when a CUDA call fails.
    void d2h_after_main(void *host, const void *device, size_t bytes, bool wait_main)
    {
        context_scope scope(cu_, context_);
        if (wait_main) {
            CUevent e = record_on(main_);
            check(cu_.cuStreamWaitEvent(d2h_, e, 0), "cuStreamWaitEvent");
            release(e);  // the wait is queued: the event may be re-recorded later
        }
        check(cu_.cuMemcpyDtoHAsync_v2(host, address(device), bytes, d2h_), "cuMemcpyDtoHAsync");
    }

    /// @brief Queues pinned host -> device on the main stream, before any later kernel there.
    /// @param device device destination.
    /// @param host   pinned source; it must stay untouched until the copy completes (record()
    ///               an event and give the block back with pinned_pool::give_after()).
    /// @param bytes  how much to copy.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when a CUDA call fails.
    void h2d(void *device, const void *host, size_t bytes)
    {
        context_scope scope(cu_, context_);
        check(cu_.cuMemcpyHtoDAsync_v2(address(device), host, bytes, main_), "cuMemcpyHtoDAsync");
    }

    /// @brief Marks the work queued so far on one stream, to poll it with passed().
    /// @param on_d2h_stream true: the D2H stream; false: the main stream.
    /// @return an event recorded now on the main stream (or the D2H stream); release() it.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when a CUDA call fails.
    CUevent record(bool on_d2h_stream = false)
    {
        context_scope scope(cu_, context_);
        return record_on(on_d2h_stream ? d2h_ : main_);
    }

    /// @brief Polls an event without blocking.
    /// @param e an event of record().
    /// @return true once the work before @p e has completed.
    /// @throws ucx_error on a CUDA error.
    bool passed(CUevent e)
    {
        context_scope scope(cu_, context_);
        const CUresult rc = cu_.cuEventQuery(e);
        if (rc == gdr::cuda_driver::CUDA_SUCCESS)
            return true;
        if (rc == gdr::cuda_driver::CUDA_ERROR_NOT_READY)
            return false;
        check(rc, "cuEventQuery");
        return false;
    }

    /// @brief Gives @p e back for a later record() (a wait on it already queued still holds).
    /// @param e an event of record(), not used after this.
    void release(CUevent e) { events_free_.push_back(e); }

    /// Waits for everything queued on both streams (errors ignored: used on failure paths).
    void synchronize() noexcept
    {
        gdr::cuda_driver::scoped_context scope(cu_, context_);
        cu_.cuStreamSynchronize(main_);
        cu_.cuStreamSynchronize(d2h_);
    }

    /// @brief Converts a device pointer for the driver's calls, which take an integer address.
    /// @param p a device address.
    /// @return @p p as the driver's device pointer type.
    static CUdeviceptr address(const void *p)
    {
        return CUdeviceptr(reinterpret_cast<uintptr_t>(p));
    }

private:
    CUevent record_on(CUstream s)
    {
        CUevent e = nullptr;
        if (!events_free_.empty()) {
            e = events_free_.back();
            events_free_.pop_back();
        } else {
            check(cu_.cuEventCreate(&e, gdr::cuda_driver::CU_EVENT_DISABLE_TIMING),
                  "cuEventCreate");
            events_all_.push_back(e);
        }
        check(cu_.cuEventRecord(e, s), "cuEventRecord");
        return e;
    }

    const driver &cu_;
    CUcontext context_;
    CUstream main_ = nullptr, d2h_ = nullptr;
    std::vector<CUevent> events_all_, events_free_;
};

}  // namespace ucp_cpp::coll::gpu
