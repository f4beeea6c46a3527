// The open/close loop of the wrapper leak tests (tests/ucp_cpp/test_leaks.cpp: context, worker,
// endpoint, listener, memory; tests/collectives/test_leaks.cpp: the communicator): `cycle` a
// few times, then `cycles` times; open fds no more, RSS within gdr_test::kRssNoiseKib (plain builds).
// (tests/uct/test_leaks.cpp has its own: it also counts the device's verbs objects.)
#pragma once

#include "footprint.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

namespace gdr_test {

/// The count in environment variable @p var, else 1000.
inline unsigned long leak_cycles(const char *var)
{
    const char *env = std::getenv(var);
    return env != nullptr ? std::strtoul(env, nullptr, 10) : 1000;
}

/// `cycle` 10 times (UCX fills caches and pools lazily), then @p cycles times: same fds, RSS
/// within noise.  `settle` (progress) runs for up to 3 s after the cycles while more fds are
/// open than before: a closed tcp endpoint's sockets go away a little later, not never.
inline void expect_flat(
    const char *what, unsigned long cycles, const std::function<void()> &cycle,
    const std::function<void()> &settle = [] {})
{
    for (unsigned long i = 0; i < 10; ++i) {
        cycle();
        after_cycle();  // sanitized builds: footprint.hpp says why
    }
    const size_t fds = open_fds();
    const long rss   = rss_kib();
    const auto start = std::chrono::steady_clock::now();
    for (unsigned long i = 0; i < cycles && !::testing::Test::HasFailure(); ++i) {
        cycle();
        after_cycle();
    }
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
         open_fds() > fds && std::chrono::steady_clock::now() < until;) {
        settle();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const size_t fds_after = open_fds();
    const long rss_after   = rss_kib();
    std::printf("[  LEAKS   ] %s x%lu (%.1f s): fds %zu -> %zu, RSS %ld -> %ld KiB\n", what, cycles,
                seconds, fds, fds_after, rss, rss_after);
    // fewer is fine: sockets of the warm-up cycles closing meanwhile
    EXPECT_LE(fds_after, fds) << what << " leaks file descriptors";
    if (!kAsan)  // footprint.hpp's after_cycle() says why
        EXPECT_LT(rss_after - rss, kRssNoiseKib) << what << " grows RSS";
}

}  // namespace gdr_test
