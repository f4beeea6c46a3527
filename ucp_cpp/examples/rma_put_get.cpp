// RMA with remote-key exchange: the server registers memory and sends its descriptor (address,
// length and packed rkey: ucp_cpp::remote_memory) in a tag message; the client puts a pattern,
// gets it back, and does a fetch-add.
#include "example_util.hpp"

#include <ucp_cpp/ucp_cpp.hpp>

#include <chrono>
#include <vector>

using namespace std::chrono_literals;

static constexpr ucp_tag_t rkey_tag = 10, done_tag = 11;
static constexpr size_t region_size = 1 << 20;
static constexpr uint64_t features  = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO64;

int main(int argc, char **argv)
{
    return example::run(
        argc, argv,
        [&](auto report_port) {
            auto worker = example::make_worker(features);
            auto ep     = example::accept_one(worker, report_port);
            std::vector<uint64_t> region(region_size / 8 + 1, 0);
            auto memh = ucp_cpp::memory_handle::map(worker->ctx(), region.data(),
                                                    region.size() * 8);
            ucp_cpp::blocking::send_remote_memory(*ep, memh->describe(), rkey_tag, 10s);
            // Keep progressing (RMA may be emulated by UCP over transports without it).
            uint64_t done = 0;
            worker->tag_recv(&done, sizeof(done), done_tag).wait(30s);
            bool ok = region[region_size / 8] == 42;
            for (size_t i = 0; i < region_size / 8; ++i) {
                ok = ok && region[i] == i * 3;
            }
            std::printf("server: region %s\n", ok ? "as expected" : "WRONG");
            return ok ? 0 : 1;
        },
        [&](const std::string &host, uint16_t port) {
            auto worker                         = example::make_worker(features);
            auto ep                             = ucp_cpp::endpoint::connect(worker, host, port);
            const ucp_cpp::remote_memory region = ucp_cpp::blocking::recv_remote_memory(*worker,
                                                                                        rkey_tag,
                                                                                        10s);
            auto rkey                           = ep->unpack_rkey(region);
            const uint64_t remote               = region.address;

            std::vector<uint64_t> out(region_size / 8), back(region_size / 8);
            for (size_t i = 0; i < out.size(); ++i) {
                out[i] = i * 3;
            }
            ep->put(out.data(), region_size, remote, rkey).wait(10s);
            ep->flush().wait(10s);
            ep->get(back.data(), region_size, remote, rkey).wait(10s);
            uint64_t old = 1;
            ep->atomic_fetch<uint64_t>(UCP_ATOMIC_OP_ADD, 42, &old, remote + region_size, rkey)
                .wait(10s);
            ep->flush().wait(10s);
            uint64_t done = 1;
            ep->tag_send(&done, sizeof(done), done_tag).wait(10s);
            bool ok = back == out && old == 0;
            std::printf("client: put/get of 1 MiB and fetch-add %s\n", ok ? "verified" : "WRONG");
            return ok ? 0 : 1;
        });
}
