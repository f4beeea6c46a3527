// What a first ucp_cpp program meets, with real UCP over this host's tcp and shared memory: error
// texts that name the operation, the peer and the sizes (once, without a repeated status);
// what UCX_TLS each connection mode needs, said by the error when it is missing; listeners by
// host name; a server restarted on its fixed port; remote_memory (address + length + key in one
// value) shipped in a tag message and used for put and atomics.
#include "../common/loopback_port.hpp"
#include "peer_harness.hpp"

#include <cstdlib>
#include <cstring>

using namespace ucp_cpp_test;

namespace {

bool contains(const std::string &text, const std::string &part)
{
    return text.find(part) != std::string::npos;
}

size_t occurrences(const std::string &text, const std::string &part)
{
    size_t count = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
        ++count;
    }
    return count;
}

/// Progresses both workers until @p req completes or op_timeout passes.
bool progress_both(ucp_cpp::request &req, ucp_cpp::worker &a, ucp_cpp::worker &b)
{
    const auto deadline = std::chrono::steady_clock::now() + op_timeout;
    while (!req.done() && std::chrono::steady_clock::now() < deadline) {
        a.progress();
        b.progress();
    }
    return req.done();
}

/// The text of the ucx_error that @p fn throws ("" and a test failure if it throws none).
template <class Fn> std::string error_of(Fn &&fn, ucs_status_t *status = nullptr)
{
    try {
        fn();
    } catch (const ucp_cpp::ucx_error &e) {
        if (status != nullptr) {
            *status = e.status();
        }
        return e.what();
    }
    ADD_FAILURE() << "no ucx_error thrown";
    return {};
}

/// A server and a client worker, each of its own context, connected through a listener.
struct client_server {
    client_server(const std::string &tls, const std::string &host, uint16_t port = 0,
                  uint64_t features = all_features)
    {
        server_worker = ucp_cpp::worker::create(make_context(tls, features));
        client_worker = ucp_cpp::worker::create(make_context(tls, features));
        listener      = ucp_cpp::listener::create(server_worker, host, port);
        client        = ucp_cpp::endpoint::connect(client_worker, host, listener->port());
    }

    /// Accepts the client's connection (progressing both sides).
    void accept()
    {
        const auto deadline = std::chrono::steady_clock::now() + op_timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            if (auto request = listener->next_connection()) {
                server = ucp_cpp::endpoint::accept(server_worker, std::move(*request));
                return;
            }
            server_worker->progress();
            client_worker->progress();
        }
        FAIL() << "no connection request within " << op_timeout.count() << " s";
    }

    /// One tagged message each way; true if both arrived intact.
    bool ping_pong()
    {
        uint64_t ping = 0x1234, got = 0, pong = 0;
        auto recv = server_worker->tag_recv(&got, sizeof(got), 1);
        auto send = client->tag_send(&ping, sizeof(ping), 1);
        if (!progress_both(recv, *server_worker, *client_worker) || got != ping) {
            return false;
        }
        auto back  = client_worker->tag_recv(&pong, sizeof(pong), 2);
        auto reply = server->tag_send(&got, sizeof(got), 2);
        return progress_both(back, *server_worker, *client_worker) && pong == ping &&
               progress_both(send, *server_worker, *client_worker) &&
               progress_both(reply, *server_worker, *client_worker);
    }

    std::shared_ptr<ucp_cpp::worker> server_worker, client_worker;
    std::shared_ptr<ucp_cpp::listener> listener;
    std::shared_ptr<ucp_cpp::endpoint> client, server;
};

// ---- error texts ----

TEST(UcpCppErrorTexts, StatusTextIsNotRepeated)
{
    EXPECT_STREQ(ucp_cpp::ucx_error(UCS_ERR_UNREACHABLE, "connect").what(),
                 "connect: Destination is unreachable");
    // a caller that formatted the status itself (as "... failed: <status>")
    const std::string formatted = "bootstrap: connect failed: Destination is unreachable";
    EXPECT_EQ(ucp_cpp::ucx_error(UCS_ERR_UNREACHABLE, formatted).what(), formatted);
    EXPECT_EQ(occurrences(ucp_cpp::ucx_error(UCS_ERR_NO_MEMORY, formatted).what(),
                          "Destination is unreachable"),
              1u);
}

