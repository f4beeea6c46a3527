// Compile-time proof that gdr_cuda_driver's declarations match the CUDA toolkit's cuda.h: every
// constant's value, every struct's layout, every entry point's exported name and prototype.
// Built only when a toolkit is found (GDR_CUDA_INCLUDE_DIR); nothing else includes cuda.h.
#include <gdr_cuda_driver/api.hpp>

// cuda.h #defines these names: take our values before it is included.
namespace ours {
constexpr unsigned kMemHostAllocPortable     = gdr::cuda_driver::CU_MEMHOSTALLOC_PORTABLE;
constexpr unsigned kMemHostAllocDeviceMap    = gdr::cuda_driver::CU_MEMHOSTALLOC_DEVICEMAP;
constexpr unsigned kMemHostRegisterPortable  = gdr::cuda_driver::CU_MEMHOSTREGISTER_PORTABLE;
constexpr unsigned kMemHostRegisterDeviceMap = gdr::cuda_driver::CU_MEMHOSTREGISTER_DEVICEMAP;
}  // namespace ours

#include <cuda.h>

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace drv = gdr::cuda_driver;

#define GDR_SAME_VALUE(name)                                                           \
    static_assert(static_cast<long long>(drv::name) == static_cast<long long>(::name), \
                  #name " differs from cuda.h")

GDR_SAME_VALUE(CUDA_SUCCESS);
GDR_SAME_VALUE(CUDA_ERROR_INVALID_VALUE);
GDR_SAME_VALUE(CUDA_ERROR_OUT_OF_MEMORY);
GDR_SAME_VALUE(CUDA_ERROR_NOT_INITIALIZED);
GDR_SAME_VALUE(CUDA_ERROR_DEINITIALIZED);
GDR_SAME_VALUE(CUDA_ERROR_STUB_LIBRARY);
GDR_SAME_VALUE(CUDA_ERROR_NO_DEVICE);
GDR_SAME_VALUE(CUDA_ERROR_INVALID_CONTEXT);
GDR_SAME_VALUE(CUDA_ERROR_NOT_READY);
GDR_SAME_VALUE(CUDA_ERROR_NOT_SUPPORTED);
GDR_SAME_VALUE(CU_POINTER_ATTRIBUTE_CONTEXT);
GDR_SAME_VALUE(CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
GDR_SAME_VALUE(CU_POINTER_ATTRIBUTE_BUFFER_ID);
GDR_SAME_VALUE(CU_POINTER_ATTRIBUTE_IS_MANAGED);
GDR_SAME_VALUE(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
GDR_SAME_VALUE(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
GDR_SAME_VALUE(CU_POINTER_ATTRIBUTE_RANGE_SIZE);
GDR_SAME_VALUE(CU_POINTER_ATTRIBUTE_MAPPED);
GDR_SAME_VALUE(CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE);
GDR_SAME_VALUE(CU_MEMORYTYPE_HOST);
GDR_SAME_VALUE(CU_MEMORYTYPE_DEVICE);
GDR_SAME_VALUE(CU_MEMORYTYPE_ARRAY);
GDR_SAME_VALUE(CU_MEMORYTYPE_UNIFIED);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
GDR_SAME_VALUE(CU_STREAM_NON_BLOCKING);
GDR_SAME_VALUE(CU_EVENT_DISABLE_TIMING);
GDR_SAME_VALUE(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);
GDR_SAME_VALUE(CU_MEM_ALLOCATION_TYPE_PINNED);
GDR_SAME_VALUE(CU_MEM_HANDLE_TYPE_NONE);
GDR_SAME_VALUE(CU_MEM_LOCATION_TYPE_DEVICE);
GDR_SAME_VALUE(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
GDR_SAME_VALUE(CU_MEM_ALLOC_GRANULARITY_MINIMUM);
GDR_SAME_VALUE(CU_MEM_ATTACH_GLOBAL);
GDR_SAME_VALUE(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
static_assert(ours::kMemHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE);
static_assert(ours::kMemHostAllocDeviceMap == CU_MEMHOSTALLOC_DEVICEMAP);
static_assert(ours::kMemHostRegisterPortable == CU_MEMHOSTREGISTER_PORTABLE);
static_assert(ours::kMemHostRegisterDeviceMap == CU_MEMHOSTREGISTER_DEVICEMAP);
#undef GDR_SAME_VALUE

// Enums passed as int must really be int-sized.
static_assert(sizeof(::CUpointer_attribute) == sizeof(int), "CUpointer_attribute size");
static_assert(sizeof(::CUdevice_attribute) == sizeof(int), "CUdevice_attribute size");
static_assert(sizeof(::CUmemRangeHandleType) == sizeof(int), "CUmemRangeHandleType size");
static_assert(sizeof(::CUmemAllocationGranularity_flags) == sizeof(int), "granularity size");
static_assert(sizeof(::CUmemorytype) == sizeof(unsigned), "CUmemorytype size");

static_assert(std::is_same_v<drv::CUdeviceptr, ::CUdeviceptr>, "CUdeviceptr");
static_assert(std::is_same_v<drv::CUdevice, ::CUdevice>, "CUdevice");
static_assert(std::is_same_v<drv::CUcontext, ::CUcontext>, "CUcontext");
static_assert(std::is_same_v<drv::CUstream, ::CUstream>, "CUstream");
static_assert(std::is_same_v<drv::CUevent, ::CUevent>, "CUevent");
static_assert(std::is_same_v<drv::CUmodule, ::CUmodule>, "CUmodule");
static_assert(std::is_same_v<drv::CUfunction, ::CUfunction>, "CUfunction");
static_assert(std::is_same_v<drv::CUmemGenericAllocationHandle, ::CUmemGenericAllocationHandle>,
              "CUmemGenericAllocationHandle");
static_assert(sizeof(drv::CUresult) == sizeof(::CUresult), "CUresult size");

#define GDR_SAME_LAYOUT(type, member) \
    static_assert(offsetof(drv::type, member) == offsetof(::type, member), #type "." #member)
static_assert(sizeof(drv::CUmemLocation) == sizeof(::CUmemLocation), "CUmemLocation size");
GDR_SAME_LAYOUT(CUmemLocation, type);
GDR_SAME_LAYOUT(CUmemLocation, id);
static_assert(sizeof(drv::CUmemAllocationProp) == sizeof(::CUmemAllocationProp),
              "CUmemAllocationProp size");
GDR_SAME_LAYOUT(CUmemAllocationProp, type);
GDR_SAME_LAYOUT(CUmemAllocationProp, requestedHandleTypes);
GDR_SAME_LAYOUT(CUmemAllocationProp, location);
GDR_SAME_LAYOUT(CUmemAllocationProp, win32HandleMetaData);
GDR_SAME_LAYOUT(CUmemAllocationProp, allocFlags);
GDR_SAME_LAYOUT(CUmemAllocationProp, allocFlags.compressionType);
GDR_SAME_LAYOUT(CUmemAllocationProp, allocFlags.gpuDirectRDMACapable);
GDR_SAME_LAYOUT(CUmemAllocationProp, allocFlags.usage);
static_assert(sizeof(drv::CUmemAccessDesc) == sizeof(::CUmemAccessDesc), "CUmemAccessDesc size");
GDR_SAME_LAYOUT(CUmemAccessDesc, location);
GDR_SAME_LAYOUT(CUmemAccessDesc, flags);
static_assert(sizeof(drv::CUipcMemHandle) == sizeof(::CUipcMemHandle), "CUipcMemHandle size");
static_assert(sizeof(drv::CUipcMemHandle) == CU_IPC_HANDLE_SIZE, "CUipcMemHandle size");
#undef GDR_SAME_LAYOUT

// The symbols looked up are the ones cuda.h maps the API names to.  (Without
// CUDA_API_PER_THREAD_DEFAULT_STREAM, as this file is built, the stream-ordered calls keep their
// legacy-default-stream names, which is what driver_api binds.)
#define GDR_STR(x)  GDR_STR2(x)
#define GDR_STR2(x) #x
#define GDR_SAME_SYMBOL(api_name, symbol) \
    static_assert(std::string_view(GDR_STR(api_name)) == #symbol, #api_name " is " #symbol)
GDR_SAME_SYMBOL(cuMemAlloc, cuMemAlloc_v2);
GDR_SAME_SYMBOL(cuMemFree, cuMemFree_v2);
GDR_SAME_SYMBOL(cuMemGetAddressRange, cuMemGetAddressRange_v2);
GDR_SAME_SYMBOL(cuCtxPushCurrent, cuCtxPushCurrent_v2);
GDR_SAME_SYMBOL(cuCtxPopCurrent, cuCtxPopCurrent_v2);
GDR_SAME_SYMBOL(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);
GDR_SAME_SYMBOL(cuMemHostRegister, cuMemHostRegister_v2);
GDR_SAME_SYMBOL(cuMemsetD8, cuMemsetD8_v2);
GDR_SAME_SYMBOL(cuMemcpyHtoD, cuMemcpyHtoD_v2);
GDR_SAME_SYMBOL(cuMemcpyDtoH, cuMemcpyDtoH_v2);
GDR_SAME_SYMBOL(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2);
GDR_SAME_SYMBOL(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2);
GDR_SAME_SYMBOL(cuStreamDestroy, cuStreamDestroy_v2);
GDR_SAME_SYMBOL(cuEventDestroy, cuEventDestroy_v2);
GDR_SAME_SYMBOL(cuMemcpyAsync, cuMemcpyAsync);
GDR_SAME_SYMBOL(cuStreamSynchronize, cuStreamSynchronize);
GDR_SAME_SYMBOL(cuStreamWaitEvent, cuStreamWaitEvent);
GDR_SAME_SYMBOL(cuEventRecord, cuEventRecord);
GDR_SAME_SYMBOL(cuLaunchKernel, cuLaunchKernel);
GDR_SAME_SYMBOL(cuMemAllocManaged, cuMemAllocManaged);
GDR_SAME_SYMBOL(cuMemHostAlloc, cuMemHostAlloc);
GDR_SAME_SYMBOL(cuPointerGetAttributes, cuPointerGetAttributes);
GDR_SAME_SYMBOL(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
GDR_SAME_SYMBOL(cuMemGetHandleForAddressRange, cuMemGetHandleForAddressRange);
GDR_SAME_SYMBOL(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2);
GDR_SAME_SYMBOL(cuIpcGetMemHandle, cuIpcGetMemHandle);
GDR_SAME_SYMBOL(cuIpcCloseMemHandle, cuIpcCloseMemHandle);
#undef GDR_SAME_SYMBOL
#undef GDR_STR
#undef GDR_STR2

// Prototypes: each driver_api member must be cuda.h's prototype of the same symbol, with enum
// types (CUresult, CUpointer_attribute, ...) written as int (the same ABI for int-sized enums) and
// cuda.h's structs as ours (their layouts are checked above).
template <typename T> struct Ours {
    using type = std::conditional_t<std::is_enum_v<T>, int, T>;
};
template <> struct Ours<::CUpointer_attribute *> {
    using type = int *;
};
template <> struct Ours<const ::CUmemAllocationProp *> {
    using type = const drv::CUmemAllocationProp *;
};
template <> struct Ours<const ::CUmemAccessDesc *> {
    using type = const drv::CUmemAccessDesc *;
};
template <> struct Ours<::CUipcMemHandle> {
    using type = drv::CUipcMemHandle;
};
template <> struct Ours<::CUipcMemHandle *> {
    using type = drv::CUipcMemHandle *;
};
template <typename F> struct OurPrototype;
template <typename R, typename... A> struct OurPrototype<R (*)(A...)> {
    using type = typename Ours<R>::type (*)(typename Ours<A>::type...);
};

// __COUNTER__ counts the members checked, so that a member added to driver_api without a
// check here fails the build.
constexpr int kFirstCheck = __COUNTER__;
#define GDR_SAME_PROTOTYPE(symbol)                                             \
    static_assert(__COUNTER__ > kFirstCheck &&                                 \
                      std::is_same_v<decltype(drv::driver_api::symbol),        \
                                     OurPrototype<decltype(&::symbol)>::type>, \
                  #symbol " prototype differs from cuda.h")
GDR_SAME_PROTOTYPE(cuInit);
GDR_SAME_PROTOTYPE(cuDriverGetVersion);
GDR_SAME_PROTOTYPE(cuGetErrorName);
GDR_SAME_PROTOTYPE(cuGetErrorString);
GDR_SAME_PROTOTYPE(cuDeviceGetCount);
GDR_SAME_PROTOTYPE(cuDeviceGet);
GDR_SAME_PROTOTYPE(cuDeviceGetName);
GDR_SAME_PROTOTYPE(cuDeviceGetAttribute);
GDR_SAME_PROTOTYPE(cuDevicePrimaryCtxRetain);
GDR_SAME_PROTOTYPE(cuDevicePrimaryCtxRelease_v2);
GDR_SAME_PROTOTYPE(cuDevicePrimaryCtxGetState);
GDR_SAME_PROTOTYPE(cuCtxGetCurrent);
GDR_SAME_PROTOTYPE(cuCtxSetCurrent);
GDR_SAME_PROTOTYPE(cuCtxPushCurrent_v2);
GDR_SAME_PROTOTYPE(cuCtxPopCurrent_v2);
GDR_SAME_PROTOTYPE(cuCtxGetDevice);
GDR_SAME_PROTOTYPE(cuCtxSynchronize);
GDR_SAME_PROTOTYPE(cuPointerGetAttribute);
GDR_SAME_PROTOTYPE(cuPointerGetAttributes);
GDR_SAME_PROTOTYPE(cuMemGetAddressRange_v2);
GDR_SAME_PROTOTYPE(cuMemAlloc_v2);
GDR_SAME_PROTOTYPE(cuMemFree_v2);
GDR_SAME_PROTOTYPE(cuMemAllocManaged);
GDR_SAME_PROTOTYPE(cuMemHostAlloc);
GDR_SAME_PROTOTYPE(cuMemFreeHost);
GDR_SAME_PROTOTYPE(cuMemHostRegister_v2);
GDR_SAME_PROTOTYPE(cuMemHostUnregister);
GDR_SAME_PROTOTYPE(cuIpcGetMemHandle);
GDR_SAME_PROTOTYPE(cuIpcOpenMemHandle_v2);
GDR_SAME_PROTOTYPE(cuIpcCloseMemHandle);
GDR_SAME_PROTOTYPE(cuMemsetD8_v2);
GDR_SAME_PROTOTYPE(cuMemcpyHtoD_v2);
GDR_SAME_PROTOTYPE(cuMemcpyDtoH_v2);
GDR_SAME_PROTOTYPE(cuMemcpyAsync);
GDR_SAME_PROTOTYPE(cuMemcpyHtoDAsync_v2);
GDR_SAME_PROTOTYPE(cuMemcpyDtoHAsync_v2);
GDR_SAME_PROTOTYPE(cuStreamCreate);
GDR_SAME_PROTOTYPE(cuStreamDestroy_v2);
GDR_SAME_PROTOTYPE(cuStreamSynchronize);
GDR_SAME_PROTOTYPE(cuStreamWaitEvent);
GDR_SAME_PROTOTYPE(cuEventCreate);
GDR_SAME_PROTOTYPE(cuEventDestroy_v2);
GDR_SAME_PROTOTYPE(cuEventRecord);
GDR_SAME_PROTOTYPE(cuEventQuery);
GDR_SAME_PROTOTYPE(cuEventSynchronize);
GDR_SAME_PROTOTYPE(cuModuleLoadData);
GDR_SAME_PROTOTYPE(cuModuleGetFunction);
GDR_SAME_PROTOTYPE(cuLaunchKernel);
GDR_SAME_PROTOTYPE(cuMemCreate);
GDR_SAME_PROTOTYPE(cuMemRelease);
GDR_SAME_PROTOTYPE(cuMemAddressReserve);
GDR_SAME_PROTOTYPE(cuMemAddressFree);
GDR_SAME_PROTOTYPE(cuMemMap);
GDR_SAME_PROTOTYPE(cuMemUnmap);
GDR_SAME_PROTOTYPE(cuMemSetAccess);
GDR_SAME_PROTOTYPE(cuMemGetAllocationGranularity);
GDR_SAME_PROTOTYPE(cuMemRetainAllocationHandle);
GDR_SAME_PROTOTYPE(cuMemGetHandleForAddressRange);
#undef GDR_SAME_PROTOTYPE
static_assert((__COUNTER__ - kFirstCheck - 1) * sizeof(void (*)()) == sizeof(drv::driver_api),
              "a member of driver_api has no GDR_SAME_PROTOTYPE check");
