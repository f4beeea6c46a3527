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
 * Threading: both are used on the thread that runs the handler, or (am_data) serialised with
 * the worker as any operation is.
 *
 * Layer: above request.hpp.  worker::set_am_handler(), which takes an am_message handler, is
 * defined in detail/worker.inl.
 */
#pragma once

#include <ucp_cpp/error.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/worker.hpp>

#include <ucp/api/ucp.h>

#include <memory>
#include <string>
#include <utility>

namespace ucp_cpp {

namespace detail {
/// Receives a UCP AM data descriptor (eager or rendezvous) into a user buffer.
/// @throws ucx_error(UCS_ERR_MESSAGE_TRUNCATED) if @p length is below @p message_length.
inline request receive_am_data(const std::shared_ptr<worker> &owner, void *descriptor,
                               size_t message_length, void *buffer, size_t length,
                               const op_options &options)
{
    if (length < message_length) {
        throw ucx_error(UCS_ERR_MESSAGE_TRUNCATED,
                        "am receive: buffer of " + std::to_string(length) + " bytes for a " +
                            std::to_string(message_length) + "-byte message");
    }
    request::builder op(request::kind::am_recv, options);
    op.describe("am receive", nullptr, message_length);
    return op.finish(owner,
                     ucp_am_recv_data_nbx(owner->handle(), descriptor, buffer, message_length,
                                          op.param()),
                     message_length);
}
}  // namespace detail

/**
 * @brief An active message kept beyond its handler (am_message::keep()).
 *
 * Move-only; keeps the worker alive; releases the UCP descriptor (ucp_am_data_release) when
 * dropped unreceived.
 */
class am_data {
public:
    /**
     * @brief Wraps a UCP data descriptor kept from a handler (am_message::keep() makes these).
     * @param owner      the worker that received the message.
     * @param descriptor UCP's data descriptor (eager data or rendezvous).
     * @param length     the payload's size in bytes.
     * @param rendezvous whether the payload is still on the sender.
     */
    am_data(std::shared_ptr<worker> owner, void *descriptor, size_t length, bool rendezvous)
        : worker_(std::move(owner)),
          descriptor_(descriptor),
          length_(length),
          rendezvous_(rendezvous)
    {}

    /**
     * @brief Takes the kept message over; @p other is left empty.
     * @param other the kept message to take.
     */
    am_data(am_data &&other) noexcept
        : worker_(std::move(other.worker_)),
          descriptor_(std::exchange(other.descriptor_, nullptr)),
          length_(other.length_),
          rendezvous_(other.rendezvous_)
    {}
    am_data(const am_data &)            = delete;
    am_data &operator=(const am_data &) = delete;

    /// @brief Releases the UCP descriptor if the payload was not received.
    ~am_data()
    {
        if (descriptor_ != nullptr) {
            ucp_am_data_release(worker_->handle(), descriptor_);
        }
    }

    /**
     * @brief The payload's size.
     * @return bytes.
     */
    size_t length() const noexcept { return length_; }

    /**
     * @brief Whether the payload is still on the sender.
     * @return true for rendezvous: receive() fetches it.
     */
    bool is_rendezvous() const noexcept { return rendezvous_; }

    /**
     * @brief The eager payload in UCP's buffer (host memory).
     * @return the payload, or nullptr for rendezvous or after receive().
     */
    const void *data() const noexcept { return rendezvous_ ? nullptr : descriptor_; }

