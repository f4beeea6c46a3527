/// @file detail/globals.hpp
/// @brief Process-wide state shared by the headers (inline variables: one instance per process).
#pragma once

#include <atomic>

namespace ucp_cpp {
class worker;
namespace detail {

/// Number of live ucp_cpp::context objects (load_plugin() must run before the first one).
inline std::atomic<int> &live_contexts()
{
    static std::atomic<int> count{0};
    return count;
}

/// The worker whose progress() is running on this thread, if any.  Lets destructors that run
/// inside UCX callbacks (e.g. the last reference to an endpoint dropped in its error handler)
/// defer the UCX calls that are not allowed from there.
inline thread_local const worker *progressing_worker = nullptr;

}  // namespace detail
}  // namespace ucp_cpp
