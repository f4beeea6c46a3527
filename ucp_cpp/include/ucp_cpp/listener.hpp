/**
 * @file listener.hpp
 * @brief ucp_cpp::listener (ucp_listener_h) and connection_request: the server side of UCP's
 *        sockaddr-based connection establishment.
 *
 * Incoming connection requests are queued by the listener; take them with next_connection() or
 * wait_connection() and turn them into endpoints with endpoint::accept().  Alternatively pass a
 * handler to create(): it runs inside progress() for each request.
 *
 * Lifetime: held by std::shared_ptr; keeps its worker alive.  A connection_request keeps its
 * listener alive and rejects the connection if dropped unaccepted; queued requests are rejected
 * when the listener is destroyed.  Do not drop the last listener reference inside its own
 * handler.
 * Threading: as for the worker.
 *
 * Layer: above worker.hpp.  endpoint::accept(), which takes a connection_request, is defined in
 * detail/endpoint.inl.
 */
#pragma once

#include <ucp_cpp/error.hpp>
#include <ucp_cpp/worker.hpp>

#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace ucp_cpp {

class listener;

/**
 * @brief An incoming connection, accepted with endpoint::accept() or rejected when dropped.
 *
 * Move-only; keeps its listener alive.  Threading: as for the listener's worker.
 */
class connection_request {
public:
    /**
     * @brief Wraps what UCP passed to the listener's connection callback.
     * @param owner  the listener that received it; kept alive by the request.
     * @param handle UCP's connection request.
     */
    connection_request(std::shared_ptr<listener> owner, ucp_conn_request_h handle)
        : listener_(std::move(owner)), handle_(handle)
    {}

    /**
     * @brief Takes the request over; @p other is left empty (its destructor rejects nothing).
     * @param other the request to take.
     */
    connection_request(connection_request &&other) noexcept
        : listener_(std::move(other.listener_)), handle_(std::exchange(other.handle_, nullptr))
    {}
    connection_request(const connection_request &)            = delete;
    connection_request &operator=(const connection_request &) = delete;

    /// @brief Rejects the connection (ucp_listener_reject) unless it was accepted.
    ~connection_request();

    /**
     * @brief The client's address.
     * @return "ip:port", or empty if UCP cannot tell.
     */
    std::string client_address() const
    {
        ucp_conn_request_attr_t attr{};
        attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
        if (handle_ == nullptr || ucp_conn_request_query(handle_, &attr) != UCS_OK) {
            return {};
        }
        return format_address(reinterpret_cast<const sockaddr *>(&attr.client_address));
    }

    /**
     * @brief Hands the raw request over (to ucp_ep_create); the caller accepts or rejects it.
     * @return UCP's connection request, or nullptr if already released.
     */
    ucp_conn_request_h release() noexcept { return std::exchange(handle_, nullptr); }

    /**
     * @brief Formats an IPv4 or IPv6 socket address.
     * @param address the address.
     * @return "ip:port" (":0" for another address family).
     */
    static std::string format_address(const sockaddr *address)
    {
        char text[INET6_ADDRSTRLEN] = {};
        uint16_t port               = 0;
        if (address->sa_family == AF_INET) {
            const auto *in = reinterpret_cast<const sockaddr_in *>(address);
            inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
            port = ntohs(in->sin_port);
        } else if (address->sa_family == AF_INET6) {
            const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(address);
            inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
            port = ntohs(in6->sin6_port);
        }
        return std::string(text) + ":" + std::to_string(port);
    }

private:
    std::shared_ptr<listener> listener_;
    ucp_conn_request_h handle_;
};

/**
 * @brief A UCP listener (ucp_listener_h): accepts client-server connections on a socket address.
 *
 * Non-copyable, non-movable: created by create() and shared by std::shared_ptr.  Lifetime and
 * threading: see the file comment.
 */
class listener : public std::enable_shared_from_this<listener> {
    struct private_tag {};

public:
    /// Called inside progress() for each incoming connection; accept or drop the request.
    using handler = std::function<void(connection_request)>;

    /**
     * @brief Listens on @p address (ucp_listener_create).
     * @param owner         the worker; kept alive by the listener.
     * @param address       the socket address; port 0 picks an ephemeral port (see port()).
     * @param length        the size of *address.
     * @param on_connection called per connection (inside progress(); exceptions are
     *                      swallowed and the connection rejected); nullptr queues them for
     *                      next_connection() / wait_connection().
     * @return the listener, shared.
     * @throws ucx_error if UCP cannot listen there.
     */
    static std::shared_ptr<listener> create(std::shared_ptr<worker> owner, const sockaddr *address,
                                            socklen_t length, handler on_connection = nullptr)
    {
        auto created = std::make_shared<listener>(private_tag{}, std::move(owner),
                                                  std::move(on_connection));
        created->start(address, length);
        return created;
    }

