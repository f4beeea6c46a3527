/**
 * @file worker.hpp
 * @brief ucp_cpp::worker: RAII owner of a ucp_worker_h, its progress and its event-driven wait.
 *
 * Lifetime: held by std::shared_ptr (worker::create()).  The worker keeps its context alive;
 * endpoints, listeners, requests and progress threads keep the worker alive.  The worker is
 * therefore never destroyed while anything that uses it exists, and in particular never from
 * inside its own ucp_worker_progress().  Endpoints closed by their destructor hand the close
 * request to the worker, which completes it on later progress() calls or, at the latest, in its
 * own destructor (bounded by worker_params::close_timeout), so no destructor ever blocks on the
 * network.
 *
 * Threading: with UCS_THREAD_MODE_MULTI every member may be called from any thread (UCX locks the
 * worker).  With SINGLE or SERIALIZED the application serialises all calls on the worker and on
 * everything created from it (endpoints, requests, ...); a ucp_cpp::progress_thread then offers
 * submit() to run work on the one thread that owns the worker.  signal() is always thread-safe.
 */
#pragma once

#include <ucp_cpp/context.hpp>
#include <ucp_cpp/detail/globals.hpp>
#include <ucp_cpp/error.hpp>

#include <ucp/api/ucp.h>

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace ucp_cpp {

class request;
class am_message;
struct op_options;

struct worker_params {
    /// UCS_THREAD_MODE_SINGLE (one thread), SERIALIZED (caller serialises) or MULTI (UCX locks).
    ucs_thread_mode_t thread_mode = UCS_THREAD_MODE_SINGLE;
    /// How long the destructor keeps progressing endpoint close requests before destroying the
    /// worker anyway (a peer that vanished must not make a destructor hang).
    std::chrono::milliseconds close_timeout{2000};
    std::string name = "ucp_cpp";
};

/// A worker address as bytes (what a peer passes to endpoint::connect()).  Copyable value.
struct worker_address {
    std::vector<uint8_t> bytes;
    const ucp_address_t *data() const noexcept
    {
        return reinterpret_cast<const ucp_address_t *>(bytes.data());
    }
    size_t size() const noexcept { return bytes.size(); }
};

/// What ucp_tag_probe_nb reported about an unexpected message.
struct tag_info {
    ucp_tag_t sender_tag = 0;
    size_t length        = 0;
};

/// A probed message removed from UCX's unexpected queue: receive it with worker::tag_recv().
/// Move-only; it must be received (UCX has no way to put it back).
class tag_message {
public:
    tag_message(ucp_tag_message_h handle, tag_info info) : handle_(handle), info_(info) {}
    tag_message(tag_message &&other) noexcept
        : handle_(std::exchange(other.handle_, nullptr)), info_(other.info_) {}
    tag_message(const tag_message &) = delete;
    tag_message &operator=(const tag_message &) = delete;
    const tag_info &info() const noexcept { return info_; }
    ucp_tag_message_h release() noexcept { return std::exchange(handle_, nullptr); }

private:
    ucp_tag_message_h handle_;
    tag_info info_;
};

class worker : public std::enable_shared_from_this<worker> {
    struct private_tag {};

public:
    /// Raw UCP active-message callback as stored per id (see am.hpp for the typed handler).
    using am_raw_handler = std::function<ucs_status_t(const void *header, size_t header_length,
                                                      void *data, size_t length,
                                                      const ucp_am_recv_param_t *param)>;

    static std::shared_ptr<worker> create(std::shared_ptr<context> ctx,
                                          const worker_params &params = {})
    {
        return std::make_shared<worker>(private_tag{}, std::move(ctx), params);
    }

    worker(private_tag, std::shared_ptr<context> ctx, const worker_params &params)
        : context_(std::move(ctx)), close_timeout_(params.close_timeout)
    {
        ucp_worker_params_t wp{};
        wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_NAME;
        wp.thread_mode = params.thread_mode;
        wp.name        = params.name.c_str();
        check_status(ucp_worker_create(context_->handle(), &wp, &handle_), "ucp_worker_create");

        ucp_worker_attr_t attr{};
        attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
        ucs_status_t status = ucp_worker_query(handle_, &attr);
        if (status == UCS_OK && attr.thread_mode < params.thread_mode) {
            ucp_worker_destroy(handle_);
            throw ucx_error(UCS_ERR_UNSUPPORTED,
                            "ucp_worker_create: the installed UCX cannot provide the requested "
                            "thread mode (built without --enable-mt?)");
        }
        thread_mode_ = (status == UCS_OK) ? attr.thread_mode : params.thread_mode;
        if (context_->has_features(UCP_FEATURE_WAKEUP)) {
            check_status(ucp_worker_get_efd(handle_, &event_fd_), "ucp_worker_get_efd");
        }
    }

    worker(const worker &)            = delete;
    worker &operator=(const worker &) = delete;

    ~worker()
    {
        run_deferred_work();
        // Give graceful endpoint closes a bounded chance to finish (flush, disconnect message).
        const auto deadline = std::chrono::steady_clock::now() + close_timeout_;
        while (has_closing_requests() && std::chrono::steady_clock::now() < deadline) {
            ucp_worker_progress(handle_);
            reap_close_requests();
        }
        for (void *close_request : closing_) {
            ucp_request_free(close_request);  // released by UCX when it completes or goes away
        }
        ucp_worker_destroy(handle_);
    }

    ucp_worker_h handle() const noexcept { return handle_; }
    const std::shared_ptr<context> &ctx() const noexcept { return context_; }
    ucs_thread_mode_t thread_mode() const noexcept { return thread_mode_; }

    /**
     * One round of ucp_worker_progress() plus the wrapper's deferred work (endpoint closes
     * requested from inside callbacks, completed close requests).
     * @return the number of events UCP reported (0: nothing happened).
     */
    unsigned progress()
    {
        const worker *outer         = detail::progressing_worker;
        detail::progressing_worker = this;
        unsigned events             = ucp_worker_progress(handle_);
        detail::progressing_worker = outer;
        if (outer != this && pending_housekeeping_.load(std::memory_order_acquire)) {
            run_deferred_work();
            reap_close_requests();
        }
        return events;
    }

    /// True if the context was created with UCP_FEATURE_WAKEUP (event fd, arm, wait).
    bool has_wakeup() const noexcept { return event_fd_ >= 0; }

    /// The worker's event file descriptor (for the application's own epoll loop).  Follow the
    /// arm protocol: progress() until it returns 0, then arm(); wait on the fd only if arm() is true.
    int event_fd() const
    {
        require_wakeup("worker::event_fd");
        return event_fd_;
    }

    /// ucp_worker_arm: true if armed (safe to sleep on the fd), false if events are pending
    /// (progress again first).
    bool arm()
    {
        require_wakeup("worker::arm");
        ucs_status_t status = ucp_worker_arm(handle_);
        if (status == UCS_ERR_BUSY) {
            return false;
        }
        check_status(status, "ucp_worker_arm");
        return true;
    }

    /**
     * Sleeps until the worker has events or @p timeout passes (bounded ucp_worker_wait).
     * Call after progress() returned 0.  @return true if woken by an event or signal().
     */
    bool wait_for_events(std::chrono::nanoseconds timeout)
    {
        if (!arm()) {
            return true;
        }
        pollfd pfd{event_fd_, POLLIN, 0};
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
        int rc  = ::poll(&pfd, 1, static_cast<int>(std::max<decltype(ms)>(ms, 0)));
        return rc > 0;
    }

    /// Blocks until the worker has events (ucp_worker_wait: arms, then sleeps).  Unbounded: use
    /// wait_for_events() where a timeout matters, and signal() to wake a sleeping thread.
    void wait()
    {
        require_wakeup("worker::wait");
        check_status(ucp_worker_wait(handle_), "ucp_worker_wait");
    }

    /// Wakes a thread sleeping in wait()/wait_for_events().  Thread-safe in every thread mode.
    void signal()
    {
        require_wakeup("worker::signal");
        check_status(ucp_worker_signal(handle_), "ucp_worker_signal");
    }

    /// The worker's address, to be sent to a peer out of band.
    worker_address address() const
    {
        ucp_address_t *address = nullptr;
        size_t length          = 0;
        check_status(ucp_worker_get_address(handle_, &address, &length), "ucp_worker_get_address");
        const auto *bytes = reinterpret_cast<const uint8_t *>(address);
        worker_address copy{std::vector<uint8_t>(bytes, bytes + length)};
        ucp_worker_release_address(handle_, address);
        return copy;
    }

    /**
     * Drives the worker until @p done() is true or @p timeout passes; returns done().
     * If a progress_thread owns this worker and this is another thread, it only polls done()
     * (the owner progresses).  Otherwise it busy-polls progress(), and after a short idle spin
     * sleeps on the event fd when the context has UCP_FEATURE_WAKEUP.
     */
    template <class Predicate>
    bool progress_until(Predicate &&done, std::chrono::nanoseconds timeout)
    {
        using clock         = std::chrono::steady_clock;
        const auto deadline = timeout == std::chrono::nanoseconds::max()
                                  ? clock::time_point::max()
                                  : clock::now() + timeout;
        const bool progressed_elsewhere = progressed_by_other_thread();
        unsigned idle_rounds            = 0;
        while (!done()) {
            if (progressed_elsewhere) {
                if (clock::now() >= deadline) {
                    return done();
                }
                std::this_thread::yield();
                continue;
            }
            if (progress() != 0) {
                idle_rounds = 0;
                continue;
            }
            if (done()) {
                break;
            }
            auto now = clock::now();
            if (now >= deadline) {
                return false;
            }
            // Spin first (latency), then sleep on the event fd in short slices so that a
            // missed wake-up can never turn into a hang.
            if (++idle_rounds > spin_rounds && has_wakeup()) {
                wait_for_events(std::min<clock::duration>(deadline - now, std::chrono::milliseconds(10)));
            }
        }
        return true;
    }

    // ---- tag matching (the worker side: receives and probes; sends are on endpoint) ----

    /// Receives a message whose tag matches (sender_tag & mask) == (tag & mask).
    [[nodiscard]] request tag_recv(void *buffer, size_t length, ucp_tag_t tag,
                                   ucp_tag_t mask = ~ucp_tag_t(0));
    [[nodiscard]] request tag_recv(void *buffer, size_t length, ucp_tag_t tag, ucp_tag_t mask,
                                   const op_options &options);
    /// Receives a message taken by tag_probe_take().
    [[nodiscard]] request tag_recv(void *buffer, size_t length, tag_message message,
                                   const op_options &options);
    /// Looks for a matching unexpected message without removing it (progress first).
    std::optional<tag_info> tag_probe(ucp_tag_t tag, ucp_tag_t mask = ~ucp_tag_t(0))
    {
        ucp_tag_recv_info_t info{};
        ucp_tag_message_h message = ucp_tag_probe_nb(handle_, tag, mask, 0, &info);
        if (message == nullptr) {
            return std::nullopt;
        }
        return tag_info{info.sender_tag, info.length};
    }
    /// Like tag_probe(), but removes the message from the unexpected queue.
    std::optional<tag_message> tag_probe_take(ucp_tag_t tag, ucp_tag_t mask = ~ucp_tag_t(0))
    {
        ucp_tag_recv_info_t info{};
        ucp_tag_message_h message = ucp_tag_probe_nb(handle_, tag, mask, 1, &info);
        if (message == nullptr) {
            return std::nullopt;
        }
        return tag_message(message, tag_info{info.sender_tag, info.length});
    }

    /// Flushes all outstanding RMA/AMO operations of all endpoints (ucp_worker_flush_nbx).
    [[nodiscard]] request flush();

    // ---- active messages (typed handler in am.hpp) ----

    /// Registers @p handler for active-message @p id (replaces a previous one; nullptr removes).
    /// The handler runs inside progress(), on the progressing thread.  See am.hpp.
    void set_am_handler(uint16_t id, std::function<void(am_message &)> handler);

    /// Lower level: registers a raw UCP receive callback for @p id with UCP_AM_FLAG_* @p flags.
    void set_am_raw_handler(uint16_t id, am_raw_handler handler, uint32_t flags)
    {
        context_->require_features(UCP_FEATURE_AM, "worker::set_am_handler");
        auto slot = handler ? std::make_unique<am_raw_handler>(std::move(handler)) : nullptr;
        ucp_am_handler_param_t param{};
        param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                           UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
        param.id    = id;
        param.flags = flags;
        param.cb    = slot ? &worker::am_trampoline : nullptr;
        param.arg   = slot.get();
        check_status(ucp_worker_set_am_recv_handler(handle_, &param),
                     "ucp_worker_set_am_recv_handler");
        // A replaced handler may still be running on a progress thread: keep it until the
        // worker goes away instead of destroying it under that thread's feet.
        std::lock_guard<std::mutex> lock(mutex_);
        auto &current = am_handlers_[id];
        if (current) {
            retired_am_handlers_.push_back(std::move(current));
        }
        current = std::move(slot);
    }

    // ---- used by endpoint / progress_thread; not needed by applications ----

    /// Takes ownership of an endpoint close request; completed and freed by later progress.
    void adopt_close_request(void *close_request)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        closing_.push_back(close_request);
        pending_housekeeping_.store(true, std::memory_order_release);
    }

    /**
     * Runs @p work at the end of the current (or next) progress() call on the thread that
     * progresses this worker, or in the destructor.  Used for UCX calls that must not run inside
     * UCX callbacks (ucp_ep_close_nbx) or, in SINGLE/SERIALIZED mode, outside the thread that
     * owns the worker (a progress_thread).  Wakes a progress thread sleeping in wait.
     */
    void defer(std::function<void()> work)
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            deferred_.push_back(std::move(work));
            pending_housekeeping_.store(true, std::memory_order_release);
        }
        if (has_wakeup() && !in_own_callback() && progressed_by_other_thread()) {
            ucp_worker_signal(handle_);  // thread-safe in every mode
        }
    }

    /// True if UCX calls on this worker must be made by another thread that owns its progress
    /// (a progress_thread with a SINGLE/SERIALIZED worker): use defer() or progress_thread::submit.
    bool calls_belong_to_other_thread() const noexcept
    {
        return thread_mode_ != UCS_THREAD_MODE_MULTI && progressed_by_other_thread();
    }

    /// True if the calling thread is inside this worker's progress() (i.e. in a UCX callback).
    bool in_own_callback() const noexcept { return detail::progressing_worker == this; }

    /// Set by progress_thread: the thread that progresses this worker (default id: none).
    void set_progress_owner(std::thread::id owner) noexcept { progress_owner_.store(owner); }
    std::thread::id progress_owner() const noexcept { return progress_owner_.load(); }
    bool progressed_by_other_thread() const noexcept
    {
        auto owner = progress_owner_.load();
        return owner != std::thread::id() && owner != std::this_thread::get_id();
    }

