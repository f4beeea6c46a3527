// Two-process harness for the ucp_cpp tests: fork a peer, give both sides a control channel
// (socketpair) and bounded waits, so that no failure can hang ctest.
//
// The peer on another host: with UCP_CPP_TEST_PEER_CMD set (a command that runs its arguments on
// that host, in this directory, with this process's UCX_* and UCP_CPP_* variables: e.g.
// "tests/fabric/lib/on-node node1"), each peer is this same program started there with
// --gtest_filter naming the current test and UCP_CPP_TEST_PEER_SERVE="INDEX HOST PORT": the
// remote copy runs the test up to its INDEX-th peer (the earlier ones forked there, as here),
// runs that peer's body instead and exits with its status; the control channel is a TCP
// connection to HOST:PORT (this side's listener; HOST: UCP_CPP_TEST_PEER_CONNECT or this host's
// name).  The peer's exit status comes back as the launcher's (ssh's).
#pragma once

#include <ucp_cpp/ucp_cpp.hpp>

#include <gtest/gtest.h>

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace ucp_cpp_test {

using namespace std::chrono_literals;
/// Bound of any single UCX wait in a test: 20 s, or UCP_CPP_TEST_TIMEOUT_S (the Soft-RoCE VM
/// runs under TCG and can need more).
inline std::chrono::seconds op_timeout_from_env()
{
    const char *value = std::getenv("UCP_CPP_TEST_TIMEOUT_S");
    return std::chrono::seconds(value != nullptr ? std::max(1L, std::atol(value)) : 20L);
}
inline const std::chrono::seconds op_timeout = op_timeout_from_env();

/// Length-prefixed messages over a stream socket, every read bounded by a timeout.
class channel {
public:
    explicit channel(int fd) : fd_(fd) {}
    channel(const channel &) = delete;
    ~channel()
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    int fd() const { return fd_; }

    void send(const void *data, size_t length)
    {
        uint64_t size = length;
        write_all(&size, sizeof(size));
        write_all(data, length);
    }
    void send(const std::vector<uint8_t> &bytes) { send(bytes.data(), bytes.size()); }
    void send_value(uint64_t value) { send(&value, sizeof(value)); }

    std::vector<uint8_t> recv(std::chrono::milliseconds timeout = 3 * op_timeout)
    {
        uint64_t size = 0;
        read_all(&size, sizeof(size), timeout);
        std::vector<uint8_t> bytes(size);
        read_all(bytes.data(), size, timeout);
        return bytes;
    }
    uint64_t recv_value(std::chrono::milliseconds timeout = 3 * op_timeout)
    {
        auto bytes     = recv(timeout);
        uint64_t value = 0;
        if (bytes.size() != sizeof(value)) {
            throw std::runtime_error("channel: expected a 64-bit value");
        }
        std::memcpy(&value, bytes.data(), sizeof(value));
        return value;
    }

private:
    void write_all(const void *data, size_t length)
    {
        const auto *p = static_cast<const char *>(data);
        while (length > 0) {
            ssize_t n = ::write(fd_, p, length);
            if (n <= 0) {
                throw std::runtime_error("channel: peer gone (write)");
            }
            p += n;
            length -= size_t(n);
        }
    }
    void read_all(void *data, size_t length, std::chrono::milliseconds timeout)
    {
        auto *p = static_cast<char *>(data);
        while (length > 0) {
            pollfd pfd{fd_, POLLIN, 0};
            if (::poll(&pfd, 1, int(timeout.count())) <= 0) {
                throw std::runtime_error("channel: timed out waiting for the peer");
            }
            ssize_t n = ::read(fd_, p, length);
            if (n <= 0) {
                throw std::runtime_error("channel: peer gone (read)");
            }
            p += n;
            length -= size_t(n);
        }
    }
    int fd_;
};

/// A forked peer process running @p body(channel&); its exit status is 0 iff body returned
/// normally.  The peer can never outlive the test: alarm() in the child, SIGKILL on timeout.
class peer_process {
public:
    explicit peer_process(std::function<void(channel &)> body,
                          unsigned max_seconds = unsigned(3 * op_timeout.count()))
    {
        const unsigned index = constructed()++;
        if (serve_here(index, body, max_seconds) || start_remote(index)) {
            return;
        }
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
            throw std::runtime_error("socketpair failed");
        }
        std::fflush(nullptr);
        pid_ = ::fork();
        if (pid_ < 0) {
            throw std::runtime_error("fork failed");
        }
        if (pid_ == 0) {
            ::close(fds[0]);
            ::alarm(max_seconds);
            serve(body, [&] { return fds[1]; });
        }
        ::close(fds[1]);
        channel_ = std::make_unique<channel>(fds[0]);
    }
    ~peer_process()
    {
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }

    channel &control() { return *channel_; }
    pid_t pid() const { return pid_; }

    /// Exit code of the peer, -signal if killed, or -1000 if it had to be killed on timeout.
    int wait_exit(std::chrono::milliseconds timeout = 3 * op_timeout)
    {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        int status    = 0;
        while (true) {
            pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_) {
                reaped_ = true;
                return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
            }
            if (std::chrono::steady_clock::now() > deadline) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, nullptr, 0);
                reaped_ = true;
                return -1000;
            }
            std::this_thread::sleep_for(2ms);
        }
    }

    /// Like wait_exit(), but keeps @p w progressing meanwhile (the peer may need us to close).
    int wait_exit_progressing(ucp_cpp::worker &w,
                              std::chrono::milliseconds timeout = 3 * op_timeout)
    {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        int status    = 0;
        while (std::chrono::steady_clock::now() < deadline) {
            w.progress();
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                reaped_ = true;
                return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
            }
        }
        return wait_exit(0ms);
    }

    void kill_now()
    {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        reaped_ = true;
    }