TEST(UcpCppErrorTexts, MissingFeatureIsNamedNotNumbered)
{
    auto ctx               = make_context("tcp,self", UCP_FEATURE_TAG);
    auto wrk               = ucp_cpp::worker::create(ctx);
    auto ep                = ucp_cpp::endpoint::connect(wrk, wrk->address());
    char byte              = 0;
    const std::string what = error_of([&] { (void)ep->stream_send(&byte, 1); });
    EXPECT_TRUE(contains(what, "endpoint::stream_send needs a context created with "
                               "UCP_FEATURE_STREAM"))
        << what;
    EXPECT_FALSE(contains(what, "0x")) << what;
    EXPECT_EQ(ucp_cpp::context::feature_names(UCP_FEATURE_TAG | UCP_FEATURE_RMA),
              "UCP_FEATURE_TAG | UCP_FEATURE_RMA");
    EXPECT_EQ(ucp_cpp::context::feature_names(0), "none");
}

TEST(UcpCppErrorTexts, TruncatedReceiveNamesBothSizes)
{
    auto ctx = make_context("tcp,self");
    auto wrk = ucp_cpp::worker::create(ctx);
    auto ep  = ucp_cpp::endpoint::connect(wrk, wrk->address());
    // eager and rendezvous: UCP reports the message's size for both
    for (size_t size : {size_t(1000), size_t(1) << 20}) {
        std::vector<uint8_t> big(size), small(10);
        auto recv = wrk->tag_recv(small.data(), small.size(), 42);
        auto send = ep->tag_send(big.data(), big.size(), 42);
        ASSERT_TRUE(recv.wait_for(op_timeout));
        ucs_status_t status    = UCS_OK;
        const std::string what = error_of([&] { recv.wait(); }, &status);
        EXPECT_EQ(status, UCS_ERR_MESSAGE_TRUNCATED);
        EXPECT_EQ(what, "worker::tag_recv: a " + std::to_string(size) +
                            " B message for a 10 B buffer: Message truncated");
        send.wait(op_timeout);
    }
}

TEST(UcpCppErrorTexts, FailedSendNamesOperationSizeAndPeer)
{
    // Nobody listens on the port: the connection fails, and so does the send.
    auto wrk            = ucp_cpp::worker::create(make_context("tcp"));
    const uint16_t port = gdr_test::free_loopback_port();
    auto ep             = ucp_cpp::endpoint::connect(wrk, "127.0.0.1", port);
    EXPECT_EQ(ep->peer(), "127.0.0.1:" + std::to_string(port));
    std::vector<uint8_t> data(4096);
    auto send              = ep->tag_send(data.data(), data.size(), 1);
    ucs_status_t status    = UCS_OK;
    const std::string what = error_of([&] { send.wait(op_timeout); }, &status);
    EXPECT_NE(status, UCS_ERR_TIMED_OUT) << what;
    EXPECT_EQ(what.rfind("endpoint::tag_send of 4096 B to 127.0.0.1:" + std::to_string(port) + ": ",
                         0),
              0u)
        << what;
    EXPECT_EQ(occurrences(what, ucs_status_string(status)), 1u) << what;
}

TEST(UcpCppErrorTexts, ClosedEndpointAndTimeoutNameThePeer)
{
    auto ctx = make_context("tcp,self");
    auto wrk = ucp_cpp::worker::create(ctx);
    auto ep  = ucp_cpp::endpoint::connect(wrk, wrk->address());
    EXPECT_EQ(ep->peer().rfind("worker 0x", 0), 0u) << ep->peer();
    uint64_t word       = 0;
    auto recv           = wrk->tag_recv(&word, sizeof(word), 77);
    ucs_status_t status = UCS_OK;
    std::string what    = error_of([&] { recv.wait(std::chrono::milliseconds(20)); }, &status);
    EXPECT_EQ(status, UCS_ERR_TIMED_OUT);
    EXPECT_EQ(what.rfind("worker::tag_recv into a 8 B buffer: not complete after 20 ms", 0), 0u)
        << what;
    ep->close().wait(op_timeout);
    what = error_of([&] { (void)ep->tag_send(&word, sizeof(word), 1); }, &status);
    EXPECT_EQ(status, UCS_ERR_NOT_CONNECTED);
    EXPECT_EQ(what, "endpoint::tag_send to " + ep->peer() +
                        ": endpoint is closed: Endpoint is not connected");
}

// ---- what UCX_TLS each connection mode needs ----

