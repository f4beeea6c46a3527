// Minimal ucp_cpp consumer: loopback tag send/recv, exit 0 iff the data arrived; and the
// installed CUDA driver layer (coll/gpu/ through <gdr_cuda_driver/...>) calls a host buffer host.
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
    const bool host = !ucp_cpp::coll::gpu::locate(&in).device;
    std::printf("consumer: %s, host buffer %s\n", in == out ? "ok" : "WRONG",
                host ? "is host memory" : "taken for CUDA memory: WRONG");
    return in == out && host ? 0 : 1;
}