    /**
     * @brief Listens on a host name or numeric IPv4/IPv6 address and a port.
     * @param owner         the worker; kept alive by the listener.
     * @param host          "0.0.0.0", "127.0.0.1", "::", a name such as "localhost" or the
     *                      host's own name (resolved with getaddrinfo, first answer, as
     *                      endpoint::connect() resolves it), or "" for every local address.
     * @param port          the port; 0 picks an ephemeral port (see port()).  A fixed port can
     *                      be listened on again right after an earlier run while
     *                      context_params::reuse_listener_address is on (the default).
     * @param on_connection as for create(owner, address, length, on_connection).
     * @return the listener, shared.
     * @throws ucx_error(UCS_ERR_INVALID_ADDR) if @p host does not resolve; ucx_error if UCP
     *         cannot listen there (UCS_ERR_BUSY: the port is taken; the message says by what).
     */
    static std::shared_ptr<listener> create(std::shared_ptr<worker> owner, const std::string &host,
                                            uint16_t port = 0, handler on_connection = nullptr)
    {
        addrinfo hints{};
        hints.ai_family   = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags    = AI_PASSIVE;
        addrinfo *found   = nullptr;
        int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(),
                             &hints, &found);
        if (rc != 0) {
            throw ucx_error(UCS_ERR_INVALID_ADDR, "listener::create(" + host + ":" +
                                                      std::to_string(port) +
                                                      "): " + gai_strerror(rc));
        }
        std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, &freeaddrinfo);
        return create(std::move(owner), found->ai_addr, found->ai_addrlen,
                      std::move(on_connection));
    }

    /**
     * @brief Use create(); public only so that std::make_shared can call it.
     * @param owner         as for create().
     * @param on_connection as for create().
     */
    listener(private_tag, std::shared_ptr<worker> owner, handler on_connection)
        : worker_(std::move(owner)), on_connection_(std::move(on_connection))
    {}

    listener(const listener &)            = delete;
    listener &operator=(const listener &) = delete;

    /// @brief Rejects the queued connection requests, then ucp_listener_destroy().
    ~listener()
    {
        if (handle_ == nullptr) {
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            for (ucp_conn_request_h pending : queue_) {
                ucp_listener_reject(handle_, pending);
            }
            queue_.clear();
        }
        ucp_listener_destroy(handle_);  // no callback after this returns
    }

    /**
     * @brief The UCP handle, for UCP calls the wrapper does not cover.
     * @return the ucp_listener_h.
     */
    ucp_listener_h handle() const noexcept { return handle_; }

    /**
     * @brief The worker the listener belongs to.
     * @return the worker (kept alive by the listener).
     */
    const std::shared_ptr<worker> &owner() const noexcept { return worker_; }

    /**
     * @brief The port actually listened on (useful after asking for port 0).
     * @return the port, in host byte order.
     */
    uint16_t port() const noexcept { return port_; }

    /**
     * @brief The address actually listened on.
     * @return "ip:port".
     */
    const std::string &address() const noexcept { return address_; }

    /**
     * @brief Takes a queued connection request.  Does not progress the worker.  Thread-safe.
     * @return the oldest queued request, or nothing.
     */
    std::optional<connection_request> next_connection()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (queue_.empty()) {
            return std::nullopt;
        }
        ucp_conn_request_h handle = queue_.front();
        queue_.pop_front();
        return connection_request(shared_from_this(), handle);
    }

    /**
     * @brief Progresses the worker until a connection request arrives or @p timeout passes
     *        (worker::progress_until()).
     * @param timeout the longest wait.
     * @return the oldest queued request, or nothing on timeout.
     */
    std::optional<connection_request> wait_connection(std::chrono::nanoseconds timeout)
    {
        worker_->progress_until(
            [this] {
                std::lock_guard<std::mutex> lock(mutex_);
                return !queue_.empty();
            },
            timeout);
        return next_connection();
    }

    /**
     * @brief Rejects a connection (ucp_listener_reject; used by connection_request's
     *        destructor).
     * @param handle a connection request this listener received.
     */
    void reject(ucp_conn_request_h handle) noexcept { ucp_listener_reject(handle_, handle); }

private:
    void start(const sockaddr *address, socklen_t length)
    {
        ucp_listener_params_t params{};
        params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                            UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
        params.sockaddr.addr    = address;
        params.sockaddr.addrlen = length;
        params.conn_handler.cb  = &listener::on_conn_request;
        params.conn_handler.arg = this;
        ucs_status_t status     = ucp_listener_create(worker_->handle(), &params, &handle_);
        if (status != UCS_OK) {
            std::string what = "listener::create(" + connection_request::format_address(address) +
                               "): ucp_listener_create";
            if (status == UCS_ERR_BUSY) {
                what += ": the port is in use: another process listens on it";
                if (!worker_->ctx()->reuses_listener_address()) {
                    what += ", or connections of an earlier run on it wait in TIME_WAIT (about "
                            "a minute; context_params::reuse_listener_address or "
                            "UCX_CM_REUSEADDR=y lets a restarted server listen right away)";
                }
            }
            throw ucx_error(status, what);
        }
        ucp_listener_attr_t attr{};
        attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
        check_status(ucp_listener_query(handle_, &attr), "ucp_listener_query");
        const auto *bound = reinterpret_cast<const sockaddr *>(&attr.sockaddr);
        address_          = connection_request::format_address(bound);
        port_             = bound->sa_family == AF_INET6
                                ? ntohs(reinterpret_cast<const sockaddr_in6 *>(bound)->sin6_port)
                                : ntohs(reinterpret_cast<const sockaddr_in *>(bound)->sin_port);
    }

    static void on_conn_request(ucp_conn_request_h handle, void *arg)
    {
        auto *self = static_cast<listener *>(arg);
        if (self->on_connection_) {
            std::shared_ptr<listener> alive = self->weak_from_this().lock();
            if (!alive) {  // being destroyed
                ucp_listener_reject(self->handle_, handle);
                return;
            }
            try {
                self->on_connection_(connection_request(std::move(alive), handle));
            } catch (...) {
                // must not unwind through UCX; the request was rejected by its destructor
            }
            return;
        }
        std::lock_guard<std::mutex> lock(self->mutex_);
        self->queue_.push_back(handle);
    }

    std::shared_ptr<worker> worker_;
    handler on_connection_;
    ucp_listener_h handle_ = nullptr;
    uint16_t port_         = 0;
    std::string address_;
    std::mutex mutex_;
    std::deque<ucp_conn_request_h> queue_;
};

inline connection_request::~connection_request()
{
    if (handle_ != nullptr) {
        listener_->reject(handle_);
    }
}

}  // namespace ucp_cpp
