/**
 * @file blocking.hpp
 * @brief Blocking helpers on top of the nonblocking operations: issue, wait (bounded), throw.
 *
 * Each helper waits at most @p timeout (default: forever) and throws ucx_error with the
 * operation's status, or UCS_ERR_TIMED_OUT (after cancelling a tag receive).
 */
#pragma once

#include <ucp_cpp/endpoint.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/worker.hpp>

#include <chrono>

namespace ucp_cpp::blocking {

using std::chrono::nanoseconds;
inline constexpr nanoseconds forever = nanoseconds::max();

inline void tag_send(endpoint &ep, const void *buffer, size_t length, ucp_tag_t tag,
                     nanoseconds timeout = forever, const op_options &options = {})
{
    ep.tag_send(buffer, length, tag, options).wait(timeout);
}

/// @return what was received (length and sender tag).
inline completion tag_recv(worker &w, void *buffer, size_t length, ucp_tag_t tag,
                           ucp_tag_t mask = ~ucp_tag_t(0), nanoseconds timeout = forever,
                           const op_options &options = {})
{
    request req = w.tag_recv(buffer, length, tag, mask, options);
    req.wait(timeout);  // on timeout the request's destructor cancels the receive
    return req.result();
}

inline void stream_send(endpoint &ep, const void *buffer, size_t length,
                        nanoseconds timeout = forever)
{
    ep.stream_send(buffer, length).wait(timeout);
}

inline size_t stream_recv(endpoint &ep, void *buffer, size_t length, nanoseconds timeout = forever)
{
    request req = ep.stream_recv(buffer, length);
    req.wait(timeout);
    return req.length();
}

inline void flush(endpoint &ep, nanoseconds timeout = forever) { ep.flush().wait(timeout); }
inline void flush(worker &w, nanoseconds timeout = forever) { w.flush().wait(timeout); }

}  // namespace ucp_cpp::blocking
