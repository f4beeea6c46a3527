// The TCP rendezvous of coll::exchange_addresses against a hostile peer, over real sockets: a
// client that is no rank (wrong magic, rank or size out of range, an address length of 4 GiB,
// a message cut short) is refused by the root with a clear error, and a root that sends a
// length of 4 GiB is refused by the rank, each within a second, never with a 4 GiB allocation
// or a wait for the timeout.  (tests/fuzz/fuzz_bootstrap.cpp fuzzes the same parsers.)
#include <ucp_cpp/coll/bootstrap.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <future>
#include "../common/loopback_port.hpp"

namespace {

namespace coll = ucp_cpp::coll;
using namespace std::chrono_literals;
using coll::detail::socket_fd;

constexpr uint32_t kMagic = coll::detail::bootstrap_magic;

coll::bootstrap_params params_of(int rank, uint16_t port)
{
    coll::bootstrap_params params;
    params.rank      = rank;
    params.size      = 2;
    params.root_port = port;
    params.timeout   = 10s;  // far above what a refusal may take
    return params;
}

/// Connects to 127.0.0.1:@p port, retrying while nobody listens yet (the root starts in a thread).
socket_fd connect_loopback(uint16_t port)
{
    sockaddr_in root{};
    root.sin_family      = AF_INET;
    root.sin_port        = htons(port);
    root.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(10ms)) {
        socket_fd fd(::socket(AF_INET, SOCK_STREAM, 0));
        if (::connect(fd.get(), reinterpret_cast<sockaddr *>(&root), sizeof(root)) == 0) {
            return fd;
        }
    }
    ADD_FAILURE() << "nobody listens on port " << port;
    return socket_fd();
}

std::vector<uint8_t> hello(uint32_t magic, int32_t rank, int32_t size, uint32_t length)
{
    const coll::detail::hello h{magic, rank, size, length};
    const auto *p = reinterpret_cast<const uint8_t *>(&h);
    return {p, p + sizeof(h)};
}

struct Hostile {
    const char *name;
    std::vector<uint8_t> message;
    ucs_status_t status;  ///< what the root must throw
    const char *says;  ///< and a part of its message
};

// its name, not its bytes, in test names and failure messages
void PrintTo(const Hostile &h, std::ostream *os)
{
    *os << h.name;
}

class HostileRegistration : public ::testing::TestWithParam<Hostile> {};

