// coll_bench: ucp_cpp::coll against the MPI library's collectives, same ranks, same run.
// Run under mpirun; MPI only exchanges the UCP worker addresses (bootstrap (b)) and provides the
// reference timings.  Per collective and size: R interleaved repeats, each a batch of k calls of
// ours then a batch of k calls of MPI's (k the same for both, calibrated on MPI's time or given
// by --iterations), each batch timed as the max over ranks of the mean per call.  Reported: the
// median time per call of ours and of MPI's over the repeats, bus bandwidth with nccl-tests'
// factors (allreduce 2(p-1)/p, allgather/alltoall/reduce_scatter (p-1)/p of the total, bcast,
// reduce, gather, scatter 1 -- gather/scatter move the total), and ratio = ours/MPI: the median
// of the R per-repeat ratios, with their minimum and maximum (< 1: ours faster).  Each size is
// checked once (ours).  The 8 B row is the latency line (repeated at the end).
//
//   mpirun -np 4 --mca pml ucx -x UCX_TLS=tcp,self build/perf/coll_bench/coll_bench \
//       [--op NAME[,NAME...]|all]   (barrier bcast reduce allreduce allgather reduce_scatter
//                                    alltoall gather scatter; default allreduce; not in all:
//                                    allgatherv alltoallv gatherv scatterv reduce_scatterv,
//                                    uneven counts with zeros and gaps, results compared
//                                    with MPI's element for element)
//       [--max-size 64M]            (largest size; sizes 8 B, then x --step, then the maximum)
//       [--sizes 8,3K,1M]           (these sizes instead, in this order; K/M/G suffixes)
//       [--step 4]                  (factor between sizes)
//       [--max-total 0]             (when > 0: largest per-rank buffer; caps a block so that
//                                    p blocks fit, for allgather/alltoall/reduce_scatter/gather/scatter)
//       [--iterations N]            (calls per batch; default: about --batch-ms of MPI's time)
//       [--batch-ms 4]              (calibration target of a batch)
//       [--repeat R]                (interleaved repeats; default 1)
//       [--algorithm NAME]          (ours; default automatic)
//       [--no-peer-errors]          (our endpoints without UCP_ERR_HANDLING_MODE_PEER, as MPI's:
//                                    UCX's shared-memory transports need it, or UCX_MM_ERROR_HANDLING=y)
//       [--persistent]              (ours through coll::persistent: initialised once per size)
//       [--help]                    (this text)
//
// Sizes: bytes per rank for allreduce, reduce and bcast; per block (per rank) for allgather,
// gather, scatter, alltoall (per peer) and reduce_scatter (the block each rank gets); busbw uses
// the total, as nccl-tests.  The barrier has one row (size 0).
#include <ucp_cpp/coll/coll.hpp>
#include <ucp_cpp/ucp_cpp.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace coll = ucp_cpp::coll;

// --persistent: coll::persistent where this ucp_cpp has it (the same source builds against one
// without, to measure an earlier version).
#ifdef UCP_CPP_PERSISTENT_COLLECTIVES
#define PERSISTENT(init) \
    if (opt.persistent)  \
    plan = init
#else
#define PERSISTENT(init) (void)0
#endif

