// gdr_perftest: point-to-point and collective benchmarks over ucp_cpp (docs/gdr_perftest.md).
// Declarations shared by the translation units of the tool.
#pragma once

#include <ucp_cpp/coll/coll.hpp>
#include <ucp_cpp/ucp_cpp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gdr_perftest {

inline constexpr const char *version = "0.1.0";

/// Exit codes (documented in docs/gdr_perftest.md).
enum exit_code : int {
    exit_ok     = 0,
    exit_error  = 1,
    exit_usage  = 2,
    exit_verify = 3
};

/// A usage error: printed with a hint to --help, exit code 2.
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

enum class test_family {
    p2p_lat,
    p2p_bw,
    coll
};

struct test_info {
    const char *name;
    test_family family;
    const char *what;  // one line for --help
};

const std::vector<test_info> &all_tests();
const test_info *find_test(const std::string &name);

enum class mem_kind {
    host,
    cuda
};
const char *name_of(mem_kind kind);

/// Whose collectives the coll tests time (--library): ucp_cpp::coll, NCCL, or both, each size
/// by one then the other, in the same run (ratios printed).
enum class coll_library {
    ucp,
    nccl,
    both
};

/// Deliberate faults, for the tests of the tool itself (hidden option --inject).
enum class injection {
    none,
    corrupt,
    short_message,
    kill
};

struct options {
    std::vector<std::string> tests{"tag_lat"};
    std::vector<size_t> sizes;  // empty: the test family's default
    bool sizes_given      = false;
    size_t iterations     = 0;  // 0: family default
    size_t warmup         = 0;
    bool iterations_given = false, warmup_given = false;
    size_t window     = 32;  // -O: outstanding operations of the bw tests
    bool bw_at_sender = false;  // --bw-timing sender: rank 0 times tag_bw/am_bw
    std::vector<mem_kind> memory{mem_kind::host};  // per rank (last one repeats)
    bool check = false;  // -c 1
    std::string tls;  // -x: UCX_TLS for this run (empty: environment)
    int nranks = 0;  // -N (0: not given)
    int port   = 0;  // -p (0: pick a free one / MASTER_PORT)
    std::string csv_path, json_path;
    std::string plugin;  // --plugin
    bool progress        = false;  // --progress
    std::string dtype    = "float";  // -d: collectives element type
    int root             = 0;  // -r: bcast/reduce root
    double timeout_s     = 60;  // --timeout: bound of every wait
    std::string err_mode = "auto";  // --err-mode peer|none|auto
    std::string wakeup   = "auto";  // --wakeup on|off|auto
    injection inject     = injection::none;
    int inject_rank      = 1;  // --inject kill:RANK
    bool quiet           = false;  // -q: no table on stdout
    coll_library library = coll_library::ucp;  // --library

    mem_kind memory_of(int rank) const
    {
        return memory.at(std::min(size_t(rank), memory.size() - 1));
    }
};

/// Parses argv (without side effects); throws usage_error.  Returns nullopt for --help/--version
/// (already printed).
std::optional<options> parse_options(int argc, char **argv);
/// "1K" -> 1024 (K/M/G = 2^10/2^20/2^30; optional trailing B); throws usage_error.
size_t parse_size(const std::string &text, const std::string &flag);
std::string size_text(size_t bytes);  // 1024 -> "1K" (for messages)

// ---------------------------------------------------------------- launcher

/// -N: runs argv N times as ranks of one job on this host; returns the exit code of the job.
int launch_local(const options &opt, int argc, char **argv);

// ---------------------------------------------------------------- buffers

/// Host or CUDA memory of one buffer; pattern fill / check / clear go through the host.
class buffer {
public:
    buffer(mem_kind kind, size_t length);
    ~buffer();
    buffer(const buffer &)            = delete;
    buffer &operator=(const buffer &) = delete;

    void *data() const { return ptr_; }
    std::byte *bytes() const { return static_cast<std::byte *>(ptr_); }
    size_t length() const { return length_; }
    mem_kind kind() const { return kind_; }
    ucs_memory_type_t ucs_type() const
    {
        return kind_ == mem_kind::cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    }

    void write(size_t offset, const void *src, size_t n);  // host -> buffer
    void read(size_t offset, void *dst, size_t n) const;  // buffer -> host
    void clear(size_t offset, size_t n);  // zero

private:
    mem_kind kind_;
    size_t length_;
    void *ptr_ = nullptr;
};

/// Byte k of the test pattern of a message of @p size (never 0, so a cleared buffer fails).
inline std::byte pattern_byte(size_t size, size_t k)
{
    uint32_t x = uint32_t(k * 2654435761u) ^ uint32_t(size * 40503u);
    return std::byte(uint8_t(x >> 13) | 1);
}
std::vector<std::byte> pattern(size_t size);
/// cuMemcpyAsync device to device of @p bytes, back to back on this rank's device: bytes copied
/// per second (each byte is read once and written once), the yardstick of -m cuda collectives.
double device_copy_GBps(size_t bytes);
/// Number of bytes of buf[offset, offset+size) that equal the pattern.
size_t pattern_matches(const buffer &buf, size_t offset, size_t size);

