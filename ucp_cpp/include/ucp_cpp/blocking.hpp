/**
 * @file blocking.hpp
 * @brief Blocking helpers on top of the nonblocking operations: issue, wait (bounded), throw.
 *
 * Each helper waits at most @p timeout (default: forever) and throws ucx_error with the
 * operation's status, or UCS_ERR_TIMED_OUT (after cancelling a tag receive).
 * Threading: as for the worker or endpoint passed in.
 *
 * Layer: above endpoint.hpp.  blocking::tag_recv and blocking::flush(worker&) call members
 * defined in detail/worker.inl: include <ucp_cpp/ucp_cpp.hpp>.
 */
#pragma once

#include <ucp_cpp/endpoint.hpp>
#include <ucp_cpp/error.hpp>
#include <ucp_cpp/memory.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/worker.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

/// @brief Blocking forms of the common operations: issue, wait (bounded), throw.
namespace ucp_cpp::blocking {

using std::chrono::nanoseconds;
/// The default timeout: wait as long as it takes.
inline constexpr nanoseconds forever = nanoseconds::max();

/**
 * @brief Sends a tagged message and waits until @p buffer may be reused.
 * @param ep      the endpoint.
 * @param buffer  the message.
 * @param length  its size in bytes.
 * @param tag     the tag the receiver matches on.
 * @param timeout the longest wait.
 * @param options memory type / memh of @p buffer, flags.
 * @throws ucx_error with the send's error, or UCS_ERR_TIMED_OUT (the send still runs: keep
 *         @p buffer valid or flush).
 */
inline void tag_send(endpoint &ep, const void *buffer, size_t length, ucp_tag_t tag,
                     nanoseconds timeout = forever, const op_options &options = {})
{
    ep.tag_send(buffer, length, tag, options).wait(timeout);
}

/**
 * @brief Receives a tagged message and waits for it.
 * @param w       the worker.
 * @param buffer  where the message lands.
 * @param length  the buffer's size.
 * @param tag     the tag to match.
 * @param mask    which bits of @p tag to match.
 * @param timeout the longest wait.
 * @param options memory type / memh of @p buffer, flags.
 * @return what was received (length and sender tag).
 * @throws ucx_error with the receive's error, or UCS_ERR_TIMED_OUT (the receive is cancelled
 *         first).
 */
inline completion tag_recv(worker &w, void *buffer, size_t length, ucp_tag_t tag,
                           ucp_tag_t mask = ~ucp_tag_t(0), nanoseconds timeout = forever,
                           const op_options &options = {})
{
    request req = w.tag_recv(buffer, length, tag, mask, options);
    req.wait(timeout);  // on timeout the request's destructor cancels the receive
    return req.result();
}

/**
 * @brief Sends bytes on the endpoint's stream and waits until @p buffer may be reused.
 * @param ep      the endpoint.
 * @param buffer  the data.
 * @param length  its size in bytes.
 * @param timeout the longest wait.
 * @throws ucx_error with the send's error, or UCS_ERR_TIMED_OUT.
 */
inline void stream_send(endpoint &ep, const void *buffer, size_t length,
                        nanoseconds timeout = forever)
{
    ep.stream_send(buffer, length).wait(timeout);
}

/**
 * @brief Receives exactly @p length bytes from the endpoint's stream.
 * @param ep      the endpoint.
 * @param buffer  where they land.
 * @param length  how many.
 * @param timeout the longest wait.
 * @return the bytes received.
 * @throws ucx_error with the receive's error, or UCS_ERR_TIMED_OUT.
 */
inline size_t stream_recv(endpoint &ep, void *buffer, size_t length, nanoseconds timeout = forever)
{
    request req = ep.stream_recv(buffer, length);
    req.wait(timeout);
    return req.length();
}

/**
 * @brief Flushes an endpoint: waits until its operations are complete remotely.
 * @param ep      the endpoint.
 * @param timeout the longest wait.
 * @throws ucx_error with the flush's error, or UCS_ERR_TIMED_OUT.
 */
inline void flush(endpoint &ep, nanoseconds timeout = forever)
{
    ep.flush().wait(timeout);
}

/**
 * @brief Flushes a worker: waits until the operations of all its endpoints are complete
 *        remotely.
 * @param w       the worker.
 * @param timeout the longest wait.
 * @throws ucx_error with the flush's error, or UCS_ERR_TIMED_OUT.
 */
inline void flush(worker &w, nanoseconds timeout = forever)
{
    w.flush().wait(timeout);
}

/**
 * @brief Sends a registered region's descriptor (address, length, packed key) to the peer in
 *        one tag message, and waits until it is sent.
 * @param ep      the endpoint to the peer.
 * @param region  memory_handle::describe() of the region.
 * @param tag     the tag the peer receives it with (recv_remote_memory()).
 * @param timeout the longest wait.
 * @throws ucx_error with the send's error, or UCS_ERR_TIMED_OUT.
 */
inline void send_remote_memory(endpoint &ep, const remote_memory &region, ucp_tag_t tag,
                               nanoseconds timeout = forever)
{
    const std::vector<uint8_t> bytes = region.pack();
    ep.tag_send(bytes.data(), bytes.size(), tag).wait(timeout);
}

/**
 * @brief Receives a region's descriptor that the peer sent with send_remote_memory(), whatever
 *        the size of its packed key (the message is probed first and received into a buffer of
 *        its size).
 * @param w       the worker.
 * @param tag     the tag to match (all bits).
 * @param timeout the longest wait.
 * @return the descriptor: unpack its key on the endpoint to the sender
 *         (endpoint::unpack_rkey(const remote_memory &)).
 * @throws ucx_error(UCS_ERR_TIMED_OUT) if no message arrives in time; ucx_error with the
 *         receive's error; ucx_error(UCS_ERR_INVALID_PARAM) if the message is not a packed
 *         remote_memory.
 */
inline remote_memory recv_remote_memory(worker &w, ucp_tag_t tag, nanoseconds timeout = forever)
{
    std::optional<tag_message> message;
    w.progress_until(
        [&] {
            std::optional<tag_message> taken = w.tag_probe_take(tag);
            if (taken) {
                message.emplace(std::move(*taken));
            }
            return message.has_value();
        },
        timeout);
    if (!message) {
        char text[64];
        std::snprintf(text, sizeof(text), "blocking::recv_remote_memory(tag 0x%llx)",
                      static_cast<unsigned long long>(tag));
        throw ucx_error(UCS_ERR_TIMED_OUT, std::string(text) + ": no message arrived");
    }
    std::vector<uint8_t> bytes(message->info().length);
    request req = w.tag_recv(bytes.data(), bytes.size(), std::move(*message), op_options{});
    req.wait(timeout);
    return remote_memory::unpack(bytes);
}

}  // namespace ucp_cpp::blocking
