// coll_bench: ucp_cpp::coll against the MPI library's collectives, same ranks, same run.
// Run under mpirun; MPI only exchanges the UCP worker addresses (bootstrap (b)) and provides the
// reference timings.  Reports per size: time per call (us, max over ranks) and bus bandwidth
// with nccl-tests' factors (allreduce 2(p-1)/p, allgather/alltoall/reduce_scatter (p-1)/p of
// the total size, bcast 1), for ours and MPI's, and the ratio; the 8 B row is the latency line
// (repeated at the end).  Results are checked once per size.
//
//   mpirun -np 4 --mca pml ucx -x UCX_TLS=tcp,self build/perf/coll_bench/coll_bench \
//       [--op allreduce|allgather|bcast|alltoall|reduce_scatter] [--max-size 64M] [--iterations N]
//       [--algorithm ring|recursive_doubling|knomial|rabenseifner|...]   (ours; default automatic)
//       [--repeat R]   (R timed runs per size, ours and MPI alternating; the best of each is
//                       reported: on a loaded host the least disturbed run)
//
// Sizes: bytes per rank for allreduce and bcast; per block (per rank) for allgather, alltoall
// (per peer) and reduce_scatter (the block each rank gets); busbw uses the total, as nccl-tests.
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
    int repeat           = 1;
    coll::algorithm algo = coll::algorithm::automatic;
};

/// The algorithm called @p name (a name of the algorithm table, or automatic); exits on others.
coll::algorithm parse_algorithm(const std::string &name)
{
    if (const auto known = coll::algorithm_named(name))
        return *known;
    std::fprintf(stderr, "coll_bench: unknown algorithm %s\n", name.c_str());
    std::exit(2);
}

size_t parse_size(const char *text)
{
    char *end    = nullptr;
    double value = std::strtod(text, &end);
    switch (*end) {
    case 'k':
    case 'K':
        value *= 1024;
        break;
    case 'm':
    case 'M':
        value *= 1024 * 1024;
        break;
    default:
        break;
    }
    return size_t(value);
}

