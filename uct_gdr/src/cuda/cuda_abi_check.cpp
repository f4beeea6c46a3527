// Compile-time proof that cuda_driver.h matches the CUDA toolkit's cuda.h.  Built only when
// GDR_CUDA_INCLUDE_DIR is set (a toolkit is present); the library itself never includes cuda.h.
#include "cuda_driver.h"

// cuda.h #defines these names: take our values before it is included.
namespace ours {
constexpr unsigned kMemHostAllocPortable     = gdr::cuda::drv::CU_MEMHOSTALLOC_PORTABLE;
constexpr unsigned kMemHostAllocDeviceMap    = gdr::cuda::drv::CU_MEMHOSTALLOC_DEVICEMAP;
constexpr unsigned kMemHostRegisterPortable  = gdr::cuda::drv::CU_MEMHOSTREGISTER_PORTABLE;
constexpr unsigned kMemHostRegisterDeviceMap = gdr::cuda::drv::CU_MEMHOSTREGISTER_DEVICEMAP;
}  // namespace ours

#include <cuda.h>

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace drv = gdr::cuda::drv;

#define GDR_SAME_VALUE(name) static_assert(static_cast<long long>(drv::name) == static_cast<long long>(::name), #name " differs from cuda.h")

GDR_SAME_VALUE(CUDA_SUCCESS);
GDR_SAME_VALUE(CUDA_ERROR_INVALID_VALUE);
GDR_SAME_VALUE(CUDA_ERROR_OUT_OF_MEMORY);
GDR_SAME_VALUE(CUDA_ERROR_NOT_INITIALIZED);
GDR_SAME_VALUE(CUDA_ERROR_DEINITIALIZED);
GDR_SAME_VALUE(CUDA_ERROR_STUB_LIBRARY);
GDR_SAME_VALUE(CUDA_ERROR_NO_DEVICE);
GDR_SAME_VALUE(CUDA_ERROR_INVALID_CONTEXT);
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
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED);
GDR_SAME_VALUE(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
GDR_SAME_VALUE(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);
GDR_SAME_VALUE(CU_MEM_ALLOCATION_TYPE_PINNED);
GDR_SAME_VALUE(CU_MEM_HANDLE_TYPE_NONE);
GDR_SAME_VALUE(CU_MEM_LOCATION_TYPE_DEVICE);
GDR_SAME_VALUE(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
GDR_SAME_VALUE(CU_MEM_ALLOC_GRANULARITY_MINIMUM);
GDR_SAME_VALUE(CU_MEM_ATTACH_GLOBAL);
static_assert(ours::kMemHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE);
static_assert(ours::kMemHostAllocDeviceMap == CU_MEMHOSTALLOC_DEVICEMAP);
static_assert(ours::kMemHostRegisterPortable == CU_MEMHOSTREGISTER_PORTABLE);
static_assert(ours::kMemHostRegisterDeviceMap == CU_MEMHOSTREGISTER_DEVICEMAP);
#undef GDR_SAME_VALUE

// Enums passed as int must really be int-sized.
static_assert(sizeof(::CUpointer_attribute) == sizeof(int), "CUpointer_attribute size");
static_assert(sizeof(::CUdevice_attribute) == sizeof(int), "CUdevice_attribute size");
static_assert(sizeof(::CUmemRangeHandleType) == sizeof(int), "CUmemRangeHandleType size");
static_assert(sizeof(::CUmemAllocationGranularity_flags) == sizeof(int), "granularity flags size");
static_assert(sizeof(::CUmemorytype) == sizeof(unsigned), "CUmemorytype size");

static_assert(std::is_same_v<drv::CUdeviceptr, ::CUdeviceptr>, "CUdeviceptr");
static_assert(std::is_same_v<drv::CUdevice, ::CUdevice>, "CUdevice");
static_assert(std::is_same_v<drv::CUcontext, ::CUcontext>, "CUcontext");
static_assert(std::is_same_v<drv::CUmemGenericAllocationHandle, ::CUmemGenericAllocationHandle>,
              "CUmemGenericAllocationHandle");
static_assert(sizeof(drv::CUresult) == sizeof(::CUresult), "CUresult size");

#define GDR_SAME_LAYOUT(type, member) \
    static_assert(offsetof(drv::type, member) == offsetof(::type, member), #type "." #member)
static_assert(sizeof(drv::CUmemLocation) == sizeof(::CUmemLocation), "CUmemLocation size");
GDR_SAME_LAYOUT(CUmemLocation, type);
GDR_SAME_LAYOUT(CUmemLocation, id);
static_assert(sizeof(drv::CUmemAllocationProp) == sizeof(::CUmemAllocationProp), "CUmemAllocationProp size");
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
#undef GDR_SAME_LAYOUT

// The exported symbols we dlsym are the ones cuda.h maps the API names to (a driver keeps the
// unversioned names for old binaries, with the old ABI: binding them would be a silent bug).
#define GDR_STR(x) GDR_STR2(x)
#define GDR_STR2(x) #x
static_assert(std::string_view(GDR_STR(cuMemAlloc)) == "cuMemAlloc_v2", "cuMemAlloc");
static_assert(std::string_view(GDR_STR(cuMemFree)) == "cuMemFree_v2", "cuMemFree");
static_assert(std::string_view(GDR_STR(cuMemGetAddressRange)) == "cuMemGetAddressRange_v2", "cuMemGetAddressRange");
static_assert(std::string_view(GDR_STR(cuCtxPushCurrent)) == "cuCtxPushCurrent_v2", "cuCtxPushCurrent");
static_assert(std::string_view(GDR_STR(cuCtxPopCurrent)) == "cuCtxPopCurrent_v2", "cuCtxPopCurrent");
static_assert(std::string_view(GDR_STR(cuDevicePrimaryCtxRelease)) == "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
static_assert(std::string_view(GDR_STR(cuMemHostRegister)) == "cuMemHostRegister_v2", "cuMemHostRegister");
static_assert(std::string_view(GDR_STR(cuMemsetD8)) == "cuMemsetD8_v2", "cuMemsetD8");
static_assert(std::string_view(GDR_STR(cuMemAllocManaged)) == "cuMemAllocManaged", "cuMemAllocManaged");
static_assert(std::string_view(GDR_STR(cuMemHostAlloc)) == "cuMemHostAlloc", "cuMemHostAlloc");
static_assert(std::string_view(GDR_STR(cuPointerGetAttributes)) == "cuPointerGetAttributes", "cuPointerGetAttributes");
static_assert(std::string_view(GDR_STR(cuDevicePrimaryCtxRetain)) == "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain");
static_assert(std::string_view(GDR_STR(cuMemGetHandleForAddressRange)) == "cuMemGetHandleForAddressRange", "cuMemGetHandleForAddressRange");
#undef GDR_STR
#undef GDR_STR2

// Prototypes: each Api member must be cuda.h's prototype of the same symbol, with enum types
// (CUresult, CUpointer_attribute, ...) written as int — the same ABI for CUDA's int-sized enums.
template <typename T> using AsInt = std::conditional_t<std::is_enum_v<T>, int, T>;
template <typename F> struct EnumsAsInt;
template <typename R, typename... A> struct EnumsAsInt<R (*)(A...)> {
    using type = AsInt<R> (*)(AsInt<A>...);
};
#define GDR_SAME_PROTOTYPE(symbol)                                                             \
    static_assert(std::is_same_v<decltype(drv::Api::symbol),                                   \
                                 EnumsAsInt<decltype(&::symbol)>::type>,                       \
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
GDR_SAME_PROTOTYPE(cuMemGetAddressRange_v2);
GDR_SAME_PROTOTYPE(cuMemAlloc_v2);
GDR_SAME_PROTOTYPE(cuMemFree_v2);
GDR_SAME_PROTOTYPE(cuMemAllocManaged);
GDR_SAME_PROTOTYPE(cuMemHostAlloc);
GDR_SAME_PROTOTYPE(cuMemFreeHost);
GDR_SAME_PROTOTYPE(cuMemHostRegister_v2);
GDR_SAME_PROTOTYPE(cuMemHostUnregister);
GDR_SAME_PROTOTYPE(cuMemsetD8_v2);
GDR_SAME_PROTOTYPE(cuMemRelease);
GDR_SAME_PROTOTYPE(cuMemAddressReserve);
GDR_SAME_PROTOTYPE(cuMemAddressFree);
GDR_SAME_PROTOTYPE(cuMemMap);
GDR_SAME_PROTOTYPE(cuMemUnmap);
GDR_SAME_PROTOTYPE(cuMemRetainAllocationHandle);
GDR_SAME_PROTOTYPE(cuMemGetHandleForAddressRange);
#undef GDR_SAME_PROTOTYPE
// These take pointers to cuda.h structs; our structs' layouts are checked above.
static_assert(std::is_same_v<decltype(drv::Api::cuPointerGetAttributes),
                             drv::CUresult (*)(unsigned, int *, void **, drv::CUdeviceptr)>);
static_assert(sizeof(::CUpointer_attribute) == sizeof(int));
