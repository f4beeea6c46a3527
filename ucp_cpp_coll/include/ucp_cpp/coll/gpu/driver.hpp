/**
 * @file coll/gpu/driver.hpp
 * @brief The CUDA driver as the collectives use it: the project's one driver layer
 *        (<gdr_cuda_driver/...>, libcuda.so.1 through dlopen), switched off by
 *        UCP_CPP_COLL_GPU=off, with failures turned into ucx_error, and where a buffer lives.
 *
 * Without libcuda (or with cuInit failing, or UCP_CPP_COLL_GPU=off) every pointer is host memory
 * and nothing else of coll/gpu/ is touched: the host path pays one flag test.
 * Threading: the driver is loaded once per process (any thread); locate() may be called from any
 * thread; a context_scope acts on the calling thread.
 */
#pragma once

#include <ucp_cpp/error.hpp>

#include <gdr_cuda_driver/context.hpp>
#include <gdr_cuda_driver/driver.hpp>
#include <gdr_cuda_driver/pointer.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ucp_cpp::coll::gpu {

/// The driver's entry points (members are named by exported symbol: cuMemAlloc_v2, ...).
using driver      = gdr::cuda_driver::driver_api;
using CUresult    = gdr::cuda_driver::CUresult;
using CUdevice    = gdr::cuda_driver::CUdevice;
using CUdeviceptr = gdr::cuda_driver::CUdeviceptr;
using CUcontext   = gdr::cuda_driver::CUcontext;
using CUstream    = gdr::cuda_driver::CUstream;
using CUevent     = gdr::cuda_driver::CUevent;
using CUmodule    = gdr::cuda_driver::CUmodule;
using CUfunction  = gdr::cuda_driver::CUfunction;
/**
 * @typedef CUresult
 * @brief A driver call's status (CUDA_SUCCESS or a CUDA_ERROR_...); pass it to check().
 * @typedef CUdevice
 * @brief A device handle of cuDeviceGet() (not the ordinal).
 * @typedef CUdeviceptr
 * @brief A device address as the driver's copy calls take it (see streams::address()).
 * @typedef CUcontext
 * @brief A CUDA context: every buffer, stream and event of a lane belongs to one.
 * @typedef CUstream
 * @brief A CUDA stream: the order in which a lane's copies and kernels run.
 * @typedef CUevent
 * @brief A CUDA event: marks a point of a stream, so the host can test whether the work before it
 *        has run.
 * @typedef CUmodule
 * @brief A loaded module (the reduction kernels' compiled image).
 * @typedef CUfunction
 * @brief A kernel of a loaded module.
 */

namespace detail {

inline bool gpu_disabled_by_environment()
{
    const char *v = std::getenv("UCP_CPP_COLL_GPU");
    return v != nullptr &&
           (std::strcmp(v, "off") == 0 || std::strcmp(v, "no") == 0 || std::strcmp(v, "0") == 0);
}

/// Why the collectives do not use CUDA ("" when they do): UCP_CPP_COLL_GPU, else the driver's
/// reason.  Decided once per process.
inline const std::string &driver_problem_once()
{
    static const std::string problem = [] {
        if (gpu_disabled_by_environment()) {
            return std::string("UCP_CPP_COLL_GPU=off");
        }
        const gdr::cuda_driver::driver &loaded = gdr::cuda_driver::driver::instance();
        return loaded.reason();
    }();
    return problem;
}

}  // namespace detail

/**
 * @brief The CUDA driver for the collectives.
 * @return its entry points, or nullptr when it cannot be used (see driver_problem()).
 */
[[nodiscard]] inline const driver *cuda()
{
    return detail::driver_problem_once().empty() ? &gdr::cuda_driver::driver::instance().api()
                                                 : nullptr;
}

/// @return why cuda() is nullptr ("" when it is usable).
[[nodiscard]] inline const std::string &driver_problem()
{
    return detail::driver_problem_once();
}

/**
 * @brief Checks a driver call of the collectives, so every CUDA failure reaches the caller as the
 *        same exception type as UCX's own failures.
 * @param rc   what the call returned.
 * @param call its name, for the message (e.g. "cuMemAlloc").
 * @throws ucx_error(UCS_ERR_IO_ERROR, "coll/gpu: <call> failed: CUDA_ERROR_... (text)") when
 *         @p rc is not CUDA_SUCCESS.
 */
inline void check(CUresult rc, const char *call)
{
    if (rc != gdr::cuda_driver::CUDA_SUCCESS) {
        const auto &loaded = gdr::cuda_driver::driver::instance();
        throw ucx_error(UCS_ERR_IO_ERROR, "coll/gpu: " + loaded.failure(call, rc));
    }
}

/**
 * @brief Makes a context current for the scope (and restores the caller's); throws when it cannot.
 *
 * Every driver call of coll/gpu acts on the calling thread's current context, and the application
 * may have its own current: the scope pushes the lane's and pops it on destruction.  Acts on the
 * calling thread only; not copyable.
 */
class context_scope {
public:
    /**
     * @brief Pushes @p ctx as the calling thread's current context until the scope ends.
     * @param cu  the driver (cuda()).
     * @param ctx the context to make current.
     * @throws ucx_error(UCS_ERR_IO_ERROR) when cuCtxPushCurrent fails.
     */
    context_scope(const driver &cu, CUcontext ctx) : scope_(cu, ctx)
    {
        check(scope_.result(), "cuCtxPushCurrent");
    }

private:
    gdr::cuda_driver::scoped_context scope_;
};

/// Where a buffer lives.
struct location {
    bool device       = false;  ///< CUDA device (or managed) memory
    CUcontext context = nullptr;  ///< its context (null: the device's primary context)
    int ordinal       = -1;  ///< its device
};

/**
 * @brief Host memory unless the CUDA driver is usable and says the pointer is device memory
 *        (one batched cuPointerGetAttributes).  Pinned host memory (cuMemHostAlloc, registered)
 *        counts as host memory.
 *
 * This is how a collective decides between the host path and a gpu::lane; it never throws and
 * never initializes anything when the driver is off.
 * @param p any pointer (nullptr: host).
 * @return where @p p lives: device memory, with its context and device ordinal, or host memory.
 */
[[nodiscard]] inline location locate(const void *p)
{
    using namespace gdr::cuda_driver;
    location where;
    const driver *cu = p != nullptr ? cuda() : nullptr;
    if (cu == nullptr)
        return where;
    pointer_attributes attributes;
    if (!attributes.query(*cu, p))
        return where;  // not known to CUDA: ordinary host memory
    if (attributes.memory_type != CU_MEMORYTYPE_DEVICE &&
        attributes.memory_type != CU_MEMORYTYPE_UNIFIED &&
        attributes.memory_type != CU_MEMORYTYPE_ARRAY) {
        return where;
    }
    where.device  = true;
    where.context = attributes.context;
    where.ordinal = attributes.device_ordinal >= 0 ? attributes.device_ordinal : 0;
    return where;
}

}  // namespace ucp_cpp::coll::gpu
