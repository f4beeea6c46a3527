/**
 * @file gdr_cuda_driver/types.hpp
 * @brief The types, constants and structs of the CUDA driver API (cuda.h) that ucx-gdr uses,
 *        declared here so that nothing in the project needs a CUDA toolkit to build.
 *
 * Values and layouts are those of CUDA 13.0's cuda.h; cuda_driver/abi_check.cpp static_asserts
 * each of them against the toolkit's cuda.h whenever one is found at build time.  The names are
 * cuda.h's, inside namespace gdr::cuda_driver, so code reads like driver-API code and a
 * translation unit may include cuda.h as well (the opaque handle tags are cuda.h's own).
 * Enumerations are plain `int`/`unsigned` constants: CUDA's enums are int-sized, so the ABI of
 * the entry points is the same.
 */
#pragma once

#include <cstddef>

// cuda.h's tags: the handle types are then identical when both headers are visible.
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
struct CUmod_st;
struct CUfunc_st;

namespace gdr::cuda_driver {

using CUresult                     = int;
using CUdevice                     = int;
using CUdeviceptr                  = unsigned long long;
using CUcontext                    = ::CUctx_st *;
using CUstream                     = ::CUstream_st *;
using CUevent                      = ::CUevent_st *;
using CUmodule                     = ::CUmod_st *;
using CUfunction                   = ::CUfunc_st *;
using CUmemGenericAllocationHandle = unsigned long long;

// CUresult
enum : CUresult {
    CUDA_SUCCESS               = 0,
    CUDA_ERROR_INVALID_VALUE   = 1,
    CUDA_ERROR_OUT_OF_MEMORY   = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED   = 4,
    CUDA_ERROR_STUB_LIBRARY    = 34,
    CUDA_ERROR_NO_DEVICE       = 100,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NOT_READY       = 600,
    CUDA_ERROR_NOT_SUPPORTED   = 801,
};

// CUpointer_attribute
enum : int {
    CU_POINTER_ATTRIBUTE_CONTEXT                    = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE                = 2,
    CU_POINTER_ATTRIBUTE_BUFFER_ID                  = 7,
    CU_POINTER_ATTRIBUTE_IS_MANAGED                 = 8,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL             = 9,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR           = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE                 = 12,
    CU_POINTER_ATTRIBUTE_MAPPED                     = 13,
    CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE = 15,
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
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT                    = 16,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID                              = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID                           = 34,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID                           = 50,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR                = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR                = 76,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED     = 102,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED = 110,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED               = 116,
    CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED                       = 124,
};

enum : unsigned {
    CU_STREAM_NON_BLOCKING = 1
};  // CUstream_flags
enum : unsigned {
    CU_EVENT_DISABLE_TIMING = 2
};  // CUevent_flags
enum : int {
    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1
};  // CUmemRangeHandleType
enum : int {
    CU_MEM_ALLOCATION_TYPE_PINNED = 1
};  // CUmemAllocationType
enum : int {
    CU_MEM_HANDLE_TYPE_NONE = 0
};  // CUmemAllocationHandleType
enum : int {
    CU_MEM_LOCATION_TYPE_DEVICE = 1
};  // CUmemLocationType
enum : int {
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
};  // CUmemAccess_flags
enum : int {
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
};  // CUmemAllocationGranularity_flags
enum : unsigned {
    CU_MEM_ATTACH_GLOBAL = 1
};  // CUmemAttach_flags

// cuda.h #defines these four instead of declaring enumerators: a translation unit that included
// cuda.h first already has them (with the same values, which abi_check.cpp proves).
#ifndef CU_MEMHOSTALLOC_PORTABLE
enum : unsigned {
    CU_MEMHOSTALLOC_PORTABLE  = 1,
    CU_MEMHOSTALLOC_DEVICEMAP = 2
};
#endif
#ifndef CU_MEMHOSTREGISTER_PORTABLE
enum : unsigned {
    CU_MEMHOSTREGISTER_PORTABLE  = 1,
    CU_MEMHOSTREGISTER_DEVICEMAP = 2
};
#endif

struct CUmemLocation {
    int type;  // CUmemLocationType
    int id;
};

struct CUmemAllocationProp {
    int type;  // CUmemAllocationType
    int requestedHandleTypes;  // CUmemAllocationHandleType
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
};

struct CUmemAccessDesc {
    CUmemLocation location;
    int flags;  // CUmemAccess_flags
};

/// An allocation exported to other processes (cuIpcGetMemHandle): opaque bytes.
struct CUipcMemHandle {
    char reserved[64];  // CU_IPC_HANDLE_SIZE
};
enum : unsigned {
    CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
};  // CUipcMem_flags

}  // namespace gdr::cuda_driver