/// Seconds per call of @p call (max over ranks), after a warm-up and a barrier.
double time_per_call(const std::function<void()> &call, int iterations)
{
    for (int i = 0; i < std::max(1, iterations / 10); ++i)
        call();
    MPI_Barrier(MPI_COMM_WORLD);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i)
        call();
    double local = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                   iterations;
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
        if (key == "--op")
            opt.op = argv[i + 1];
        else if (key == "--max-size")
            opt.max_size = parse_size(argv[i + 1]);
        else if (key == "--iterations")
            opt.iterations = std::atoi(argv[i + 1]);
        else if (key == "--algorithm")
            opt.algo = parse_algorithm(argv[i + 1]);
        else if (key == "--repeat")
            opt.repeat = std::max(1, std::atoi(argv[i + 1]));
    }
    coll::call_options how;
    how.algo = opt.algo;
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
    MPI_Allgather(mine.data(), int(mine.size()), MPI_BYTE, all.data(), int(mine.size()), MPI_BYTE,
                  MPI_COMM_WORLD);
    std::vector<ucp_cpp::worker_address> table(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
        const uint8_t *entry = all.data() + size_t(r) * mine.size();
        int n                = 0;
        std::memcpy(&n, entry, sizeof(int));
        table[size_t(r)].bytes.assign(entry + sizeof(int), entry + sizeof(int) + n);
    }
    auto comm = coll::communicator::from_addresses(worker, rank, table);

    const double p = size;
    double factor  = 1;
    if (opt.op == "allreduce")
        factor = 2 * (p - 1) / p;
    else if (opt.op == "allgather" || opt.op == "alltoall" || opt.op == "reduce_scatter")
        factor = (p - 1) / p;
    if (rank == 0) {
        std::printf("# coll_bench %s, %d ranks, ours: %s; time per call in us (max over ranks, "
                    "best of %d), "
                    "busbw in GB/s, ratio = mpi_us / ours_us (> 1: ours faster)\n",
                    opt.op.c_str(), size, coll::name_of(opt.algo), opt.repeat);
        std::printf("%12s %12s %12s %12s %12s %7s %6s\n", "bytes", "ours_us", "mpi_us",
                    "ours_busbw", "mpi_busbw", "ratio", "check");
    }
    double latency_ours = 0, latency_mpi = 0;
    for (size_t bytes = 8; bytes <= opt.max_size;
         bytes        = bytes == opt.max_size ? bytes + 1 : std::min(bytes * 4, opt.max_size)) {
        const size_t n = bytes /
                         sizeof(float);  // elements per rank (per peer for alltoall/allgather)
        const bool gathers = opt.op == "allgather" || opt.op == "alltoall" ||
                             opt.op == "reduce_scatter";
        const bool wide_send = opt.op == "alltoall" || opt.op == "reduce_scatter";
        std::vector<float> send(wide_send ? n * size_t(size) : n, float(rank + 1));
        std::vector<float> recv(gathers && opt.op != "reduce_scatter" ? n * size_t(size) : n);
        const int iterations = opt.iterations > 0
                                   ? opt.iterations
                                   : int(std::clamp<size_t>((64u << 20) / (bytes * 8), 5, 1000));
        std::function<void()> ours, theirs;
        if (opt.op == "allreduce") {
            ours   = [&] { comm.allreduce(send.data(), recv.data(), n, coll::sum, how); };
            theirs = [&] {
                MPI_Allreduce(send.data(), recv.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            };
        } else if (opt.op == "allgather") {
            ours   = [&] { comm.allgather(send.data(), recv.data(), n, how); };
            theirs = [&] {
                MPI_Allgather(send.data(), int(n), MPI_FLOAT, recv.data(), int(n), MPI_FLOAT,
                              MPI_COMM_WORLD);
            };
        } else if (opt.op == "alltoall") {
            ours   = [&] { comm.alltoall(send.data(), recv.data(), n, how); };
            theirs = [&] {
                MPI_Alltoall(send.data(), int(n), MPI_FLOAT, recv.data(), int(n), MPI_FLOAT,
                             MPI_COMM_WORLD);
            };
        } else if (opt.op == "reduce_scatter") {
            ours   = [&] { comm.reduce_scatter(send.data(), recv.data(), n, coll::sum, how); };
            theirs = [&] {
                MPI_Reduce_scatter_block(send.data(), recv.data(), int(n), MPI_FLOAT, MPI_SUM,
                                         MPI_COMM_WORLD);
            };
        } else {
            ours   = [&] { comm.bcast(send.data(), n, 0, how); };
            theirs = [&] { MPI_Bcast(send.data(), int(n), MPI_FLOAT, 0, MPI_COMM_WORLD); };
        }
        ours();
        bool ok = true;
        if (opt.op == "allreduce" || opt.op == "reduce_scatter")
            ok = n == 0 || recv[n - 1] == float(size * (size + 1) / 2);
        if (opt.op == "allgather" || opt.op == "alltoall")
            ok = n == 0 || recv[recv.size() - 1] == float(size);
        if (opt.op == "bcast")
            ok = n == 0 || send[n - 1] == 1.0f;
        int all_ok = 0, local_ok = ok ? 1 : 0;
        MPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        double t_ours = 1e30, t_mpi = 1e30;
        for (int r = 0; r < opt.repeat; ++r) {
            t_ours = std::min(t_ours, time_per_call(ours, iterations));
            t_mpi  = std::min(t_mpi, time_per_call(theirs, iterations));
        }
        const double moved = gathers ? double(bytes) * p : double(bytes);
        if (bytes == 8) {
            latency_ours = t_ours;
            latency_mpi  = t_mpi;
        }
        if (rank == 0) {
            std::printf("%12zu %12.2f %12.2f %12.3f %12.3f %7.2f %6s\n", bytes, t_ours * 1e6,
                        t_mpi * 1e6, moved * factor / t_ours / 1e9, moved * factor / t_mpi / 1e9,
                        t_mpi / t_ours, all_ok ? "ok" : "WRONG");
            std::fflush(stdout);
        }
    }
    if (rank == 0 && latency_ours > 0) {
        std::printf("# latency (8 B) %s: ours %.2f us, mpi %.2f us\n", opt.op.c_str(),
                    latency_ours * 1e6, latency_mpi * 1e6);
    }
    comm = coll::communicator();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
