/**
 * @file rkey.hpp
 * @brief ucp_cpp::remote_key: an unpacked remote key bound to an endpoint, and the RMA/atomic
 *        operations of endpoint that use it.
 *
 * Lifetime: move-only; keeps its endpoint (and so the worker) alive, because UCP rkeys are
 * per-endpoint and must be destroyed before the endpoint.  Valid while the peer keeps the
 * registration (its memory_handle) alive.
 * Threading: as for the endpoint.
 */
#pragma once

#include <ucp_cpp/detail/ucx_compat.hpp>
#include <ucp_cpp/endpoint.hpp>
#include <ucp_cpp/memory.hpp>

#include <ucp/api/ucp.h>

#include <memory>
#include <type_traits>

namespace ucp_cpp {

class remote_key {
public:
    remote_key(std::shared_ptr<endpoint> ep, const packed_rkey &packed) : endpoint_(std::move(ep))
    {
        if (packed.bytes.empty()) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, "remote_key: empty packed key");
        }
        check_status(ucp_ep_rkey_unpack(endpoint_->handle(), packed.bytes.data(), &handle_),
                     "ucp_ep_rkey_unpack");
    }
    remote_key(remote_key &&other) noexcept
        : endpoint_(std::move(other.endpoint_)), handle_(std::exchange(other.handle_, nullptr)) {}
    remote_key &operator=(remote_key &&other) noexcept
    {
        if (this != &other) {
            reset();
            endpoint_ = std::move(other.endpoint_);
            handle_   = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    remote_key(const remote_key &)            = delete;
    remote_key &operator=(const remote_key &) = delete;
    ~remote_key() { reset(); }

    ucp_rkey_h handle() const noexcept { return handle_; }
    const std::shared_ptr<endpoint> &owner() const noexcept { return endpoint_; }

private:
    void reset() noexcept
    {
        if (handle_ != nullptr) {
            ucp_rkey_destroy(std::exchange(handle_, nullptr));
        }
        endpoint_.reset();
    }

    std::shared_ptr<endpoint> endpoint_;
    ucp_rkey_h handle_ = nullptr;
};

inline remote_key endpoint::unpack_rkey(const packed_rkey &packed)
{
    live("unpack_rkey");
    return remote_key(shared_from_this(), packed);
}

namespace detail {
inline void check_rkey_endpoint(const remote_key &rkey, const endpoint *ep, const char *operation)
{
    if (rkey.owner().get() != ep) {
        throw ucx_error(UCS_ERR_INVALID_PARAM, std::string("endpoint::") + operation +
                                                   ": remote key was unpacked on another endpoint");
    }
}

template <class T>
constexpr void check_atomic_type()
{
    static_assert(std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>,
                  "UCP atomics operate on uint32_t or uint64_t");
}
}  // namespace detail

namespace detail {

/// RMA on a CUDA buffer under UCP's legacy protocols crashes in UCP where their RMA path copies
/// with the CPU (see context::legacy_protocols()): refuse it with the fix instead.  Where UCX
/// has no such path, UCP fails legacy RMA itself (UCS_ERR_UNSUPPORTED, in the request).
inline void check_rma_memory_type(const context &ctx, const op_options &options, const char *operation)
{
    if (options.memory_type == UCS_MEMORY_TYPE_CUDA && ctx.legacy_protocols() &&
        ucx_compat::legacy_rma_copies_with_cpu()) {
        throw ucx_error(UCS_ERR_UNSUPPORTED,
                        std::string("endpoint::") + operation +
                            " of a CUDA buffer: UCP's legacy protocols (UCX_PROTO_ENABLE=n) copy RMA data "
                            "with the CPU; create the context with UCX_PROTO_ENABLE=y "
                            "(context_params::config[\"PROTO_ENABLE\"] = \"y\")");
    }
}

}  // namespace detail

inline request endpoint::put(const void *buffer, size_t length, uint64_t remote_address,
                             const remote_key &rkey, const op_options &options)
{
    detail::check_rkey_endpoint(rkey, this, "put");
    detail::check_rma_memory_type(*worker_->ctx(), options, "put");
    request::builder op(request::kind::send, options);
    return op.finish(worker_,
                     ucp_put_nbx(live("put"), buffer, length, remote_address, rkey.handle(),
                                 op.param()),
                     length);
}

inline request endpoint::get(void *buffer, size_t length, uint64_t remote_address,
                             const remote_key &rkey, const op_options &options)
{
    detail::check_rkey_endpoint(rkey, this, "get");
    detail::check_rma_memory_type(*worker_->ctx(), options, "get");
    request::builder op(request::kind::send, options);
    return op.finish(worker_,
                     ucp_get_nbx(live("get"), buffer, length, remote_address, rkey.handle(),
                                 op.param()),
                     length);
}

template <class T>
request endpoint::atomic_post(ucp_atomic_op_t op, T operand, uint64_t remote_address,
                              const remote_key &rkey)
{
    return atomic_fetch<T>(op, operand, nullptr, remote_address, rkey);
}

template <class T>
request endpoint::atomic_fetch(ucp_atomic_op_t op, T operand, T *result, uint64_t remote_address,
                               const remote_key &rkey)
{
    detail::check_atomic_type<T>();
    detail::check_rkey_endpoint(rkey, this, "atomic");
    worker_->ctx()->require_features(sizeof(T) == 4 ? UCP_FEATURE_AMO32 : UCP_FEATURE_AMO64,
                                     "endpoint::atomic");
    request::builder amo(request::kind::send, op_options{});
    amo.param()->op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    amo.param()->datatype = ucp_dt_make_contig(sizeof(T));
    if (result != nullptr) {
        amo.param()->op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        amo.param()->reply_buffer = result;
    }
    // UCP copies the operand at issue time, so a stack copy is fine.
    return amo.finish(worker_,
                      ucp_atomic_op_nbx(live("atomic"), op, &operand, 1, remote_address,
                                        rkey.handle(), amo.param()),
                      sizeof(T));
}

template <class T>
request endpoint::compare_swap(T expected, T desired, T *result, uint64_t remote_address,
                               const remote_key &rkey)
{
    // UCP's CSWAP reads the new value from the reply buffer and writes the old one there.
    *result = desired;
    return atomic_fetch<T>(UCP_ATOMIC_OP_CSWAP, expected, result, remote_address, rkey);
}

}  // namespace ucp_cpp