namespace {

struct options {
    std::vector<std::string> ops = {"allreduce"};
    size_t max_size              = size_t(64) << 20;
    std::vector<size_t> sizes;  // --sizes: these instead of the ladder
    size_t step          = 4;
    size_t max_total     = 0;
    int iterations       = 0;  // 0: calibrated
    double batch_ms      = 4;
    int repeat           = 1;
    bool peer_errors     = true;
    bool persistent      = false;
    coll::algorithm algo = coll::algorithm::automatic;
};

const char *const all_ops[] = {"barrier",        "bcast",    "reduce", "allreduce", "allgather",
                               "reduce_scatter", "alltoall", "gather", "scatter"};
/// The v-variants (not in --op all): uneven counts with zeros and gaps, checked against MPI's.
const char *const v_ops[] = {"allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatterv"};

bool is_v_op(const std::string &op)
{
    return std::find(std::begin(v_ops), std::end(v_ops), op) != std::end(v_ops);
}

/// The algorithm called @p name (a name of the algorithm table, or automatic); exits on others.
coll::algorithm parse_algorithm(const std::string &name)
{
    if (const auto known = coll::algorithm_named(name))
        return *known;
    std::fprintf(stderr, "coll_bench: unknown algorithm %s\n", name.c_str());
    std::exit(2);
}

std::vector<std::string> parse_ops(const std::string &text)
{
    if (text == "all")
        return {std::begin(all_ops), std::end(all_ops)};
    std::vector<std::string> ops;
    std::stringstream in(text);
    for (std::string op; std::getline(in, op, ',');) {
        if (std::find(std::begin(all_ops), std::end(all_ops), op) == std::end(all_ops) &&
            !is_v_op(op)) {
            std::fprintf(stderr, "coll_bench: unknown collective %s\n", op.c_str());
            std::exit(2);
        }
        ops.push_back(op);
    }
    return ops;
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
    case 'g':
    case 'G':
        value *= 1024.0 * 1024 * 1024;
        break;
    default:
        break;
    }
    return size_t(value);
}

