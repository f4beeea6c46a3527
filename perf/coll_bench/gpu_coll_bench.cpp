// gpu_coll_bench: ucp_cpp::coll with CUDA buffers (docs/collectives.md, "GPU buffers").
//
//   1. Reduction kernels: GB/s of reduce(inout, in, n) (3 n bytes moved) against cuMemcpyAsync
//      device-to-device (2 n bytes moved) on the same stream, per datatype.
//   2. allreduce bus bandwidth, 2 (p-1)/p * bytes / time, with CUDA buffers and with host buffers
//      over the same UCX transports; p ranks as threads of this process, one UCX worker each.
//
//   gpu_coll_bench [--ranks P] [--min BYTES] [--max BYTES] [--iters N] [--tls LIST] [--kernel-bytes B]
// Defaults: 4 ranks, 4 MiB .. 64 MiB, 10 iterations (median of them), UCX_TLS-like list "posix,cma,self"
// (shared memory; no peer-failure detection needed here), 256 MiB kernel buffers.
// Links no CUDA library (coll/gpu.hpp loads the driver and NVRTC).  Exit status 2 without a GPU.
#include <ucp_cpp/coll/coll.hpp>
#include <ucp_cpp/ucp_cpp.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace coll   = ucp_cpp::coll;
namespace gpu    = ucp_cpp::coll::gpu;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
    int ranks        = 4;
    size_t min_bytes = size_t(4) << 20, max_bytes = size_t(64) << 20,
           kernel_bytes = size_t(256) << 20;
    int iters           = 10;
    std::string tls     = "posix,cma,self";
};

