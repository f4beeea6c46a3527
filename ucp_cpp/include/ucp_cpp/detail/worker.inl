/**
 * @file detail/worker.inl
 * @brief The members of ucp_cpp::worker that need types of higher layers: those that return a
 *        request (request.hpp) and set_am_handler(), which wraps an am_message handler (am.hpp).
 *
 * Declared and documented in worker.hpp; included once, by <ucp_cpp/ucp_cpp.hpp>.
 */
#pragma once

#include <ucp_cpp/am.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/worker.hpp>

#include <ucp/api/ucp.h>

#include <functional>
#include <memory>
#include <utility>

namespace ucp_cpp {

// ---- tag matching ----

inline request worker::tag_recv(void *buffer, size_t length, ucp_tag_t tag, ucp_tag_t mask)
{
    return tag_recv(buffer, length, tag, mask, op_options{});
}

inline request worker::tag_recv(void *buffer, size_t length, ucp_tag_t tag, ucp_tag_t mask,
                                const op_options &options)
{
    context_->require_features(UCP_FEATURE_TAG, "worker::tag_recv");
    request::builder op(request::kind::tag_recv, options);
    op.describe("worker::tag_recv", nullptr, length);
    return op.finish(shared_from_this(),
                     ucp_tag_recv_nbx(handle_, buffer, length, tag, mask, op.param()), 0);
}

inline request worker::tag_recv(void *buffer, size_t length, tag_message message,
                                const op_options &options)
{
    request::builder op(request::kind::tag_recv, options);
    op.describe("worker::tag_recv", nullptr, length);
    op.preset_tag_info(message.info());
    return op.finish(shared_from_this(),
                     ucp_tag_msg_recv_nbx(handle_, buffer, length, message.release(), op.param()),
                     0);
}

// ---- flush ----

inline request worker::flush()
{
    request::builder op(request::kind::send, op_options{});
    op.describe("worker::flush");
    return op.finish(shared_from_this(), ucp_worker_flush_nbx(handle_, op.param()), 0);
}

// ---- active messages ----

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
