/**
 * @file gdr_cuda_driver/api.hpp
 * @brief The entry points of libcuda.so.1 that ucx-gdr calls, as one table of function pointers.
 *
 * Each member is named after the symbol it is looked up by: the versioned name where cuda.h maps
 * the API name to one (`cuMemAlloc` -> `cuMemAlloc_v2`).  A driver keeps exporting the old
 * unversioned symbols for old binaries, with the old ABI, so binding by API name would be a
 * silent bug; abi_check.cpp proves every name and prototype against cuda.h.
 * Enum-typed parameters are `int`: the same ABI for CUDA's int-sized enums.
 */
#pragma once

#include <gdr_cuda_driver/types.hpp>

#include <cstddef>

namespace gdr::cuda_driver {

/**
 * @brief The driver's entry points.  Every member is non-null once driver::usable() holds,
 *        except those marked optional (absent from older drivers: callers check).
 */
struct driver_api {
    // initialisation, errors, devices
    CUresult (*cuInit)(unsigned flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuGetErrorName)(CUresult error, const char **name);
    CUresult (*cuGetErrorString)(CUresult error, const char **text);
    CUresult (*cuDeviceGetCount)(int *count);
    CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice device);
    CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
    // contexts
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice device);
    CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice device);
    CUresult (*cuDevicePrimaryCtxGetState)(CUdevice device, unsigned *flags, int *active);
    CUresult (*cuCtxGetCurrent)(CUcontext *ctx);
    CUresult (*cuCtxSetCurrent)(CUcontext ctx);
    CUresult (*cuCtxPushCurrent_v2)(CUcontext ctx);
    CUresult (*cuCtxPopCurrent_v2)(CUcontext *ctx);
    CUresult (*cuCtxGetDevice)(CUdevice *device);
    CUresult (*cuCtxSynchronize)();
    // pointers and allocations
    CUresult (*cuPointerGetAttribute)(void *data, int attribute, CUdeviceptr ptr);
    CUresult (*cuPointerGetAttributes)(unsigned count, int *attributes, void **data,
                                       CUdeviceptr ptr);
    CUresult (*cuMemGetAddressRange_v2)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *ptr, size_t size);
    CUresult (*cuMemFree_v2)(CUdeviceptr ptr);
    CUresult (*cuMemAllocManaged)(CUdeviceptr *ptr, size_t size, unsigned flags);
    CUresult (*cuMemHostAlloc)(void **ptr, size_t size, unsigned flags);
    CUresult (*cuMemFreeHost)(void *ptr);
    CUresult (*cuMemHostRegister_v2)(void *ptr, size_t size, unsigned flags);
    CUresult (*cuMemHostUnregister)(void *ptr);
    // inter-process memory (the collectives' direct reads of peer processes' buffers)
    CUresult (*cuIpcGetMemHandle)(CUipcMemHandle *handle, CUdeviceptr ptr);
    CUresult (*cuIpcOpenMemHandle_v2)(CUdeviceptr *ptr, CUipcMemHandle handle, unsigned flags);
    CUresult (*cuIpcCloseMemHandle)(CUdeviceptr ptr);
    // copies and memset
    CUresult (*cuMemsetD8_v2)(CUdeviceptr ptr, unsigned char value, size_t count);
    CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*cuMemcpyDtoH_v2)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*cuMemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
    CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr dst, const void *src, size_t bytes,
                                     CUstream stream);
    CUresult (*cuMemcpyDtoHAsync_v2)(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
    // streams and events
    CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
    CUresult (*cuStreamDestroy_v2)(CUstream stream);
    CUresult (*cuStreamSynchronize)(CUstream stream);
    CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
    CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
    CUresult (*cuEventDestroy_v2)(CUevent event);
    CUresult (*cuEventRecord)(CUevent event, CUstream stream);
    CUresult (*cuEventQuery)(CUevent event);
    CUresult (*cuEventSynchronize)(CUevent event);
    // modules and kernels
    CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
    CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
    CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y,
                               unsigned grid_z, unsigned block_x, unsigned block_y,
                               unsigned block_z, unsigned shared_bytes, CUstream stream,
                               void **params, void **extra);
    // virtual memory management (CUDA >= 10.2)
    CUresult (*cuMemCreate)(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags);
    CUresult (*cuMemRelease)(CUmemGenericAllocationHandle handle);
    CUresult (*cuMemAddressReserve)(CUdeviceptr *ptr, size_t size, size_t alignment,
                                    CUdeviceptr addr, unsigned long long flags);
    CUresult (*cuMemAddressFree)(CUdeviceptr ptr, size_t size);
    CUresult (*cuMemMap)(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags);
    CUresult (*cuMemUnmap)(CUdeviceptr ptr, size_t size);
    CUresult (*cuMemSetAccess)(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                               size_t count);
    CUresult (*cuMemGetAllocationGranularity)(size_t *granularity, const CUmemAllocationProp *prop,
                                              int option);
    CUresult (*cuMemRetainAllocationHandle)(CUmemGenericAllocationHandle *handle, void *addr);
    /** Optional: CUDA >= 11.7 drivers (dma-buf export). */
    CUresult (*cuMemGetHandleForAddressRange)(void *handle, CUdeviceptr ptr, size_t size,
                                              int handle_type, unsigned long long flags);
};

/** @brief One member of driver_api: the symbol it is looked up by and where it goes. */
struct entry_point {
    const char *symbol;
    size_t offset;  ///< offsetof(driver_api, <symbol>)
    bool optional;  ///< a driver may lack it (the member then stays null)
};

