/**
 * @file cuda_driver.h
 * The subset of the CUDA driver API that gdr_cuda uses, declared here so that the project builds
 * and runs without a CUDA toolkit: libcuda.so.1 is dlopen'ed and each entry point is looked up by
 * its exported (versioned, e.g. `cuMemAlloc_v2`) symbol name.  Values and layouts are copied from
 * CUDA 13.0's cuda.h; cuda_abi_check.cpp static_asserts them against cuda.h when a toolkit is
 * present at build time (GDR_CUDA_INCLUDE_DIR).
 *
 * Internal header (C++17); the public API is gdr_cuda.h.
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

// Same tags as cuda.h so that the pointer types are identical when both are visible.
struct CUctx_st;

namespace gdr::cuda::drv {

using CUresult                     = int;
using CUdevice                     = int;
using CUdeviceptr                  = unsigned long long;
using CUcontext                    = ::CUctx_st *;
using CUmemGenericAllocationHandle = unsigned long long;

enum : CUresult {
    CUDA_SUCCESS               = 0,
    CUDA_ERROR_INVALID_VALUE   = 1,
    CUDA_ERROR_OUT_OF_MEMORY   = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED   = 4,
    CUDA_ERROR_STUB_LIBRARY    = 34,
    CUDA_ERROR_NO_DEVICE       = 100,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NOT_SUPPORTED   = 801,
};

// CUpointer_attribute
enum : int {
    CU_POINTER_ATTRIBUTE_CONTEXT                     = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE                 = 2,
    CU_POINTER_ATTRIBUTE_BUFFER_ID                   = 7,
    CU_POINTER_ATTRIBUTE_IS_MANAGED                  = 8,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL              = 9,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR            = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE                  = 12,
    CU_POINTER_ATTRIBUTE_MAPPED                      = 13,
    CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE  = 15,
};

// CUmemorytype
enum : unsigned {
    CU_MEMORYTYPE_HOST    = 1,
    CU_MEMORYTYPE_DEVICE  = 2,
    CU_MEMORYTYPE_ARRAY   = 3,
    CU_MEMORYTYPE_UNIFIED = 4,
};

// CUdevice_attribute
enum : int {
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID                              = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID                           = 34,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID                           = 50,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED     = 102,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED = 110,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED               = 116,
    CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED                       = 124,
};

enum : int { CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1 };       // CUmemRangeHandleType
enum : int { CU_MEM_ALLOCATION_TYPE_PINNED = 1 };             // CUmemAllocationType
enum : int { CU_MEM_HANDLE_TYPE_NONE = 0 };                   // CUmemAllocationHandleType
enum : int { CU_MEM_LOCATION_TYPE_DEVICE = 1 };               // CUmemLocationType
enum : int { CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 };        // CUmemAccess_flags
enum : int { CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0 };          // CUmemAllocationGranularity_flags
enum : unsigned { CU_MEM_ATTACH_GLOBAL = 1 };
enum : unsigned { CU_MEMHOSTALLOC_PORTABLE = 1, CU_MEMHOSTALLOC_DEVICEMAP = 2 };
enum : unsigned { CU_MEMHOSTREGISTER_PORTABLE = 1, CU_MEMHOSTREGISTER_DEVICEMAP = 2 };

struct CUmemLocation {
    int type;  // CUmemLocationType
    int id;
};

struct CUmemAllocationProp {
    int           type;                  // CUmemAllocationType
    int           requestedHandleTypes;  // CUmemAllocationHandleType
    CUmemLocation location;
    void         *win32HandleMetaData;
    struct {
        unsigned char  compressionType;
        unsigned char  gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char  reserved[4];
    } allocFlags;
};

struct CUmemAccessDesc {
    CUmemLocation location;
    int           flags;  // CUmemAccess_flags
};

/**
 * Entry points of libcuda.so.1.  Every member is non-null once Driver::load() succeeded, except
 * those marked optional (absent from older drivers; callers check).
 * Enum-typed parameters are passed as int: same ABI as CUDA's int-sized enums.
 */