/// Seconds per call of @p iterations calls of @p call, max over ranks, after a barrier.
double batch(const std::function<void()> &call, int iterations)
{
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

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct measured {
    double ours = 0, mpi = 0, ratio = 0, ratio_min = 0, ratio_max = 0;
    int iterations = 0;
};

/// R interleaved repeats of a batch of ours then a batch of MPI's.
measured compare(const std::function<void()> &ours, const std::function<void()> &theirs,
                 const options &opt, size_t bytes)
{
    // Warm-up: plans, endpoints, MPI's connections and caches.
    const int warm = bytes <= (size_t(1) << 20) ? 3 : 1;
    for (int i = 0; i < warm; ++i) {
        ours();
        theirs();
    }
    int iterations = opt.iterations;
    if (iterations <= 0) {
        const double t = batch(theirs, 1);
        iterations     = int(std::clamp(opt.batch_ms * 1e-3 / std::max(t, 1e-9), 2.0, 2000.0));
        // every rank must run the same count: take rank 0's
        MPI_Bcast(&iterations, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    std::vector<double> o, m, r;
    for (int i = 0; i < opt.repeat; ++i) {
        o.push_back(batch(ours, iterations));
        m.push_back(batch(theirs, iterations));
        r.push_back(o.back() / m.back());
    }
    measured out;
    out.ours       = median(o);
    out.mpi        = median(m);
    out.ratio      = median(r);
    out.ratio_min  = *std::min_element(r.begin(), r.end());
    out.ratio_max  = *std::max_element(r.begin(), r.end());
    out.iterations = iterations;
    return out;
}

struct bench {
    coll::communicator &comm;
    const options &opt;
    int rank, size;
    bool last_ok_ = true;  ///< the last size's check
    std::string last_algorithm_;  ///< what the last size ran (ours)

    void run(const std::string &op)
    {
        const double p = size;
        double factor  = 1;
        if (op == "allreduce")
            factor = 2 * (p - 1) / p;
        else if (op == "allgather" || op == "alltoall" || op == "reduce_scatter")
            factor = (p - 1) / p;
        else if (op == "gather" || op == "scatter")
            factor = (p - 1) / p;
        else if (is_v_op(op))
            factor = (p - 1) / p;  // nominal: as if every block were of the size
        const bool blocks = op == "allgather" || op == "alltoall" || op == "reduce_scatter" ||
                            op == "gather" || op == "scatter" || is_v_op(op);
        size_t max = opt.max_size;
        if (blocks && opt.max_total > 0)
            max = std::min(max, opt.max_total / size_t(size));
        if (rank == 0) {
            std::printf("# coll_bench %s, %d ranks, ours: %s%s; time per call in us (max over "
                        "ranks, median of %d interleaved repeats), busbw in GB/s, ratio = ours_us "
                        "/ mpi_us per repeat: median, min, max (< 1: ours faster)\n",
                        op.c_str(), size, coll::name_of(opt.algo),
                        opt.persistent ? " persistent" : "", opt.repeat);
            std::printf("%12s %12s %12s %12s %12s %7s %6s %7s %7s %6s %s\n", "bytes", "ours_us",
                        "mpi_us", "ours_busbw", "mpi_busbw", "ratio", "check", "r_min", "r_max",
                        "iters", "algorithm");
        }
        double latency_ours = 0, latency_mpi = 0;
        if (op == "barrier") {
            coll::call_options how;
            how.algo         = opt.algo;
            const measured t = compare([&] { comm.barrier(how); },
                                       [] { MPI_Barrier(MPI_COMM_WORLD); }, opt, 0);
            row(0, t, 0, true, coll::name_of(comm.ibarrier(how).algorithm()));
            comm.barrier(how);
            return;
        }
        std::vector<size_t> ladder = opt.sizes;
        if (ladder.empty()) {
            for (size_t bytes = 8; bytes <= max;
                 bytes        = bytes == max ? bytes + 1 : std::min(bytes * opt.step, max)) {
                ladder.push_back(bytes);
            }
        }
        for (size_t bytes : ladder) {
            const measured t   = is_v_op(op) ? v_point(op, bytes) : size_point(op, bytes);
            const double moved = blocks ? double(bytes) * p : double(bytes);
            if (bytes == 8) {
                latency_ours = t.ours;
                latency_mpi  = t.mpi;
            }
            row(bytes, t, moved * factor, last_ok_, last_algorithm_);
        }
        if (rank == 0 && latency_ours > 0) {
            std::printf("# latency (8 B) %s: ours %.2f us, mpi %.2f us\n", op.c_str(),
                        latency_ours * 1e6, latency_mpi * 1e6);
        }
    }

    void row(size_t bytes, const measured &t, double busbytes, bool ok, const std::string &algo)
    {
        if (rank != 0)
            return;
        std::printf("%12zu %12.2f %12.2f %12.3f %12.3f %7.3f %6s %7.3f %7.3f %6d %s\n", bytes,
                    t.ours * 1e6, t.mpi * 1e6, busbytes / t.ours / 1e9, busbytes / t.mpi / 1e9,
                    t.ratio, ok ? "ok" : "WRONG", t.ratio_min, t.ratio_max, t.iterations,
                    algo.c_str());
        std::fflush(stdout);
    }

    /// The v-variants: rank r's block of @p bytes nominal size holds v_count(r, j) elements
    /// (0, n/2 or n: uneven, with zeros), the blocks one element apart (gaps).  Ours and MPI's
    /// run once each into buffers prefilled alike, and must agree element for element (gaps
    /// included) on every rank: the check.
    measured v_point(const std::string &op, size_t bytes)
    {
        const size_t n = bytes / sizeof(float);
        const int p    = size;
        // Elements rank a sends rank b (alltoallv), or rank a's block (the others: b unused).
        auto v_count = [n, p, &op](int a, int b) {
            const int k = op == "alltoallv" ? (a + 2 * b) % 3 : a % 3;
            (void)p;
            return n * size_t(k) / 2;
        };
        struct side {
            std::vector<size_t> counts, displs;
            std::vector<int> mpi_counts, mpi_displs;
            size_t extent = 0;
        };
        auto layout = [&](auto count_of, size_t gap) {
            side s;
            for (int i = 0; i < p; ++i) {
                s.counts.push_back(count_of(i));
                s.displs.push_back(s.extent + gap);
                s.extent = s.displs.back() + s.counts.back();
                s.mpi_counts.push_back(int(s.counts.back()));
                s.mpi_displs.push_back(int(s.displs.back()));
            }
            return s;
        };
        const int root = 0;
        side in, out;  // this rank's receive and send layouts
        if (op == "alltoallv") {
            in  = layout([&](int i) { return v_count(i, rank); }, 1);
            out = layout([&](int j) { return v_count(rank, j); }, 2);
        } else if (op == "reduce_scatterv") {
            in = out = layout([&](int i) { return v_count(i, 0); }, 0);
        } else {  // allgatherv, gatherv, scatterv: the blocks of every rank
            in = out = layout([&](int i) { return v_count(i, 0); }, 1);
        }
        const size_t mine = v_count(rank, 0);
        std::vector<float> send(std::max(out.extent, mine) + 1), recv, theirs_recv;
        for (size_t i = 0; i < send.size(); ++i)
            send[i] = float((rank + 1) * int(i % 7 + 1));
        const size_t recv_size = op == "reduce_scatterv" || op == "scatterv" ? mine : in.extent;
        recv.assign(recv_size + 1, -1.0f);
        theirs_recv = recv;
        coll::call_options how;
        how.algo = opt.algo;
        std::function<coll::request(float *)> ours_into;
        std::function<void(float *)> theirs_into;
#ifdef UCP_CPP_PERSISTENT_COLLECTIVES
        std::optional<coll::persistent> plan;
#else
        std::optional<int> plan;
#endif
        if (op == "allgatherv") {
            ours_into = [&](float *to) {
                return comm.iallgatherv(send.data(), mine, to, in.counts, in.displs, how);
            };
            theirs_into = [&](float *to) {
                MPI_Allgatherv(send.data(), int(mine), MPI_FLOAT, to, in.mpi_counts.data(),
                               in.mpi_displs.data(), MPI_FLOAT, MPI_COMM_WORLD);
            };
            PERSISTENT(
                comm.allgatherv_init(send.data(), mine, recv.data(), in.counts, in.displs, how));
        } else if (op == "alltoallv") {
            ours_into = [&](float *to) {
                return comm.ialltoallv(send.data(), out.counts, out.displs, to, in.counts,
                                       in.displs, how);
            };
            theirs_into = [&](float *to) {
                MPI_Alltoallv(send.data(), out.mpi_counts.data(), out.mpi_displs.data(), MPI_FLOAT,
                              to, in.mpi_counts.data(), in.mpi_displs.data(), MPI_FLOAT,
                              MPI_COMM_WORLD);
            };
            PERSISTENT(comm.alltoallv_init(send.data(), out.counts, out.displs, recv.data(),
                                           in.counts, in.displs, how));
        } else if (op == "gatherv") {
            ours_into = [&](float *to) {
                return comm.igatherv(send.data(), mine, to, in.counts, in.displs, root, how);
            };
            theirs_into = [&](float *to) {
                MPI_Gatherv(send.data(), int(mine), MPI_FLOAT, to, in.mpi_counts.data(),
                            in.mpi_displs.data(), MPI_FLOAT, root, MPI_COMM_WORLD);
            };
            PERSISTENT(
                comm.gatherv_init(send.data(), mine, recv.data(), in.counts, in.displs, root, how));
        } else if (op == "scatterv") {
            ours_into = [&](float *to) {
                return comm.iscatterv(send.data(), out.counts, out.displs, to, mine, root, how);
            };
            theirs_into = [&](float *to) {
                MPI_Scatterv(send.data(), out.mpi_counts.data(), out.mpi_displs.data(), MPI_FLOAT,
                             to, int(mine), MPI_FLOAT, root, MPI_COMM_WORLD);
            };
            PERSISTENT(comm.scatterv_init(send.data(), out.counts, out.displs, recv.data(), mine,
                                          root, how));
        } else {  // reduce_scatterv
            ours_into = [&](float *to) {
                return comm.ireduce_scatter(send.data(), to, in.counts, coll::sum, how);
            };
            theirs_into = [&](float *to) {
                MPI_Reduce_scatter(send.data(), to, in.mpi_counts.data(), MPI_FLOAT, MPI_SUM,
                                   MPI_COMM_WORLD);
            };
            PERSISTENT(
                comm.reduce_scatter_init(send.data(), recv.data(), in.counts, coll::sum, how));
        }
        // Once, checked against MPI's result.
        {
#ifdef UCP_CPP_PERSISTENT_COLLECTIVES
            coll::request first = plan ? plan->start() : ours_into(recv.data());
#else
            coll::request first = ours_into(recv.data());
#endif
            first.wait();
            last_algorithm_ = coll::name_of(first.algorithm());
            theirs_into(theirs_recv.data());
        }
        const bool significant = !((op == "gatherv") && rank != root);
        int local_ok = !significant || recv == theirs_recv ? 1 : 0, all_ok = 0;
        MPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        last_ok_                   = all_ok != 0;
        std::function<void()> ours = [&] { ours_into(recv.data()).wait(); };
#ifdef UCP_CPP_PERSISTENT_COLLECTIVES
        if (plan)
            ours = [&] { plan->start().wait(); };
#endif
        return compare(ours, [&] { theirs_into(theirs_recv.data()); }, opt, bytes);
    }

    measured size_point(const std::string &op, size_t bytes)
    {
        const size_t n       = bytes / sizeof(float);  // elements per rank (per block where blocks)
        const size_t P       = size_t(size);
        const bool wide_send = op == "alltoall" || op == "reduce_scatter" || op == "scatter";
        const bool wide_recv = op == "alltoall" || op == "allgather" || op == "gather";
        std::vector<float> send(wide_send ? n * P : n, float(rank + 1));
        std::vector<float> recv(wide_recv ? n * P : n);
        coll::call_options how;
        how.algo       = opt.algo;
        const int root = 0;
        std::function<void()> ours, theirs;
#ifdef UCP_CPP_PERSISTENT_COLLECTIVES
        std::optional<coll::persistent> plan;
#else
        std::optional<int> plan;  // a ucp_cpp without persistent collectives
#endif
        if (op == "allreduce") {
            ours   = [&] { comm.allreduce(send.data(), recv.data(), n, coll::sum, how); };
            theirs = [&] {
                MPI_Allreduce(send.data(), recv.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            };
            PERSISTENT(comm.allreduce_init(send.data(), recv.data(), n, coll::sum, how));
        } else if (op == "reduce") {
            ours   = [&] { comm.reduce(send.data(), recv.data(), n, coll::sum, root, how); };
            theirs = [&] {
                MPI_Reduce(send.data(), recv.data(), int(n), MPI_FLOAT, MPI_SUM, root,
                           MPI_COMM_WORLD);
            };
            PERSISTENT(comm.reduce_init(send.data(), recv.data(), n, coll::sum, root, how));
        } else if (op == "allgather") {
            ours   = [&] { comm.allgather(send.data(), recv.data(), n, how); };
            theirs = [&] {
                MPI_Allgather(send.data(), int(n), MPI_FLOAT, recv.data(), int(n), MPI_FLOAT,
                              MPI_COMM_WORLD);
            };
            PERSISTENT(comm.allgather_init(send.data(), recv.data(), n, how));
        } else if (op == "gather") {
            ours   = [&] { comm.gather(send.data(), recv.data(), n, root, how); };
            theirs = [&] {
                MPI_Gather(send.data(), int(n), MPI_FLOAT, recv.data(), int(n), MPI_FLOAT, root,
                           MPI_COMM_WORLD);
            };
            PERSISTENT(comm.gather_init(send.data(), recv.data(), n, root, how));
        } else if (op == "scatter") {
            ours   = [&] { comm.scatter(send.data(), recv.data(), n, root, how); };
            theirs = [&] {
                MPI_Scatter(send.data(), int(n), MPI_FLOAT, recv.data(), int(n), MPI_FLOAT, root,
                            MPI_COMM_WORLD);
            };
            PERSISTENT(comm.scatter_init(send.data(), recv.data(), n, root, how));
        } else if (op == "alltoall") {
            ours   = [&] { comm.alltoall(send.data(), recv.data(), n, how); };
            theirs = [&] {
                MPI_Alltoall(send.data(), int(n), MPI_FLOAT, recv.data(), int(n), MPI_FLOAT,
                             MPI_COMM_WORLD);
            };
            PERSISTENT(comm.alltoall_init(send.data(), recv.data(), n, how));
        } else if (op == "reduce_scatter") {
            ours   = [&] { comm.reduce_scatter(send.data(), recv.data(), n, coll::sum, how); };
            theirs = [&] {
                MPI_Reduce_scatter_block(send.data(), recv.data(), int(n), MPI_FLOAT, MPI_SUM,
                                         MPI_COMM_WORLD);
            };
            PERSISTENT(comm.reduce_scatter_init(send.data(), recv.data(), n, coll::sum, how));
        } else {  // bcast: root's send buffer to everybody's
            ours   = [&] { comm.bcast(send.data(), n, root, how); };
            theirs = [&] { MPI_Bcast(send.data(), int(n), MPI_FLOAT, root, MPI_COMM_WORLD); };
            PERSISTENT(comm.bcast_init(send.data(), n, root, how));
        }
#ifdef UCP_CPP_PERSISTENT_COLLECTIVES
        if (plan)
            ours = [&] { plan->start().wait(); };
#endif
        // Once, checked: which algorithm ran, and whether the result is right.
        {
            coll::request first;
#ifdef UCP_CPP_PERSISTENT_COLLECTIVES
            if (plan) {
                first = plan->start();
            } else
#endif
                if (op == "allreduce") {
                first = comm.iallreduce(send.data(), recv.data(), n, coll::sum, how);
            } else if (op == "reduce") {
                first = comm.ireduce(send.data(), recv.data(), n, coll::sum, root, how);
            } else if (op == "allgather") {
                first = comm.iallgather(send.data(), recv.data(), n, how);
            } else if (op == "gather") {
                first = comm.igather(send.data(), recv.data(), n, root, how);
            } else if (op == "scatter") {
                first = comm.iscatter(send.data(), recv.data(), n, root, how);
            } else if (op == "alltoall") {
                first = comm.ialltoall(send.data(), recv.data(), n, how);
            } else if (op == "reduce_scatter") {
                first = comm.ireduce_scatter(send.data(), recv.data(), n, coll::sum, how);
            } else {
                first = comm.ibcast(send.data(), n, root, how);
            }
            first.wait();
            last_algorithm_ = coll::name_of(first.algorithm());
        }
        const float all = float(size * (size + 1) / 2);
        bool ok         = true;
        if (n > 0) {
            if (op == "allreduce" || op == "reduce_scatter" || (op == "reduce" && rank == root))
                ok = recv[n - 1] == all && recv[0] == all;
            if (op == "allgather" || op == "alltoall" || (op == "gather" && rank == root))
                ok = recv[recv.size() - 1] == float(size) && recv[0] == 1.0f;
            if (op == "scatter")
                ok = recv[n - 1] == 1.0f;
            if (op == "bcast")
                ok = send[n - 1] == 1.0f;
        }
        int all_ok = 0, local_ok = ok ? 1 : 0;
        MPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        last_ok_ = all_ok != 0;
        return compare(ours, theirs, opt, bytes);
    }
};

}  // namespace

const char usage[] =
    "usage: mpirun -np P [MPI options] coll_bench [--op NAME[,NAME...]|all] [--max-size 64M]\n"
    "       [--sizes 8,3K,1M] [--step 4] [--max-total 0] [--iterations N] [--batch-ms 4]\n"
    "       [--repeat R] [--algorithm NAME] [--no-peer-errors] [--persistent] [--help]\n"
    "  ucp_cpp::coll against the MPI library's collectives, interleaved, same ranks.\n"
    "  --op        barrier bcast reduce allreduce allgather reduce_scatter alltoall\n"
    "              gather scatter, or all (default allreduce); allgatherv alltoallv\n"
    "              gatherv scatterv reduce_scatterv (uneven counts, gaps; checked\n"
    "              against MPI's results)\n"
    "  --max-size  largest size; sizes 8 B, then x --step, then the maximum\n"
    "  --sizes     these sizes instead, in this order (K/M/G suffixes)\n"
    "  --max-total largest per-rank buffer of the block collectives (0: none)\n"
    "  --iterations calls per batch (default: about --batch-ms of MPI's time)\n"
    "  --repeat    interleaved repeats (median, min, max of the ratios)\n"
    "  --algorithm ours (default automatic); --persistent: through coll::persistent\n"
    "  --no-peer-errors  endpoints without peer error handling, as MPI's (UCX's shared\n"
    "              memory needs it, or UCX_MM_ERROR_HANDLING=y)\n"
    "Output: docs/collectives.md.\n";

static std::vector<size_t> parse_sizes(const std::string &list)
{
    std::vector<size_t> sizes;
    size_t start = 0;
    while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        sizes.push_back(parse_size(list.substr(start, comma - start).c_str()));
        start = comma + 1;
    }
    return sizes;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::fputs(usage, stdout);
            return 0;
        }
    }
    MPI_Init(&argc, &argv);
    options opt;
    for (int i = 1; i < argc; ++i) {
        std::string key      = argv[i];
        const bool has_value = i + 1 < argc;
        if (key == "--no-peer-errors") {
            opt.peer_errors = false;
        } else if (key == "--persistent") {
            opt.persistent = true;
        } else if (!has_value) {
            std::fprintf(stderr, "coll_bench: %s needs a value\n", key.c_str());
            return 2;
        } else if (key == "--op") {
            opt.ops = parse_ops(argv[++i]);
        } else if (key == "--max-size") {
            opt.max_size = parse_size(argv[++i]);
        } else if (key == "--sizes") {
            opt.sizes = parse_sizes(argv[++i]);
        } else if (key == "--max-total") {
            opt.max_total = parse_size(argv[++i]);
        } else if (key == "--step") {
            opt.step = std::max<size_t>(2, size_t(std::atoi(argv[++i])));
        } else if (key == "--iterations") {
            opt.iterations = std::atoi(argv[++i]);
        } else if (key == "--batch-ms") {
            opt.batch_ms = std::atof(argv[++i]);
        } else if (key == "--algorithm") {
            opt.algo = parse_algorithm(argv[++i]);
        } else if (key == "--repeat") {
            opt.repeat = std::max(1, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "coll_bench: unknown option %s\n", key.c_str());
            return 2;
        }
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
    MPI_Allgather(mine.data(), int(mine.size()), MPI_BYTE, all.data(), int(mine.size()), MPI_BYTE,
                  MPI_COMM_WORLD);
    std::vector<ucp_cpp::worker_address> table(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
        const uint8_t *entry = all.data() + size_t(r) * mine.size();
        int n                = 0;
        std::memcpy(&n, entry, sizeof(int));
        table[size_t(r)].bytes.assign(entry + sizeof(int), entry + sizeof(int) + n);
    }
    coll::communicator_params params;
    params.peer_error_handling = opt.peer_errors;
    auto comm                  = coll::communicator::from_addresses(worker, rank, table, params);

    for (const std::string &op : opt.ops) {
        bench b{comm, opt, rank, size};
        b.run(op);
    }
    comm = coll::communicator();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
