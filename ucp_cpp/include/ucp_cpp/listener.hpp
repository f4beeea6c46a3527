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
 */
#pragma once

#include <ucp_cpp/endpoint.hpp>
#include <ucp_cpp/error.hpp>
#include <ucp_cpp/worker.hpp>

#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace ucp_cpp {

class listener;

/// An incoming connection, accepted with endpoint::accept() or rejected when dropped.
class connection_request {
public:
    connection_request(std::shared_ptr<listener> owner, ucp_conn_request_h handle)
        : listener_(std::move(owner)), handle_(handle) {}
    connection_request(connection_request &&other) noexcept
        : listener_(std::move(other.listener_)), handle_(std::exchange(other.handle_, nullptr)) {}
    connection_request(const connection_request &)            = delete;
    connection_request &operator=(const connection_request &) = delete;
    ~connection_request();

    /// The client's address as "ip:port" (empty if UCP cannot tell).
    std::string client_address() const
    {
        ucp_conn_request_attr_t attr{};
        attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
        if (handle_ == nullptr || ucp_conn_request_query(handle_, &attr) != UCS_OK) {
            return {};
        }
        return format_address(reinterpret_cast<const sockaddr *>(&attr.client_address));
    }

    /// Hands the raw request over (to ucp_ep_create); the caller accepts or rejects it.
    ucp_conn_request_h release() noexcept { return std::exchange(handle_, nullptr); }

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

class listener : public std::enable_shared_from_this<listener> {
    struct private_tag {};

public:
    using handler = std::function<void(connection_request)>;

    /// Listens on @p address (port 0: an ephemeral port, see port()).
    static std::shared_ptr<listener> create(std::shared_ptr<worker> owner, const sockaddr *address,
                                            socklen_t length, handler on_connection = nullptr)
    {
        auto created = std::make_shared<listener>(private_tag{}, std::move(owner),
                                                  std::move(on_connection));
        created->start(address, length);
        return created;
    }

    /// Listens on the numeric IPv4/IPv6 address @p ip ("0.0.0.0", "127.0.0.1", "::") and @p port.
    static std::shared_ptr<listener> create(std::shared_ptr<worker> owner, const std::string &ip,
                                            uint16_t port = 0, handler on_connection = nullptr)
    {
        sockaddr_storage storage{};
        socklen_t length = 0;
        auto *in         = reinterpret_cast<sockaddr_in *>(&storage);
        auto *in6        = reinterpret_cast<sockaddr_in6 *>(&storage);
        if (inet_pton(AF_INET, ip.c_str(), &in->sin_addr) == 1) {
            in->sin_family = AF_INET;
            in->sin_port   = htons(port);
            length         = sizeof(sockaddr_in);
        } else if (inet_pton(AF_INET6, ip.c_str(), &in6->sin6_addr) == 1) {
            in6->sin6_family = AF_INET6;
            in6->sin6_port   = htons(port);
            length           = sizeof(sockaddr_in6);
        } else {
            throw ucx_error(UCS_ERR_INVALID_ADDR, "listener: not a numeric IP address: " + ip);
        }
        return create(std::move(owner), reinterpret_cast<const sockaddr *>(&storage), length,
                      std::move(on_connection));
    }

    listener(private_tag, std::shared_ptr<worker> owner, handler on_connection)
        : worker_(std::move(owner)), on_connection_(std::move(on_connection)) {}

    listener(const listener &)            = delete;
    listener &operator=(const listener &) = delete;

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

    ucp_listener_h handle() const noexcept { return handle_; }
    const std::shared_ptr<worker> &owner() const noexcept { return worker_; }
    /// The port actually listened on (useful after asking for port 0).
    uint16_t port() const noexcept { return port_; }
    /// "ip:port" listened on.
    const std::string &address() const noexcept { return address_; }

    /// A queued connection request, if any (does not progress the worker).
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

    /// Progresses the worker until a connection request arrives or @p timeout passes.
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

    /// Rejects a connection (used by connection_request's destructor).
    void reject(ucp_conn_request_h handle) noexcept { ucp_listener_reject(handle_, handle); }

private:
    void start(const sockaddr *address, socklen_t length)
    {
        ucp_listener_params_t params{};
        params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
        params.sockaddr.addr   = address;
        params.sockaddr.addrlen = length;
        params.conn_handler.cb  = &listener::on_conn_request;
        params.conn_handler.arg = this;
        check_status(ucp_listener_create(worker_->handle(), &params, &handle_),
                     "ucp_listener_create");
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

inline std::shared_ptr<endpoint> endpoint::accept(std::shared_ptr<worker> owner,
                                                  connection_request request,
                                                  const endpoint_params &params)
{
    ucp_ep_params_t ep_params{};
    ep_params.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
    ep_params.conn_request = request.release();
    return std::make_shared<endpoint>(private_tag{}, std::move(owner), ep_params, params);
}

}  // namespace ucp_cpp