private:
    /// Peers constructed by this process's current test (the remote copy counts the same way).
    static unsigned &constructed()
    {
        static const ::testing::TestInfo *test = nullptr;
        static unsigned count                  = 0;
        const auto *now = ::testing::UnitTest::GetInstance()->current_test_info();
        if (now != test) {
            test  = now;
            count = 0;
        }
        return count;
    }

    /// The remote copy (UCP_CPP_TEST_PEER_SERVE="INDEX HOST PORT"): for peer INDEX, connects the
    /// control channel to HOST:PORT, runs @p body and exits with its status; false otherwise.
    static bool serve_here(unsigned index, std::function<void(channel &)> &body,
                           unsigned max_seconds)
    {
        const char *spec = std::getenv("UCP_CPP_TEST_PEER_SERVE");
        unsigned want    = 0;
        std::string host, port;
        if (spec == nullptr || !(std::istringstream(spec) >> want >> host >> port) ||
            want != index) {
            return false;
        }
        ::alarm(max_seconds);
        char name[256] = "?";
        ::gethostname(name, sizeof(name) - 1);
        std::fprintf(stderr, "[peer %d on %s] peer %u of %s, control channel to %s:%s\n",
                     int(::getpid()), name, index,
                     ::testing::UnitTest::GetInstance()->current_test_info()->name(), host.c_str(),
                     port.c_str());
        serve(body, [&] { return connect_to(host, port); });
    }

    /// The peer's side: @p body on the channel that @p open gives, then _exit(): 0 iff body
    /// returned normally.
    [[noreturn]] static void serve(std::function<void(channel &)> &body,
                                   const std::function<int()> &open)
    {
        int code = 0;
        try {
            channel ch(open());
            body(ch);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "[peer %d] failed: %s\n", int(::getpid()), e.what());
            code = 1;
        }
        std::fflush(nullptr);
        ::_exit(code);
    }

    static int connect_to(const std::string &host, const std::string &port)
    {
        addrinfo hints{}, *list = nullptr;
        hints.ai_family   = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &list) != 0 || list == nullptr) {
            throw std::runtime_error("peer: cannot resolve " + host);
        }
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        int rc = ::connect(fd, list->ai_addr, list->ai_addrlen);
        ::freeaddrinfo(list);
        if (fd < 0 || rc != 0) {
            throw std::runtime_error("peer: cannot connect to " + host + ":" + port);
        }
        return fd;
    }

    /// UCP_CPP_TEST_PEER_CMD set: starts peer @p index as this program on the other host
    /// (through the command), waits for its control connection; false when the variable is unset.
    bool start_remote(unsigned index)
    {
        const char *cmd = std::getenv("UCP_CPP_TEST_PEER_CMD");
        if (cmd == nullptr || *cmd == '\0' || std::getenv("UCP_CPP_TEST_PEER_SERVE") != nullptr) {
            return false;
        }
        int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        socklen_t len   = sizeof(addr);
        if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0 ||
            ::listen(lfd, 1) != 0 ||
            ::getsockname(lfd, reinterpret_cast<sockaddr *>(&addr), &len) != 0) {
            throw std::runtime_error("peer: no control listener");
        }
        char name[256] = {};
        ::gethostname(name, sizeof(name) - 1);
        const char *connect    = std::getenv("UCP_CPP_TEST_PEER_CONNECT");
        const std::string spec = std::to_string(index) + " " + (connect ? connect : name) + " " +
                                 std::to_string(ntohs(addr.sin_port));
        const auto *info         = ::testing::UnitTest::GetInstance()->current_test_info();
        const std::string filter = std::string("--gtest_filter=") + info->test_suite_name() + "." +
                                   info->name();
        char exe[4096] = {};
        if (::readlink("/proc/self/exe", exe, sizeof(exe) - 1) <= 0) {
            throw std::runtime_error("peer: /proc/self/exe");
        }
        std::vector<std::string> words;
        std::istringstream split(cmd);
        for (std::string w; split >> w;) {
            words.push_back(w);
        }
        for (const std::string &w :
             {std::string("env"), "UCP_CPP_TEST_PEER_SERVE=" + spec, std::string(exe), filter}) {
            words.push_back(w);
        }
        std::fflush(nullptr);
        pid_ = ::fork();
        if (pid_ < 0) {
            throw std::runtime_error("fork failed");
        }
        if (pid_ == 0) {
            ::close(lfd);
            std::vector<char *> argv;
            for (auto &w : words) {
                argv.push_back(w.data());
            }
            argv.push_back(nullptr);
            ::execvp(argv[0], argv.data());
            std::fprintf(stderr, "[peer] cannot run %s\n", argv[0]);
            ::_exit(127);
        }
        pollfd pfd{lfd, POLLIN, 0};
        int fd = ::poll(&pfd, 1, int(std::chrono::milliseconds(3 * op_timeout).count())) > 0
                     ? ::accept(lfd, nullptr, nullptr)
                     : -1;
        ::close(lfd);
        if (fd < 0) {
            kill_now();
            throw std::runtime_error("peer: the remote peer (" + std::string(cmd) +
                                     ") did not connect");
        }
        channel_ = std::make_unique<channel>(fd);
        return true;
    }

    pid_t pid_   = -1;
    bool reaped_ = false;
    std::unique_ptr<channel> channel_;
};

