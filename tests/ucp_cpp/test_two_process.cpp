// ucp_cpp across two processes: every operation, sizes 0 B..16 MiB with data checks, sockaddr
// connection through a listener, and a peer killed mid-operation.  Each test forks its peer.
#include "../common/ucp_lanes.hpp"
#include "peer_harness.hpp"

#include <atomic>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <list>

using namespace ucp_cpp_test;
using ucp_cpp::op_options;

namespace {

constexpr ucp_tag_t ping_tag = ucp_cpp::tag_space::make(ucp_cpp::tag_space::user, 0x100);
constexpr ucp_tag_t pong_tag = ucp_cpp::tag_space::make(ucp_cpp::tag_space::user, 0x200);

class UcpCppTwoProcess : public ::testing::TestWithParam<std::string> {
protected:
#ifdef UCP_CPP_TEST_RDMA
    // rdma build (label rdma): the gdr plugin over a real verbs device, or a skip.
    void SetUp() override
    {
        if (!has_verbs_device()) {
            GTEST_SKIP() << "no verbs device (/sys/class/infiniband is empty)";
        }
        ucp_cpp::load_plugin(UCP_CPP_TEST_RDMA_PLUGIN);  // before any context; forks inherit it
        // UCX 1.13's ud_verbs (the wireup transport) drops every packet on rxe without it
        // (docs/rxe-vm.md); harmless on other providers
        setenv("UCX_UD_VERBS_ETH_DGID_CHECK", "n", 0);
        // A dead peer is found when RC retries run out: TIMEOUT x (RETRY_COUNT + 1), ~8 s with
        // the defaults; keep the peer-death case well inside its waits (as the UCT suite does).
        setenv("UCX_GDR_TIMEOUT", "100ms", 0);
        setenv("UCX_GDR_RETRY_COUNT", "3", 0);
    }
    static bool has_verbs_device()
    {
        std::error_code ec;
        std::filesystem::directory_iterator it("/sys/class/infiniband", ec);
        return !ec && it != std::filesystem::directory_iterator();
    }
#endif
    const std::string &tls() const { return GetParam(); }
};

/// rdma suite: every lane of `ep` is on gdr_rc (or on UCP_CPP_RDMA_TLS's first transport: the
/// rc_verbs reference of tests/fabric), so that a UCP_CPP_RDMA_TLS that lets UCP choose another
/// transport (tcp) fails instead of passing over it. The host suite runs over any.
void expect_lanes_under_test([[maybe_unused]] const ucp_cpp::endpoint &ep)
{
#ifdef UCP_CPP_TEST_RDMA
    const char *tls         = std::getenv("UCP_CPP_RDMA_TLS");
    const std::string first = tls != nullptr
                                  ? std::string(tls).substr(0, std::string(tls).find(','))
                                  : "gdr_rc";
    EXPECT_TRUE(gdr_test::ucp_lanes_all_on(ep.handle(), first == "rc_verbs" ? first : "gdr_rc"));
#endif
}

/// Where the listener test listens: loopback, or (rdma suite) the RDMA netdev's address, which
/// RDMA-CM needs (it refuses loopback): UCP_CPP_TEST_LISTEN_ADDR, else the VM's RXE_IP.
std::string listen_address()
{
    for (const char *name : {
             "UCP_CPP_TEST_LISTEN_ADDR",
#ifdef UCP_CPP_TEST_RDMA
             "RXE_IP",
#endif
         }) {
        if (const char *value = std::getenv(name); value != nullptr && *value != '\0') {
            return value;
        }
    }
    return "127.0.0.1";
}

TEST_P(UcpCppTwoProcess, TagEchoAllSizes)
{
    const std::string transports = tls();
    peer_process peer([&](channel &ch) {
        side s = connect_by_address(ch, transports);
        for (size_t size : transfer_sizes()) {
            std::vector<uint8_t> buffer(size);
            auto recv = s.wrk->tag_recv(buffer.data(), size, ping_tag);
            recv.wait(op_timeout);
            PEER_CHECK(recv.length() == size);
            PEER_CHECK(recv.sender_tag() == ping_tag);
            PEER_CHECK(check_pattern(buffer.data(), size, size));
            s.ep->tag_send(buffer.data(), size, pong_tag).wait(op_timeout);
        }
        ucp_cpp::blocking::flush(*s.ep, op_timeout);
    });
    side s = connect_by_address(peer.control(), transports);
    expect_lanes_under_test(*s.ep);
    for (size_t size : transfer_sizes()) {
        std::vector<uint8_t> out(size), in(size, 0xee);
        fill_pattern(out.data(), size, size);
        auto recv = s.wrk->tag_recv(in.data(), size, pong_tag);
        auto send = s.ep->tag_send(out.data(), size, ping_tag);
        send.wait(op_timeout);
        recv.wait(op_timeout);
        EXPECT_EQ(recv.length(), size);
        EXPECT_TRUE(check_pattern(in.data(), size, size)) << "size " << size;
    }
    EXPECT_EQ(peer.wait_exit_progressing(*s.wrk), 0);
}

TEST_P(UcpCppTwoProcess, TagCallbacksAndSyncSend)
{
    const std::string transports = tls();
    peer_process peer([&](channel &ch) {
        side s = connect_by_address(ch, transports);
        std::vector<uint8_t> buffer(1 << 20);
        std::atomic<int> calls{0};
        op_options options;
        options.on_complete = [&](const ucp_cpp::completion &c) {
            PEER_CHECK(c.status == UCS_OK);
            PEER_CHECK(c.length == buffer.size());
            PEER_CHECK(c.sender_tag == ping_tag + 7);
            ++calls;
        };
        // wildcard on the low byte, space bits always matched
        auto recv = s.wrk->tag_recv(buffer.data(), buffer.size(), ping_tag,
                                    ucp_cpp::tag_space::user_mask(~ucp_tag_t(0xff)), options);
        recv.wait(op_timeout);
        PEER_CHECK(calls.load() == 1);
        PEER_CHECK(check_pattern(buffer.data(), buffer.size(), 7));
        ch.send_value(1);
    });
    side s = connect_by_address(peer.control(), transports);
    std::vector<uint8_t> out(1 << 20);
    fill_pattern(out.data(), out.size(), 7);
    std::atomic<int> calls{0};
    op_options options;
    options.on_complete = [&](const ucp_cpp::completion &c) {
        EXPECT_EQ(c.status, UCS_OK);
        ++calls;
    };
    auto send = s.ep->tag_send_sync(out.data(), out.size(), ping_tag + 7, options);
    send.wait(op_timeout);
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(peer.control().recv_value(), 1u);
    EXPECT_EQ(peer.wait_exit_progressing(*s.wrk), 0);
}

TEST_P(UcpCppTwoProcess, TagProbeAndReceiveProbed)
{
    const std::string transports = tls();
    peer_process peer([&](channel &ch) {
        side s = connect_by_address(ch, transports);
        std::vector<uint8_t> data(3000);
        fill_pattern(data.data(), data.size(), 3);
        auto a = s.ep->tag_send(data.data(), data.size(), ping_tag + 3);
        a.wait(op_timeout);
        ucp_cpp::blocking::flush(*s.ep, op_timeout);
        ch.recv_value();  // parent done
    });
    side s = connect_by_address(peer.control(), transports);
    std::optional<ucp_cpp::tag_info> seen;
    s.wrk->progress_until([&] { return (seen = s.wrk->tag_probe(ping_tag + 3)).has_value(); },
                          op_timeout);
    ASSERT_TRUE(seen.has_value());
    EXPECT_EQ(seen->length, 3000u);
    EXPECT_EQ(seen->sender_tag, ping_tag + 3);
    EXPECT_FALSE(s.wrk->tag_probe(ping_tag + 4).has_value());
    auto message = s.wrk->tag_probe_take(ping_tag + 3);
    ASSERT_TRUE(message.has_value());
    std::vector<uint8_t> in(message->info().length);
    auto recv = s.wrk->tag_recv(in.data(), in.size(), std::move(*message), op_options{});
    recv.wait(op_timeout);
    EXPECT_EQ(recv.length(), 3000u);
    EXPECT_TRUE(check_pattern(in.data(), in.size(), 3));
    EXPECT_FALSE(s.wrk->tag_probe(ping_tag + 3).has_value());  // taken
    peer.control().send_value(1);
    EXPECT_EQ(peer.wait_exit_progressing(*s.wrk), 0);
}

TEST_P(UcpCppTwoProcess, StreamEchoAllSizes)
{
    const std::string transports = tls();
    peer_process peer([&](channel &ch) {
        side s = connect_by_address(ch, transports);
        for (size_t size : transfer_sizes()) {
            if (size == 0) {
                continue;  // a stream has no zero-length messages
            }
            std::vector<uint8_t> buffer(size);
            auto recv = s.ep->stream_recv(buffer.data(), size);
            recv.wait(op_timeout);
            PEER_CHECK(recv.length() == size);
            PEER_CHECK(check_pattern(buffer.data(), size, size + 1));
            s.ep->stream_send(buffer.data(), size).wait(op_timeout);
        }
    });
    side s = connect_by_address(peer.control(), transports);
    for (size_t size : transfer_sizes()) {
        if (size == 0) {
            continue;
        }
        std::vector<uint8_t> out(size), in(size);
        fill_pattern(out.data(), size, size + 1);
        auto send = s.ep->stream_send(out.data(), size);
        auto recv = s.ep->stream_recv(in.data(), size);
        send.wait(op_timeout);
        recv.wait(op_timeout);
        EXPECT_EQ(recv.length(), size);
        EXPECT_TRUE(check_pattern(in.data(), size, size + 1)) << "size " << size;
    }
    EXPECT_EQ(peer.wait_exit_progressing(*s.wrk), 0);
}

struct am_header {
    uint64_t size;
    uint64_t seed;
};

TEST_P(UcpCppTwoProcess, ActiveMessagesEagerAndRendezvous)
{
    const std::string transports = tls();
    constexpr uint16_t data_id = 7, kept_id = 8;
    peer_process peer([&](channel &ch) {
        side s = connect_by_address(ch, transports);
        struct pending {
            am_header header;
            std::vector<uint8_t> buffer;
            ucp_cpp::request req;
        };
        std::list<pending> received;
        std::deque<std::pair<am_header, ucp_cpp::am_data>> kept;
        s.wrk->set_am_handler(data_id, [&](ucp_cpp::am_message &msg) {
            PEER_CHECK(msg.header_length() == sizeof(am_header));
            pending p;
            std::memcpy(&p.header, msg.header(), sizeof(am_header));
            PEER_CHECK(msg.length() == p.header.size);
            p.buffer.resize(msg.length());
            p.req = msg.receive(p.buffer.data(), p.buffer.size());
            received.push_back(std::move(p));
        });
        s.wrk->set_am_handler(kept_id, [&](ucp_cpp::am_message &msg) {
            am_header header;
            std::memcpy(&header, msg.header(), sizeof(header));
            kept.emplace_back(header, msg.keep());
        });
        ch.send_value(1);  // handlers registered: UCP drops AMs for ids without one
        const size_t expected = 2 * transfer_sizes().size() + 1;
        PEER_CHECK(s.wrk->progress_until([&] { return received.size() + kept.size() == expected; },
                                         op_timeout));
        uint64_t verified = 0;
        for (auto &p : received) {
            p.req.wait(op_timeout);
            PEER_CHECK(check_pattern(p.buffer.data(), p.buffer.size(), p.header.seed));
            ++verified;
        }
        for (auto &[header, data] : kept) {  // received after the handler returned
            std::vector<uint8_t> buffer(data.length());
            data.receive(buffer.data(), buffer.size()).wait(op_timeout);
            PEER_CHECK(check_pattern(buffer.data(), buffer.size(), header.seed));
            ++verified;
        }
        s.ep->tag_send(&verified, sizeof(verified), pong_tag).wait(op_timeout);
        ucp_cpp::blocking::flush(*s.ep, op_timeout);
        ch.recv_value();
    });
    side s = connect_by_address(peer.control(), transports);
    ASSERT_EQ(peer.control().recv_value(), 1u);
    std::list<std::pair<am_header, std::vector<uint8_t>>> messages;
    std::vector<ucp_cpp::request> sends;
    auto send_am = [&](uint16_t id, size_t size, uint64_t seed, uint32_t flags) {
        auto &m = messages.emplace_back(am_header{size, seed}, std::vector<uint8_t>(size));
        fill_pattern(m.second.data(), size, seed);
        op_options options;
        options.flags = flags;
        sends.push_back(
            s.ep->am_send(id, &m.first, sizeof(am_header), m.second.data(), size, options));
    };
    uint64_t seed = 100;
    for (size_t size : transfer_sizes()) {
        send_am(data_id, size, seed++, 0);  // protocol chosen by UCP (eager or rendezvous)
        send_am(data_id, size, seed++,
                size >= 4096 ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER);
    }
    send_am(kept_id, 1 << 20, seed++, UCP_AM_SEND_FLAG_RNDV);
    uint64_t verified = 0;
    auto reply        = s.wrk->tag_recv(&verified, sizeof(verified), pong_tag);
    for (auto &send : sends) {
        send.wait(op_timeout);
    }
    reply.wait(op_timeout);
    EXPECT_EQ(verified, messages.size());
    peer.control().send_value(1);
    EXPECT_EQ(peer.wait_exit_progressing(*s.wrk), 0);
}

TEST_P(UcpCppTwoProcess, RmaPutGetAndAtomicsWithRkeyExchange)
{
    const std::string transports = tls();
    constexpr size_t region      = 16u << 20;
    peer_process peer([&](channel &ch) {
        side s = connect_by_address(ch, transports);
        std::vector<uint8_t> memory(region + 16, 0);
        auto memh = ucp_cpp::memory_handle::map(s.ctx, memory.data(), memory.size());
        ch.send_value(memh->remote_address());
        ch.send(memh->pack_rkey().bytes);
        // RMA over transports without hardware RMA is emulated by UCP: keep progressing.
        serve_until_message(*s.wrk, ch);
        ch.recv_value();
        size_t offset = 0;
        for (size_t size : transfer_sizes()) {
            PEER_CHECK(
                check_pattern(memory.data() + offset, std::min(size, region - offset), size + 9));
            offset = (offset + size) % (region / 2);
        }
        uint64_t word64;
        uint32_t word32;
        std::memcpy(&word64, memory.data() + region, 8);
        std::memcpy(&word32, memory.data() + region + 8, 4);
        PEER_CHECK(word64 == 0xabcdefull);
        PEER_CHECK(word32 == 46u);
    });
    side s = connect_by_address(peer.control(), transports);
    expect_lanes_under_test(*s.ep);
    uint64_t base = peer.control().recv_value();
    ucp_cpp::packed_rkey packed{peer.control().recv()};
    ucp_cpp::remote_key rkey = s.ep->unpack_rkey(packed);

    size_t offset = 0;
    for (size_t size : transfer_sizes()) {
        size_t n = std::min(size, region - offset);
        std::vector<uint8_t> out(n), back(n, 0);
        fill_pattern(out.data(), n, size + 9);
        s.ep->put(out.data(), n, base + offset, rkey).wait(op_timeout);
        s.ep->flush().wait(op_timeout);
        s.ep->get(back.data(), n, base + offset, rkey).wait(op_timeout);
        EXPECT_TRUE(check_pattern(back.data(), n, size + 9)) << "size " << size;
        offset = (offset + size) % (region / 2);
    }
    // Atomics on a 64-bit word at base+region and a 32-bit word at base+region+8.
    const uint64_t word64 = base + region, word32 = base + region + 8;
    s.ep->atomic_post<uint64_t>(UCP_ATOMIC_OP_ADD, 5, word64, rkey).wait(op_timeout);
    uint64_t old64 = 0;
    s.ep->atomic_fetch<uint64_t>(UCP_ATOMIC_OP_ADD, 10, &old64, word64, rkey).wait(op_timeout);
    EXPECT_EQ(old64, 5u);
    s.ep->compare_swap<uint64_t>(15, 0xabcdef, &old64, word64, rkey).wait(op_timeout);
    EXPECT_EQ(old64, 15u);
    s.ep->compare_swap<uint64_t>(15, 1, &old64, word64, rkey).wait(op_timeout);  // no swap
    EXPECT_EQ(old64, 0xabcdefu);
    uint32_t old32 = 0;
    s.ep->atomic_fetch<uint32_t>(UCP_ATOMIC_OP_SWAP, 40, &old32, word32, rkey).wait(op_timeout);
    EXPECT_EQ(old32, 0u);
    s.ep->atomic_fetch<uint32_t>(UCP_ATOMIC_OP_ADD, 6, &old32, word32, rkey).wait(op_timeout);
    EXPECT_EQ(old32, 40u);
    s.ep->flush().wait(op_timeout);
    s.wrk->flush().wait(op_timeout);
    peer.control().send_value(1);
    peer.control().send_value(2);
    EXPECT_EQ(peer.wait_exit_progressing(*s.wrk), 0);
}

TEST_P(UcpCppTwoProcess, PeerKilledMidOperationFailsRequestsWithoutHang)
{
    const std::string transports = tls();
    if (!has_failure_detection(transports)) {
        GTEST_SKIP() << transports
                     << " cannot detect peer failure (UCX's shared-memory transports, "
                        "any release, without UCX_MM_ERROR_HANDLING=y)";
    }
    std::map<std::string, std::string> fast_failure{{"KEEPALIVE_INTERVAL", "200ms"}};
    peer_process peer([&](channel &ch) {
        side s = connect_by_address(ch, transports, {}, fast_failure);
        std::vector<uint8_t> small(64);
        s.wrk->tag_recv(small.data(), small.size(), ping_tag).wait(op_timeout);  // wireup done
        ch.send_value(1);
        std::this_thread::sleep_for(60s);  // killed here, never receives the big message
    });
    std::atomic<int> error_calls{0};
    std::atomic<ucs_status_t> reported{UCS_OK};
    std::shared_ptr<ucp_cpp::endpoint> held;
    ucp_cpp::endpoint_params params;
    // The error handler drops the last reference to its own endpoint: the close must be
    // deferred out of the callback, and nothing may touch the freed endpoint afterwards.
    params.on_error = [&](ucs_status_t status) {
        reported.store(status);
        ++error_calls;
        held.reset();
    };
    side s = connect_by_address(peer.control(), transports, params, fast_failure);
    held   = std::move(s.ep);
    std::vector<uint8_t> small(64);
    held->tag_send(small.data(), small.size(), ping_tag).wait(op_timeout);
    ASSERT_EQ(peer.control().recv_value(), 1u);

    std::vector<uint8_t> big(16u << 20);
    auto send = held->tag_send(big.data(), big.size(), ping_tag + 1);  // rendezvous, unmatched
    peer.kill_now();
    auto started = std::chrono::steady_clock::now();
    ASSERT_TRUE(send.wait_for(op_timeout)) << "send to a dead peer never completed";
    EXPECT_NE(send.status(), UCS_OK);
    EXPECT_THROW(send.wait(), ucp_cpp::ucx_error);
    EXPECT_TRUE(s.wrk->progress_until([&] { return error_calls.load() > 0; }, op_timeout));
    EXPECT_EQ(error_calls.load(), 1);
    EXPECT_NE(reported.load(), UCS_OK);
    EXPECT_EQ(held, nullptr);
    for (int i = 0; i < 100; ++i) {
        s.wrk->progress();  // runs the deferred close
    }
    RecordProperty("failure_detect_ms",
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - started)
                                      .count()));
}