size_t parse_bytes(const char *s)
{
    char *end = nullptr;
    double v  = std::strtod(s, &end);
    switch (*end) {
    case 'k':
    case 'K':
        v *= 1024;
        break;
    case 'm':
    case 'M':
        v *= 1024 * 1024;
        break;
    case 'g':
    case 'G':
        v *= 1024.0 * 1024 * 1024;
        break;
    default:
        break;
    }
    return size_t(v);
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// Makes the primary context of device 0 current on the calling thread.
void use_device0(const gpu::driver &cu)
{
    gpu::CUdevice dev  = 0;
    gpu::CUcontext ctx = nullptr;
    gpu::check(cu.cuDeviceGet(&dev, 0), "cuDeviceGet");
    gpu::check(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    gpu::check(cu.cuCtxPushCurrent_v2(ctx), "cuCtxPushCurrent");
}

void kernel_table(const gpu::driver &cu, size_t bytes)
{
    gpu::CUdeviceptr a = 0, b = 0;
    gpu::check(cu.cuMemAlloc_v2(&a, bytes), "cuMemAlloc");
    gpu::check(cu.cuMemAlloc_v2(&b, bytes), "cuMemAlloc");
    std::vector<uint8_t> zeros(bytes, 0);  // zeros: every type stays finite under every op
    gpu::check(cu.cuMemcpyHtoDAsync_v2(a, zeros.data(), bytes, nullptr), "cuMemcpyHtoDAsync");
    gpu::check(cu.cuMemcpyHtoDAsync_v2(b, zeros.data(), bytes, nullptr), "cuMemcpyHtoDAsync");
    gpu::check(cu.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
    auto lane = std::make_shared<gpu::lane>(gpu::locate(reinterpret_cast<void *>(uintptr_t(a))),
                                            size_t(1) << 20);
    std::printf("kernels: %s, %zu MiB per operand\n",
                gpu::compile_kernels_for(lane->compute_capability()).c_str(), bytes >> 20);
    auto timed = [&](auto &&work) {
        work();  // warm-up (and module load)
        gpu::check(cu.cuStreamSynchronize(lane->stream()), "cuStreamSynchronize");
        std::vector<double> samples;
        for (int i = 0; i < 5; ++i) {
            const auto t0 = clock_type::now();
            for (int k = 0; k < 4; ++k)
                work();
            gpu::check(cu.cuStreamSynchronize(lane->stream()), "cuStreamSynchronize");
            samples.push_back(std::chrono::duration<double>(clock_type::now() - t0).count() / 4);
        }
        return median(samples);
    };
    void *pa              = reinterpret_cast<void *>(uintptr_t(a));
    void *pb              = reinterpret_cast<void *>(uintptr_t(b));
    const double copy_s   = timed([&] { lane->copy(pa, pb, bytes); });
    const double copy_gbs = 2.0 * double(bytes) / copy_s / 1e9;
    std::printf("cuMemcpyAsync DtoD: %.1f GB/s (read + write)\n", copy_gbs);
    std::printf("%-9s %-4s %10s %12s %8s\n", "type", "op", "time(us)", "GB/s(3n)", "vs copy");
    for (coll::datatype type :
         {coll::datatype::float32, coll::datatype::float16, coll::datatype::bfloat16,
          coll::datatype::int32, coll::datatype::float64, coll::datatype::int8}) {
        for (const coll::reduction *op : {&coll::sum, &coll::max}) {
            const size_t count = bytes / coll::size_of(type);
            const double s     = timed([&] { lane->reduce(*op, type, pb, pa, count); });
            const double gbs   = 3.0 * double(bytes) / s / 1e9;
            std::printf("%-9s %-4s %10.1f %12.1f %8.2f\n", coll::name_of(type),
                        op == &coll::sum ? "sum" : "max", s * 1e6, gbs, gbs / copy_gbs);
        }
    }
    lane.reset();
    cu.cuMemFree_v2(a);
    cu.cuMemFree_v2(b);
}

void allreduce_table(const gpu::driver &cu, const options &o)
{
    ucp_cpp::context_params params;
    params.features          = UCP_FEATURE_TAG;
    params.config["TLS"]     = o.tls;
    params.mt_workers_shared = true;
    params.name              = "gpu_coll_bench";
    auto ctx                 = ucp_cpp::context::create(params);
    std::vector<std::shared_ptr<ucp_cpp::worker>> workers;
    std::vector<ucp_cpp::worker_address> addresses;
    for (int r = 0; r < o.ranks; ++r) {
        workers.push_back(ucp_cpp::worker::create(ctx));
        addresses.push_back(workers.back()->address());
    }
    coll::communicator_params cp;
    cp.peer_error_handling = false;  // shared-memory transports
    std::vector<coll::communicator> comms;
    for (int r = 0; r < o.ranks; ++r)
        comms.push_back(coll::communicator::from_addresses(workers[size_t(r)], r, addresses, cp));

    std::vector<size_t> sizes;
    for (size_t b = o.min_bytes; b <= o.max_bytes; b *= 2)
        sizes.push_back(b);
    // results[size][0 host, 1 gpu] = seconds per allreduce (rank 0's median)
    std::vector<std::array<double, 2>> results(sizes.size());
    std::vector<std::thread> threads;
    std::string failure;
    std::mutex failure_lock;
    for (int r = 0; r < o.ranks; ++r) {
        threads.emplace_back([&, r] {
            try {
                use_device0(cu);
                coll::communicator &comm = comms[size_t(r)];
                for (size_t s = 0; s < sizes.size(); ++s) {
                    const size_t count = sizes[s] / sizeof(float);
                    std::vector<float> host(count, 1.0f / float(o.ranks));
                    gpu::CUdeviceptr dptr = 0;
                    gpu::check(cu.cuMemAlloc_v2(&dptr, sizes[s]), "cuMemAlloc");
                    gpu::check(cu.cuMemcpyHtoDAsync_v2(dptr, host.data(), sizes[s], nullptr),
                               "cuMemcpyHtoDAsync");
                    gpu::check(cu.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
                    for (int mode = 0; mode < 2; ++mode) {
                        float *buf = mode == 0 ? host.data()
                                               : reinterpret_cast<float *>(uintptr_t(dptr));
                        for (int w = 0; w < 2; ++w)
                            comm.allreduce(buf, count, coll::sum);
                        std::vector<double> samples;
                        for (int i = 0; i < o.iters; ++i) {
                            comm.barrier();
                            const auto t0 = clock_type::now();
                            comm.allreduce(buf, count, coll::sum);
                            comm.barrier();  // the slowest rank bounds the time
                            samples.push_back(
                                std::chrono::duration<double>(clock_type::now() - t0).count());
                        }
                        if (r == 0)
                            results[s][size_t(mode)] = median(samples);
                    }
                    cu.cuMemFree_v2(dptr);
                }
            } catch (const std::exception &e) {
                std::lock_guard<std::mutex> g(failure_lock);
                failure = "rank " + std::to_string(r) + ": " + e.what();
                std::fprintf(stderr, "%s\n", failure.c_str());
                std::_Exit(1);  // the other ranks would wait forever
            }
        });
    }
    for (auto &t : threads)
        t.join();
    const coll::config &settings = comms[0].config();  // UCP_CPP_COLL_GPU_STAGING / _SEGMENT
    const gpu::staging staging   = settings.gpu_staging();
    std::printf("\nallreduce float32 sum, %d ranks (threads, one worker each), UCX TLS=%s, "
                "staging=%s, segment=%zu, median of %d\n",
                o.ranks, o.tls.c_str(),
                staging == gpu::staging::automatic ? "auto"
                : staging == gpu::staging::always  ? "yes"
                                                   : "no",
                settings.gpu_segment_bytes(), o.iters);
    std::printf("%10s %14s %14s %8s\n", "bytes", "host GB/s", "cuda GB/s", "ratio");
    const double factor = 2.0 * (o.ranks - 1) / o.ranks;
    for (size_t s = 0; s < sizes.size(); ++s) {
        const double host_bw = factor * double(sizes[s]) / results[s][0] / 1e9;
        const double gpu_bw  = factor * double(sizes[s]) / results[s][1] / 1e9;
        std::printf("%10zu %14.2f %14.2f %8.2f\n", sizes[s], host_bw, gpu_bw, gpu_bw / host_bw);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--ranks")
            o.ranks = std::atoi(argv[i + 1]);
        else if (a == "--min")
            o.min_bytes = parse_bytes(argv[i + 1]);
        else if (a == "--max")
            o.max_bytes = parse_bytes(argv[i + 1]);
        else if (a == "--iters")
            o.iters = std::atoi(argv[i + 1]);
        else if (a == "--tls")
            o.tls = argv[i + 1];
        else if (a == "--kernel-bytes")
            o.kernel_bytes = parse_bytes(argv[i + 1]);
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 1;
        }
    }
    const gpu::driver *cu = gpu::cuda();
    if (cu == nullptr) {
        std::fprintf(stderr, "gpu_coll_bench: no usable CUDA driver: %s\n",
                     gpu::driver_problem().c_str());
        return 2;
    }
    try {
        use_device0(*cu);
        if (o.kernel_bytes != 0)
            kernel_table(*cu, o.kernel_bytes);
        if (o.ranks > 0)
            allreduce_table(*cu, o);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gpu_coll_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