/// Throws (in the peer) or fails (in gtest) with a message.
#define PEER_CHECK(cond)                                                                    \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            throw std::runtime_error(std::string(__FILE__ ":") + std::to_string(__LINE__) + \
                                     ": check failed: " #cond);                             \
        }                                                                                   \
    } while (0)

/// UCX objects of one side of a two-process test.
struct side {
    std::shared_ptr<ucp_cpp::context> ctx;
    std::shared_ptr<ucp_cpp::worker> wrk;
    std::shared_ptr<ucp_cpp::endpoint> ep;
};

inline constexpr uint64_t all_features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                                         UCP_FEATURE_AMO64 | UCP_FEATURE_STREAM | UCP_FEATURE_AM |
                                         UCP_FEATURE_WAKEUP;

inline std::shared_ptr<ucp_cpp::context> make_context(const std::string &tls,
                                                      uint64_t features = all_features,
                                                      std::map<std::string, std::string> extra = {})
{
    ucp_cpp::context_params params;
    params.features = features;
    params.config   = std::move(extra);
    if (!tls.empty()) {
        params.config["TLS"] = tls;
    }
    return ucp_cpp::context::create(params);
}

/// True if UCX can detect peer failure over these transports: tcp among the host ones, and
/// gdr_rc (RC retry exhaustion + ep_check keepalive).
inline bool has_failure_detection(const std::string &tls)
{
    return tls.find("tcp") != std::string::npos || tls.find("gdr_rc") != std::string::npos;
}

/// Both sides: create context + worker, swap worker addresses over @p ch, connect.
inline side connect_by_address(channel &ch, const std::string &tls,
                               ucp_cpp::endpoint_params ep_params       = {},
                               std::map<std::string, std::string> extra = {},
                               ucs_thread_mode_t mode                   = UCS_THREAD_MODE_SINGLE)
{
    side s;
    if (!has_failure_detection(tls)) {
        // UCX 1.13's shared-memory transports cannot detect a dead peer: with
        // UCP_ERR_HANDLING_MODE_PEER they would be unreachable.
        ep_params.peer_error_handling = false;
    }
    s.ctx = make_context(tls, all_features, std::move(extra));
    ucp_cpp::worker_params wp;
    wp.thread_mode = mode;
    s.wrk          = ucp_cpp::worker::create(s.ctx, wp);
    ch.send(s.wrk->address().bytes);
    ucp_cpp::worker_address peer{ch.recv()};
    s.ep = ucp_cpp::endpoint::connect(s.wrk, peer, ep_params);
    return s;
}

/// Progresses @p w until the control channel has a message (the peer says "done"), bounded; the
/// target side of emulated RMA must progress for the initiator's operations to complete.
inline void serve_until_message(ucp_cpp::worker &w, channel &ch)
{
    auto deadline = std::chrono::steady_clock::now() + 3 * op_timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        w.progress();
        pollfd pfd{ch.fd(), POLLIN, 0};
        if (::poll(&pfd, 1, 0) > 0) {
            return;
        }
    }
    throw std::runtime_error("serve_until_message: timed out");
}

/// Deterministic, size- and seed-dependent content (catches offset and truncation errors).
inline void fill_pattern(void *buffer, size_t length, uint64_t seed)
{
    auto *bytes = static_cast<uint8_t *>(buffer);
    uint64_t x  = seed * 0x9e3779b97f4a7c15ull + length;
    for (size_t i = 0; i < length; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes[i] = uint8_t(x);
    }
}

inline bool check_pattern(const void *buffer, size_t length, uint64_t seed)
{
    std::vector<uint8_t> expected(length);
    fill_pattern(expected.data(), length, seed);
    return length == 0 || std::memcmp(expected.data(), buffer, length) == 0;
}

inline const std::vector<size_t> &transfer_sizes()
{
    static const std::vector<size_t> sizes{0, 1, 8, 4095, 65536, 1u << 20, 16u << 20};
    return sizes;
}

}  // namespace ucp_cpp_test
