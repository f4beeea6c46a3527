// Minimal consumer of ucp_cpp's collectives (ucp_cpp::coll, pkg-config ucp_cpp_coll): an
// allreduce on a one-rank communicator, exit 0 iff it summed; and the installed CUDA driver layer
// (coll/gpu/ through <gdr_cuda_driver/...>) calls a host buffer host.
#include <ucp_cpp/coll/coll.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

int main()
{
    ucp_cpp::context_params params;
    params.config["TLS"] = "tcp,self";
    auto worker          = ucp_cpp::worker::create(ucp_cpp::context::create(params));
    auto world = ucp_cpp::coll::communicator::from_addresses(worker, 0, {worker->address()});
    std::vector<int64_t> in{1, 2, 3}, out(3);
    world.allreduce(in.data(), out.data(), in.size(), ucp_cpp::coll::sum);
    const bool summed = out == in;
    const bool host   = !ucp_cpp::coll::gpu::locate(out.data()).device;
    std::printf("consumer_coll: allreduce %s, host buffer %s\n", summed ? "ok" : "WRONG",
                host ? "is host memory" : "taken for CUDA memory: WRONG");
    return summed && host ? 0 : 1;
}