private:
    static constexpr unsigned spin_rounds = 2000;

    static ucs_status_t am_trampoline(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length, const ucp_am_recv_param_t *param)
    {
        return (*static_cast<am_raw_handler *>(arg))(header, header_length, data, length, param);
    }

    void require_wakeup(const char *operation) const
    {
        if (event_fd_ < 0) {
            context_->require_features(UCP_FEATURE_WAKEUP, operation);
        }
    }

    bool has_closing_requests()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return !closing_.empty();
    }

    void run_deferred_work()
    {
        std::vector<std::function<void()>> work;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            work.swap(deferred_);
        }
        for (auto &item : work) {
            item();
        }
    }

    void reap_close_requests()
    {
        // ucp_request_free() takes the worker lock (MULTI mode): never call it under mutex_,
        // which UCX callbacks (endpoint destructors -> defer_close) take under the worker lock.
        std::vector<void *> finished;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto still_open = closing_.begin();
            for (void *close_request : closing_) {
                if (ucp_request_check_status(close_request) == UCS_INPROGRESS) {
                    *still_open++ = close_request;
                } else {
                    finished.push_back(close_request);
                }
            }
            closing_.erase(still_open, closing_.end());
            pending_housekeeping_.store(!closing_.empty() || !deferred_.empty(),
                                        std::memory_order_release);
        }
        for (void *close_request : finished) {
            ucp_request_free(close_request);
        }
    }

    std::shared_ptr<context> context_;
    ucp_worker_h handle_ = nullptr;
    ucs_thread_mode_t thread_mode_;
    int event_fd_ = -1;
    std::chrono::milliseconds close_timeout_;
    std::atomic<std::thread::id> progress_owner_{};
    std::atomic<bool> pending_housekeeping_{false};
    std::mutex mutex_;  // guards the containers below (not UCX: UCX locks itself in MULTI mode)
    std::vector<void *> closing_;
    std::vector<std::function<void()>> deferred_;
    std::map<uint16_t, std::unique_ptr<am_raw_handler>> am_handlers_;
    std::vector<std::unique_ptr<am_raw_handler>> retired_am_handlers_;
};

}  // namespace ucp_cpp

// The request-returning members above are defined with the type they return (request.hpp,
// which in turn pulls in am.hpp): including worker.hpp alone gives the whole worker API.
#include <ucp_cpp/request.hpp>