// ---------------------------------------------------------------- results

struct result_row {
    std::string test;
    std::string library;  // collectives: "ucp_cpp" or "nccl"; empty for p2p
    size_t size  = 0;  // bytes (collectives: nccl-tests' size)
    size_t count = 0;  // elements (collectives)
    std::string dtype;  // collectives
    size_t iters = 0, warmup = 0;
    int ranks = 0;
    std::string memory;
    std::optional<double> avg_us, p50_us, p90_us, p99_us;
    std::optional<double> bw_GBps, msg_rate;  // p2p bw
    std::optional<double> algbw_GBps, busbw_GBps;  // collectives
    uint64_t bytes_expected = 0, bytes_verified = 0;
    bool data_ok = true;
    bool ok() const { return data_ok && bytes_verified == bytes_expected; }
};

struct run_info {
    std::string tls;  // effective UCX_TLS ("" : UCX default)
    std::string tls_source;  // "-x", "environment", "UCX default"
    int ranks = 0;
    std::string launch;  // "local (-N)", "mpirun", "environment"
    std::string host;
    std::string nccl;  // --library nccl|both: "NCCL 2.22.3 (libnccl.so.2)"
};

/// Terminal table (rank 0), with a header per test.
class table_printer {
public:
    table_printer(const options &opt, const run_info &info) : opt_(opt), info_(info) {}
    void begin(const test_info &test, size_t iters, size_t warmup);
    void row(const test_info &test, const result_row &r);
    /// --library both: the ucp_cpp/NCCL line under a size's two rows
    void ratio(const result_row &ours, const result_row &nccl);

private:
    const options &opt_;
    const run_info &info_;
};

void write_csv(const std::string &path, const std::vector<result_row> &rows);
void write_json(const std::string &path, const options &opt, const run_info &info,
                const std::vector<result_row> &rows, bool passed);

/// Percentile (0..100) of sorted samples, nearest rank.
double percentile(const std::vector<double> &sorted, double p);

// ---------------------------------------------------------------- running

struct session;

/// NCCL for --library nccl|both (nccl.cpp): libnccl loaded with dlopen ($GDR_PERFTEST_NCCL, else
/// libnccl.so.2), one communicator of the job's ranks on each rank's device, one stream.
/// Lifetime: made after the bootstrap communicator (rank 0's NCCL id travels over it), destroyed
/// before it. One thread.
class nccl_library {
public:
    /// Throws with the reason (library not found or too old, CUDA unusable, init failed).
    explicit nccl_library(const session &s);
    ~nccl_library();
    nccl_library(const nccl_library &)            = delete;
    nccl_library &operator=(const nccl_library &) = delete;

    /// "NCCL 2.22.3 (path)"
    std::string description() const;
    /// One collective of gdr_perftest's (coll.cpp's names, counts and buffers; @p element_size
    /// bytes an element of -d @p dtype), complete on return; a failure or --timeout aborts the
    /// communicator and throws.
    void call(const std::string &op, const void *send, void *recv, size_t count,
              size_t element_size, const std::string &dtype, int root);
    /// libnccl's name or path as loaded
    static std::string soname();

private:
    void wait(const char *what);
    struct state;
    std::unique_ptr<state> st_;
};

/// Everything a rank needs while running the tests.
struct session {
    explicit session(const options &o) : opt(o) {}
    const options &opt;
    int rank = 0, size = 1;
    std::shared_ptr<ucp_cpp::context> ctx;
    std::shared_ptr<ucp_cpp::worker> worker;
    ucp_cpp::coll::communicator world;
    std::unique_ptr<nccl_library> nccl;  // --library nccl|both
    std::chrono::nanoseconds timeout;  // one operation
    std::chrono::nanoseconds sync_timeout;  // a rank waiting for others' whole measurement
    bool show_progress = false;

    /// Bytes of every rank (index = rank), exchanged through the communicator.
    std::vector<std::vector<uint8_t>> exchange(const std::vector<uint8_t> &mine) const;
    void sync() const;  // barrier bounded by sync_timeout
    double max_over_ranks(double value) const;
    uint64_t sum_over_ranks(uint64_t value) const;
    bool all(bool value) const;
    void progress_line(const std::string &test, size_t size, size_t index, size_t total) const;
    void progress_done() const;
};

/// Runs one p2p test over @p sizes (ranks 0 and 1; others wait); rows are valid on rank 0.
std::vector<result_row> run_p2p(session &s, const test_info &test, const std::vector<size_t> &sizes,
                                size_t iters, size_t warmup, table_printer *table);
/// Runs one collective over @p sizes on all ranks; rows are valid on rank 0.
std::vector<result_row> run_coll(session &s, const test_info &test,
                                 const std::vector<size_t> &sizes, size_t iters, size_t warmup,
                                 table_printer *table);

}  // namespace gdr_perftest
