// coll_bench: ucp_cpp::coll against the MPI library's collectives, same ranks, same run.
// Run under mpirun; MPI only exchanges the UCP worker addresses (bootstrap (b)) and provides the
// reference timings.  Reports per size: time per call (us, max over ranks) and bus bandwidth
// with nccl-tests' factors (allreduce 2(p-1)/p, allgather/alltoall/reduce_scatter (p-1)/p,
// bcast 1), for ours and MPI's.  Results are checked once per size (sum of ranks).
//
//   mpirun -np 4 --mca pml ucx -x UCX_TLS=tcp,self build/perf/coll_bench/coll_bench \
//       [--op allreduce|allgather|bcast|alltoall] [--max-size 64M] [--iterations N]
#include <ucp_cpp/coll/coll.hpp>
#include <ucp_cpp/ucp_cpp.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace coll = ucp_cpp::coll;

namespace {

struct options {
    std::string op       = "allreduce";
    size_t max_size      = size_t(64) << 20;
    int iterations       = 0;  // 0: by size
};

size_t parse_size(const char *text)
{
    char *end    = nullptr;
    double value = std::strtod(text, &end);
    switch (*end) {
    case 'k': case 'K': value *= 1024; break;
    case 'm': case 'M': value *= 1024 * 1024; break;
    default: break;
    }
    return size_t(value);
}

/// Seconds per call of @p call (max over ranks), after a warm-up and a barrier.
double time_per_call(const std::function<void()> &call, int iterations)
{
    for (int i = 0; i < std::max(1, iterations / 10); ++i) call();
    MPI_Barrier(MPI_COMM_WORLD);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) call();
    double local = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
    double slowest = 0;
    MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

}  // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    options opt;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string key = argv[i];
        if (key == "--op") opt.op = argv[i + 1];
        else if (key == "--max-size") opt.max_size = parse_size(argv[i + 1]);
        else if (key == "--iterations") opt.iterations = std::atoi(argv[i + 1]);
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    // Bootstrap (b): MPI exchanges the worker addresses.
    auto ctx    = ucp_cpp::context::create();
    auto worker = ucp_cpp::worker::create(ctx);
    auto own    = worker->address();
    int length = int(own.size()), longest = 0;
    MPI_Allreduce(&length, &longest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    std::vector<uint8_t> mine(size_t(longest) + sizeof(int)), all(mine.size() * size_t(size));
    std::memcpy(mine.data(), &length, sizeof(int));
    std::memcpy(mine.data() + sizeof(int), own.bytes.data(), own.size());
    MPI_Allgather(mine.data(), int(mine.size()), MPI_BYTE, all.data(), int(mine.size()), MPI_BYTE, MPI_COMM_WORLD);
    std::vector<ucp_cpp::worker_address> table(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
        const uint8_t *entry = all.data() + size_t(r) * mine.size();
        int n = 0;
        std::memcpy(&n, entry, sizeof(int));
        table[size_t(r)].bytes.assign(entry + sizeof(int), entry + sizeof(int) + n);
    }
    auto comm = coll::communicator::from_addresses(worker, rank, table);

    const double p = size;
    double factor = 1;
    if (opt.op == "allreduce") factor = 2 * (p - 1) / p;
    else if (opt.op == "allgather" || opt.op == "alltoall") factor = (p - 1) / p;
    if (rank == 0) {
        std::printf("# coll_bench %s, %d ranks; time per call in us (max over ranks), busbw in GB/s\n",
                    opt.op.c_str(), size);
        std::printf("%12s %12s %12s %12s %12s %6s\n", "bytes", "ours_us", "mpi_us", "ours_busbw", "mpi_busbw", "check");
    }
    for (size_t bytes = 8; bytes <= opt.max_size; bytes = bytes == opt.max_size ? bytes + 1 : std::min(bytes * 4, opt.max_size)) {
        const size_t n = bytes / sizeof(float);  // elements per rank (per peer for alltoall/allgather)
        const bool gathers = opt.op == "allgather" || opt.op == "alltoall";
        std::vector<float> send(gathers && opt.op == "alltoall" ? n * size_t(size) : n, float(rank + 1));
        std::vector<float> recv(gathers ? n * size_t(size) : n);
        const int iterations = opt.iterations > 0 ? opt.iterations : int(std::clamp<size_t>((64u << 20) / (bytes * 8), 5, 1000));
        std::function<void()> ours, theirs;
        if (opt.op == "allreduce") {
            ours   = [&] { comm.allreduce(send.data(), recv.data(), n, coll::sum); };
            theirs = [&] { MPI_Allreduce(send.data(), recv.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
        } else if (opt.op == "allgather") {
            ours   = [&] { comm.allgather(send.data(), recv.data(), n); };
            theirs = [&] { MPI_Allgather(send.data(), int(n), MPI_FLOAT, recv.data(), int(n), MPI_FLOAT, MPI_COMM_WORLD); };
        } else if (opt.op == "alltoall") {
            ours   = [&] { comm.alltoall(send.data(), recv.data(), n); };
            theirs = [&] { MPI_Alltoall(send.data(), int(n), MPI_FLOAT, recv.data(), int(n), MPI_FLOAT, MPI_COMM_WORLD); };
        } else {
            ours   = [&] { comm.bcast(send.data(), n, 0); };
            theirs = [&] { MPI_Bcast(send.data(), int(n), MPI_FLOAT, 0, MPI_COMM_WORLD); };
        }
        ours();
        bool ok = true;
        if (opt.op == "allreduce") ok = n == 0 || recv[n - 1] == float(size * (size + 1) / 2);
        if (opt.op == "allgather") ok = n == 0 || recv[recv.size() - 1] == float(size);
        if (opt.op == "bcast") ok = n == 0 || send[n - 1] == 1.0f;
        int all_ok = 0, local_ok = ok ? 1 : 0;
        MPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        const double t_ours = time_per_call(ours, iterations), t_mpi = time_per_call(theirs, iterations);
        const double moved = gathers ? double(bytes) * p : double(bytes);
        if (rank == 0) {
            std::printf("%12zu %12.2f %12.2f %12.3f %12.3f %6s\n", bytes, t_ours * 1e6, t_mpi * 1e6,
                        moved * factor / t_ours / 1e9, moved * factor / t_mpi / 1e9, all_ok ? "ok" : "WRONG");
        }
    }
    comm = coll::communicator();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
