/**
 * @file endpoint.hpp
 * @brief ucp_cpp::endpoint: RAII owner of a ucp_ep_h and the point-to-point operations on it
 *        (tagged, stream, active-message sends; RMA and atomics in rkey.hpp; flush; close).
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
 */
#pragma once

#include <ucp_cpp/error.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/worker.hpp>

#include <ucp/api/ucp.h>

#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

namespace ucp_cpp {

class remote_key;
class connection_request;
struct packed_rkey;

struct endpoint_params {
    /// UCP_ERR_HANDLING_MODE_PEER (true): peer failures are reported instead of hanging.
    bool peer_error_handling = true;
    /// Called once (on the progressing thread) when UCX declares the endpoint failed.  It may
    /// drop the last reference to the endpoint.
    std::function<void(ucs_status_t)> on_error;
    std::string name = "ucp_cpp";
};

class endpoint : public std::enable_shared_from_this<endpoint> {
    struct private_tag {};

public:
    /// Connects to the worker whose address a peer sent out of band.
    static std::shared_ptr<endpoint> connect(std::shared_ptr<worker> owner,
                                             const worker_address &address,
                                             const endpoint_params &params = {})
    {
        ucp_ep_params_t ep_params{};
        ep_params.field_mask     = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address        = address.data();
        return std::make_shared<endpoint>(private_tag{}, std::move(owner), ep_params, params);
    }

    /// Connects to a listener (client side of UCP's client-server connection establishment).
    static std::shared_ptr<endpoint> connect(std::shared_ptr<worker> owner,
                                             const sockaddr *address, socklen_t length,
                                             const endpoint_params &params = {})
    {
        ucp_ep_params_t ep_params{};
        ep_params.field_mask       = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
        ep_params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        ep_params.sockaddr.addr    = address;
        ep_params.sockaddr.addrlen = length;
        return std::make_shared<endpoint>(private_tag{}, std::move(owner), ep_params, params);
    }

    /// Connects to a listener at @p host (name or numeric address) and @p port.
    static std::shared_ptr<endpoint> connect(std::shared_ptr<worker> owner,
                                             const std::string &host, uint16_t port,
                                             const endpoint_params &params = {})
    {
        addrinfo hints{};
        hints.ai_family   = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo *found   = nullptr;
        int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
        if (rc != 0) {
            throw ucx_error(UCS_ERR_INVALID_ADDR,
                            "endpoint::connect(" + host + "): " + gai_strerror(rc));
        }
        std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, &freeaddrinfo);
        return connect(std::move(owner), found->ai_addr, found->ai_addrlen, params);
    }

    /// Accepts a connection request that a listener received (defined in listener.hpp).
    static std::shared_ptr<endpoint> accept(std::shared_ptr<worker> owner,
                                            connection_request request,
                                            const endpoint_params &params = {});

