/**
 * @file request.hpp
 * @brief ucp_cpp::request: a nonblocking UCP operation you can test, wait on, cancel, or have
 *        call you back; plus op_options, the per-operation knobs shared by all operations.
 *
 * Every nonblocking call returns a request ([[nodiscard]]).  Errors of the transfer itself
 * (peer failure, cancellation, truncation, ...) never throw at issue time: they are the
 * request's status(), and wait() throws them as ucx_error.
 *
 * Lifetime: a request is move-only and keeps its worker alive.  Dropping a request that has not
 * completed releases it (ucp_request_free): a tag receive is cancelled first; any other
 * operation still runs to completion, so its buffer must stay valid until then (hold the
 * request, or flush the endpoint, before freeing the buffer).  The completion callback runs only
 * while the request object exists: it never touches freed memory.
 *
 * Threading: the completion callback runs on the thread that progresses the worker (or inline,
 * in the issuing thread, when the operation completes immediately).  A request is used by one
 * thread at a time.  With a MULTI worker, wait() may run on any thread, concurrently with a
 * progress_thread; with a SINGLE worker owned by a progress_thread, waiting and dropping work
 * from any thread too (the release is handed to the progress thread).
 *
 * Layer: above worker.hpp (a request drives and releases through its worker).
 */
#pragma once

