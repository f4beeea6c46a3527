/**
 * @file worker.hpp
 * @brief ucp_cpp::worker: RAII owner of a ucp_worker_h, its progress and its event-driven wait;
 *        worker_params, worker_address, tag_info, tag_message.
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
 *
 * Layer: above context.hpp.  The members that return a request (tag_recv, flush) or take an
 * am_message handler (set_am_handler) are declared here and defined in detail/worker.inl, which
 * <ucp_cpp/ucp_cpp.hpp> includes: programs include the umbrella.
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
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ucp_cpp {

class request;  // request.hpp
class am_message;  // am.hpp
struct op_options;  // request.hpp

/// @brief How worker::create() sets up the worker.  A plain value.
struct worker_params {
    /// UCS_THREAD_MODE_SINGLE (one thread), SERIALIZED (caller serialises) or MULTI (UCX locks).
    ucs_thread_mode_t thread_mode = UCS_THREAD_MODE_SINGLE;
    /// How long the destructor keeps progressing endpoint close requests before destroying the
    /// worker anyway (a peer that vanished must not make a destructor hang).
    std::chrono::milliseconds close_timeout{2000};
    /// Name shown in UCX logs.
    std::string name = "ucp_cpp";
};

/// @brief A worker address as bytes (what a peer passes to endpoint::connect()).  Copyable value.
struct worker_address {
    /// The address as ucp_worker_get_address() packed it.
    std::vector<uint8_t> bytes;

    /**
     * @brief The address in the form UCP takes.
     * @return a pointer into bytes; valid while bytes is unchanged.
     */
    const ucp_address_t *data() const noexcept
    {
        return reinterpret_cast<const ucp_address_t *>(bytes.data());
    }

    /**
     * @brief The address's length.
     * @return bytes.size().
     */
    size_t size() const noexcept { return bytes.size(); }
};

/// @brief What ucp_tag_probe_nb reported about an unexpected message.
struct tag_info {
    ucp_tag_t sender_tag = 0;  ///< the tag the sender used
    size_t length        = 0;  ///< the message's size in bytes
};

/**
 * @brief A probed message removed from UCX's unexpected queue (worker::tag_probe_take()).
 *
 * Receive it with worker::tag_recv(buffer, length, message, options).  Move-only; it must be
 * received (UCX has no way to put it back).  Threading: as for its worker.
 */
class tag_message {
public:
    /**
     * @brief Wraps what ucp_tag_probe_nb(remove = 1) returned.
     * @param handle the UCP message handle.
     * @param info   its sender tag and length.
     */
    tag_message(ucp_tag_message_h handle, tag_info info) : handle_(handle), info_(info) {}

    /**
     * @brief Takes the message over; @p other is left empty.
     * @param other the message to take.
     */
    tag_message(tag_message &&other) noexcept
        : handle_(std::exchange(other.handle_, nullptr)), info_(other.info_)
    {}
    tag_message(const tag_message &)            = delete;
    tag_message &operator=(const tag_message &) = delete;

    /**
     * @brief The message's sender tag and length.
     * @return what the probe reported.
     */
    const tag_info &info() const noexcept { return info_; }

    /**
     * @brief Hands the UCP handle over (to ucp_tag_msg_recv_nbx); this object is left empty.
     * @return the handle, or nullptr if already released.
     */
    ucp_tag_message_h release() noexcept { return std::exchange(handle_, nullptr); }

private:
    ucp_tag_message_h handle_;
    tag_info info_;
};

/**
 * @brief A UCP worker (ucp_worker_h): the progress engine and the receive side of tag matching
 *        and active messages; endpoints, listeners and requests are created from it.
 *
 * Non-copyable, non-movable: created by create() and shared by std::shared_ptr.  Lifetime and
 * threading: see the file comment.
 */
class worker : public std::enable_shared_from_this<worker> {
    struct private_tag {};

public:
    /// Raw UCP active-message callback as stored per id (see am.hpp for the typed handler).
    using am_raw_handler =
        std::function<ucs_status_t(const void *header, size_t header_length, void *data,
                                   size_t length, const ucp_am_recv_param_t *param)>;

