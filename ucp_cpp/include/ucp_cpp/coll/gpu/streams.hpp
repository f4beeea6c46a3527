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

class streams {
public:
    /// Creates both streams in @p ctx (non-blocking: they do not wait for the legacy stream).
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

    /// Device -> pinned host on the D2H stream; with @p wait_main after everything queued so far
    /// on the main stream.
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

    /// Pinned host -> device on the main stream.
    void h2d(void *device, const void *host, size_t bytes)
    {
        context_scope scope(cu_, context_);
        check(cu_.cuMemcpyHtoDAsync_v2(address(device), host, bytes, main_), "cuMemcpyHtoDAsync");
    }

    /// @return an event recorded now on the main stream (or the D2H stream); release() it.
    CUevent record(bool on_d2h_stream = false)
    {
        context_scope scope(cu_, context_);
        return record_on(on_d2h_stream ? d2h_ : main_);
    }

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

    /// Gives @p e back for a later record().
    void release(CUevent e) { events_free_.push_back(e); }

    /// Waits for everything queued on both streams (errors ignored: used on failure paths).
    void synchronize() noexcept
    {
        gdr::cuda_driver::scoped_context scope(cu_, context_);
        cu_.cuStreamSynchronize(main_);
        cu_.cuStreamSynchronize(d2h_);
    }

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
