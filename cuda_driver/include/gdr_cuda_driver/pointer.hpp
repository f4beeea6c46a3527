/**
 * @file gdr_cuda_driver/pointer.hpp
 * @brief What the driver knows about an address, from one batched cuPointerGetAttributes call.
 */
#pragma once

#include <gdr_cuda_driver/api.hpp>

#include <cstdint>

namespace gdr::cuda_driver {

/**
 * @brief The pointer attributes every memory query needs: memory type, managed or not, device,
 *        buffer id and owning context.
 *
 * One cuPointerGetAttributes call instead of one cuPointerGetAttribute per attribute: it needs no
 * current context, and for an address the driver does not know it succeeds with zeroed values
 * instead of failing (so memory_type 0 means "not CUDA memory").
 */
struct pointer_attributes {
    unsigned memory_type         = 0;  ///< CUmemorytype; 0: not known to CUDA
    unsigned is_managed          = 0;  ///< the driver writes a bool: the rest stays zero
    int device_ordinal           = -1;
    unsigned long long buffer_id = 0;  ///< process-unique, never reused
    CUcontext context            = nullptr;  ///< nullptr for VMM (cuMemMap) allocations

    /**
     * @brief Fills the attributes of @p addr.
     * @return false when the driver does not know the address (pageable host memory, freed
     *         memory) or the call failed.
     */
    [[nodiscard]] bool query(const driver_api &api, const void *addr)
    {
        int attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                            CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                            CU_POINTER_ATTRIBUTE_CONTEXT};
        void *data[]     = {&memory_type, &is_managed, &device_ordinal, &buffer_id, &context};
        CUresult result  = api.cuPointerGetAttributes(sizeof(attributes) / sizeof(attributes[0]),
                                                      attributes, data,
                                                      static_cast<CUdeviceptr>(
                                                         reinterpret_cast<uintptr_t>(addr)));
        return result == CUDA_SUCCESS && memory_type != 0;
    }

    /** @return true for device memory that is not managed (what dma-buf can export). */
    [[nodiscard]] bool is_device() const noexcept
    {
        return memory_type == CU_MEMORYTYPE_DEVICE && !is_managed;
    }
};

}  // namespace gdr::cuda_driver
