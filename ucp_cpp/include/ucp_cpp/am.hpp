/**
 * @file am.hpp
 * @brief Active messages: am_message (what a handler receives) and am_data (a message kept past
 *        its handler).  Sending is endpoint::am_send().
 *
 * Handlers are registered per id with worker::set_am_handler(id, handler) and run inside
 * progress(), on the progressing thread.  A handler gets the user header, and either eager data
 * (in UCP's buffer) or a rendezvous descriptor; in both cases am_message::receive() copies the
 * payload into the caller's buffer (host or CUDA: the memory type is passed to UCP) and returns a
 * request.  Data the handler neither receives nor keeps is released when it returns (a
 * rendezvous sender is then completed without transferring).
 *
 * Lifetime: am_message is valid only during the handler; am_data (from keep()) keeps the worker
 * alive and releases the UCP descriptor when dropped.
 */
#pragma once

#include <ucp_cpp/request.hpp>
#include <ucp_cpp/worker.hpp>

#include <ucp/api/ucp.h>

#include <memory>
#include <string>
#include <utility>

namespace ucp_cpp {

namespace detail {
/// Receives a UCP AM data descriptor (eager or rendezvous) into a user buffer.
inline request receive_am_data(const std::shared_ptr<worker> &owner, void *descriptor,
                               size_t message_length, void *buffer, size_t length,
                               const op_options &options)
{
    if (length < message_length) {
        throw ucx_error(UCS_ERR_MESSAGE_TRUNCATED, "am receive: buffer of " +
                                                       std::to_string(length) + " bytes for a " +
                                                       std::to_string(message_length) +
                                                       "-byte message");
    }
    request::builder op(request::kind::am_recv, options);
    return op.finish(owner,
                     ucp_am_recv_data_nbx(owner->handle(), descriptor, buffer, message_length,
                                          op.param()),
                     message_length);
}
}  // namespace detail

/// An active message kept beyond its handler (am_message::keep()).  Move-only.
class am_data {
public:
    am_data(std::shared_ptr<worker> owner, void *descriptor, size_t length, bool rendezvous)
        : worker_(std::move(owner)), descriptor_(descriptor), length_(length),
          rendezvous_(rendezvous) {}
    am_data(am_data &&other) noexcept
        : worker_(std::move(other.worker_)), descriptor_(std::exchange(other.descriptor_, nullptr)),
          length_(other.length_), rendezvous_(other.rendezvous_) {}
    am_data(const am_data &)            = delete;
    am_data &operator=(const am_data &) = delete;
    ~am_data()
    {
        if (descriptor_ != nullptr) {
            ucp_am_data_release(worker_->handle(), descriptor_);
        }
    }

    size_t length() const noexcept { return length_; }
    bool is_rendezvous() const noexcept { return rendezvous_; }
    /// Eager payload in UCP's buffer (nullptr for rendezvous or after receive()).
    const void *data() const noexcept { return rendezvous_ ? nullptr : descriptor_; }

    /// Copies/transfers the payload into @p buffer (once).  @p length must cover length().
    [[nodiscard]] request receive(void *buffer, size_t length, const op_options &options = {})
    {
        if (descriptor_ == nullptr) {
            throw ucx_error(UCS_ERR_NO_ELEM, "am_data::receive: already received");
        }
        request req = detail::receive_am_data(worker_, descriptor_, length_, buffer, length, options);
        descriptor_ = nullptr;  // UCP owns (and releases) the descriptor once receiving started
        return req;
    }

private:
    std::shared_ptr<worker> worker_;
    void *descriptor_;
    size_t length_;
    bool rendezvous_;
};

/// What an active-message handler receives.  Valid only during the handler call.
class am_message {
public:
    am_message(std::shared_ptr<worker> owner, const void *header, size_t header_length,
               void *data, size_t length, const ucp_am_recv_param_t *param)
        : worker_(std::move(owner)), header_(header), header_length_(header_length), data_(data),
          length_(length), param_(param) {}

    const void *header() const noexcept { return header_; }
    size_t header_length() const noexcept { return header_length_; }
    /// Payload size in bytes.
    size_t length() const noexcept { return length_; }
    /// True if the payload is still on the sender (rendezvous): receive() fetches it.
    bool is_rendezvous() const noexcept { return (param_->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0; }
    /// Eager payload in UCP's buffer (nullptr for rendezvous).  Host memory.
    const void *data() const noexcept { return is_rendezvous() ? nullptr : data_; }
    /// Endpoint to reply on, if the sender asked for one (UCP_AM_SEND_FLAG_REPLY), else nullptr.
    ucp_ep_h reply_ep() const noexcept
    {
        return (param_->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param_->reply_ep : nullptr;
    }

    /// Receives the payload into @p buffer (once).  For rendezvous the returned request
    /// completes when the data has arrived; for eager data it is usually complete already.
    [[nodiscard]] request receive(void *buffer, size_t length, const op_options &options = {})
    {
        consume("receive");
        if (length_ == 0) {
            return request();
        }
        return detail::receive_am_data(worker_, data_, length_, buffer, length, options);
    }

    /// Keeps the payload past the handler: receive it later with am_data::receive().
    am_data keep()
    {
        consume("keep");
        kept_ = true;
        return am_data(worker_, data_, length_, is_rendezvous());
    }

    /// What the trampoline returns to UCP: INPROGRESS keeps the descriptor alive.
    ucs_status_t handler_status() const noexcept { return kept_ ? UCS_INPROGRESS : UCS_OK; }

private:
    void consume(const char *what)
    {
        if (consumed_) {
            throw ucx_error(UCS_ERR_NO_ELEM, std::string("am_message::") + what +
                                                 ": payload already received or kept");
        }
        if (length_ != 0 && (param_->recv_attr &
                             (UCP_AM_RECV_ATTR_FLAG_DATA | UCP_AM_RECV_ATTR_FLAG_RNDV)) == 0) {
            // Cannot happen with the flags set_am_handler() registers (PERSISTENT_DATA).
            throw ucx_error(UCS_ERR_UNSUPPORTED, "am_message: payload is not persistent");
        }
        consumed_ = true;
    }

    std::shared_ptr<worker> worker_;
    const void *header_;
    size_t header_length_;
    void *data_;
    size_t length_;
    const ucp_am_recv_param_t *param_;
    bool consumed_ = false;
    bool kept_     = false;
};

inline void worker::set_am_handler(uint16_t id, std::function<void(am_message &)> handler)
{
    if (!handler) {
        set_am_raw_handler(id, nullptr, 0);
        return;
    }
    // The raw handler refers to the worker weakly: the worker owns the handler.
    std::weak_ptr<worker> self = weak_from_this();
    set_am_raw_handler(
        id,
        [self, handler = std::move(handler)](const void *header, size_t header_length, void *data,
                                             size_t length, const ucp_am_recv_param_t *param) {
            auto owner = self.lock();
            if (!owner) {
                return UCS_OK;
            }
            am_message message(std::move(owner), header, header_length, data, length, param);
            try {
                handler(message);
            } catch (...) {
                // An exception must not unwind through UCX's C frames.  Drop the message.
                return UCS_OK;
            }
            return message.handler_status();
        },
        UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA);
}

}  // namespace ucp_cpp