TEST(UcpCppTls, HostPortWithoutTcpSaysAddTcp)
{
    // UCX_TLS without tcp: the listener is created, but the client's connection finds no
    // transport and its first operation fails as unreachable.
    client_server cs("posix,cma,self", "127.0.0.1");
    EXPECT_FALSE(cs.client_worker->ctx()->tls_includes("tcp"));
    uint64_t word = 1;
    auto send     = cs.client->tag_send(&word, sizeof(word), 1);
    ASSERT_TRUE(progress_both(send, *cs.server_worker, *cs.client_worker));
    ucs_status_t status    = UCS_OK;
    const std::string what = error_of([&] { send.wait(); }, &status);
    EXPECT_EQ(status, UCS_ERR_UNREACHABLE);
    EXPECT_TRUE(contains(what, "endpoint::tag_send of 8 B to 127.0.0.1:")) << what;
    EXPECT_TRUE(contains(what, "add tcp to UCX_TLS (connections to a listener's host:port need it"))
        << what;
    EXPECT_EQ(occurrences(what, "Destination is unreachable"), 1u) << what;

    // with tcp the same program works
    client_server ok("tcp", "127.0.0.1");
    ok.accept();
    EXPECT_TRUE(ok.ping_pong());
}

TEST(UcpCppTls, SharedMemoryWithPeerErrorHandlingSaysHow)
{
    if (std::getenv("UCX_MM_ERROR_HANDLING") != nullptr) {
        GTEST_SKIP() << "UCX_MM_ERROR_HANDLING is set: shared memory may handle peer errors";
    }
    auto a                 = ucp_cpp::worker::create(make_context("posix,self"));
    auto b                 = ucp_cpp::worker::create(make_context("posix,self"));
    ucs_status_t status    = UCS_OK;
    const std::string what = error_of([&] { ucp_cpp::endpoint::connect(a, b->address()); },
                                      &status);
    EXPECT_EQ(status, UCS_ERR_UNREACHABLE);
    EXPECT_TRUE(contains(what, "endpoint to worker 0x")) << what;
    EXPECT_TRUE(contains(what, "peer_error_handling")) << what;
    EXPECT_TRUE(contains(what, "UCX_MM_ERROR_HANDLING=y")) << what;
    EXPECT_EQ(occurrences(what, "Destination is unreachable"), 1u) << what;

    // as the error says: without peer error handling shared memory connects
    ucp_cpp::endpoint_params params;
    params.peer_error_handling = false;
    auto ep                    = ucp_cpp::endpoint::connect(a, b->address(), params);
    uint64_t sent = 42, got = 0;
    auto recv = b->tag_recv(&got, sizeof(got), 3);
    auto send = ep->tag_send(&sent, sizeof(sent), 3);
    ASSERT_TRUE(progress_both(recv, *a, *b));
    recv.wait();
    EXPECT_EQ(got, sent);
    ASSERT_TRUE(progress_both(send, *a, *b));
}

TEST(UcpCppTls, TlsIncludesReadsTheEffectiveList)
{
    EXPECT_TRUE(make_context("tcp,self")->tls_includes("tcp"));
    EXPECT_TRUE(make_context("posix,tcp:aux")->tls_includes("tcp"));
    EXPECT_FALSE(make_context("posix,self")->tls_includes("tcp"));
    EXPECT_TRUE(make_context("all")->tls_includes("tcp"));
    EXPECT_FALSE(make_context("^tcp")->tls_includes("tcp"));
    EXPECT_TRUE(make_context("^sysv")->tls_includes("tcp"));
    EXPECT_EQ(make_context("posix,self")->tls(), "posix,self");
}

// ---- listeners ----

TEST(UcpCppListener, ByHostNameAsConnectResolvesIt)
{
    client_server cs("tcp", "localhost");
    EXPECT_EQ(cs.client->peer().rfind("localhost:" + std::to_string(cs.listener->port()), 0), 0u)
        << cs.client->peer();
    cs.accept();
    EXPECT_EQ(cs.server->peer().rfind("client ", 0), 0u) << cs.server->peer();
    EXPECT_TRUE(cs.ping_pong());

    auto wrk = ucp_cpp::worker::create(make_context("tcp"));
    EXPECT_NE(ucp_cpp::listener::create(wrk, "")->port(), 0);  // every local address
    ucs_status_t status = UCS_OK;
    const std::string what =
        error_of([&] { ucp_cpp::listener::create(wrk, "no-such-host.invalid", 0); }, &status);
    EXPECT_EQ(status, UCS_ERR_INVALID_ADDR);
    EXPECT_TRUE(contains(what, "listener::create(no-such-host.invalid:0)")) << what;
}