    /**
     * @brief Copies/transfers the payload into @p buffer (ucp_am_recv_data_nbx), once.
     * @param buffer  the destination (host or CUDA memory: say which in @p options); valid
     *                until the request completes.
     * @param length  the destination's size; must cover length().
     * @param options memory type / memh of @p buffer, callback.
     * @return the request; complete when the payload is in @p buffer.
     * @throws ucx_error(UCS_ERR_NO_ELEM) if already received;
     *         ucx_error(UCS_ERR_MESSAGE_TRUNCATED) if @p length is too small.
     */
    [[nodiscard]] request receive(void *buffer, size_t length, const op_options &options = {})
    {
        if (descriptor_ == nullptr) {
            throw ucx_error(UCS_ERR_NO_ELEM, "am_data::receive: already received");
        }
        request req = detail::receive_am_data(worker_, descriptor_, length_, buffer, length,
                                              options);
        descriptor_ = nullptr;  // UCP owns (and releases) the descriptor once receiving started
        return req;
    }

private:
    std::shared_ptr<worker> worker_;
    void *descriptor_;
    size_t length_;
    bool rendezvous_;
};

/**
 * @brief What an active-message handler receives (worker::set_am_handler()).
 *
 * Valid only during the handler call, on the thread running it: receive() the payload there,
 * keep() it for later, or leave it (released when the handler returns).
 */
class am_message {
public:
    /**
     * @brief Wraps what UCP passed to the receive callback (the worker's trampoline makes these).
     * @param owner         the receiving worker.
     * @param header        the user header (valid during the handler).
     * @param header_length its size in bytes.
     * @param data          eager payload or rendezvous descriptor.
     * @param length        the payload's size in bytes.
     * @param param         UCP's receive attributes (recv_attr, reply_ep).
     */
    am_message(std::shared_ptr<worker> owner, const void *header, size_t header_length, void *data,
               size_t length, const ucp_am_recv_param_t *param)
        : worker_(std::move(owner)),
          header_(header),
          header_length_(header_length),
          data_(data),
          length_(length),
          param_(param)
    {}

    /**
     * @brief The user header the sender passed to endpoint::am_send().
     * @return a pointer valid during the handler.
     */
    const void *header() const noexcept { return header_; }

    /**
     * @brief The header's size.
     * @return bytes.
     */
    size_t header_length() const noexcept { return header_length_; }

    /**
     * @brief The payload's size.
     * @return bytes.
     */
    size_t length() const noexcept { return length_; }

    /**
     * @brief Whether the payload is still on the sender.
     * @return true for rendezvous: receive() fetches it.
     */
    bool is_rendezvous() const noexcept
    {
        return (param_->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    }

    /**
     * @brief The eager payload in UCP's buffer (host memory).
     * @return the payload, or nullptr for rendezvous.
     */
    const void *data() const noexcept { return is_rendezvous() ? nullptr : data_; }

    /**
     * @brief The endpoint to reply on, if the sender asked for one (UCP_AM_SEND_FLAG_REPLY).
     * @return the UCP endpoint (owned by UCP), or nullptr.
     */
    ucp_ep_h reply_ep() const noexcept
    {
        return (param_->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param_->reply_ep : nullptr;
    }

    /**
     * @brief Receives the payload into @p buffer (ucp_am_recv_data_nbx), once.
     * @param buffer  the destination (host or CUDA memory: say which in @p options); valid
     *                until the request completes.
     * @param length  the destination's size; must cover length().
     * @param options memory type / memh of @p buffer, callback.
     * @return the request: for rendezvous it completes when the data has arrived; for eager
     *         data it is usually complete already.
     * @throws ucx_error(UCS_ERR_NO_ELEM) if already received or kept;
     *         ucx_error(UCS_ERR_MESSAGE_TRUNCATED) if @p length is too small.
     */
    [[nodiscard]] request receive(void *buffer, size_t length, const op_options &options = {})
    {
        consume("receive");
        if (length_ == 0) {
            return request();
        }
        return detail::receive_am_data(worker_, data_, length_, buffer, length, options);
    }

    /**
     * @brief Keeps the payload past the handler.
     * @return the kept message: receive it later with am_data::receive().
     * @throws ucx_error(UCS_ERR_NO_ELEM) if already received or kept.
     */
    am_data keep()
    {
        consume("keep");
        kept_ = true;
        return am_data(worker_, data_, length_, is_rendezvous());
    }

    /**
     * @brief What the handler trampoline returns to UCP.
     * @return UCS_INPROGRESS if keep() was called (UCP keeps the descriptor), else UCS_OK.
     */
    ucs_status_t handler_status() const noexcept { return kept_ ? UCS_INPROGRESS : UCS_OK; }

private:
    void consume(const char *what)
    {
        if (consumed_) {
            throw ucx_error(UCS_ERR_NO_ELEM, std::string("am_message::") + what +
                                                 ": payload already received or kept");
        }
        if (length_ != 0 &&
            (param_->recv_attr & (UCP_AM_RECV_ATTR_FLAG_DATA | UCP_AM_RECV_ATTR_FLAG_RNDV)) == 0) {
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

}  // namespace ucp_cpp
