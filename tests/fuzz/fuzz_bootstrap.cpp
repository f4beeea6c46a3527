// Fuzz target bootstrap: the messages of ucp_cpp::coll's TCP rendezvous (coll/bootstrap.hpp), as
// a foreign or broken peer could send them.  The first input byte picks the side, the rest is
// what arrives on the socket, then the peer closes it:
//   even: the root reading one rank's registration (hello + address), in a job of 4 ranks where
//         rank 2 has registered already;
//   odd:  a rank reading the root's address table (4 length-prefixed addresses).
// Either the message is taken, every field within bounds, or ucp_cpp::ucx_error says why
// (UCS_ERR_INVALID_PARAM for what is wrong, UCS_ERR_CONNECTION_RESET for what is cut short).
// Anything else escaping (std::bad_alloc from a length taken on trust) or a wait is a failure.
#include "fuzz_check.h"

#include <ucp_cpp/coll/bootstrap.hpp>

#include <sys/socket.h>

namespace {

namespace coll = ucp_cpp::coll;
using coll::detail::max_address_length;
using coll::detail::socket_fd;

constexpr int kRanks = 4;

/// A connected socket pair whose far end has sent @p data and closed.
socket_fd arrived(const uint8_t *data, size_t size)
{
    int fds[2];
    FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    socket_fd near(fds[0]), far(fds[1]);
    // a socket pair buffers well over the drivers' largest input (4 KiB)
    FUZZ_CHECK(::send(far.get(), data, size, MSG_NOSIGNAL) == ssize_t(size));
    return near;  // `far` closes here: the reader sees the end, never waits
}

void expected_error(const ucp_cpp::ucx_error &e)
{
    if (e.status() != UCS_ERR_INVALID_PARAM && e.status() != UCS_ERR_CONNECTION_RESET) {
        std::fprintf(stderr, "unexpected %s\n", e.what());
    }
    FUZZ_CHECK(e.status() == UCS_ERR_INVALID_PARAM || e.status() == UCS_ERR_CONNECTION_RESET);
    FUZZ_CHECK(std::strstr(e.what(), "coll::bootstrap: ") == e.what());
}

void root_side(const uint8_t *data, size_t size)
{
    coll::bootstrap_params params;
    params.rank = 0;
    params.size = kRanks;
    std::vector<ucp_cpp::worker_address> table(kRanks);
    std::vector<socket_fd> peers(kRanks);
    peers[2] = socket_fd(::dup(STDERR_FILENO));  // rank 2 is registered
    FUZZ_CHECK(peers[2].get() >= 0);
    socket_fd fd        = arrived(data, size);
    const auto deadline = coll::detail::clock::now() + std::chrono::seconds(5);
    try {
        const int rank = coll::detail::receive_registration(fd.get(), params, table, peers,
                                                            deadline);
        FUZZ_CHECK(rank == 1 || rank == 3);
        FUZZ_CHECK(table[size_t(rank)].size() <= max_address_length);
        FUZZ_CHECK(size >= sizeof(coll::detail::hello) + table[size_t(rank)].size());
    } catch (const ucp_cpp::ucx_error &e) {
        expected_error(e);
    }
}

void rank_side(const uint8_t *data, size_t size)
{
    socket_fd fd        = arrived(data, size);
    const auto deadline = coll::detail::clock::now() + std::chrono::seconds(5);
    size_t taken        = 0;
    try {
        for (int r = 0; r < kRanks; ++r) {
            const auto bytes = coll::detail::recv_blob(fd.get(), deadline, "the table");
            FUZZ_CHECK(bytes.size() <= max_address_length);
            taken += sizeof(uint32_t) + bytes.size();
        }
        FUZZ_CHECK(taken <= size);
    } catch (const ucp_cpp::ucx_error &e) {
        expected_error(e);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1) {
        rank_side(data + 1, size - 1);
    } else {
        root_side(data + 1, size - 1);
    }
    return 0;
}
