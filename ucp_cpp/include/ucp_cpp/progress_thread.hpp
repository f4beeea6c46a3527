/**
 * @file progress_thread.hpp
 * @brief ucp_cpp::progress_thread: a thread that owns a worker's progress, and a safe way for
 *        other threads to hand it work (submit/post).
 *
 * Modes: polling (busy progress: lowest latency, one core) or blocking (arms the worker and
 * sleeps on its event fd; needs UCP_FEATURE_WAKEUP).  Blocking waits are sliced (100 ms) so a
 * lost wake-up can delay but never hang the thread; submit()/post() and endpoint destructors
 * wake it with ucp_worker_signal.
 *
 * Threading: with a MULTI worker, other threads may also call operations directly; waits on
 * other threads then just watch the request while this thread progresses.  With a SINGLE or
 * SERIALIZED worker every UCX call must run on this thread: issue operations inside submit()
 * (request handles returned from there may be waited on and dropped anywhere; their release is
 * routed back here), and endpoints dropped elsewhere are closed here.
 *
 * Lifetime: keeps the worker alive until the thread has exited.  Destroying the progress_thread
 * stops it after running the tasks already queued; destroying it from its own thread (inside a
 * task or a callback) is allowed: the thread is then detached and exits by itself, and the
 * process's exit waits for it (detail::detached_threads).
 *
 * Layer: above worker.hpp.
 */
#pragma once

#include <ucp_cpp/error.hpp>
#include <ucp_cpp/worker.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

namespace ucp_cpp {

namespace detail {

/// Progress threads that outlive their progress_thread object (it was destroyed by one of
/// its own tasks) finish on their own; the process's exit waits for them (bounded), so a
/// detached thread still destroying its worker and context never races UCX's own teardown.
class detached_threads {
public:
    /// The process's registry.
    static detached_threads &instance()
    {
        static detached_threads registry;
        return registry;
    }
    /// A progress thread was detached and is still running.
    void started()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++running_;
    }
    /// A detached progress thread has released its worker and is about to exit.
    void finished()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            --running_;
        }
        done_.notify_all();
    }
    /// Runs at process exit: waits (at most 10 s) for the detached threads.
    ~detached_threads()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait_for(lock, std::chrono::seconds(10), [this] { return running_ == 0; });
    }

private:
    detached_threads() = default;
    std::mutex mutex_;
    std::condition_variable done_;
    int running_ = 0;
};

}  // namespace detail

/// @brief How a progress_thread waits for work.
enum class progress_mode {
    polling,  ///< busy progress (yielding between idle rounds): lowest latency, one core
    blocking,  ///< sleeps on the worker's event fd when idle; needs UCP_FEATURE_WAKEUP
};

/**
 * @brief A thread that owns a worker's progress, and a safe way for other threads to hand it
 *        work (submit(), post()).
 *
 * Non-copyable, non-movable.  Lifetime and threading: see the file comment.
 */
class progress_thread {
public:
    /**
     * @brief Starts the thread; it becomes the worker's progress owner before this returns.
     * @param owner the worker; kept alive until the thread has exited.
     * @param mode  polling or blocking.
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) for blocking mode without UCP_FEATURE_WAKEUP;
     *         ucx_error(UCS_ERR_ALREADY_EXISTS) if the worker already has a progress thread.
     */
    explicit progress_thread(std::shared_ptr<worker> owner,
                             progress_mode mode = progress_mode::polling)
        : state_(std::make_shared<shared_state>())
    {
        if (mode == progress_mode::blocking && !owner->has_wakeup()) {
            owner->ctx()->require_features(UCP_FEATURE_WAKEUP, "progress_thread(blocking)");
        }
        if (owner->progress_owner() != std::thread::id()) {
            throw ucx_error(UCS_ERR_ALREADY_EXISTS, "progress_thread: worker already has one");
        }
        state_->owner = std::move(owner);
        state_->mode  = mode;
        std::promise<void> started;
        auto running = started.get_future();
        thread_      = std::thread([state = state_, &started]() mutable {
            state->owner->set_progress_owner(std::this_thread::get_id());
            started.set_value();
            run(*state);
            const bool detached = state->detached;
            state.reset();  // may destroy the worker and its context: before saying we are done
            if (detached) {
                detail::detached_threads::instance().finished();
            }
        });
        running.wait();  // the owner id is set before anyone can post or wait
    }