    endpoint(private_tag, std::shared_ptr<worker> owner, ucp_ep_params_t ep_params,
             const endpoint_params &params)
        : worker_(std::move(owner)), on_error_(params.on_error),
          callback_state_(std::make_unique<callback_state>())
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
        check_status(ucp_ep_create(worker_->handle(), &ep_params, &handle_), "ucp_ep_create");
    }

    endpoint(const endpoint &)            = delete;
    endpoint &operator=(const endpoint &) = delete;

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

    ucp_ep_h handle() const noexcept { return handle_; }
    const std::shared_ptr<worker> &owner() const noexcept { return worker_; }

    /// UCS_OK, or the error UCX reported for this endpoint (peer failure, ...).
    ucs_status_t error_status() const noexcept { return error_status_.load(); }
    bool failed() const noexcept { return error_status() != UCS_OK; }

    // ---- tag matching ----

    [[nodiscard]] request tag_send(const void *buffer, size_t length, ucp_tag_t tag,
                                   const op_options &options = {})
    {
        request::builder op(request::kind::send, options);
        return op.finish(worker_, ucp_tag_send_nbx(live("tag_send"), buffer, length, tag, op.param()),
                         length);
    }

    /// Completes only once the receiver has matched the message (synchronous send).
    [[nodiscard]] request tag_send_sync(const void *buffer, size_t length, ucp_tag_t tag,
                                        const op_options &options = {})
    {
        request::builder op(request::kind::send, options);
        return op.finish(worker_,
                         ucp_tag_send_sync_nbx(live("tag_send_sync"), buffer, length, tag, op.param()),
                         length);
    }

    // ---- stream ----

    [[nodiscard]] request stream_send(const void *buffer, size_t length,
                                      const op_options &options = {})
    {
        worker_->ctx()->require_features(UCP_FEATURE_STREAM, "endpoint::stream_send");
        request::builder op(request::kind::send, options);
        return op.finish(worker_,
                         ucp_stream_send_nbx(live("stream_send"), buffer, length, op.param()),
                         length);
    }

    /// Receives exactly @p length bytes (UCP_STREAM_RECV_FLAG_WAITALL) unless options.flags
    /// asks otherwise; request::length() tells how many arrived.
    [[nodiscard]] request stream_recv(void *buffer, size_t length, const op_options &options = {})
    {
        worker_->ctx()->require_features(UCP_FEATURE_STREAM, "endpoint::stream_recv");
        op_options with_flags = options;
        if (with_flags.flags == 0) {
            with_flags.flags = UCP_STREAM_RECV_FLAG_WAITALL;
        }
        request::builder op(request::kind::stream_recv, with_flags);
        return op.finish(worker_,
                         ucp_stream_recv_nbx(live("stream_recv"), buffer, length, op.length_slot(),
                                             op.param()),
                         0);
    }

    // ---- active messages ----

    /// Sends active message @p id with a user header and payload.  options.flags takes
    /// UCP_AM_SEND_FLAG_EAGER / _RNDV / _REPLY.  The header may be reused when this returns
    /// only if the request is complete: keep it alive with the payload.
    [[nodiscard]] request am_send(uint16_t id, const void *header, size_t header_length,
                                  const void *buffer, size_t length,
                                  const op_options &options = {})
    {
        worker_->ctx()->require_features(UCP_FEATURE_AM, "endpoint::am_send");
        request::builder op(request::kind::send, options);
        return op.finish(worker_,
                         ucp_am_send_nbx(live("am_send"), id, header, header_length, buffer,
                                         length, op.param()),
                         length);
    }

    // ---- RMA and atomics (defined in rkey.hpp) ----

    /// Unpacks a peer's packed remote key for use on this endpoint.
    remote_key unpack_rkey(const packed_rkey &packed);

    [[nodiscard]] request put(const void *buffer, size_t length, uint64_t remote_address,
                              const remote_key &rkey, const op_options &options = {});
    [[nodiscard]] request get(void *buffer, size_t length, uint64_t remote_address,
                              const remote_key &rkey, const op_options &options = {});

    /// Non-fetching atomic (ADD, AND, OR, XOR) on a 32- or 64-bit remote word.
    template <class T>
    [[nodiscard]] request atomic_post(ucp_atomic_op_t op, T operand, uint64_t remote_address,
                                      const remote_key &rkey);
    /// Fetching atomic (ADD, SWAP, AND, OR, XOR): *result receives the old remote value and must
    /// stay valid until the request completes.
    template <class T>
    [[nodiscard]] request atomic_fetch(ucp_atomic_op_t op, T operand, T *result,
                                       uint64_t remote_address, const remote_key &rkey);
    /// Compare-and-swap: if remote == expected then remote = desired; *result gets the old value.
    template <class T>
    [[nodiscard]] request compare_swap(T expected, T desired, T *result, uint64_t remote_address,
                                       const remote_key &rkey);

    // ---- completion ----

    /// Completes when all operations issued on this endpoint so far are complete remotely.
    [[nodiscard]] request flush(const op_options &options = {})
    {
        request::builder op(request::kind::send, options);
        return op.finish(worker_, ucp_ep_flush_nbx(live("flush"), op.param()), 0);
    }

    /// Closes now and returns the close request (wait on it for an orderly shutdown).  After
    /// this every operation throws ucx_error(UCS_ERR_NOT_CONNECTED).
    [[nodiscard]] request close(bool force = false)
    {
        ucp_ep_h ep = live("close");
        callback_state_->owner.store(nullptr);
        handle_ = nullptr;
        op_options options;
        options.flags = (force || failed()) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        request::builder op(request::kind::send, options);
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
            throw ucx_error(UCS_ERR_NOT_CONNECTED,
                            std::string("endpoint::") + operation + ": endpoint is closed");
        }
        return handle_;
    }

    std::shared_ptr<worker> worker_;
    ucp_ep_h handle_ = nullptr;
    std::function<void(ucs_status_t)> on_error_;
    std::atomic<ucs_status_t> error_status_{UCS_OK};
    std::unique_ptr<callback_state> callback_state_;
};

}  // namespace ucp_cpp

#include <ucp_cpp/listener.hpp>
#include <ucp_cpp/rkey.hpp>
