/**
 * @file memory.hpp
 * @brief ucp_cpp::memory_handle: RAII owner of a ucp_mem_h (ucp_mem_map of host or CUDA memory).
 *
 * Lifetime: held by std::shared_ptr; keeps its context alive (ucp_mem_unmap needs it).  The
 * registered buffer itself belongs to the application and must outlive the handle, unless the
 * handle allocated it (allocate()), in which case ucp_mem_unmap frees it.  Packed remote keys
 * (packed_rkey) are plain bytes and do not depend on the handle; a peer's remote_key stays usable
 * only while this registration exists.
 * Threading: immutable after creation; safe from any thread.
 */
#pragma once

#include <ucp_cpp/context.hpp>
#include <ucp_cpp/error.hpp>

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace ucp_cpp {

/// A remote key in its packed, transferable form (send it to the peer out of band or over UCP).
struct packed_rkey {
    std::vector<uint8_t> bytes;
};

class memory_handle {
    struct private_tag {};

public:
    /**
     * Registers [address, address + length).  @p type is passed to UCP (UCS_MEMORY_TYPE_CUDA for
     * GPU memory; UNKNOWN lets UCP detect it).  Throws ucx_error if no transport can register
     * that memory type.
     */
    static std::shared_ptr<memory_handle> map(std::shared_ptr<context> ctx, void *address,
                                              size_t length,
                                              ucs_memory_type_t type = UCS_MEMORY_TYPE_UNKNOWN)
    {
        ucp_mem_map_params_t params{};
        params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        params.address    = address;
        params.length     = length;
        if (type != UCS_MEMORY_TYPE_UNKNOWN) {
            params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
            params.memory_type = type;
        }
        return std::make_shared<memory_handle>(private_tag{}, std::move(ctx), params);
    }

    /// Lets UCP allocate and register @p length bytes of host memory (freed with the handle).
    static std::shared_ptr<memory_handle> allocate(std::shared_ptr<context> ctx, size_t length)
    {
        ucp_mem_map_params_t params{};
        params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                            UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        params.address    = nullptr;
        params.length     = length;
        params.flags      = UCP_MEM_MAP_ALLOCATE;
        return std::make_shared<memory_handle>(private_tag{}, std::move(ctx), params);
    }

    memory_handle(private_tag, std::shared_ptr<context> ctx, const ucp_mem_map_params_t &params)
        : context_(std::move(ctx))
    {
        if (params.length == 0) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, "memory_handle: cannot register 0 bytes");
        }
        check_status(ucp_mem_map(context_->handle(), &params, &handle_), "ucp_mem_map");
        ucp_mem_attr_t attr{};
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH |
                          UCP_MEM_ATTR_FIELD_MEM_TYPE;
        ucs_status_t status = ucp_mem_query(handle_, &attr);
        if (status != UCS_OK) {
            ucp_mem_unmap(context_->handle(), handle_);
            throw ucx_error(status, "ucp_mem_query");
        }
        address_     = attr.address;
        length_      = attr.length;
        memory_type_ = attr.mem_type;
    }

    memory_handle(const memory_handle &)            = delete;
    memory_handle &operator=(const memory_handle &) = delete;
    ~memory_handle() { ucp_mem_unmap(context_->handle(), handle_); }

    ucp_mem_h handle() const noexcept { return handle_; }
    void *address() const noexcept { return address_; }
    /// Registered length (UCP may round it up to page boundaries).
    size_t length() const noexcept { return length_; }
    ucs_memory_type_t memory_type() const noexcept { return memory_type_; }
    uint64_t remote_address() const noexcept { return reinterpret_cast<uintptr_t>(address_); }

    /// Packs the key a peer needs for RMA/atomics on this memory.
    packed_rkey pack_rkey() const
    {
        void *buffer = nullptr;
        size_t size  = 0;
        check_status(ucp_rkey_pack(context_->handle(), handle_, &buffer, &size), "ucp_rkey_pack");
        const auto *bytes = static_cast<const uint8_t *>(buffer);
        packed_rkey packed{std::vector<uint8_t>(bytes, bytes + size)};
        ucp_rkey_buffer_release(buffer);
        return packed;
    }

private:
    std::shared_ptr<context> context_;
    ucp_mem_h handle_    = nullptr;
    void *address_       = nullptr;
    size_t length_       = 0;
    ucs_memory_type_t memory_type_ = UCS_MEMORY_TYPE_HOST;
};

}  // namespace ucp_cpp
