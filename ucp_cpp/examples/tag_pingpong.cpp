// Tagged ping-pong over a listener connection: the client sends, the server echoes, the client
// checks every byte.  Run without arguments (forks the server) or as server / client.
#include "example_util.hpp"

#include <ucp_cpp/ucp_cpp.hpp>

#include <chrono>
#include <vector>

using namespace std::chrono_literals;

static constexpr ucp_tag_t ping = 1, pong = 2;

int main(int argc, char **argv)
{
    return example::run(
        argc, argv,
        [&](auto report_port) {
            auto worker = example::make_worker(UCP_FEATURE_TAG);
            auto ep     = example::accept_one(worker, report_port);
            std::vector<char> buffer(1 << 20);
            for (int i = 0; i < 100; ++i) {
                auto recv = worker->tag_recv(buffer.data(), buffer.size(), ping);
                recv.wait(10s);
                ep->tag_send(buffer.data(), recv.length(), pong).wait(10s);
            }
            ep->close().wait(10s);
            return 0;
        },
        [&](const std::string &host, uint16_t port) {
            auto worker = example::make_worker(UCP_FEATURE_TAG);
            auto ep     = ucp_cpp::endpoint::connect(worker, host, port);
            std::vector<char> out(1 << 20), in(1 << 20);
            for (int i = 0; i < 100; ++i) {
                size_t size = size_t(1) << (i % 21);
                for (size_t j = 0; j < size; ++j) {
                    out[j] = char(i + j);
                }
                auto recv = worker->tag_recv(in.data(), in.size(), pong);
                ep->tag_send(out.data(), size, ping).wait(10s);
                recv.wait(10s);
                if (recv.length() != size || std::memcmp(in.data(), out.data(), size) != 0) {
                    std::fprintf(stderr, "data mismatch at iteration %d\n", i);
                    return 1;
                }
            }
            std::printf("100 ping-pongs of 1 B .. 1 MiB verified\n");
            return 0;
        });
}
