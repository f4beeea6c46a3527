// gdr_perftest: ucx_perftest / nccl-tests style benchmarks over ucp_cpp (docs/gdr_perftest.md).
//
// Launch: `-N n` (or nothing: 2 ranks) forks/execs n ranks on this host; under mpirun (OMPI_*) or
// with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set, this process is one rank.  The ranks meet
// through ucp_cpp::coll's TCP bootstrap; the communicator carries all bookkeeping (address and key
// exchange, result aggregation), the tests use their own endpoints.
#include "perftest.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

namespace gdr_perftest {

namespace coll = ucp_cpp::coll;

std::vector<std::vector<uint8_t>> session::exchange(const std::vector<uint8_t> &mine) const
{
    coll::call_options bounded;
    bounded.timeout = sync_timeout;
    uint64_t length = mine.size();
    std::vector<uint64_t> lengths(static_cast<size_t>(size));
    world.allgather(&length, lengths.data(), 1, bounded);
    const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
    std::vector<std::vector<uint8_t>> all(static_cast<size_t>(size));
    if (longest == 0)
        return all;
    std::vector<uint8_t> padded(mine),
        table(static_cast<size_t>(longest) * static_cast<size_t>(size));
    padded.resize(size_t(longest));
    world.allgather(padded.data(), table.data(), size_t(longest), bounded);
    for (int r = 0; r < size; ++r) {
        const uint8_t *entry = table.data() + size_t(r) * longest;
        all[size_t(r)].assign(entry, entry + lengths[size_t(r)]);
    }
    return all;
}

void session::sync() const
{
    coll::call_options bounded;
    bounded.timeout = sync_timeout;
    world.barrier(bounded);
}

double session::max_over_ranks(double value) const
{
    coll::call_options bounded;
    bounded.timeout = sync_timeout;
    world.allreduce(&value, 1, coll::max, bounded);
    return value;
}

uint64_t session::sum_over_ranks(uint64_t value) const
{
    coll::call_options bounded;
    bounded.timeout = sync_timeout;
    world.allreduce(&value, 1, coll::sum, bounded);
    return value;
}

bool session::all(bool value) const
{
    coll::call_options bounded;
    bounded.timeout = sync_timeout;
    int32_t v       = value ? 1 : 0;
    world.allreduce(&v, 1, coll::min, bounded);
    return v == 1;
}

void session::progress_line(const std::string &test, size_t bytes, size_t index, size_t total) const
{
    if (!show_progress)
        return;
    std::fprintf(stderr, "%s[gdr_perftest] %s: size %zu (%zu/%zu)%s", isatty(2) ? "\r\033[K" : "",
                 test.c_str(), bytes, index + 1, total, isatty(2) ? "" : "\n");
    std::fflush(stderr);
}

void session::progress_done() const
{
    if (show_progress && isatty(2)) {
        std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
    }
}

namespace {

const char *env(const char *name)
{
    const char *value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
}

/// Shared-memory transports of UCX 1.13 cannot detect dead peers and refuse the peer error mode.
bool shared_memory_only(const std::string &tls)
{
    if (tls.empty() || tls[0] == '^')
        return false;
    static const std::set<std::string> shm = {"self", "sm",  "shm",  "posix",
                                              "sysv", "cma", "knem", "xpmem"};
    std::stringstream in(tls);
    std::string item;
    while (std::getline(in, item, ',')) {
        item = item.substr(0, item.find(':'));
        if (shm.count(item) == 0)
            return false;
    }
    return true;
}

int run_rank(const options &opt_in)
{
    options opt = opt_in;
    run_info info;
    coll::bootstrap_params params;
    try {
        // One reading of the launchers for the library and the tool: srun (PMIx, PMI2, plain),
        // mpirun, RANK/WORLD_SIZE (-N sets those); docs/launching.md.
        params = coll::bootstrap_params::from_environment();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gdr_perftest: error: %s\n", e.what());
        return exit_error;
    }
    info.launch = params.launcher;
    if (params.launcher == "environment" && env("GDR_PERFTEST_LAUNCH") != nullptr)
        info.launch = env("GDR_PERFTEST_LAUNCH");
    else if (params.launcher == "pmix" || params.launcher == "pmi2" || params.launcher == "slurm")
        info.launch += env("SLURM_PROCID") != nullptr ? " (srun)" : " (mpirun)";
    if (opt.port > 0)
        params.root_port = uint16_t(opt.port);
    params.timeout = std::chrono::milliseconds(long(opt.timeout_s * 1000));
    const int rank = params.rank;

    try {
        if (params.size < 1 || rank < 0 || rank >= params.size) {
            throw usage_error("rank " + std::to_string(rank) + " of " +
                              std::to_string(params.size) + ": bad RANK/WORLD_SIZE");
        }
        for (const auto &name : opt.tests) {
            if (find_test(name)->family != test_family::coll && params.size < 2) {
                throw usage_error(name + " needs 2 ranks (this job has " +
                                  std::to_string(params.size) + ")");
            }
        }
        if (opt.memory_of(rank) == mem_kind::cuda)
            buffer probe(mem_kind::cuda, 1);  // fail early, clearly
        if (!opt.plugin.empty())
            ucp_cpp::load_plugin(opt.plugin);

        info.tls = !opt.tls.empty() ? opt.tls : (env("UCX_TLS") != nullptr ? env("UCX_TLS") : "");
        info.tls_source = !opt.tls.empty()
                              ? "-x"
                              : (env("UCX_TLS") != nullptr ? "environment" : "UCX default");
        info.ranks      = params.size;
        char host[256]  = "?";
        ::gethostname(host, sizeof(host) - 1);
        info.host = host;
        if (opt.err_mode == "auto")
            opt.err_mode = shared_memory_only(info.tls) ? "none" : "peer";

        ucp_cpp::context_params cp;
        cp.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AM;
        // Ranks that outnumber the CPUs must not poll: a waiting rank would take the CPU from
        // the one it waits for.  Not by default otherwise: UCP then selects only transports
        // with event support, which can change what a benchmark measures.
        if (opt.wakeup == "on" ||
            (opt.wakeup == "auto" && unsigned(params.size) > std::thread::hardware_concurrency()))
            cp.features |= UCP_FEATURE_WAKEUP;
        cp.name = "gdr_perftest";
        if (!opt.tls.empty())
            cp.config["TLS"] = opt.tls;
        session s(opt);
        s.rank          = rank;
        s.size          = params.size;
        s.ctx           = ucp_cpp::context::create(cp);
        s.worker        = ucp_cpp::worker::create(s.ctx);
        s.timeout       = std::chrono::nanoseconds(long(opt.timeout_s * 1e9));
        s.sync_timeout  = s.timeout * 20;
        s.show_progress = rank == 0 && (opt.progress || isatty(2));
        coll::communicator_params comm_params;
        comm_params.peer_error_handling = opt.err_mode == "peer";
        s.world = coll::communicator::bootstrap(s.worker, params, comm_params);
        if (opt.library != coll_library::ucp) {
            s.nccl    = std::make_unique<nccl_library>(s);
            info.nccl = s.nccl->description();
        }

        table_printer printer(opt, info);
        std::vector<result_row> rows;
        for (const auto &name : opt.tests) {
            const test_info &test     = *find_test(name);
            const bool is_coll        = test.family == test_family::coll;
            std::vector<size_t> sizes = opt.sizes;
            if (!opt.sizes_given) {
                if (is_coll) {
                    for (size_t b = 8; b <= (size_t(1) << 20); b *= 2)
                        sizes.push_back(b);
                } else {
                    sizes = {8};
                }
            }
            const size_t iters   = opt.iterations_given ? opt.iterations : (is_coll ? 20 : 1000);
            const size_t warmup  = opt.warmup_given ? opt.warmup : (is_coll ? 5 : 100);
            table_printer *table = rank == 0 ? &printer : nullptr;
            auto got             = is_coll ? run_coll(s, test, sizes, iters, warmup, table)
                                           : run_p2p(s, test, sizes, iters, warmup, table);
            rows.insert(rows.end(), got.begin(), got.end());
            if (rank == 0 && !opt.quiet)
                std::printf("\n");
        }
        bool passed = true;
        for (const auto &r : rows)
            passed = passed && r.ok();
        if (rank == 0) {
            if (!opt.csv_path.empty())
                write_csv(opt.csv_path, rows);
            if (!opt.json_path.empty())
                write_json(opt.json_path, opt, info, rows, passed);
            for (const auto &r : rows) {
                if (r.ok())
                    continue;
                std::fprintf(stderr,
                             "gdr_perftest: FAILED verification: %s size %zu: bytes verified %llu, "
                             "expected %llu%s\n",
                             r.test.c_str(), r.size, (unsigned long long)r.bytes_verified,
                             (unsigned long long)r.bytes_expected, r.data_ok ? "" : ", wrong data");
            }
        }
        s.sync();  // everybody done before the endpoints close
        s.nccl.reset();
        s.world = coll::communicator();
        std::fflush(nullptr);
        return passed ? exit_ok : exit_verify;
    } catch (const usage_error &e) {
        if (rank == 0)
            std::fprintf(stderr, "gdr_perftest: %s (see --help)\n", e.what());
        std::fflush(nullptr);
        std::_Exit(exit_usage);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gdr_perftest: rank %d: error: %s\n", rank, e.what());
        std::fflush(nullptr);
        std::_Exit(exit_error);  // no orderly teardown with a broken peer (it could block)
    }
}

}  // namespace
}  // namespace gdr_perftest

int main(int argc, char **argv)
{
    using namespace gdr_perftest;
    std::optional<options> opt;
    try {
        opt = parse_options(argc, argv);
    } catch (const usage_error &e) {
        if (std::getenv("GDR_PERFTEST_LAUNCH") == nullptr) {
            std::fprintf(stderr, "gdr_perftest: %s (see --help)\n", e.what());
        }
        return exit_usage;
    }
    if (!opt)
        return exit_ok;
    const bool launched = std::getenv("GDR_PERFTEST_LAUNCH") != nullptr;
    const bool external = !coll::bootstrap_params::launchers_in_environment().empty();
    try {
        if (!launched && (opt->nranks > 0 || !external))
            return launch_local(*opt, argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gdr_perftest: error: %s\n", e.what());
        return exit_error;
    }
    return run_rank(*opt);
}