TEST(UcpCppListener, PortTakenByAnotherListenerSaysSo)
{
    auto wrk            = ucp_cpp::worker::create(make_context("tcp"));
    auto first          = ucp_cpp::listener::create(wrk, "127.0.0.1", 0);
    ucs_status_t status = UCS_OK;
    const std::string what =
        error_of([&] { ucp_cpp::listener::create(wrk, "127.0.0.1", first->port()); }, &status);
    EXPECT_EQ(status, UCS_ERR_BUSY);
    EXPECT_EQ(what.rfind("listener::create(127.0.0.1:" + std::to_string(first->port()) +
                             "): ucp_listener_create: the port is in use",
                         0),
              0u)
        << what;
}

/// One server run on a fixed port: accept a client, one ping-pong, the server closes first (so
/// its side of the connection waits in TIME_WAIT, as after a real server's exit).
void serve_once(uint16_t port, bool reuse)
{
    ucp_cpp::context_params params;
    params.features               = UCP_FEATURE_TAG;
    params.config["TLS"]          = "tcp";
    params.reuse_listener_address = reuse;
    auto server_worker            = ucp_cpp::worker::create(ucp_cpp::context::create(params));
    auto client_worker            = ucp_cpp::worker::create(make_context("tcp", UCP_FEATURE_TAG));
    auto listener                 = ucp_cpp::listener::create(server_worker, "127.0.0.1", port);
    auto client                   = ucp_cpp::endpoint::connect(client_worker, "127.0.0.1", port);
    std::shared_ptr<ucp_cpp::endpoint> server;
    const auto deadline = std::chrono::steady_clock::now() + op_timeout;
    while (!server && std::chrono::steady_clock::now() < deadline) {
        client_worker->progress();
        if (auto request = listener->wait_connection(std::chrono::milliseconds(1))) {
            server = ucp_cpp::endpoint::accept(server_worker, std::move(*request));
        }
    }
    ASSERT_TRUE(server);
    uint64_t word = 7, got = 0;
    auto recv = server_worker->tag_recv(&got, sizeof(got), 1);
    auto send = client->tag_send(&word, sizeof(word), 1);
    ASSERT_TRUE(progress_both(recv, *server_worker, *client_worker));
    ASSERT_TRUE(progress_both(send, *server_worker, *client_worker));
    auto closing = server->close();
    ASSERT_TRUE(progress_both(closing, *server_worker, *client_worker));
}

TEST(UcpCppListener, RestartedServerListensOnItsPortAgain)
{
    const uint16_t port = gdr_test::free_loopback_port();
    serve_once(port, true);
    serve_once(port, true);  // right away: the default reuses the address
    ASSERT_FALSE(HasFatalFailure());

    // Without reuse a restart right away is refused while the last run's connection waits
    // in TIME_WAIT, and the error says why and what to set.
    const uint16_t other = gdr_test::free_loopback_port();
    serve_once(other, false);
    ucp_cpp::context_params params;
    params.config["TLS"]          = "tcp";
    params.reuse_listener_address = false;
    auto wrk                      = ucp_cpp::worker::create(ucp_cpp::context::create(params));
    ucs_status_t status           = UCS_OK;
    try {
        ucp_cpp::listener::create(wrk, "127.0.0.1", other);
        std::printf("note: port %u was free again at once (no TIME_WAIT left here)\n", other);
    } catch (const ucp_cpp::ucx_error &e) {
        status = e.status();
        EXPECT_EQ(status, UCS_ERR_BUSY) << e.what();
        EXPECT_TRUE(contains(e.what(), "TIME_WAIT")) << e.what();
        EXPECT_TRUE(contains(e.what(), "reuse_listener_address")) << e.what();
    }
}

// ---- remote_memory ----

/// blocking::recv_remote_memory() on @p receiver in 1 ms slices, progressing @p sender between
/// them (both workers belong to this thread); nothing if none arrives within op_timeout.
std::optional<ucp_cpp::remote_memory> receive_region(ucp_cpp::worker &receiver,
                                                     ucp_cpp::worker &sender, ucp_tag_t tag)
{
    const auto deadline = std::chrono::steady_clock::now() + op_timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        sender.progress();
        try {
            return ucp_cpp::blocking::recv_remote_memory(receiver, tag,
                                                         std::chrono::milliseconds(1));
        } catch (const ucp_cpp::ucx_error &e) {
            EXPECT_EQ(e.status(), UCS_ERR_TIMED_OUT) << e.what();
            if (e.status() != UCS_ERR_TIMED_OUT) {
                break;
            }
        }
    }
    return std::nullopt;
}

