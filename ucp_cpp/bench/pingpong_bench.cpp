// Tag ping-pong latency and streaming bandwidth of ucp_cpp, measured like ucx_perftest's
// tag_lat / tag_bw: two processes (this program forks the peer), busy-polling progress,
// transports from the environment (UCX_TLS).  Prints one line per size:
//   size <bytes> lat_typical_us <median half round trip> lat_avg_us <mean> bw_MBps <MB/s>
#include <ucp_cpp/ucp_cpp.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
constexpr ucp_tag_t ping = 1, pong = 2, data_tag = 3, ack_tag = 4;

struct options {
    std::vector<size_t> sizes{8};
    size_t iterations = 10000;
    size_t warmup     = 1000;
    size_t window     = 32;  // outstanding sends in the bandwidth test (ucx_perftest default)
    bool latency = true, bandwidth = true;
};

options parse(int argc, char **argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto next       = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", arg.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (arg == "--sizes") {
            o.sizes.clear();
            std::string list = next();
            for (size_t pos = 0; pos < list.size();) {
                size_t comma = list.find(',', pos);
                o.sizes.push_back(std::stoull(list.substr(pos, comma - pos)));
                pos = comma == std::string::npos ? list.size() : comma + 1;
            }
        } else if (arg == "--iterations") {
            o.iterations = std::stoull(next());
            o.warmup     = std::max<size_t>(o.iterations / 10, 10);
        } else if (arg == "--window") {
            o.window = std::stoull(next());
        } else if (arg == "--latency-only") {
            o.bandwidth = false;
        } else if (arg == "--bandwidth-only") {
            o.latency = false;
        } else {
            std::fprintf(stderr,
                         "usage: %s [--sizes a,b,..] [--iterations n] [--window w] "
                         "[--latency-only|--bandwidth-only]\n",
                         argv[0]);
            std::exit(2);
        }
    }
    return o;
}

struct peer_link {
    std::shared_ptr<ucp_cpp::worker> worker;
    std::shared_ptr<ucp_cpp::endpoint> ep;
};

peer_link connect(int fd)
{
    ucp_cpp::context_params params;
    params.features = UCP_FEATURE_TAG;
    auto worker     = ucp_cpp::worker::create(ucp_cpp::context::create(params));
    auto mine       = worker->address();
    uint64_t size   = mine.size();
    if (write(fd, &size, 8) != 8 || write(fd, mine.bytes.data(), size) != ssize_t(size)) {
        throw std::runtime_error("address exchange failed");
    }
    ucp_cpp::worker_address theirs;
    if (read(fd, &size, 8) != 8) {
        throw std::runtime_error("address exchange failed");
    }
    theirs.bytes.resize(size);
    for (size_t got = 0; got < size;) {
        ssize_t n = read(fd, theirs.bytes.data() + got, size - got);
        if (n <= 0) {
            throw std::runtime_error("address exchange failed");
        }
        got += size_t(n);
    }
    ucp_cpp::endpoint_params ep_params;
    ep_params.peer_error_handling = false;  // as ucx_perftest (no keepalive traffic)
    return {worker, ucp_cpp::endpoint::connect(worker, theirs, ep_params)};
}

void sync_peers(peer_link &link)
{
    uint64_t token = 0;
    auto recv      = link.worker->tag_recv(&token, sizeof(token), ack_tag);
    link.ep->tag_send(&token, sizeof(token), ack_tag).wait();
    recv.wait();
}

/// Half round trip per iteration, in microseconds.
/// Host memory, declared as such: UCP skips memory-type detection (as ucx_perftest does).
ucp_cpp::op_options host_buffers()
{
    ucp_cpp::op_options options;
    options.memory_type = UCS_MEMORY_TYPE_HOST;
    return options;
}

std::vector<double> pingpong(peer_link &link, bool initiator, size_t size, size_t count)
{
    const ucp_cpp::op_options host = host_buffers();
    std::vector<char> out(size, 'x'), in(size);
    std::vector<double> samples;
    samples.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        auto start = clock_type::now();
        if (initiator) {
            auto recv = link.worker->tag_recv(in.data(), size, pong, ~ucp_tag_t(0), host);
            link.ep->tag_send(out.data(), size, ping, host).wait();
            recv.wait();
        } else {
            auto recv = link.worker->tag_recv(in.data(), size, ping, ~ucp_tag_t(0), host);
            recv.wait();
            link.ep->tag_send(out.data(), size, pong, host).wait();
        }
        samples.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - start).count() / 2);
    }
    return samples;
}

/// One-way stream of @p count messages with a window of outstanding sends; MB/s (2^20 B/s).
double stream(peer_link &link, bool sender, size_t size, size_t count, size_t window)
{
    std::vector<char> buffer(size, 's');
    std::vector<ucp_cpp::request> inflight(window);
    const ucp_cpp::op_options host = host_buffers();
    auto start = clock_type::now();
    for (size_t i = 0; i < count; ++i) {
        auto &slot = inflight[i % window];
        slot.wait();  // reuse a slot once its previous operation completed
        slot = sender ? link.ep->tag_send(buffer.data(), size, data_tag, host)
                      : link.worker->tag_recv(buffer.data(), size, data_tag, ~ucp_tag_t(0), host);
    }
    for (auto &slot : inflight) {
        slot.wait();
    }
    sync_peers(link);  // the sender's time includes delivery
    double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    return double(size) * double(count) / seconds / double(1 << 20);
}

int run(const options &o, int fd, bool initiator)
{
    peer_link link = connect(fd);
    sync_peers(link);
    for (size_t size : o.sizes) {
        double typical = 0, average = 0, bw = 0;
        if (o.latency) {
            pingpong(link, initiator, size, o.warmup);
            auto samples = pingpong(link, initiator, size, o.iterations);
            average      = 0;
            for (double s : samples) {
                average += s;
            }
            average /= double(samples.size());
            std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
            typical = samples[samples.size() / 2];
        }
        if (o.bandwidth) {
            stream(link, initiator, size, o.warmup, o.window);
            bw = stream(link, initiator, size, o.iterations, o.window);
        }
        sync_peers(link);
        if (initiator) {
            std::printf("size %zu lat_typical_us %.3f lat_avg_us %.3f bw_MBps %.3f\n", size, typical,
                        average, bw);
            std::fflush(stdout);
        }
    }
    // Orderly end: both sides flushed and synchronised; the peer then reports over the socket
    // and the initiator keeps progressing until it has (so neither tears down under the other).
    link.ep->flush().wait();
    sync_peers(link);
    char byte = 0;
    if (!initiator) {
        return write(fd, &byte, 1) == 1 ? 0 : 1;
    }
    pollfd pfd{fd, POLLIN, 0};
    while (poll(&pfd, 1, 0) == 0) {
        link.worker->progress();
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    options o = parse(argc, argv);
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm(600);
        try {
            _exit(run(o, fds[1], false));
        } catch (const std::exception &e) {
            std::fprintf(stderr, "peer: %s\n", e.what());
            _exit(1);
        }
    }
    close(fds[1]);
    int rc = 0;
    try {
        rc = run(o, fds[0], true);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        rc = 1;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return rc != 0 ? rc : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
