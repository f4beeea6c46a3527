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
 *
 * Layer: above context.hpp.
 */
#pragma once

#include <ucp_cpp/context.hpp>
#include <ucp_cpp/error.hpp>

#include <ucp/api/ucp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ucp_cpp {

/**
 * @brief A remote key in its packed, transferable form: send it to the peer (out of band or
 *        over UCP), which unpacks it with endpoint::unpack_rkey().  A plain value.
 */
struct packed_rkey {
    /// What ucp_rkey_pack() produced.
    std::vector<uint8_t> bytes;
};

/**
 * @brief Everything a peer needs to reach a registered region with RMA and atomics: its
 *        address, its length and its packed remote key, as one value that travels as bytes
 *        (pack() / unpack(), e.g. in a tag message).  Made by memory_handle::describe(); the
 *        peer unpacks the key on its endpoint (endpoint::unpack_rkey(const remote_memory &)).
 *        A plain value.
 *
 * The byte form is "UCPM", then address (8 bytes), length (8) and key size (4), little-endian,
 * then the key.  blocking::send_remote_memory() / recv_remote_memory() ship it in one tag
 * message.
 */
struct remote_memory {
    /// The region's start in the owner's address space (memory_handle::remote_address()).
    uint64_t address = 0;
    /// The region's length in bytes.
    uint64_t length = 0;
    /// The owner's packed remote key.
    packed_rkey rkey;

    /**
     * @brief The byte form, to send to the peer.
     * @return 24 bytes of header plus the packed key.
     */
    std::vector<uint8_t> pack() const
    {
        std::vector<uint8_t> out(header_size + rkey.bytes.size());
        out[0] = 'U';
        out[1] = 'C';
        out[2] = 'P';
        out[3] = 'M';
        put_le(&out[4], address, 8);
        put_le(&out[12], length, 8);
        put_le(&out[20], rkey.bytes.size(), 4);
        std::copy(rkey.bytes.begin(), rkey.bytes.end(), out.begin() + header_size);
        return out;
    }

    /**
     * @brief Reads what pack() produced.
     * @param data the bytes.
     * @param size how many.
     * @return the descriptor.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) if the bytes are not a packed remote_memory (the
     *         message says what is wrong and the sizes).
     */
    static remote_memory unpack(const void *data, size_t size)
    {
        const auto *in = static_cast<const uint8_t *>(data);
        if (size < header_size || in[0] != 'U' || in[1] != 'C' || in[2] != 'P' || in[3] != 'M') {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            "remote_memory::unpack: " + std::to_string(size) +
                                " B are not a packed remote_memory (it starts with \"UCPM\" and "
                                "has at least " +
                                std::to_string(header_size) + " B)");
        }
        remote_memory region;
        region.address        = get_le(&in[4], 8);
        region.length         = get_le(&in[12], 8);
        const uint64_t keylen = get_le(&in[20], 4);
        if (keylen == 0 || size != header_size + keylen) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, "remote_memory::unpack: a " +
                                                       std::to_string(keylen) + " B key needs " +
                                                       std::to_string(header_size + keylen) +
                                                       " B, got " + std::to_string(size) + " B");
        }
        region.rkey.bytes.assign(in + header_size, in + size);
        return region;
    }

    /**
     * @brief Reads what pack() produced.
     * @param bytes the bytes.
     * @return the descriptor.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) as unpack(data, size) does.
     */
    static remote_memory unpack(const std::vector<uint8_t> &bytes)
    {
        return unpack(bytes.data(), bytes.size());
    }

    /// Size of the byte form without the key.
    static constexpr size_t header_size = 24;

private:
    static void put_le(uint8_t *out, uint64_t value, int bytes)
    {
        for (int i = 0; i < bytes; ++i) {
            out[i] = static_cast<uint8_t>(value >> (8 * i));
        }
    }
    static uint64_t get_le(const uint8_t *in, int bytes)
    {
        uint64_t value = 0;
        for (int i = 0; i < bytes; ++i) {
            value |= uint64_t(in[i]) << (8 * i);
        }
        return value;
    }
};