#include <ucp_cpp/detail/ucx_compat.hpp>
#include <ucp_cpp/error.hpp>
#include <ucp_cpp/worker.hpp>

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace ucp_cpp {

/// @brief What a completed operation reports (request::result(), completion callbacks).
struct completion {
    ucs_status_t status  = UCS_OK;  ///< UCS_OK or the operation's error
    size_t length        = 0;  ///< bytes received (receives) or sent (sends)
    ucp_tag_t sender_tag = 0;  ///< tag of the matched message (tag receives)
};

/// Called once when an operation completes (op_options::on_complete).
using completion_callback = std::function<void(const completion &)>;

/**
 * @brief Per-operation options, shared by every operation.  Defaults: memory type detected by
 *        UCP, no registration, no callback, no flags.  A plain value.
 */
struct op_options {
    /// Memory type of the local buffer, passed to UCP (UCP_OP_ATTR_FIELD_MEMORY_TYPE);
    /// UNKNOWN lets UCP detect it.  Pass UCS_MEMORY_TYPE_CUDA for GPU buffers.
    ucs_memory_type_t memory_type = UCS_MEMORY_TYPE_UNKNOWN;
    /// Registration of the local buffer (memory_handle::handle()): lets UCP skip registering.
    ucp_mem_h memh = nullptr;
    /// Called once when the operation completes, also on immediate completion (inline) and on
    /// errors.  Runs only while the request object is alive.
    completion_callback on_complete;
    /// Operation-specific UCP flags (e.g. UCP_AM_SEND_FLAG_RNDV, UCP_STREAM_RECV_FLAG_WAITALL).
    uint32_t flags = 0;
};

namespace detail {

/// The completion callback of one operation, on the heap so that UCX's user_data pointer
/// stays valid while the request object moves.
struct callback_holder {
    completion_callback fn;
};

inline void send_done(void *, ucs_status_t status, void *user_data)
{
    static_cast<callback_holder *>(user_data)->fn(completion{status, 0, 0});
}

inline void tag_recv_done(void *, ucs_status_t status, const ucp_tag_recv_info_t *info,
                          void *user_data)
{
    completion result{status, 0, 0};
    if (info != nullptr && status == UCS_OK) {
        result.length     = info->length;
        result.sender_tag = info->sender_tag;
    }
    static_cast<callback_holder *>(user_data)->fn(result);
}

inline void length_recv_done(void *, ucs_status_t status, size_t length, void *user_data)
{
    static_cast<callback_holder *>(user_data)->fn(completion{status, length, 0});
}

/// Who an endpoint's operations go to, for the texts of their errors.  Made once per endpoint
/// and shared (read-only) with its failed or pending requests.
struct peer_description {
    std::string name;  ///< e.g. "127.0.0.1:13337", "client 10.0.0.2:41234", "worker 0x1f2e..."
    std::string unreachable_hint;  ///< what to change when UCX finds no way to the peer
};

/// "4096 B".
inline std::string byte_count(size_t bytes)
{
    return std::to_string(bytes) + " B";
}

}  // namespace detail

/**
 * @brief A nonblocking UCP operation: test it, wait on it (bounded or not), cancel it (tag
 *        receives), or have it call back; then read its status, length and sender tag.
 *
 * Move-only; keeps its worker alive.  Lifetime and threading: see the file comment.
 */
class [[nodiscard]] request {
public:
    /// @brief What kind of operation a request is: decides what it reports and how it is freed.
    enum class kind : uint8_t {
        send,  ///< sends, RMA, atomics, flush, close: length() is the size sent
        tag_recv,  ///< tag receive: length() and sender_tag() of the matched message
        stream_recv,  ///< stream receive: length() is what arrived
        am_recv,  ///< active-message data receive: length() is the message's size
    };

    /**
     * @brief Builds ucp_request_param_t for one operation and turns UCP's answer into a request.
     *
     * Used by the operations of worker/endpoint, and by layers (such as the collectives) that
     * issue UCP calls the wrapper does not cover.  One builder per operation, on one thread.
     */
    class builder {
    public:
        /**
         * @brief Prepares the parameters of one operation.
         * @param op_kind what the operation is (decides the callback type and the recv_info).
         * @param options memory type, memh, callback and flags to pass to UCP.
         */
        builder(kind op_kind, const op_options &options) : kind_(op_kind)
        {
            param_.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO;
            if (op_kind == kind::tag_recv) {
                param_.recv_info.tag_info = &tag_info_;
                if (!detail::ucx_compat::fills_recv_info_on_immediate_completion()) {
                    // This UCX leaves recv_info alone when a receive completes immediately:
                    // always get a request, so length() and sender_tag() are right for a
                    // message that was already waiting (they come from the request then).
                    param_.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
                }
            } else {
                param_.recv_info.length = &received_;
            }
            if (options.memory_type != UCS_MEMORY_TYPE_UNKNOWN) {
                param_.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
                param_.memory_type = options.memory_type;
            }
            if (options.memh != nullptr) {
                param_.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
                param_.memh = options.memh;
            }
            if (options.flags != 0) {
                param_.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
                param_.flags = options.flags;
            }
            if (options.on_complete) {
                holder_ = std::make_unique<detail::callback_holder>(
                    detail::callback_holder{options.on_complete});
                param_.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
                param_.user_data = holder_.get();
                switch (op_kind) {
                case kind::send:
                    param_.cb.send = &detail::send_done;
                    break;
                case kind::tag_recv:
                    param_.cb.recv = &detail::tag_recv_done;
                    break;
                case kind::stream_recv:
                    param_.cb.recv_stream = &detail::length_recv_done;
                    break;
                case kind::am_recv:
                    param_.cb.recv_am = &detail::length_recv_done;
                    break;
                }
            }
        }

        /**
         * @brief Names the operation for the request's error texts (optional; without it they
         *        name the kind of operation only).
         * @param operation   the call, e.g. "endpoint::tag_send"; must outlive the request (a
         *                    string literal).
         * @param peer        who it goes to; must stay valid until finish() returns (the request
         *                    copies it only if the operation is pending or failed).
         * @param buffer_size the receive buffer's size (receives), for truncation errors.
         */
        void describe(const char *operation,
                      const std::shared_ptr<const detail::peer_description> *peer = nullptr,
                      size_t buffer_size                                          = 0) noexcept
        {
            operation_   = operation;
            peer_        = peer;
            buffer_size_ = buffer_size;
        }

        /**
         * @brief The parameters to pass to the UCP call; add fields before the call if needed.
         * @return a pointer valid while the builder lives.
         */
        ucp_request_param_t *param() noexcept { return &param_; }

        /**
         * @brief Where an immediately completed length-reporting receive writes its length
         *        (ucp_stream_recv_nbx's length argument).
         * @return a pointer valid while the builder lives.
         */
        size_t *length_slot() noexcept { return &received_; }

        /**
         * @brief What an immediate completion of a probed message's receive reports should UCP
         *        not fill recv_info (it does wherever immediate completion is allowed; a
         *        fallback).
         * @param info the probed message's sender tag and length.
         */
        void preset_tag_info(const tag_info &info) noexcept
        {
            tag_info_.length     = info.length;
            tag_info_.sender_tag = info.sender_tag;
        }

        /**
         * @brief Turns what the UCP call returned into a request; an immediate completion or
         *        error calls the completion callback inline, here.
         * @param owner          the worker the operation runs on; kept by a pending request.
         * @param result         what the UCP *_nbx call returned.
         * @param nominal_length bytes sent, or the size a receive reports when UCP does not
         *                       (AM receive).
         * @return the request (complete already, or pending).
         */
        request finish(const std::shared_ptr<worker> &owner, ucs_status_ptr_t result,
                       size_t nominal_length)
        {
            request req;
            req.kind_        = kind_;
            req.length_      = nominal_length;
            req.operation_   = operation_;
            req.buffer_size_ = buffer_size_;
            if (UCS_PTR_IS_PTR(result)) {
                req.worker_  = owner;
                req.ucp_req_ = result;
                req.holder_  = std::move(holder_);
                if (peer_ != nullptr) {
                    req.peer_ = *peer_;
                }
                return req;
            }
            req.status_ = UCS_PTR_STATUS(result);
            if (req.status_ != UCS_OK && peer_ != nullptr) {
                req.peer_ = *peer_;
            }
            if (req.status_ == UCS_ERR_MESSAGE_TRUNCATED && kind_ == kind::tag_recv) {
                req.message_length_ = tag_info_.length;
            }
            if (req.status_ == UCS_OK) {
                if (kind_ == kind::tag_recv) {
                    req.length_     = tag_info_.length;
                    req.sender_tag_ = tag_info_.sender_tag;
                } else if (kind_ == kind::stream_recv) {
                    req.length_ = received_;
                }
            }
            if (holder_) {  // immediate completion or immediate error: report it inline
                holder_->fn(req.result());
            }
            return req;
        }

    private:
        kind kind_;
        const char *operation_                                       = nullptr;
        const std::shared_ptr<const detail::peer_description> *peer_ = nullptr;
        size_t buffer_size_                                          = 0;
        ucp_request_param_t param_{};
        ucp_tag_recv_info_t tag_info_{};
        size_t received_ = 0;
        std::unique_ptr<detail::callback_holder> holder_;
    };

    /// @brief An empty request: already complete with UCS_OK.
    request() = default;

    /**
     * @brief Takes the operation over; @p other is left empty (complete, UCS_OK).
     * @param other the request to take.
     */
    request(request &&other) noexcept { *this = std::move(other); }

    /**
     * @brief Releases this request's operation (as the destructor does), then takes @p other's.
     * @param other the request to take.
     * @return *this.
     */
    request &operator=(request &&other) noexcept
    {
        if (this != &other) {
            release();
            worker_         = std::move(other.worker_);
            ucp_req_        = std::exchange(other.ucp_req_, nullptr);
            holder_         = std::move(other.holder_);
            status_         = other.status_;
            kind_           = other.kind_;
            length_         = other.length_;
            sender_tag_     = other.sender_tag_;
            operation_      = other.operation_;
            peer_           = std::move(other.peer_);
            buffer_size_    = other.buffer_size_;
            message_length_ = other.message_length_;
        }
        return *this;
    }
    request(const request &)            = delete;
    request &operator=(const request &) = delete;

    /// @brief Releases a pending operation: cancels a tag receive, frees the UCP request.
    ~request() { release(); }

    /**
     * @brief The operation's status.  Does not progress the worker.
     * @return UCS_INPROGRESS while running, then the final status (UCS_OK or the error).
     */
    ucs_status_t status()
    {
        if (ucp_req_ != nullptr) {
            ucs_status_t current = ucp_request_check_status(ucp_req_);
            if (current == UCS_INPROGRESS) {
                return current;
            }
            collect(current);
        }
        return status_;
    }

    /**
     * @brief Whether the operation has completed.  Does not progress the worker.
     * @return status() != UCS_INPROGRESS.
     */
    bool done() { return status() != UCS_INPROGRESS; }

    /**
     * @brief Progresses the worker once (unless another thread owns its progress).
     * @return done() afterwards.
     */
    bool test()
    {
        if (!done() && !worker_->progressed_by_other_thread()) {
            worker_->progress();
        }
        return done();
    }

    /**
     * @brief Waits until complete or @p timeout (worker::progress_until()).
     * @param timeout the longest wait.
     * @return true if complete (whatever its status); never throws for the operation's own
     *         error.
     */
    bool wait_for(std::chrono::nanoseconds timeout)
    {
        if (done()) {
            return true;
        }
        return worker_->progress_until([this] { return done(); }, timeout);
    }

    /**
     * @brief Waits for completion, without a time limit.
     * @throws ucx_error with the operation's error status.
     */
    void wait() { wait(std::chrono::nanoseconds::max()); }

    /**
     * @brief Waits at most @p timeout.
     * @param timeout the longest wait.
     * @throws ucx_error(UCS_ERR_TIMED_OUT) if still running (the request stays valid: wait
     *         again or cancel), or ucx_error with the operation's error status.  The message
     *         names the operation, its peer and its size (error_text()).
     */
    void wait(std::chrono::nanoseconds timeout)
    {
        if (!wait_for(timeout)) {
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
            throw ucx_error(UCS_ERR_TIMED_OUT, error_text() + ": not complete after " +
                                                   std::to_string(ms.count()) + " ms");
        }
        if (status_ != UCS_OK) {
            throw ucx_error(status_, error_text());
        }
    }

    /**
     * @brief What wait() says when the operation failed: the operation, its size, its peer,
     *        and what is known about the failure (the status text follows it in ucx_error;
     *        where UCX found no way to the peer, the text ends with the status and what to
     *        change, e.g. "add tcp to UCX_TLS").
     * @return e.g. "endpoint::tag_send of 4096 B to 127.0.0.1:13337", or "worker::tag_recv:
     *         a 1000 B message for a 10 B buffer"; an operation issued by a layer that did not
     *         describe it (request::builder::describe()) is named by its kind.
     */
    std::string error_text() const
    {
        std::string text = operation_ != nullptr ? operation_ : operation_name();
        switch (kind_) {
        case kind::send:
            if (length_ != 0) {
                text += " of " + detail::byte_count(length_);
            }
            if (peer_) {
                text += " to " + peer_->name;
            }
            break;
        case kind::tag_recv:
            if (status_ == UCS_ERR_MESSAGE_TRUNCATED && message_length_ > buffer_size_) {
                text += ": a " + detail::byte_count(message_length_) + " message for a " +
                        detail::byte_count(buffer_size_) + " buffer";
            } else if (operation_ != nullptr) {
                text += " into a " + detail::byte_count(buffer_size_) + " buffer";
            }
            break;
        case kind::stream_recv:
        case kind::am_recv:
            if (operation_ != nullptr) {
                text += " of " + detail::byte_count(buffer_size_);
            }
            if (peer_) {
                text += " from " + peer_->name;
            }
            break;
        }
        if (status_ == UCS_ERR_UNREACHABLE && peer_ && !peer_->unreachable_hint.empty()) {
            text += std::string(": ") + ucs_status_string(status_) + "; " + peer_->unreachable_hint;
        }
        return text;
    }

    /**
     * @brief Cancels a pending tag receive: it completes with UCS_ERR_CANCELED.
     *
     * UCP cannot cancel other operations: for them this is a no-op and they complete normally
     * or with an error.  On a non-owner thread of a SINGLE worker owned by a progress_thread,
     * the cancel runs on that thread.
     */
    void cancel()
    {
        if (ucp_req_ != nullptr && kind_ == kind::tag_recv) {
            if (worker_->calls_belong_to_other_thread()) {
                worker_->defer([owner = worker_.get(), req = ucp_req_] {
                    ucp_request_cancel(owner->handle(), req);
                });
            } else {
                ucp_request_cancel(worker_->handle(), ucp_req_);
            }
        }
    }

    /**
     * @brief How many bytes the operation moved.
     * @return the bytes received (receives; valid once complete) or the size sent (sends).
     */
    size_t length()
    {
        status();
        return length_;
    }

    /**
     * @brief The tag of the message a tag receive matched.
     * @return the sender's tag (tag receives, once complete); 0 otherwise.
     */
    ucp_tag_t sender_tag()
    {
        status();
        return sender_tag_;
    }

    /**
     * @brief Status, length and sender tag in one value.
     * @return {status(), length(), sender_tag()}.
     */
    completion result() { return completion{status(), length_, sender_tag_}; }

    /**
     * @brief What kind of operation this is.
     * @return the kind given to request::builder.
     */
    kind op_kind() const noexcept { return kind_; }

    /**
     * @brief The raw UCP request while pending.
     * @return the UCP request, or nullptr once complete and released (or for an operation that
     *         completed immediately).
     */
    void *native_handle() const noexcept { return ucp_req_; }

private:
    const char *operation_name() const noexcept
    {
        switch (kind_) {
        case kind::tag_recv:
            return "tag receive";
        case kind::stream_recv:
            return "stream receive";
        case kind::am_recv:
            return "active message receive";
        default:
            return "send/RMA/flush/close";
        }
    }

    /// Records the final status and info of a completed UCP request and releases it.
    void collect(ucs_status_t final_status)
    {
        status_ = final_status;
        if (final_status == UCS_ERR_MESSAGE_TRUNCATED && kind_ == kind::tag_recv) {
            ucp_tag_recv_info_t info{};
            (void)ucp_tag_recv_request_test(ucp_req_, &info);  // UCP gives the message's size
            message_length_ = info.length;
        } else if (final_status == UCS_OK && kind_ == kind::tag_recv) {
            ucp_tag_recv_info_t info{};
            if (ucp_tag_recv_request_test(ucp_req_, &info) == UCS_OK) {
                length_     = info.length;
                sender_tag_ = info.sender_tag;
            }
        } else if (final_status == UCS_OK && kind_ == kind::stream_recv) {
            size_t received = 0;
            if (ucp_stream_recv_request_test(ucp_req_, &received) == UCS_OK) {
                length_ = received;
            }
        }
        release_ucp_request();
    }

    void release() noexcept
    {
        release_ucp_request();
        worker_.reset();
    }

    /// In MULTI mode the completion callback may still be running on the progress thread when
    /// another thread sees the request complete: ucp_request_free takes the worker lock, so it
    /// returns only after that callback, and the holder is destroyed after it.
    void release_ucp_request() noexcept
    {
        if (ucp_req_ != nullptr) {
            if (worker_->calls_belong_to_other_thread()) {
                // SINGLE worker owned by a progress thread: free it there; the callback may run
                // until then, so the holder goes along.
                std::shared_ptr<detail::callback_holder> holder(std::move(holder_));
                worker_->defer([owner = worker_.get(), req = ucp_req_,
                                cancel = kind_ == kind::tag_recv,
                                holder] { free_request(*owner, req, cancel); });
            } else {
                free_request(*worker_, ucp_req_, kind_ == kind::tag_recv);
            }
            ucp_req_ = nullptr;
        }
        holder_.reset();
    }

    /// Cancels a still-pending tag receive (its buffer may be freed next), then frees the
    /// request; ucp_request_free disables the callback of a still-pending request.
    static void free_request(worker &owner, void *req, bool cancel_if_pending) noexcept
    {
        if (cancel_if_pending && ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_request_cancel(owner.handle(), req);
        }
        ucp_request_free(req);
    }

    std::shared_ptr<worker> worker_;
    void *ucp_req_ = nullptr;
    std::unique_ptr<detail::callback_holder> holder_;
    ucs_status_t status_  = UCS_OK;
    kind kind_            = kind::send;
    size_t length_        = 0;
    ucp_tag_t sender_tag_ = 0;
    // for error texts (error_text())
    const char *operation_ = nullptr;
    std::shared_ptr<const detail::peer_description> peer_;
    size_t buffer_size_    = 0;
    size_t message_length_ = 0;
};

}  // namespace ucp_cpp
