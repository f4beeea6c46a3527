// Leaks of the wrapper objects (#15, req 5): context, worker, endpoint, listener and memory
// handle, each created and dropped UCP_CPP_TEST_LEAK_CYCLES times (default 1000) over tcp,self;
// open file descriptors and RSS must stay flat.  (The transport's own objects, over rxe:
// tests/uct/test_leaks.cpp; the communicator: tests/collectives.)
#include "peer_harness.hpp"

#include "../common/footprint.hpp"

#include <chrono>
#include <thread>

using namespace ucp_cpp_test;

namespace {

unsigned long leak_cycles()
{
    const char *env = std::getenv("UCP_CPP_TEST_LEAK_CYCLES");
    return env != nullptr ? std::strtoul(env, nullptr, 10) : 1000;
}

/// `cycle` a few times (UCX fills caches lazily), then leak_cycles() times: same fds, RSS
/// within noise.  `settle` (progress) runs for up to 3 s after the cycles while more fds are
/// open than before: a closed tcp endpoint's sockets go away a little later, not never.
void expect_flat(
    const char *what, const std::function<void()> &cycle,
    const std::function<void()> &settle = [] {})
{
    for (int i = 0; i < 10; ++i)
        cycle();
    const size_t fds           = gdr_test::open_fds();
    const long rss             = gdr_test::rss_kib();
    const auto start           = std::chrono::steady_clock::now();
    const unsigned long cycles = leak_cycles();
    for (unsigned long i = 0; i < cycles && !::testing::Test::HasFailure(); ++i)
        cycle();
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
         gdr_test::open_fds() > fds && std::chrono::steady_clock::now() < until;) {
        settle();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[  LEAKS   ] %s x%lu (%.1f s): fds %zu -> %zu, RSS %ld -> %ld KiB\n", what, cycles,
                seconds, fds, gdr_test::open_fds(), rss, gdr_test::rss_kib());
    // fewer is fine: sockets of the warm-up cycles closing meanwhile
    EXPECT_LE(gdr_test::open_fds(), fds) << what << " leaks file descriptors";
    EXPECT_LT(gdr_test::rss_kib() - rss, gdr_test::kRssNoiseKib) << what << " grows RSS";
}

const std::string kTls = "tcp,self";

TEST(WrapperLeaks, Context)
{
    expect_flat("context", [] { (void)make_context(kTls); });
}

TEST(WrapperLeaks, Worker)
{
    auto ctx = make_context(kTls);
    expect_flat("worker", [&] { (void)ucp_cpp::worker::create(ctx); });
}

TEST(WrapperLeaks, EndpointToSelf)
{
    auto wrk           = ucp_cpp::worker::create(make_context(kTls));
    const auto address = wrk->address();
    expect_flat(
        "endpoint (connect to own address, close)",
        [&] {
            (void)ucp_cpp::endpoint::connect(wrk, address);
            while (wrk->progress() != 0) {  // the worker finishes the close request
            }
        },
        [&] { (void)wrk->progress(); });
}

TEST(WrapperLeaks, Listener)
{
    auto wrk = ucp_cpp::worker::create(make_context(kTls));
    expect_flat("listener on 127.0.0.1:0", [&] {
        (void)ucp_cpp::listener::create(wrk, "127.0.0.1");
        while (wrk->progress() != 0) {
        }
    });
}

TEST(WrapperLeaks, MemoryHandleAndRkey)
{
    auto ctx = make_context(kTls);
    std::vector<uint8_t> buffer(64 << 10);
    expect_flat("memory map + rkey pack + unmap", [&] {
        auto mem = ucp_cpp::memory_handle::map(ctx, buffer.data(), buffer.size());
        (void)mem->pack_rkey();
    });
}

}  // namespace