/**
 * @brief A memory registration (ucp_mem_h): local memory that peers can reach with RMA and
 *        atomics, and that local operations can name (op_options::memh) to skip registration.
 *
 * Non-copyable, non-movable: created by map() or allocate() and shared by std::shared_ptr.
 * Lifetime and threading: see the file comment.
 */
class memory_handle {
    struct private_tag {};

public:
    /**
     * @brief Registers [address, address + length) with every transport of @p ctx
     *        (ucp_mem_map).
     * @param ctx     the context; kept alive by the handle.
     * @param address the memory; must outlive the handle.
     * @param length  its size in bytes (UCP may round the registration up to pages).
     * @param type    passed to UCP: UCS_MEMORY_TYPE_CUDA for GPU memory; UNKNOWN lets UCP
     *                detect it.
     * @return the registration, shared.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) for 0 bytes; ucx_error if no transport can
     *         register that memory (type).
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

    /**
     * @brief Lets UCP allocate and register host memory (ucp_mem_map with
     *        UCP_MEM_MAP_ALLOCATE); it is freed with the handle.
     * @param ctx    the context; kept alive by the handle.
     * @param length bytes to allocate.
     * @return the registration, shared; address() tells where the memory is.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) for 0 bytes; ucx_error if UCP fails.
     */
    static std::shared_ptr<memory_handle> allocate(std::shared_ptr<context> ctx, size_t length)
    {
        ucp_mem_map_params_t params{};
        params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                            UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        params.address = nullptr;
        params.length  = length;
        params.flags   = UCP_MEM_MAP_ALLOCATE;
        return std::make_shared<memory_handle>(private_tag{}, std::move(ctx), params);
    }

    /**
     * @brief Use map() or allocate(); public only so that std::make_shared can call it.
     * @param ctx    the context.
     * @param params what to pass to ucp_mem_map.
     */
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

    /// @brief ucp_mem_unmap(); frees the memory too if allocate() made it.
    ~memory_handle() { ucp_mem_unmap(context_->handle(), handle_); }

    /**
     * @brief The UCP handle: pass it as op_options::memh, or to UCP calls the wrapper does not
     *        cover.
     * @return the ucp_mem_h; valid while this object lives.
     */
    ucp_mem_h handle() const noexcept { return handle_; }

    /**
     * @brief Where the registered memory starts (ucp_mem_query).
     * @return the start address (UCP may have rounded it down to a page).
     */
    void *address() const noexcept { return address_; }

    /**
     * @brief The registered length (ucp_mem_query).
     * @return bytes (UCP may have rounded it up to page boundaries).
     */
    size_t length() const noexcept { return length_; }

    /**
     * @brief The memory type UCP registered (what it detected, or what map() was told).
     * @return e.g. UCS_MEMORY_TYPE_HOST or UCS_MEMORY_TYPE_CUDA.
     */
    ucs_memory_type_t memory_type() const noexcept { return memory_type_; }

    /**
     * @brief address() as the integer a peer passes to RMA operations.
     * @return the start address.
     */
    uint64_t remote_address() const noexcept { return reinterpret_cast<uintptr_t>(address_); }

    /**
     * @brief Packs the key a peer needs for RMA/atomics on this memory (ucp_rkey_pack).
     * @return the packed key (plain bytes; independent of this handle's lifetime).
     * @throws ucx_error if UCP fails.
     */
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

    /**
     * @brief What a peer needs for RMA and atomics on this registration: address, length and
     *        packed key in one value (send remote_memory::pack() to it, or use
     *        blocking::send_remote_memory()).
     * @return {remote_address(), length(), pack_rkey()}.
     * @throws ucx_error if UCP cannot pack the key.
     */
    remote_memory describe() const { return remote_memory{remote_address(), length_, pack_rkey()}; }

private:
    std::shared_ptr<context> context_;
    ucp_mem_h handle_              = nullptr;
    void *address_                 = nullptr;
    size_t length_                 = 0;
    ucs_memory_type_t memory_type_ = UCS_MEMORY_TYPE_HOST;
};

}  // namespace ucp_cpp