    progress_thread(const progress_thread &)            = delete;
    progress_thread &operator=(const progress_thread &) = delete;

    /// @brief stop().
    ~progress_thread() { stop(); }

    /**
     * @brief Stops the thread and joins it (idempotent).  Queued tasks run first.
     *
     * Called on the progress thread itself (from a task or callback), it detaches instead of
     * joining; the thread exits after the current task.
     */
    void stop()
    {
        if (!thread_.joinable()) {
            return;
        }
        state_->stop.store(true);
        wake(*state_);
        if (thread_.get_id() == std::this_thread::get_id()) {
            // joining ourselves would deadlock: run() ends after this task; exit() waits for it
            state_->detached = true;
            detail::detached_threads::instance().started();
            thread_.detach();
        } else {
            thread_.join();
        }
    }

    /**
     * @brief The worker this thread progresses.
     * @return the worker.
     */
    const std::shared_ptr<worker> &owner() const noexcept { return state_->owner; }

    /**
     * @brief Whether the caller runs on the progress thread.
     * @return true on the progress thread.
     */
    bool on_this_thread() const noexcept { return std::this_thread::get_id() == thread_.get_id(); }

    /**
     * @brief Queues @p task to run on the progress thread, between progress calls.  Thread-safe.
     * @param task the work; an exception it throws ends the progress thread's loop and
     *             std::terminate()s (use submit() to get exceptions back).
     * @throws ucx_error(UCS_ERR_CANCELED) once the thread is stopping.
     */
    void post(std::function<void()> task)
    {
        {
            std::lock_guard<std::mutex> lock(state_->mutex);
            if (state_->stop.load()) {
                throw ucx_error(UCS_ERR_CANCELED, "progress_thread::post: thread is stopping");
            }
            state_->tasks.push_back(std::move(task));
            state_->has_tasks.store(true, std::memory_order_release);
        }
        wake(*state_);
    }

    /**
     * @brief Runs @p fn on the progress thread.  Thread-safe.
     * @tparam F a callable taking no arguments.
     * @param fn the work: issue the operations of a SINGLE/SERIALIZED worker here.
     * @return a future with fn's result or exception.
     * @throws ucx_error(UCS_ERR_CANCELED) once the thread is stopping.
     */
    template <class F> auto submit(F &&fn) -> std::future<std::invoke_result_t<std::decay_t<F>>>
    {
        using result_t = std::invoke_result_t<std::decay_t<F>>;
        auto task      = std::make_shared<std::packaged_task<result_t()>>(std::forward<F>(fn));
        auto result    = task->get_future();
        post([task] { (*task)(); });
        return result;
    }

private:
    struct shared_state {
        std::shared_ptr<ucp_cpp::worker> owner;
        progress_mode mode = progress_mode::polling;
        std::atomic<bool> stop{false};
        std::atomic<bool> has_tasks{false};
        bool detached = false;  // set and read on the progress thread only
        std::mutex mutex;
        std::deque<std::function<void()>> tasks;
    };

    static void wake(shared_state &state)
    {
        if (state.mode == progress_mode::blocking) {
            state.owner->signal();
        }
    }

    static void run_tasks(shared_state &state)
    {
        if (!state.has_tasks.load(std::memory_order_acquire)) {
            return;
        }
        std::deque<std::function<void()>> batch;
        {
            std::lock_guard<std::mutex> lock(state.mutex);
            batch.swap(state.tasks);
            state.has_tasks.store(false, std::memory_order_release);
        }
        for (auto &task : batch) {
            task();  // submit() tasks capture their own exceptions in the future
        }
    }

    static void run(shared_state &state)
    {
        while (!state.stop.load(std::memory_order_acquire)) {
            run_tasks(state);
            if (state.owner->progress() != 0) {
                continue;
            }
            if (state.mode == progress_mode::polling) {
                // UCX's MULTI-mode worker lock is an unfair spinlock: re-taking it at once
                // would starve application threads that issue operations (seen on 2 cores).
                std::this_thread::yield();
                continue;
            }
            if (state.has_tasks.load(std::memory_order_acquire) || state.stop.load()) {
                continue;
            }
            state.owner->wait_for_events(std::chrono::milliseconds(100));
        }
        run_tasks(state);
        while (state.owner->progress() != 0) {
        }
        state.owner->set_progress_owner(std::thread::id());
    }

    std::shared_ptr<shared_state> state_;
    std::thread thread_;
};

}  // namespace ucp_cpp
