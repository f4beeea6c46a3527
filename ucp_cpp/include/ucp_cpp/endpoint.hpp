/**
 * @file endpoint.hpp
 * @brief ucp_cpp::endpoint: RAII owner of a ucp_ep_h and the point-to-point operations on it
 *        (tagged, stream and active-message sends; RMA and atomics; flush; close), and
 *        endpoint_params.
 *
 * Lifetime: held by std::shared_ptr; keeps its worker alive.  Destroying the endpoint closes it
 * without blocking: gracefully (flush) if healthy, forcibly if it failed; the close request is
 * handed to the worker, which finishes it during later progress or in its own destructor.  If
 * the last reference goes away inside a UCX callback of the same worker (typically the error
 * handler), or while another thread owns the worker's progress, the close itself is deferred to
 * the end of the current/next progress() call.  The error handler is never called after the
 * destructor has started, and never on freed memory.
 *
 * Errors: endpoints use UCP_ERR_HANDLING_MODE_PEER by default, so a dead peer fails the
 * outstanding requests with an error status (instead of hanging) and calls on_error once.
 *
 * Threading: as for the worker (MULTI: any thread; otherwise serialised with the worker).
 *
 * Layer: above request.hpp.  The members that take types of higher layers (accept() a
 * connection_request of listener.hpp; unpack_rkey(), put, get and the atomics a remote_key of
 * rkey.hpp) are declared here and defined in detail/endpoint.inl, which <ucp_cpp/ucp_cpp.hpp>
 * includes: programs include the umbrella.
 */
#pragma once

#include <ucp_cpp/error.hpp>
#include <ucp_cpp/listener.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/worker.hpp>

#include <ucp/api/ucp.h>

#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace ucp_cpp {

class remote_key;  // rkey.hpp
struct packed_rkey;  // memory.hpp
struct remote_memory;  // memory.hpp

/// @brief How an endpoint is created (every endpoint::connect() / accept()).  A plain value.
struct endpoint_params {
    /// UCP_ERR_HANDLING_MODE_PEER (true): peer failures are reported instead of hanging.
    bool peer_error_handling = true;
    /// Called once (on the progressing thread) when UCX declares the endpoint failed.  It may
    /// drop the last reference to the endpoint.
    std::function<void(ucs_status_t)> on_error;
    /// Name shown in UCX logs.
    std::string name = "ucp_cpp";
};

/**
 * @brief A connection to a peer worker (ucp_ep_h) and the operations on it.
 *
 * Non-copyable, non-movable: created by connect()/accept() and shared by std::shared_ptr.
 * Lifetime, errors and threading: see the file comment.  Every operation returns a request and
 * never throws for a transfer error; they throw ucx_error(UCS_ERR_NOT_CONNECTED) after close(),
 * and ucx_error(UCS_ERR_INVALID_PARAM) if the context lacks the feature they need.
 */
class endpoint : public std::enable_shared_from_this<endpoint> {
    struct private_tag {};

public:
    /**
     * @brief Connects to the worker whose address a peer sent out of band.
     * @param owner   the local worker; kept alive by the endpoint.
     * @param address the peer's worker::address().
     * @param params  error handling, on_error, name.
     * @return the endpoint, shared.
     * @throws ucx_error if ucp_ep_create fails (e.g. no common transport).
     */
    static std::shared_ptr<endpoint> connect(std::shared_ptr<worker> owner,
                                             const worker_address &address,
                                             const endpoint_params &params = {})
    {
        ucp_ep_params_t ep_params{};
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = address.data();
        detail::peer_description peer{worker_name(address), {}};
        if (params.peer_error_handling && !owner->ctx()->tls_includes("tcp")) {
            peer.unreachable_hint =
                "UCX_TLS=" + owner->ctx()->tls() +
                ": UCX's shared-memory transports cannot detect a failed peer, which "
                "endpoint_params::peer_error_handling (true by default) asks for; set it to "
                "false, or UCX_MM_ERROR_HANDLING=y, or add tcp to UCX_TLS";
        }
        return std::make_shared<endpoint>(private_tag{}, std::move(owner), ep_params, params,
                                          std::move(peer));
    }