struct Api {
    CUresult (*cuInit)(unsigned flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuGetErrorName)(CUresult error, const char **name);
    CUresult (*cuGetErrorString)(CUresult error, const char **text);
    CUresult (*cuDeviceGetCount)(int *count);
    CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice device);
    CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice device);
    CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice device);
    CUresult (*cuDevicePrimaryCtxGetState)(CUdevice device, unsigned *flags, int *active);
    CUresult (*cuCtxGetCurrent)(CUcontext *ctx);
    CUresult (*cuCtxSetCurrent)(CUcontext ctx);
    CUresult (*cuCtxPushCurrent_v2)(CUcontext ctx);
    CUresult (*cuCtxPopCurrent_v2)(CUcontext *ctx);
    CUresult (*cuCtxGetDevice)(CUdevice *device);
    CUresult (*cuCtxSynchronize)();
    CUresult (*cuPointerGetAttribute)(void *data, int attribute, CUdeviceptr ptr);
    CUresult (*cuPointerGetAttributes)(unsigned count, int *attributes, void **data, CUdeviceptr ptr);
    CUresult (*cuMemGetAddressRange_v2)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *ptr, size_t size);
    CUresult (*cuMemFree_v2)(CUdeviceptr ptr);
    CUresult (*cuMemAllocManaged)(CUdeviceptr *ptr, size_t size, unsigned flags);
    CUresult (*cuMemHostAlloc)(void **ptr, size_t size, unsigned flags);
    CUresult (*cuMemFreeHost)(void *ptr);
    CUresult (*cuMemHostRegister_v2)(void *ptr, size_t size, unsigned flags);
    CUresult (*cuMemHostUnregister)(void *ptr);
    CUresult (*cuMemsetD8_v2)(CUdeviceptr ptr, unsigned char value, size_t count);
    // Virtual memory management (CUDA >= 10.2)
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

/**
 * The dlopen'ed driver.  Loading never prints anything: what went wrong is kept in `reason()`.
 * Thread-safety: `instance()` initialises once (std::call_once); the object is immutable after.
 * Lifetime: the process singleton never dlclose()s libcuda (the driver does not support being
 * unloaded while contexts exist, and other libraries in the process may share it).
 */
class Driver {
public:
    /** Loads `soname`, resolves the entry points and calls cuInit(0).  For tests, any soname. */
    explicit Driver(const char *soname);
    ~Driver();
    Driver(const Driver &)            = delete;
    Driver &operator=(const Driver &) = delete;

    /** The process-wide driver from libcuda.so.1, loaded on first use. */
    static const Driver &instance();

    /** libcuda loaded, all mandatory symbols found, cuInit succeeded and at least one device. */
    bool usable() const { return usable_; }
    /** Why not usable (one line, no trailing newline); empty when usable. */
    const std::string &reason() const { return reason_; }
    const Api &api() const { return api_; }
    int device_count() const { return device_count_; }
    /** PCI location of each device, by ordinal (read once at load: UCP asks for it per operation
     *  when the memory-type cache is off). */
    struct PciLocation {
        int domain = -1, bus = -1, device = -1;
    };
    const PciLocation &pci_location(int ordinal) const;
    int version() const { return version_; }

    /** "CUDA_ERROR_X (text)" for a driver result code. */
    std::string error_text(CUresult result) const;

private:
    void       *handle_ = nullptr;
    Api         api_{};
    bool        usable_ = false;
    int         device_count_ = 0;
    std::vector<PciLocation> pci_;
    int         version_ = 0;
    std::string reason_;
};

/**
 * Makes `ctx` current for the scope when it is not already current, and restores the caller's
 * current context on exit (push/pop: the caller's context stack is left exactly as found).
 * Never creates a context.
 */
class ScopedContext {
public:
    ScopedContext(const Api &api, CUcontext ctx);
    ~ScopedContext();
    ScopedContext(const ScopedContext &)            = delete;
    ScopedContext &operator=(const ScopedContext &) = delete;

private:
    const Api &api_;
    bool       pushed_ = false;
};

/**
 * The primary context of `device`, retained for the scope, but only if it is already active
 * (`may_create` false) — so queries never allocate a context on a GPU the application does not
 * use.  `get()` is null when inactive and creation was not allowed, or for a device < 0.
 */
class RetainedPrimaryContext {
public:
    RetainedPrimaryContext(const Api &api, CUdevice device, bool may_create);
    ~RetainedPrimaryContext();
    RetainedPrimaryContext(const RetainedPrimaryContext &)            = delete;
    RetainedPrimaryContext &operator=(const RetainedPrimaryContext &) = delete;
    CUcontext get() const { return ctx_; }

private:
    const Api &api_;
    CUdevice   device_;
    CUcontext  ctx_ = nullptr;
};

}  // namespace gdr::cuda::drv