TEST_P(UcpCppTwoProcess, ListenerSockaddrConnection)
{
    const std::string transports = tls();
#ifndef UCP_CPP_TEST_RDMA
    if (transports.find("tcp") == std::string::npos) {
        GTEST_SKIP() << "the listener path is tested with tcp in UCX_TLS (its connection manager)";
    }
#endif
    peer_process peer([&](channel &ch) {
        auto ctx      = make_context(transports);
        auto wrk      = ucp_cpp::worker::create(ctx);
        auto listener = ucp_cpp::listener::create(wrk, listen_address(), 0);
        PEER_CHECK(listener->port() != 0);
        ch.send_value(listener->port());
        auto conn = listener->wait_connection(op_timeout);
        PEER_CHECK(conn.has_value());
        PEER_CHECK(conn->client_address().rfind(listen_address() + ":", 0) == 0);
        auto ep = ucp_cpp::endpoint::accept(wrk, std::move(*conn));
        std::vector<uint8_t> buffer(100000);
        auto recv = wrk->tag_recv(buffer.data(), buffer.size(), ping_tag);
        recv.wait(op_timeout);
        PEER_CHECK(check_pattern(buffer.data(), buffer.size(), 77));
        ep->tag_send(buffer.data(), buffer.size(), pong_tag).wait(op_timeout);
        std::vector<uint8_t> streamed(5000);
        ep->stream_recv(streamed.data(), streamed.size()).wait(op_timeout);
        PEER_CHECK(check_pattern(streamed.data(), streamed.size(), 78));
        ep->close().wait(op_timeout);
    });
    auto ctx  = make_context(transports);
    auto wrk  = ucp_cpp::worker::create(ctx);
    auto port = uint16_t(peer.control().recv_value());
    auto ep   = ucp_cpp::endpoint::connect(wrk, listen_address(), port);
    std::vector<uint8_t> out(100000), in(100000);
    fill_pattern(out.data(), out.size(), 77);
    auto recv = wrk->tag_recv(in.data(), in.size(), pong_tag);
    ep->tag_send(out.data(), out.size(), ping_tag).wait(op_timeout);
    recv.wait(op_timeout);
    EXPECT_TRUE(check_pattern(in.data(), in.size(), 77));
    std::vector<uint8_t> streamed(5000);
    fill_pattern(streamed.data(), streamed.size(), 78);
    ep->stream_send(streamed.data(), streamed.size()).wait(op_timeout);
    EXPECT_EQ(peer.wait_exit_progressing(*wrk), 0);  // its graceful close needs our progress
}

#ifdef UCP_CPP_TEST_RDMA
/// UCX_TLS for the rdma suite: gdr_rc plus what wireup needs (override: UCP_CPP_RDMA_TLS).
std::string rdma_transports()
{
    const char *tls = std::getenv("UCP_CPP_RDMA_TLS");
    return tls != nullptr ? tls : "gdr_rc,ud_verbs:aux";
}
INSTANTIATE_TEST_SUITE_P(Tls, UcpCppTwoProcess, ::testing::Values(rdma_transports()),
#else
INSTANTIATE_TEST_SUITE_P(Tls, UcpCppTwoProcess, ::testing::Values("tcp", "posix,cma"),
#endif
                         [](const auto &info) {
                             std::string name = info.param;
                             for (char &c : name) {
                                 if (!isalnum(static_cast<unsigned char>(c)))
                                     c = '_';
                             }
                             return name;
                         });

}  // namespace
