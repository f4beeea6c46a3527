/**
 * @file gdr_cuda_driver/context.hpp
 * @brief Scoped CUDA contexts: make one current for a scope without disturbing the caller's, and
 *        retain a device's primary context without creating it behind the application's back.
 *
 * Threading: both act on the calling thread's context stack; use each object on one thread.
 */
#pragma once

#include <gdr_cuda_driver/api.hpp>

namespace gdr::cuda_driver {

/**
 * @brief Makes @p ctx current for the scope when it is not already, and restores the caller's
 *        context stack on exit (push/pop: the stack is left exactly as found).  Never creates a
 *        context.
 */
class scoped_context {
public:
    /**
     * @param api  the driver's entry points; must outlive this object.
     * @param ctx  the context to make current; nullptr: nothing is done.
     */
    scoped_context(const driver_api &api, CUcontext ctx) noexcept : api_(api)
    {
        CUcontext current = nullptr;
        if (ctx == nullptr) {
            return;
        }
        result_ = api_.cuCtxGetCurrent(&current);
        if (result_ == CUDA_SUCCESS && current != ctx) {
            result_ = api_.cuCtxPushCurrent_v2(ctx);
            pushed_ = result_ == CUDA_SUCCESS;
        }
    }

    ~scoped_context()
    {
        if (pushed_) {
            CUcontext popped = nullptr;
            api_.cuCtxPopCurrent_v2(&popped);
        }
    }

    scoped_context(const scoped_context &)            = delete;
    scoped_context &operator=(const scoped_context &) = delete;

    /** @return CUDA_SUCCESS when the context is current for the scope (or none was asked for),
     *          else the failed cuCtxGetCurrent/cuCtxPushCurrent's result. */
    [[nodiscard]] CUresult result() const noexcept { return result_; }

private:
    const driver_api &api_;
    CUresult result_ = CUDA_SUCCESS;
    bool pushed_     = false;
};

/**
 * @brief The primary context of a device, retained for the scope.  With @p may_create false it
 *        is retained only if already active, so that a query never allocates a context on a GPU
 *        the application does not use.
 */
class retained_primary_context {
public:
    /**
     * @param api         the driver's entry points; must outlive this object.
     * @param device      the device; < 0: nothing is retained.
     * @param may_create  retain (and so create) the context even when it is not active.
     */
    retained_primary_context(const driver_api &api, CUdevice device, bool may_create) noexcept
        : api_(api), device_(device)
    {
        unsigned flags = 0;
        int active     = 0;
        if (device < 0) {
            return;
        }
        if (!may_create) {
            result_ = api_.cuDevicePrimaryCtxGetState(device, &flags, &active);
            if (result_ != CUDA_SUCCESS || !active) {
                return;
            }
        }
        result_ = api_.cuDevicePrimaryCtxRetain(&ctx_, device);
        if (result_ != CUDA_SUCCESS) {
            ctx_ = nullptr;
        }
    }

    ~retained_primary_context()
    {
        if (ctx_ != nullptr) {
            api_.cuDevicePrimaryCtxRelease_v2(device_);
        }
    }

    retained_primary_context(const retained_primary_context &)            = delete;
    retained_primary_context &operator=(const retained_primary_context &) = delete;

    /** @return the retained context; nullptr when none was (see result()). */
    [[nodiscard]] CUcontext get() const noexcept { return ctx_; }
    /** @return the failed driver call's result when get() is nullptr for a device >= 0 that
     *          may be created; CUDA_SUCCESS otherwise. */
    [[nodiscard]] CUresult result() const noexcept { return result_; }

private:
    const driver_api &api_;
    CUdevice device_;
    CUcontext ctx_   = nullptr;
    CUresult result_ = CUDA_SUCCESS;
};

}  // namespace gdr::cuda_driver