    /**
     * @brief Creates a worker of @p ctx (ucp_worker_create; the event fd too with
     *        UCP_FEATURE_WAKEUP).
     * @param ctx    the context; kept alive by the worker.
     * @param params thread mode, close timeout, name.
     * @return the worker, shared.
     * @throws ucx_error if UCP fails, or UCS_ERR_UNSUPPORTED if the installed UCX cannot provide
     *         the requested thread mode (built without --enable-mt).
     */
    static std::shared_ptr<worker> create(std::shared_ptr<context> ctx,
                                          const worker_params &params = {})
    {
        return std::make_shared<worker>(private_tag{}, std::move(ctx), params);
    }

    /**
     * @brief Use create(); public only so that std::make_shared can call it.
     * @param ctx    as for create().
     * @param params as for create().
     */
    worker(private_tag, std::shared_ptr<context> ctx, const worker_params &params)
        : context_(std::move(ctx)), close_timeout_(params.close_timeout)
    {
        ucp_worker_params_t wp{};
        wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_NAME;
        wp.thread_mode = params.thread_mode;
        wp.name        = params.name.c_str();
        check_status(ucp_worker_create(context_->handle(), &wp, &handle_), "ucp_worker_create");

        ucp_worker_attr_t attr{};
        attr.field_mask     = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
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

    /**
     * @brief Runs deferred work, gives endpoint close requests up to
     *        worker_params::close_timeout to finish, then ucp_worker_destroy().
     */
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

    /**
     * @brief The UCP handle, for UCP calls the wrapper does not cover.
     * @return the ucp_worker_h; valid while this object lives.
     */
    ucp_worker_h handle() const noexcept { return handle_; }

    /**
     * @brief The context the worker belongs to.
     * @return the context (kept alive by the worker).
     */
    const std::shared_ptr<context> &ctx() const noexcept { return context_; }

    /**
     * @brief The thread mode UCX granted (what ucp_worker_query reports).
     * @return at least worker_params::thread_mode.
     */
    ucs_thread_mode_t thread_mode() const noexcept { return thread_mode_; }

    /**
     * @brief One round of ucp_worker_progress() plus the wrapper's deferred work (endpoint
     *        closes requested from inside callbacks, completed close requests).
     *
     * UCX callbacks (completions, AM handlers, error handlers) run inside this call, on the
     * calling thread.  May be nested (a callback calling progress()): the deferred work then
     * waits for the outermost call.
     * @return the number of events UCP reported (0: nothing happened).
     */
    unsigned progress()
    {
        const worker *outer        = detail::progressing_worker;
        detail::progressing_worker = this;
        unsigned events            = ucp_worker_progress(handle_);
        detail::progressing_worker = outer;
        if (outer != this && pending_housekeeping_.load(std::memory_order_acquire)) {
            run_deferred_work();
            reap_close_requests();
        }
        return events;
    }

    /**
     * @brief Whether the event-driven members (event_fd, arm, wait, signal) are available.
     * @return true if the context was created with UCP_FEATURE_WAKEUP.
     */
    bool has_wakeup() const noexcept { return event_fd_ >= 0; }

    /**
     * @brief The worker's event file descriptor, for the application's own epoll loop.
     *
     * Follow the arm protocol: progress() until it returns 0, then arm(); wait on the fd only
     * if arm() returned true.
     * @return the fd (owned by UCX; valid while the worker lives).
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) without UCP_FEATURE_WAKEUP.
     */
    int event_fd() const
    {
        require_wakeup("worker::event_fd");
        return event_fd_;
    }

    /**
     * @brief Arms the event fd (ucp_worker_arm).
     * @return true if armed (safe to sleep on the fd), false if events are pending (progress
     *         again first).
     * @throws ucx_error without UCP_FEATURE_WAKEUP, or if UCP fails.
     */
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
     * @brief Sleeps until the worker has events or @p timeout passes (a bounded
     *        ucp_worker_wait: arm(), then poll() on the event fd).
     *
     * Call after progress() returned 0.
     * @param timeout the longest sleep (rounded up to milliseconds).
     * @return true if woken by an event or signal() (or events were pending), false on timeout.
     * @throws ucx_error without UCP_FEATURE_WAKEUP, or if arming fails.
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

    /**
     * @brief Blocks until the worker has events (ucp_worker_wait: arms, then sleeps).
     *
     * Unbounded: use wait_for_events() where a timeout matters, and signal() to wake a
     * sleeping thread.
     * @throws ucx_error without UCP_FEATURE_WAKEUP, or if UCP fails.
     */
    void wait()
    {
        require_wakeup("worker::wait");
        check_status(ucp_worker_wait(handle_), "ucp_worker_wait");
    }

    /**
     * @brief Wakes a thread sleeping in wait()/wait_for_events() (ucp_worker_signal).
     *
     * Thread-safe in every thread mode.
     * @throws ucx_error without UCP_FEATURE_WAKEUP, or if UCP fails.
     */
    void signal()
    {
        require_wakeup("worker::signal");
        check_status(ucp_worker_signal(handle_), "ucp_worker_signal");
    }

    /**
     * @brief The worker's address, to be sent to a peer out of band (endpoint::connect()).
     * @return a copy of what ucp_worker_get_address() packed.
     * @throws ucx_error if UCP fails.
     */
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
     * @brief Drives the worker until @p done() is true or @p timeout passes.
     *
     * If a progress_thread owns this worker and this is another thread, it only polls done()
     * (the owner progresses).  Otherwise it busy-polls progress(), and after a short idle spin
     * sleeps on the event fd in slices of at most 10 ms when the context has
     * UCP_FEATURE_WAKEUP, so a missed wake-up costs one slice, never a hang.
     * @tparam Predicate callable as bool().
     * @param done    the condition; called on this thread between progress rounds.
     * @param timeout the longest wait; nanoseconds::max() waits forever.
     * @return done() at the end: false only on timeout.
     */
    template <class Predicate>
    bool progress_until(Predicate &&done, std::chrono::nanoseconds timeout)
    {
        using clock         = std::chrono::steady_clock;
        const auto deadline = timeout == std::chrono::nanoseconds::max() ? clock::time_point::max()
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
                wait_for_events(
                    std::min<clock::duration>(deadline - now, std::chrono::milliseconds(10)));
            }
        }
        return true;
    }

    // ---- tag matching (the worker side: receives and probes; sends are on endpoint) ----

    /**
     * @brief Receives a message whose tag matches: (sender_tag & mask) == (tag & mask)
     *        (ucp_tag_recv_nbx).  Defined in detail/worker.inl.
     * @param buffer where the message lands; must stay valid until the request completes
     *               (dropping the request cancels the receive first).
     * @param length the buffer's size; a longer message completes with
     *               UCS_ERR_MESSAGE_TRUNCATED.
     * @param tag    the tag to match.
     * @param mask   which bits of @p tag to match (wildcards: clear bits; see
     *               tag_space::user_mask()).
     * @return the request; request::length() and request::sender_tag() tell what arrived.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) without UCP_FEATURE_TAG.
     */
    [[nodiscard]] request tag_recv(void *buffer, size_t length, ucp_tag_t tag,
                                   ucp_tag_t mask = ~ucp_tag_t(0));

    /**
     * @brief tag_recv() with per-operation options (memory type, memh, completion callback).
     * @param buffer  as for tag_recv(buffer, length, tag, mask).
     * @param length  as for tag_recv(buffer, length, tag, mask).
     * @param tag     as for tag_recv(buffer, length, tag, mask).
     * @param mask    as for tag_recv(buffer, length, tag, mask).
     * @param options memory type / memh of @p buffer, callback, flags.
     * @return the request.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) without UCP_FEATURE_TAG.
     */
    [[nodiscard]] request tag_recv(void *buffer, size_t length, ucp_tag_t tag, ucp_tag_t mask,
                                   const op_options &options);

    /**
     * @brief Receives a message taken by tag_probe_take() (ucp_tag_msg_recv_nbx).
     * @param buffer  where the message lands; valid until the request completes.
     * @param length  the buffer's size (at least message.info().length).
     * @param message the probed message; consumed.
     * @param options memory type / memh of @p buffer, callback, flags.
     * @return the request.
     */
    [[nodiscard]] request tag_recv(void *buffer, size_t length, tag_message message,
                                   const op_options &options);

    /**
     * @brief Looks for a matching unexpected message without removing it (ucp_tag_probe_nb).
     *
     * Only messages that already arrived are seen: progress the worker first.
     * @param tag  the tag to match.
     * @param mask which bits of @p tag to match.
     * @return its sender tag and length, or nothing if no such message is waiting.
     */
    std::optional<tag_info> tag_probe(ucp_tag_t tag, ucp_tag_t mask = ~ucp_tag_t(0))
    {
        ucp_tag_recv_info_t info{};
        ucp_tag_message_h message = ucp_tag_probe_nb(handle_, tag, mask, 0, &info);
        if (message == nullptr) {
            return std::nullopt;
        }
        return tag_info{info.sender_tag, info.length};
    }
    /**
     * @brief Like tag_probe(), but removes the message from the unexpected queue.
     * @param tag  the tag to match.
     * @param mask which bits of @p tag to match.
     * @return the message, to be received with tag_recv(buffer, length, message, options), or
     *         nothing if no such message is waiting.
     */
    std::optional<tag_message> tag_probe_take(ucp_tag_t tag, ucp_tag_t mask = ~ucp_tag_t(0))
    {
        ucp_tag_recv_info_t info{};
        ucp_tag_message_h message = ucp_tag_probe_nb(handle_, tag, mask, 1, &info);
        if (message == nullptr) {
            return std::nullopt;
        }
        return tag_message(message, tag_info{info.sender_tag, info.length});
    }

    /**
     * @brief Flushes all outstanding RMA/AMO operations of all endpoints
     *        (ucp_worker_flush_nbx).  Defined in detail/worker.inl.
     * @return the request; complete when they are complete remotely.
     */
    [[nodiscard]] request flush();

    // ---- active messages (typed handler in am.hpp) ----

    /**
     * @brief Registers @p handler for active-message @p id (replaces a previous one).
     *
     * Registered with UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA, so eager and
     * rendezvous messages are handled alike (am_message::receive(), am_message::keep()).  The
     * handler runs inside progress(), on the progressing thread; an exception it throws is
     * swallowed (it must not unwind through UCX) and the message dropped.  Register before a
     * peer can send: UCP drops messages for an id without a handler.  Defined in
     * detail/worker.inl.
     * @param id      the active-message id (the sender's endpoint::am_send() id).
     * @param handler called per message; nullptr removes the handler.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) without UCP_FEATURE_AM, or if UCP fails.
     */
    void set_am_handler(uint16_t id, std::function<void(am_message &)> handler);

    /**
     * @brief Lower level: registers a raw UCP receive callback for @p id.
     *
     * A replaced handler is kept until the worker goes away, since a progress thread may still
     * be running it.
     * @param id      the active-message id.
     * @param handler called as UCP's ucp_am_recv_callback_t; nullptr removes the handler.
     * @param flags   UCP_AM_FLAG_* bits.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) without UCP_FEATURE_AM, or if UCP fails.
     */
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

    /**
     * @brief Takes ownership of an endpoint close request; later progress() calls (at the
     *        latest the destructor) complete and free it.
     * @param close_request what ucp_ep_close_nbx returned (a request pointer).
     */
    void adopt_close_request(void *close_request)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        closing_.push_back(close_request);
        pending_housekeeping_.store(true, std::memory_order_release);
    }

    /**
     * @brief Runs @p work at the end of the current (or next) progress() call on the thread
     *        that progresses this worker, or in the destructor.
     *
     * Used for UCX calls that must not run inside UCX callbacks (ucp_ep_close_nbx) or, in
     * SINGLE/SERIALIZED mode, outside the thread that owns the worker (a progress_thread).
     * Wakes a progress thread sleeping in wait.  Thread-safe.
     * @param work the deferred call; must not throw.
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

    /**
     * @brief Whether UCX calls on this worker must be made by another thread, the one that
     *        owns its progress (a progress_thread with a SINGLE/SERIALIZED worker).
     *
     * If so, use defer() or progress_thread::submit().
     * @return true if this thread may not call UCX on this worker.
     */
    bool calls_belong_to_other_thread() const noexcept
    {
        return thread_mode_ != UCS_THREAD_MODE_MULTI && progressed_by_other_thread();
    }

    /**
     * @brief Whether the calling thread is inside this worker's progress(), i.e. in a UCX
     *        callback.
     * @return true inside progress() of this worker on this thread.
     */
    bool in_own_callback() const noexcept { return detail::progressing_worker == this; }

    /**
     * @brief Records the thread that progresses this worker (set by progress_thread).
     * @param owner that thread's id; a default-constructed id for none.
     */
    void set_progress_owner(std::thread::id owner) noexcept { progress_owner_.store(owner); }

    /**
     * @brief The thread that progresses this worker.
     * @return its id, or a default-constructed id if none was set.
     */
    std::thread::id progress_owner() const noexcept { return progress_owner_.load(); }

    /**
     * @brief Whether a thread other than the calling one progresses this worker.
     * @return true if a progress owner is set and it is not this thread.
     */
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
