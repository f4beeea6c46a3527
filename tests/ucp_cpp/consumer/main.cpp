// Minimal ucp_cpp consumer of the wrapper alone (ucp_cpp::ucp_cpp, pkg-config ucp_cpp): loopback
// tag send/recv, exit 0 iff the data arrived.
#include <ucp_cpp/ucp_cpp.hpp>

#include <chrono>
#include <cstdio>

int main()
{
    ucp_cpp::context_params params;
    params.config["TLS"] = "tcp,self";
    auto worker          = ucp_cpp::worker::create(ucp_cpp::context::create(params));
    auto ep              = ucp_cpp::endpoint::connect(worker, worker->address());
    uint64_t out = 0x600dcafe, in = 0;
    auto recv = worker->tag_recv(&in, sizeof(in), 1);
    ep->tag_send(&out, sizeof(out), 1).wait(std::chrono::seconds(10));
    recv.wait(std::chrono::seconds(10));
    std::printf("consumer: %s\n", in == out ? "ok" : "WRONG");
    return in == out ? 0 : 1;
}
