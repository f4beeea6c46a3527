// Leaks of the wrapper objects: context, worker, endpoint, listener and memory
// handle, each created and dropped UCP_CPP_TEST_LEAK_CYCLES times (default 1000) over tcp,self;
// open file descriptors and RSS must stay flat.  (The transport's own objects, over rxe:
// tests/uct/test_leaks.cpp; the communicator: tests/collectives/test_leaks.cpp.)
#include "peer_harness.hpp"

#include "../common/leak_loop.hpp"

using namespace ucp_cpp_test;

namespace {

void expect_flat(
    const char *what, const std::function<void()> &cycle,
    const std::function<void()> &settle = [] {})
{
    gdr_test::expect_flat(what, gdr_test::leak_cycles("UCP_CPP_TEST_LEAK_CYCLES"), cycle, settle);
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