TEST(UcpCppRemoteMemory, PackUnpackAndMalformedBytes)
{
    ucp_cpp::remote_memory region{0x1122334455667788ull, 4096, {{1, 2, 3, 4, 5}}};
    const std::vector<uint8_t> bytes = region.pack();
    EXPECT_EQ(bytes.size(), ucp_cpp::remote_memory::header_size + 5);
    const auto back = ucp_cpp::remote_memory::unpack(bytes);
    EXPECT_EQ(back.address, region.address);
    EXPECT_EQ(back.length, region.length);
    EXPECT_EQ(back.rkey.bytes, region.rkey.bytes);

    ucs_status_t status = UCS_OK;
    std::string what =
        error_of([&] { ucp_cpp::remote_memory::unpack(bytes.data(), bytes.size() - 1); }, &status);
    EXPECT_EQ(status, UCS_ERR_INVALID_PARAM);
    EXPECT_TRUE(contains(what, "a 5 B key needs 29 B, got 28 B")) << what;
    const char text[] = "hello, this is not a remote_memory";
    what              = error_of([&] { ucp_cpp::remote_memory::unpack(text, sizeof(text)); });
    EXPECT_TRUE(contains(what, "are not a packed remote_memory")) << what;
}

TEST(UcpCppRemoteMemory, ShippedInATagMessageForPutAndAtomics)
{
    client_server cs("tcp", "127.0.0.1");
    cs.accept();
    // server: registers a region and sends its descriptor
    std::vector<uint64_t> region(513, 0);
    auto memh = ucp_cpp::memory_handle::map(cs.server_worker->ctx(), region.data(),
                                            region.size() * sizeof(uint64_t));
    const ucp_cpp::remote_memory described = memh->describe();
    EXPECT_EQ(described.address, memh->remote_address());
    EXPECT_GE(described.length, region.size() * sizeof(uint64_t));
    const std::vector<uint8_t> bytes = described.pack();
    auto sent                        = cs.server->tag_send(bytes.data(), bytes.size(), 9);

    // client: receives it whatever the key's size, then put + fetch-add
    std::optional<ucp_cpp::remote_memory> remote = receive_region(*cs.client_worker,
                                                                  *cs.server_worker, 9);
    ASSERT_TRUE(remote.has_value());
    ASSERT_TRUE(progress_both(sent, *cs.server_worker, *cs.client_worker));
    EXPECT_EQ(remote->address, described.address);
    auto rkey = cs.client->unpack_rkey(*remote);
    std::vector<uint64_t> data(512);
    for (size_t i = 0; i < data.size(); ++i) {
        data[i] = i * 3 + 1;
    }
    auto put = cs.client->put(data.data(), data.size() * 8, remote->address, rkey);
    ASSERT_TRUE(progress_both(put, *cs.server_worker, *cs.client_worker));
    uint64_t old = 99;
    auto add     = cs.client->atomic_fetch<uint64_t>(UCP_ATOMIC_OP_ADD, 5, &old,
                                                     remote->address + 512 * 8, rkey);
    ASSERT_TRUE(progress_both(add, *cs.server_worker, *cs.client_worker));
    add.wait();
    auto flush = cs.client->flush();
    ASSERT_TRUE(progress_both(flush, *cs.server_worker, *cs.client_worker));
    flush.wait();
    EXPECT_EQ(old, 0u);
    EXPECT_EQ(region[512], 5u);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), region.begin()));

    // and the blocking sender, in the other direction (a small eager message: complete once
    // UCP has it, without the receiver's progress)
    std::vector<uint64_t> client_region(8, 0);
    auto client_memh = ucp_cpp::memory_handle::map(cs.client_worker->ctx(), client_region.data(),
                                                   client_region.size() * 8);
    ucp_cpp::blocking::send_remote_memory(*cs.client, client_memh->describe(), 10, op_timeout);
    std::optional<ucp_cpp::remote_memory> back = receive_region(*cs.server_worker,
                                                                *cs.client_worker, 10);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->address, client_memh->remote_address());
    EXPECT_FALSE(back->rkey.bytes.empty());
}

}  // namespace