    /**
     * @brief Connects to a listener (client side of UCP's client-server connection
     *        establishment).
     * @param owner   the local worker; kept alive by the endpoint.
     * @param address the listener's socket address.
     * @param length  the size of *address.
     * @param params  error handling, on_error, name.
     * @return the endpoint, shared (wireup completes during later progress).
     * @throws ucx_error if ucp_ep_create fails.
     */
    static std::shared_ptr<endpoint> connect(std::shared_ptr<worker> owner, const sockaddr *address,
                                             socklen_t length, const endpoint_params &params = {})
    {
        ucp_ep_params_t ep_params{};
        ep_params.field_mask       = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
        ep_params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        ep_params.sockaddr.addr    = address;
        ep_params.sockaddr.addrlen = length;
        detail::peer_description peer{connection_request::format_address(address),
                                      sockaddr_hint(*owner)};
        return std::make_shared<endpoint>(private_tag{}, std::move(owner), ep_params, params,
                                          std::move(peer));
    }

    /**
     * @brief Connects to a listener at @p host and @p port.
     * @param owner  the local worker; kept alive by the endpoint.
     * @param host   a host name or numeric address (resolved with getaddrinfo; first answer).
     * @param port   the listener's port.
     * @param params error handling, on_error, name.
     * @return the endpoint, shared (wireup completes during later progress; peer() is
     *         "host:port", with the address it resolved to if @p host is a name).  Needs tcp in
     *         UCX_TLS (or an RDMA transport with RDMA-CM): without, the first operation fails
     *         with UCS_ERR_UNREACHABLE and its error says so.
     * @throws ucx_error(UCS_ERR_INVALID_ADDR) if @p host does not resolve, or ucx_error if
     *         ucp_ep_create fails.
     */
    static std::shared_ptr<endpoint> connect(std::shared_ptr<worker> owner, const std::string &host,
                                             uint16_t port, const endpoint_params &params = {})
    {
        addrinfo hints{};
        hints.ai_family   = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo *found   = nullptr;
        int rc            = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
        if (rc != 0) {
            throw ucx_error(UCS_ERR_INVALID_ADDR, "endpoint::connect(" + host + ":" +
                                                      std::to_string(port) +
                                                      "): " + gai_strerror(rc));
        }
        std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, &freeaddrinfo);
        ucp_ep_params_t ep_params{};
        ep_params.field_mask       = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
        ep_params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        ep_params.sockaddr.addr    = found->ai_addr;
        ep_params.sockaddr.addrlen = found->ai_addrlen;
        const std::string resolved = connection_request::format_address(found->ai_addr);
        detail::peer_description peer{host + ":" + std::to_string(port), sockaddr_hint(*owner)};
        if (resolved.rfind(host + ":", 0) != 0) {
            peer.name += " (" + resolved + ")";
        }
        return std::make_shared<endpoint>(private_tag{}, std::move(owner), ep_params, params,
                                          std::move(peer));
    }

    /**
     * @brief Accepts a connection request that a listener received (server side).  Defined in
     *        detail/endpoint.inl.
     * @param owner   the local worker (usually the listener's); kept alive by the endpoint.
     * @param request the request; consumed.
     * @param params  error handling, on_error, name.
     * @return the endpoint, shared.
     * @throws ucx_error if ucp_ep_create fails.
     */
    static std::shared_ptr<endpoint> accept(std::shared_ptr<worker> owner,
                                            connection_request request,
                                            const endpoint_params &params = {});

    /**
     * @brief Use connect() or accept(); public only so that std::make_shared can call it.
     * @param owner     the local worker.
     * @param ep_params UCP's parameters naming the peer; error handling and name are added.
     * @param params    error handling, on_error, name.
     * @param peer      who the peer is, for error texts.
     */
    endpoint(private_tag, std::shared_ptr<worker> owner, ucp_ep_params_t ep_params,
             const endpoint_params &params, detail::peer_description peer)
        : worker_(std::move(owner)),
          on_error_(params.on_error),
          callback_state_(std::make_unique<callback_state>()),
          peer_(std::make_shared<const detail::peer_description>(std::move(peer)))
    {
        callback_state_->owner.store(this);
        ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_NAME;
        ep_params.err_mode = params.peer_error_handling ? UCP_ERR_HANDLING_MODE_PEER
                                                        : UCP_ERR_HANDLING_MODE_NONE;
        ep_params.name     = params.name.c_str();
        if (params.peer_error_handling) {
            ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep_params.err_handler.cb  = &endpoint::ucx_error_callback;
            ep_params.err_handler.arg = callback_state_.get();
        }
        ucs_status_t status = ucp_ep_create(worker_->handle(), &ep_params, &handle_);
        if (status != UCS_OK) {
            std::string what = "endpoint to " + peer_->name + ": ucp_ep_create";
            if (status == UCS_ERR_UNREACHABLE && !peer_->unreachable_hint.empty()) {
                what += std::string(": ") + ucs_status_string(status) + "; " +
                        peer_->unreachable_hint;
            }
            throw ucx_error(status, what);
        }
    }

    endpoint(const endpoint &)            = delete;
    endpoint &operator=(const endpoint &) = delete;

    /**
     * @brief Closes the endpoint without blocking (unless close() did already): flush mode if
     *        healthy, force mode if it failed; the worker finishes the close request.
     */
    ~endpoint()
    {
        if (handle_ == nullptr) {
            return;  // close() was called
        }
        callback_state_->owner.store(nullptr);  // no error callback reaches this object any more
        const uint32_t flags = failed() ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        if (worker_->in_own_callback() || worker_->calls_belong_to_other_thread()) {
            // Not here: inside a UCX callback ucp_ep_close_nbx may free state UCX still uses;
            // on a non-owner thread of a SINGLE worker it would race with the owner.
            callback_state *state = callback_state_.release();
            worker *owner         = worker_.get();
            worker_->defer([owner, ep = handle_, flags, state] {
                close_and_hand_over(*owner, ep, flags);
                delete state;
            });
            return;
        }
        close_and_hand_over(*worker_, handle_, flags);
    }

    /**
     * @brief The UCP handle, for UCP calls the wrapper does not cover.
     * @return the ucp_ep_h, or nullptr after close().
     */
    ucp_ep_h handle() const noexcept { return handle_; }

    /**
     * @brief The worker the endpoint belongs to.
     * @return the worker (kept alive by the endpoint).
     */
    const std::shared_ptr<worker> &owner() const noexcept { return worker_; }

    /**
     * @brief What UCX reported for this endpoint.  Thread-safe.
     * @return UCS_OK, or the error UCX reported (peer failure, ...).
     */
    ucs_status_t error_status() const noexcept { return error_status_.load(); }

    /**
     * @brief Whether UCX declared the endpoint failed.  Thread-safe.
     * @return error_status() != UCS_OK.
     */
    bool failed() const noexcept { return error_status() != UCS_OK; }

    /**
     * @brief Who the endpoint connects to, as its error texts name it.
     * @return "host:port" (connect() by name or address; a name is followed by the address it
     *         resolved to), "client ip:port" (accept()), or "worker 0x<uid>" (connect() to a
     *         worker address: the peer worker's unique id).
     */
    const std::string &peer() const noexcept { return peer_->name; }

    // ---- tag matching ----

    /**
     * @brief Sends a tagged message (ucp_tag_send_nbx).
     * @param buffer  the message; must stay valid until the request completes.
     * @param length  its size in bytes.
     * @param tag     the tag the receiver matches on.
     * @param options memory type / memh of @p buffer, callback, flags.
     * @return the request; complete when @p buffer may be reused.
     * @throws ucx_error(UCS_ERR_NOT_CONNECTED) after close().
     */
    [[nodiscard]] request tag_send(const void *buffer, size_t length, ucp_tag_t tag,
                                   const op_options &options = {})
    {
        request::builder op(request::kind::send, options);
        op.describe("endpoint::tag_send", &peer_);
        return op.finish(worker_,
                         ucp_tag_send_nbx(live("tag_send"), buffer, length, tag, op.param()),
                         length);
    }

    /**
     * @brief Sends a tagged message that completes only once the receiver has matched it
     *        (ucp_tag_send_sync_nbx).
     * @param buffer  the message; must stay valid until the request completes.
     * @param length  its size in bytes.
     * @param tag     the tag the receiver matches on.
     * @param options memory type / memh of @p buffer, callback, flags.
     * @return the request.
     * @throws ucx_error(UCS_ERR_NOT_CONNECTED) after close().
     */
    [[nodiscard]] request tag_send_sync(const void *buffer, size_t length, ucp_tag_t tag,
                                        const op_options &options = {})
    {
        request::builder op(request::kind::send, options);
        op.describe("endpoint::tag_send_sync", &peer_);
        return op.finish(worker_,
                         ucp_tag_send_sync_nbx(live("tag_send_sync"), buffer, length, tag,
                                               op.param()),
                         length);
    }

    // ---- stream ----

    /**
     * @brief Sends bytes on the endpoint's stream (ucp_stream_send_nbx).
     * @param buffer  the data; must stay valid until the request completes.
     * @param length  its size in bytes.
     * @param options memory type / memh of @p buffer, callback, flags.
     * @return the request.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) without UCP_FEATURE_STREAM;
     *         ucx_error(UCS_ERR_NOT_CONNECTED) after close().
     */
    [[nodiscard]] request stream_send(const void *buffer, size_t length,
                                      const op_options &options = {})
    {
        worker_->ctx()->require_features(UCP_FEATURE_STREAM, "endpoint::stream_send");
        request::builder op(request::kind::send, options);
        op.describe("endpoint::stream_send", &peer_);
        return op.finish(worker_,
                         ucp_stream_send_nbx(live("stream_send"), buffer, length, op.param()),
                         length);
    }

    /**
     * @brief Receives bytes from the endpoint's stream (ucp_stream_recv_nbx).
     * @param buffer  where they land; must stay valid until the request completes.
     * @param length  how many: exactly this many (UCP_STREAM_RECV_FLAG_WAITALL) unless
     *                options.flags asks otherwise.
     * @param options memory type / memh of @p buffer, callback, flags (0: WAITALL).
     * @return the request; request::length() tells how many arrived.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) without UCP_FEATURE_STREAM;
     *         ucx_error(UCS_ERR_NOT_CONNECTED) after close().
     */
    [[nodiscard]] request stream_recv(void *buffer, size_t length, const op_options &options = {})
    {
        worker_->ctx()->require_features(UCP_FEATURE_STREAM, "endpoint::stream_recv");
        op_options with_flags = options;
        if (with_flags.flags == 0) {
            with_flags.flags = UCP_STREAM_RECV_FLAG_WAITALL;
        }
        request::builder op(request::kind::stream_recv, with_flags);
        op.describe("endpoint::stream_recv", &peer_, length);
        return op.finish(worker_,
                         ucp_stream_recv_nbx(live("stream_recv"), buffer, length, op.length_slot(),
                                             op.param()),
                         0);
    }

    // ---- active messages ----

    /**
     * @brief Sends active message @p id with a user header and payload (ucp_am_send_nbx).
     * @param id            the handler id on the receiver (worker::set_am_handler()).
     * @param header        the user header; reusable when this returns only if the request is
     *                      complete: keep it alive with the payload.
     * @param header_length its size in bytes.
     * @param buffer        the payload; must stay valid until the request completes.
     * @param length        its size in bytes.
     * @param options       memory type / memh of @p buffer, callback, and in flags
     *                      UCP_AM_SEND_FLAG_EAGER / _RNDV / _REPLY.
     * @return the request.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) without UCP_FEATURE_AM;
     *         ucx_error(UCS_ERR_NOT_CONNECTED) after close().
     */
    [[nodiscard]] request am_send(uint16_t id, const void *header, size_t header_length,
                                  const void *buffer, size_t length, const op_options &options = {})
    {
        worker_->ctx()->require_features(UCP_FEATURE_AM, "endpoint::am_send");
        request::builder op(request::kind::send, options);
        op.describe("endpoint::am_send", &peer_);
        return op.finish(worker_,
                         ucp_am_send_nbx(live("am_send"), id, header, header_length, buffer, length,
                                         op.param()),
                         length);
    }

    // ---- RMA and atomics (defined in detail/endpoint.inl) ----

    /**
     * @brief Unpacks a peer's packed remote key for use on this endpoint (ucp_ep_rkey_unpack).
     * @param packed what the peer's memory_handle::pack_rkey() produced.
     * @return the key; it keeps this endpoint alive.
     * @throws ucx_error(UCS_ERR_NOT_CONNECTED) after close(); ucx_error(UCS_ERR_INVALID_PARAM)
     *         for an empty key; ucx_error if UCP cannot unpack it.
     */
    remote_key unpack_rkey(const packed_rkey &packed);

    /**
     * @brief Unpacks the key of a peer's remote_memory for use on this endpoint.
     * @param region what the peer's memory_handle::describe() produced (usually received
     *               with remote_memory::unpack() or blocking::recv_remote_memory()).
     * @return the key; it keeps this endpoint alive.  Address the region with
     *         region.address + offset.
     * @throws ucx_error as unpack_rkey(const packed_rkey &) does.
     */
    remote_key unpack_rkey(const remote_memory &region);

    /**
     * @brief Writes local memory into the peer's registered memory (ucp_put_nbx).
     * @param buffer         the source; must stay valid until the request completes.
     * @param length         bytes to write.
     * @param remote_address where, in the peer's address space (its
     *                       memory_handle::remote_address() plus an offset).
     * @param rkey           the peer's key, unpacked on this endpoint.
     * @param options        memory type / memh of @p buffer, callback.
     * @return the request; complete when @p buffer may be reused (flush() for remote
     *         completion).
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) if @p rkey was unpacked on another endpoint;
     *         ucx_error(UCS_ERR_UNSUPPORTED) for a CUDA buffer under UCP's legacy protocols
     *         where they copy RMA data with the CPU (context::legacy_protocols());
     *         ucx_error(UCS_ERR_NOT_CONNECTED) after close().
     */
    [[nodiscard]] request put(const void *buffer, size_t length, uint64_t remote_address,
                              const remote_key &rkey, const op_options &options = {});

    /**
     * @brief Reads the peer's registered memory into local memory (ucp_get_nbx).
     * @param buffer         the destination; must stay valid until the request completes.
     * @param length         bytes to read.
     * @param remote_address where, in the peer's address space.
     * @param rkey           the peer's key, unpacked on this endpoint.
     * @param options        memory type / memh of @p buffer, callback.
     * @return the request; complete when the data is in @p buffer.
     * @throws ucx_error as put() does.
     */
    [[nodiscard]] request get(void *buffer, size_t length, uint64_t remote_address,
                              const remote_key &rkey, const op_options &options = {});

    /**
     * @brief Non-fetching atomic on a remote word (ucp_atomic_op_nbx without reply buffer).
     * @tparam T uint32_t or uint64_t (needs UCP_FEATURE_AMO32 / UCP_FEATURE_AMO64).
     * @param op             UCP_ATOMIC_OP_ADD, _AND, _OR or _XOR.
     * @param operand        the operand (copied at issue time).
     * @param remote_address the word, in the peer's address space (aligned to sizeof(T)).
     * @param rkey           the peer's key, unpacked on this endpoint.
     * @return the request.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) if @p rkey was unpacked on another endpoint or
     *         the context lacks the AMO feature; ucx_error(UCS_ERR_NOT_CONNECTED) after close().
     */
    template <class T>
    [[nodiscard]] request atomic_post(ucp_atomic_op_t op, T operand, uint64_t remote_address,
                                      const remote_key &rkey);

    /**
     * @brief Fetching atomic on a remote word (ucp_atomic_op_nbx with reply buffer).
     * @tparam T uint32_t or uint64_t (needs UCP_FEATURE_AMO32 / UCP_FEATURE_AMO64).
     * @param op             UCP_ATOMIC_OP_ADD, _SWAP, _AND, _OR or _XOR.
     * @param operand        the operand (copied at issue time).
     * @param[out] result    receives the old remote value; must stay valid until the request
     *                       completes.
     * @param remote_address the word, in the peer's address space (aligned to sizeof(T)).
     * @param rkey           the peer's key, unpacked on this endpoint.
     * @return the request.
     * @throws ucx_error as atomic_post() does.
     */
    template <class T>
    [[nodiscard]] request atomic_fetch(ucp_atomic_op_t op, T operand, T *result,
                                       uint64_t remote_address, const remote_key &rkey);

    /**
     * @brief Compare-and-swap on a remote word: if remote == expected then remote = desired.
     * @tparam T uint32_t or uint64_t.
     * @param expected       the value the remote word must have.
     * @param desired        the value it gets if so.
     * @param[out] result    receives the old remote value (compare with @p expected to know
     *                       whether it swapped); must stay valid until the request completes.
     * @param remote_address the word, in the peer's address space (aligned to sizeof(T)).
     * @param rkey           the peer's key, unpacked on this endpoint.
     * @return the request.
     * @throws ucx_error as atomic_post() does.
     */
    template <class T>
    [[nodiscard]] request compare_swap(T expected, T desired, T *result, uint64_t remote_address,
                                       const remote_key &rkey);

    // ---- completion ----

    /**
     * @brief Completes when all operations issued on this endpoint so far are complete
     *        remotely (ucp_ep_flush_nbx).
     * @param options callback.
     * @return the request.
     * @throws ucx_error(UCS_ERR_NOT_CONNECTED) after close().
     */
    [[nodiscard]] request flush(const op_options &options = {})
    {
        request::builder op(request::kind::send, options);
        op.describe("endpoint::flush", &peer_);
        return op.finish(worker_, ucp_ep_flush_nbx(live("flush"), op.param()), 0);
    }

    /**
     * @brief Closes now (ucp_ep_close_nbx); on_error is not called any more.
     * @param force force mode (no flush; the peer sees a failure); used anyway if the endpoint
     *              failed.
     * @return the close request: wait on it for an orderly shutdown.  After this every
     *         operation throws ucx_error(UCS_ERR_NOT_CONNECTED).
     * @throws ucx_error(UCS_ERR_NOT_CONNECTED) if already closed.
     */
    [[nodiscard]] request close(bool force = false)
    {
        ucp_ep_h ep = live("close");
        callback_state_->owner.store(nullptr);
        handle_ = nullptr;
        op_options options;
        options.flags = (force || failed()) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        request::builder op(request::kind::send, options);
        op.describe("endpoint::close", &peer_);
        return op.finish(worker_, ucp_ep_close_nbx(ep, op.param()), 0);
    }

