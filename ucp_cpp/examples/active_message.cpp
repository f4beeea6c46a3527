// Active messages: the client sends a small (eager) and a large (rendezvous) message with a
// header; the server's handler receives both into its own buffers and replies with a checksum.
#include "example_util.hpp"

#include <ucp_cpp/ucp_cpp.hpp>

#include <chrono>
#include <list>
#include <numeric>
#include <vector>

using namespace std::chrono_literals;

static constexpr uint16_t data_am = 1, reply_am = 2;

int main(int argc, char **argv)
{
    return example::run(
        argc, argv,
        [&](auto report_port) {
            auto worker = example::make_worker(UCP_FEATURE_AM);
            struct arrival {
                uint32_t sequence;
                std::vector<uint8_t> data;
                ucp_cpp::request receive;
            };
            std::list<arrival> arrivals;
            worker->set_am_handler(data_am, [&](ucp_cpp::am_message &msg) {
                auto &a = arrivals.emplace_back();
                std::memcpy(&a.sequence, msg.header(), sizeof(a.sequence));
                a.data.resize(msg.length());
                a.receive = msg.receive(a.data.data(), a.data.size());  // eager: copy; rndv: fetch
            });
            // Accept only now: UCP drops (with a warning) a message for an id that has no handler
            // yet, so handlers go in before any peer can send.
            auto ep = example::accept_one(worker, report_port);
            worker->progress_until([&] { return arrivals.size() == 2; }, 30s);
            uint64_t sums[2] = {0, 0};
            for (auto &a : arrivals) {
                a.receive.wait(10s);
                sums[a.sequence] = std::accumulate(a.data.begin(), a.data.end(), uint64_t(0));
            }
            ep->am_send(reply_am, nullptr, 0, sums, sizeof(sums)).wait(10s);
            // No flush here: the client exits as soon as the reply arrives, and its disconnect
            // cancels a flush still waiting for the transport's acknowledgement.  The endpoint's
            // destructor closes it in flush mode and the worker's destructor finishes that close, which
            // delivers the reply; the client checks it arrived.
            return arrivals.size() == 2 ? 0 : 1;
        },
        [&](const std::string &host, uint16_t port) {
            auto worker      = example::make_worker(UCP_FEATURE_AM);
            auto ep          = ucp_cpp::endpoint::connect(worker, host, port);
            uint64_t sums[2] = {~0ull, ~0ull};
            bool replied     = false;
            worker->set_am_handler(reply_am, [&](ucp_cpp::am_message &msg) {
                std::memcpy(sums, msg.data(), sizeof(sums));  // small: eager data in place
                replied = true;
            });
            std::vector<uint8_t> small(100, 1), large(4 << 20, 2);
            uint32_t headers[2] = {0, 1};
            auto a              = ep->am_send(data_am, &headers[0], sizeof(uint32_t), small.data(),
                                              small.size());
            ucp_cpp::op_options rndv;
            rndv.flags = UCP_AM_SEND_FLAG_RNDV;
            auto b = ep->am_send(data_am, &headers[1], sizeof(uint32_t), large.data(), large.size(),
                                 rndv);
            a.wait(10s);
            b.wait(10s);
            worker->progress_until([&] { return replied; }, 30s);
            bool ok = replied && sums[0] == 100 && sums[1] == uint64_t(2) * large.size();
            std::printf("client: AM eager + rendezvous %s\n", ok ? "verified" : "WRONG");
            return ok ? 0 : 1;
        });
}
