/**
 * @file detail/endpoint.inl
 * @brief The members of ucp_cpp::endpoint that need types of higher layers: accept() (a
 *        connection_request, listener.hpp) and the RMA and atomic operations (a remote_key,
 *        rkey.hpp), with the checks they share.
 *
 * Declared and documented in endpoint.hpp; included once, by <ucp_cpp/ucp_cpp.hpp>.
 */
#pragma once

#include <ucp_cpp/context.hpp>
#include <ucp_cpp/detail/ucx_compat.hpp>
#include <ucp_cpp/endpoint.hpp>
#include <ucp_cpp/error.hpp>
#include <ucp_cpp/listener.hpp>
#include <ucp_cpp/memory.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/rkey.hpp>

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

namespace ucp_cpp {

// ---- connection establishment ----

inline std::shared_ptr<endpoint> endpoint::accept(std::shared_ptr<worker> owner,
                                                  connection_request request,
                                                  const endpoint_params &params)
{
    detail::peer_description peer{"client " + request.client_address(), sockaddr_hint(*owner)};
    ucp_ep_params_t ep_params{};
    ep_params.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
    ep_params.conn_request = request.release();
    return std::make_shared<endpoint>(private_tag{}, std::move(owner), ep_params, params,
                                      std::move(peer));
}

// ---- RMA and atomics ----

inline remote_key endpoint::unpack_rkey(const packed_rkey &packed)
{
    live("unpack_rkey");
    return remote_key(shared_from_this(), packed);
}

inline remote_key endpoint::unpack_rkey(const remote_memory &region)
{
    return unpack_rkey(region.rkey);
}

namespace detail {

/// UCP rkeys are per endpoint: a key used on another one would address the wrong peer.
inline void check_rkey_endpoint(const remote_key &rkey, const endpoint *ep, const char *operation)
{
    if (rkey.owner().get() != ep) {
        throw ucx_error(UCS_ERR_INVALID_PARAM, std::string("endpoint::") + operation +
                                                   ": remote key was unpacked on another endpoint");
    }
}

template <class T> constexpr void check_atomic_type()
{
    static_assert(std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>,
                  "UCP atomics operate on uint32_t or uint64_t");
}

/// RMA on a CUDA buffer under UCP's legacy protocols crashes in UCP where their RMA path copies
/// with the CPU (see context::legacy_protocols()): refuse it with the fix instead.  Where UCX
/// has no such path, UCP fails legacy RMA itself (UCS_ERR_UNSUPPORTED, in the request).
inline void check_rma_memory_type(const context &ctx, const op_options &options,
                                  const char *operation)
{
    if (options.memory_type == UCS_MEMORY_TYPE_CUDA && ctx.legacy_protocols() &&
        ucx_compat::legacy_rma_copies_with_cpu()) {
        throw ucx_error(UCS_ERR_UNSUPPORTED,
                        std::string("endpoint::") + operation +
                            " of a CUDA buffer: UCP's legacy protocols (UCX_PROTO_ENABLE=n) copy "
                            "RMA data with the CPU; create the context with UCX_PROTO_ENABLE=y "
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
    op.describe("endpoint::put", &peer_);
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
    op.describe("endpoint::get", &peer_);
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
    amo.describe("endpoint::atomic", &peer_);
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