// The hostile client keeps its connection open after its message: the root must decide on what
// it got, not on the connection closing (but for the message cut short, which it closes).
TEST_P(HostileRegistration, RootRefusesItClearlyAndAtOnce)
{
    const Hostile &h    = GetParam();
    const uint16_t port = gdr_test::free_loopback_port();
    auto root           = std::async(std::launch::async, [&] {
        return coll::exchange_addresses(params_of(0, port), ucp_cpp::worker_address{{1, 2, 3}});
    });
    socket_fd client    = connect_loopback(port);
    ASSERT_GE(client.get(), 0);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(ssize_t(h.message.size()),
              ::send(client.get(), h.message.data(), h.message.size(), MSG_NOSIGNAL));
    if (h.status == UCS_ERR_CONNECTION_RESET) {
        client = socket_fd();
    }
    ASSERT_EQ(std::future_status::ready, root.wait_for(5s)) << "the root is still waiting";
    try {
        (void)root.get();
        FAIL() << "the root accepted " << h.name;
    } catch (const ucp_cpp::ucx_error &e) {
        EXPECT_EQ(h.status, e.status()) << e.what();
        EXPECT_NE(std::string(e.what()).find(h.says), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

INSTANTIATE_TEST_SUITE_P(
    Bootstrap, HostileRegistration,
    ::testing::Values(
        Hostile{"foreign_protocol",
                {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '1', '\r', '\n'},
                UCS_ERR_INVALID_PARAM,
                "bad registration"},
        Hostile{"wrong_magic", hello(0, 1, 2, 8), UCS_ERR_INVALID_PARAM, "bad registration"},
        Hostile{"rank_0", hello(kMagic, 0, 2, 8), UCS_ERR_INVALID_PARAM,
                "bad registration (rank 0"},
        Hostile{"rank_past_size", hello(kMagic, 2, 2, 8), UCS_ERR_INVALID_PARAM,
                "bad registration (rank 2"},
        Hostile{"negative_rank", hello(kMagic, -5, 2, 8), UCS_ERR_INVALID_PARAM,
                "bad registration (rank -5"},
        Hostile{"size_mismatch", hello(kMagic, 1, 3, 8), UCS_ERR_INVALID_PARAM,
                "root expects size 2"},
        Hostile{"address_4GiB", hello(kMagic, 1, 2, 0xffffffffu), UCS_ERR_INVALID_PARAM,
                "implausible address length 4294967295 (at most 1048576) from rank 1's address"},
        Hostile{"address_1MiB_plus_1", hello(kMagic, 1, 2, (1u << 20) + 1), UCS_ERR_INVALID_PARAM,
                "implausible address length 1048577"},
        Hostile{"cut_short",
                {0x4c, 0x4f, 0x43},
                UCS_ERR_CONNECTION_RESET,
                "connection closed while waiting for a rank's registration"}),
    [](const ::testing::TestParamInfo<Hostile> &info) { return std::string(info.param.name); });

/// A socket listening on a free loopback port (the port in @p port), as gdr_perftest -N makes one.
socket_fd listening_loopback(uint16_t &port)
{
    socket_fd listener(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in address{};
    address.sin_family      = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length        = sizeof(address);
    EXPECT_EQ(0, ::bind(listener.get(), reinterpret_cast<sockaddr *>(&address), sizeof(address)));
    EXPECT_EQ(0, ::listen(listener.get(), 4));
    EXPECT_EQ(0, ::getsockname(listener.get(), reinterpret_cast<sockaddr *>(&address), &length));
    port = ntohs(address.sin_port);
    return listener;
}

// A "root" that answers a registration with an address length of 4 GiB: the rank refuses it.
TEST(HostileRoot, RankRefusesAnOversizedTableEntry)
{
    uint16_t port      = 0;
    socket_fd listener = listening_loopback(port);
    auto rank          = std::async(std::launch::async, [&] {
        return coll::exchange_addresses(params_of(1, port), ucp_cpp::worker_address{{4, 5}});
    });
    socket_fd peer(::accept(listener.get(), nullptr, nullptr));
    ASSERT_GE(peer.get(), 0);
    const uint32_t huge = 0xffffffffu;
    ASSERT_EQ(ssize_t(sizeof(huge)), ::send(peer.get(), &huge, sizeof(huge), MSG_NOSIGNAL));
    ASSERT_EQ(std::future_status::ready, rank.wait_for(5s)) << "the rank is still waiting";
    try {
        (void)rank.get();
        FAIL() << "the rank accepted a 4 GiB address";
    } catch (const ucp_cpp::ucx_error &e) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, e.status()) << e.what();
        EXPECT_NE(std::string(e.what()).find("implausible address length 4294967295"),
                  std::string::npos)
            << e.what();
    }
}

// A launcher's listening socket (UCP_CPP_COLL_ROOT_LISTENER_FD): the root accepts on it, twice
// (borrowed, not closed), and never binds the port itself -- the port stays taken from the pick
// on, so no other process can grab it in between.
TEST(RootListener, InheritedSocketServesEveryRendezvousOfTheProcess)
{
    uint16_t port      = 0;
    socket_fd listener = listening_loopback(port);
    for (int round = 0; round < 2; ++round) {
        auto root_params          = params_of(0, port);
        root_params.root_listener = listener.get();
        auto root                 = std::async(std::launch::async, [&] {
            return coll::exchange_addresses(root_params, ucp_cpp::worker_address{{1, 2, 3}});
        });
        const auto table          = coll::exchange_addresses(params_of(1, port),
                                                             ucp_cpp::worker_address{{4, 5}});
        ASSERT_EQ(std::future_status::ready, root.wait_for(5s));
        const auto root_table = root.get();
        ASSERT_EQ(2u, table.size()) << "round " << round;
        ASSERT_EQ(2u, root_table.size());
        for (size_t r = 0; r < 2; ++r)
            EXPECT_EQ(root_table[r].bytes, table[r].bytes) << "rank " << r;
        EXPECT_EQ((std::vector<uint8_t>{1, 2, 3}), table[0].bytes);
        EXPECT_EQ((std::vector<uint8_t>{4, 5}), table[1].bytes);
        int listening    = 0;
        socklen_t length = sizeof(listening);
        ASSERT_EQ(0, ::getsockopt(listener.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &length))
            << "the rendezvous closed the borrowed listener";
        EXPECT_EQ(1, listening);
    }
}

// A descriptor that is not a listener on MASTER_PORT is refused by name, not waited on.
TEST(RootListener, WrongDescriptorIsAClearError)
{
    uint16_t port      = 0;
    socket_fd listener = listening_loopback(port);
    socket_fd unbound(::socket(AF_INET, SOCK_STREAM, 0));
    const uint16_t other                                 = port == 65535 ? port - 1 : port + 1;
    const std::vector<std::pair<int, std::string>> cases = {
        {unbound.get(), "not a listening socket"},
        {listener.get(),
         "it listens on port " + std::to_string(port) + ", not " + std::to_string(other)},
        {987654, "Bad file descriptor"},
    };
    for (const auto &[fd, says] : cases) {
        auto params          = params_of(0, other);
        params.root_listener = fd;
        try {
            (void)coll::exchange_addresses(params, ucp_cpp::worker_address{{1}});
            ADD_FAILURE() << "descriptor " << fd << " accepted";
        } catch (const ucp_cpp::ucx_error &e) {
            EXPECT_EQ(UCS_ERR_INVALID_PARAM, e.status()) << e.what();
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("root listener (descriptor"), std::string::npos)
                << e.what();
        }
    }
}

}  // namespace