private:
    /// Error-callback target.  Owned by the endpoint, outlives it when the close is deferred.
    struct callback_state {
        std::atomic<endpoint *> owner{nullptr};
    };

    static void close_and_hand_over(worker &owner, ucp_ep_h ep, uint32_t flags)
    {
        ucp_request_param_t param{};
        param.op_attr_mask      = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags             = flags;
        ucs_status_ptr_t result = ucp_ep_close_nbx(ep, &param);
        if (UCS_PTR_IS_PTR(result)) {
            owner.adopt_close_request(result);
        }
    }

    static void ucx_error_callback(void *arg, ucp_ep_h, ucs_status_t status)
    {
        endpoint *self = static_cast<callback_state *>(arg)->owner.load();
        if (self == nullptr) {
            return;
        }
        self->error_status_.store(status);
        // Copy: the handler may drop the last reference and destroy *self (and on_error_).
        std::function<void(ucs_status_t)> handler = self->on_error_;
        if (handler) {
            try {
                handler(status);
            } catch (...) {
                // must not unwind through UCX
            }
        }
    }

    ucp_ep_h live(const char *operation) const
    {
        if (handle_ == nullptr) {
            throw ucx_error(UCS_ERR_NOT_CONNECTED, std::string("endpoint::") + operation + " to " +
                                                       peer_->name + ": endpoint is closed");
        }
        return handle_;
    }

    /// Where a sockaddr connection fails as unreachable: the transport it needs.
    static std::string sockaddr_hint(const worker &owner)
    {
        if (owner.ctx()->tls_includes("tcp")) {
            return {};
        }
        return "UCX_TLS=" + owner.ctx()->tls() +
               " has no tcp: add tcp to UCX_TLS (connections to a listener's host:port need it, "
               "unless an RDMA transport with RDMA-CM reaches the peer)";
    }

    /// "worker 0x<uid>": the peer worker's unique id (ucp_worker_address_query).
    static std::string worker_name(const worker_address &address)
    {
        ucp_worker_address_attr_t attr{};
        attr.field_mask = UCP_WORKER_ADDRESS_ATTR_FIELD_UID;
        auto *raw = reinterpret_cast<ucp_address_t *>(const_cast<uint8_t *>(address.bytes.data()));
        // UCP reads a header and the 8-byte uid without knowing the length: a real address
        // is far longer than 16 bytes, and a shorter one is not asked.
        if (address.bytes.size() < 16 || ucp_worker_address_query(raw, &attr) != UCS_OK) {
            return "worker (an address of " + std::to_string(address.bytes.size()) + " B)";
        }
        char text[32];
        std::snprintf(text, sizeof(text), "worker 0x%016llx",
                      static_cast<unsigned long long>(attr.worker_uid));
        return text;
    }

    std::shared_ptr<worker> worker_;
    ucp_ep_h handle_ = nullptr;
    std::function<void(ucs_status_t)> on_error_;
    std::atomic<ucs_status_t> error_status_{UCS_OK};
    std::unique_ptr<callback_state> callback_state_;
    std::shared_ptr<const detail::peer_description> peer_;
};

}  // namespace ucp_cpp