// The member and the looked-up name are one token: they cannot drift apart.
#define GDR_CUDA_DRIVER_ENTRY(name) {#name, offsetof(driver_api, name), false}
/** @brief Every member of driver_api, in declaration order. */
inline constexpr entry_point entry_points[] = {
    GDR_CUDA_DRIVER_ENTRY(cuInit),
    GDR_CUDA_DRIVER_ENTRY(cuDriverGetVersion),
    GDR_CUDA_DRIVER_ENTRY(cuGetErrorName),
    GDR_CUDA_DRIVER_ENTRY(cuGetErrorString),
    GDR_CUDA_DRIVER_ENTRY(cuDeviceGetCount),
    GDR_CUDA_DRIVER_ENTRY(cuDeviceGet),
    GDR_CUDA_DRIVER_ENTRY(cuDeviceGetName),
    GDR_CUDA_DRIVER_ENTRY(cuDeviceGetAttribute),
    GDR_CUDA_DRIVER_ENTRY(cuDevicePrimaryCtxRetain),
    GDR_CUDA_DRIVER_ENTRY(cuDevicePrimaryCtxRelease_v2),
    GDR_CUDA_DRIVER_ENTRY(cuDevicePrimaryCtxGetState),
    GDR_CUDA_DRIVER_ENTRY(cuCtxGetCurrent),
    GDR_CUDA_DRIVER_ENTRY(cuCtxSetCurrent),
    GDR_CUDA_DRIVER_ENTRY(cuCtxPushCurrent_v2),
    GDR_CUDA_DRIVER_ENTRY(cuCtxPopCurrent_v2),
    GDR_CUDA_DRIVER_ENTRY(cuCtxGetDevice),
    GDR_CUDA_DRIVER_ENTRY(cuCtxSynchronize),
    GDR_CUDA_DRIVER_ENTRY(cuPointerGetAttribute),
    GDR_CUDA_DRIVER_ENTRY(cuPointerGetAttributes),
    GDR_CUDA_DRIVER_ENTRY(cuMemGetAddressRange_v2),
    GDR_CUDA_DRIVER_ENTRY(cuMemAlloc_v2),
    GDR_CUDA_DRIVER_ENTRY(cuMemFree_v2),
    GDR_CUDA_DRIVER_ENTRY(cuMemAllocManaged),
    GDR_CUDA_DRIVER_ENTRY(cuMemHostAlloc),
    GDR_CUDA_DRIVER_ENTRY(cuMemFreeHost),
    GDR_CUDA_DRIVER_ENTRY(cuMemHostRegister_v2),
    GDR_CUDA_DRIVER_ENTRY(cuMemHostUnregister),
    GDR_CUDA_DRIVER_ENTRY(cuIpcGetMemHandle),
    GDR_CUDA_DRIVER_ENTRY(cuIpcOpenMemHandle_v2),
    GDR_CUDA_DRIVER_ENTRY(cuIpcCloseMemHandle),
    GDR_CUDA_DRIVER_ENTRY(cuMemsetD8_v2),
    GDR_CUDA_DRIVER_ENTRY(cuMemcpyHtoD_v2),
    GDR_CUDA_DRIVER_ENTRY(cuMemcpyDtoH_v2),
    GDR_CUDA_DRIVER_ENTRY(cuMemcpyAsync),
    GDR_CUDA_DRIVER_ENTRY(cuMemcpyHtoDAsync_v2),
    GDR_CUDA_DRIVER_ENTRY(cuMemcpyDtoHAsync_v2),
    GDR_CUDA_DRIVER_ENTRY(cuStreamCreate),
    GDR_CUDA_DRIVER_ENTRY(cuStreamDestroy_v2),
    GDR_CUDA_DRIVER_ENTRY(cuStreamSynchronize),
    GDR_CUDA_DRIVER_ENTRY(cuStreamWaitEvent),
    GDR_CUDA_DRIVER_ENTRY(cuEventCreate),
    GDR_CUDA_DRIVER_ENTRY(cuEventDestroy_v2),
    GDR_CUDA_DRIVER_ENTRY(cuEventRecord),
    GDR_CUDA_DRIVER_ENTRY(cuEventQuery),
    GDR_CUDA_DRIVER_ENTRY(cuEventSynchronize),
    GDR_CUDA_DRIVER_ENTRY(cuModuleLoadData),
    GDR_CUDA_DRIVER_ENTRY(cuModuleGetFunction),
    GDR_CUDA_DRIVER_ENTRY(cuLaunchKernel),
    GDR_CUDA_DRIVER_ENTRY(cuMemCreate),
    GDR_CUDA_DRIVER_ENTRY(cuMemRelease),
    GDR_CUDA_DRIVER_ENTRY(cuMemAddressReserve),
    GDR_CUDA_DRIVER_ENTRY(cuMemAddressFree),
    GDR_CUDA_DRIVER_ENTRY(cuMemMap),
    GDR_CUDA_DRIVER_ENTRY(cuMemUnmap),
    GDR_CUDA_DRIVER_ENTRY(cuMemSetAccess),
    GDR_CUDA_DRIVER_ENTRY(cuMemGetAllocationGranularity),
    GDR_CUDA_DRIVER_ENTRY(cuMemRetainAllocationHandle),
    {"cuMemGetHandleForAddressRange", offsetof(driver_api, cuMemGetHandleForAddressRange), true},
};
#undef GDR_CUDA_DRIVER_ENTRY

static_assert(sizeof(entry_points) / sizeof(entry_points[0]) * sizeof(void (*)()) ==
                  sizeof(driver_api),
              "every member of driver_api needs its entry in entry_points");

}  // namespace gdr::cuda_driver
