// gdr_soak: a long run of mixed operations with every payload checked end to end.
// docs/test-suites.md#soak-testssoak gives the options, the CI bounds and
// the last results.
//
// What runs, in batches of --window operations (one per slot, so no two operations of a batch
// touch the same bytes and each result can be checked exactly):
//  * UCT over the transport under test (GDR_TEST_TL / GDR_TEST_DEV, as tests/uct): two
//    interfaces in this process joined by --eps endpoint pairs, both directions: put and get
//    short/bcopy/zcopy, am short/short_iov/bcopy/zcopy, and every advertised 64-bit atomic;
//  * UCP tag messages (ucp_cpp) between two workers, eager and rendezvous sizes;
//  * every --coll-every operations, a ucp_cpp collective round (allreduce and alltoall) with
//    --ranks processes forked at start (rank 0 is this process).
// Every payload is derived from (seed, operation index); the destination is compared byte for
// byte (RMA, tag) or by a 64-bit hash (AM, whose receiver cannot tell which operation sent it),
// and 8 guard bytes after it must be untouched. Atomics are checked against a model of the
// remote words. Every UCT completion must fire exactly once, every UCP request must finish.
//
// Exit status: 0 all checked, 1 a corruption or failure (the operation is named, with the
// command line that replays it), 2 bad usage, 77 no device offering the transport (skip).
//
// GDR_SOAK_INJECT_CORRUPTION=N flips one byte of the destination of the first put, get or tag
// operation at index >= N that moves data, after it completed and before it is checked: the
// test that sets it asserts that the soak fails naming that operation (a check that cannot fail
// proves nothing).
#include "uct_ops.h"

#include "../common/loopback_port.hpp"

#include <ucp_cpp/coll/coll.hpp>
#include <ucp_cpp/plugin.hpp>
#include <ucp_cpp/ucp_cpp.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cinttypes>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

/// Set by SIGINT/SIGTERM: the soak loop ends at the next batch (main() installs the handlers).
volatile sig_atomic_t g_stop_requested = 0;

namespace {

namespace coll = ucp_cpp::coll;
using uctest::Entity;
using uctest::Op;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------------------ options

struct Options {
    uint64_t ops        = 100000;  ///< stop after this many operations ...
    double seconds      = 0;  ///< ... or after this long (0: no bound), whichever comes first
    uint64_t seed       = 0;  ///< 0: a fresh one (printed, so the run can be replayed)
    size_t max_size     = 4u << 20;  ///< largest payload
    double size_bias    = 5.0;  ///< exponent of the log-uniform draw (1: plain log-uniform)
    unsigned eps        = 4;  ///< UCT endpoint pairs (each used in both directions)
    unsigned window     = 8;  ///< operations in flight per batch
    uint64_t coll_every = 2000;  ///< operations between collective rounds (0: none)
    int ranks           = 4;  ///< collective ranks (processes, this one included)
    size_t rndv_thresh  = 16384;  ///< UCX_RNDV_THRESH set for UCP: tag sizes below are eager
    uint64_t inject     = 0;  ///< GDR_SOAK_INJECT_CORRUPTION (0: none)
    std::string argv0;
};

[[noreturn]] void usage(const char *argv0, const std::string &why)
{
    std::fprintf(stderr,
                 "gdr_soak: %s\n"
                 "usage: %s [--ops N] [--seconds S | --hours H] [--seed X] [--max-size BYTES]\n"
                 "          [--size-bias B] [--eps N] [--window N] [--coll-every N] [--ranks N]\n",
                 why.c_str(), argv0);
    std::exit(2);
}

/// Parses an unsigned integer with an optional k/m/g suffix (powers of 1024 for sizes, 1000
/// for counts: the caller says which); refuses anything else by name. Integer arithmetic
/// throughout: a 64-bit seed must replay exactly.
uint64_t parse_number(const char *argv0, const std::string &name, const char *text,
                      uint64_t unit_base)
{
    if (!std::isdigit(static_cast<unsigned char>(text[0]))) {
        usage(argv0, name + ": not a non-negative integer: '" + text + "'");
    }
    char *end            = nullptr;
    errno                = 0;
    unsigned long long v = std::strtoull(text, &end, 10);
    std::string suffix(end);
    for (char &c : suffix) {
        c = char(std::tolower(static_cast<unsigned char>(c)));
    }
    const std::map<std::string, uint64_t> units = {{"", 1},
                                                   {"k", unit_base},
                                                   {"m", unit_base * unit_base},
                                                   {"g", unit_base * unit_base * unit_base}};
    auto unit                                   = units.find(suffix);
    if (errno != 0 || unit == units.end() || v > UINT64_MAX / unit->second) {
        usage(argv0, name + ": bad value '" + text + "'");
    }
    return uint64_t(v) * unit->second;
}

/// Parses a real number in [lo, hi], the whole text; refuses anything else by name.
double parse_real(const char *argv0, const std::string &name, const char *text, double lo,
                  double hi)
{
    char *end = nullptr;
    errno     = 0;
    double v  = std::strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !(v >= lo && v <= hi)) {
        usage(argv0, name + ": not a number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         "]: '" + text + "'");
    }
    return v;
}

Options parse(int argc, char **argv)
{
    Options o;
    o.argv0        = argv[0];
    bool ops_given = false, hours_given = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc) {
            usage(argv[0], a.rfind("--", 0) == 0 ? a + " needs a value" : "unknown argument " + a);
        }
        const char *v = argv[++i];
        if (a == "--ops") {
            o.ops     = parse_number(argv[0], a, v, 1000);
            ops_given = true;
        } else if (a == "--seconds") {
            o.seconds = double(parse_number(argv[0], a, v, 1000));
        } else if (a == "--hours") {
            o.seconds   = parse_real(argv[0], a, v, 1.0 / 3600, 24 * 365) * 3600;
            hours_given = true;
        } else if (a == "--seed") {
            o.seed = parse_number(argv[0], a, v, 1000);
        } else if (a == "--max-size") {
            o.max_size = parse_number(argv[0], a, v, 1024);
        } else if (a == "--size-bias") {
            o.size_bias = parse_real(argv[0], a, v, 1, 16);
        } else if (a == "--eps") {
            o.eps = unsigned(std::min<uint64_t>(parse_number(argv[0], a, v, 1000), 65));
        } else if (a == "--window") {
            o.window = unsigned(std::min<uint64_t>(parse_number(argv[0], a, v, 1000), 65));
        } else if (a == "--coll-every") {
            o.coll_every = parse_number(argv[0], a, v, 1000);
        } else if (a == "--ranks") {
            o.ranks = int(std::min<uint64_t>(parse_number(argv[0], a, v, 1000), 17));
        } else {
            usage(argv[0], "unknown option " + a);
        }
    }
    if (hours_given && !ops_given) {
        o.ops = UINT64_MAX;  // long mode: bounded by time only; with --ops, by whichever comes first
    }
    if (o.ops == 0) {
        usage(argv[0], "--ops must be at least 1");
    }
    if (o.eps < 1 || o.eps > 64 || o.window < 1 || o.window > 64) {
        usage(argv[0], "--eps and --window must be in [1, 64]");
    }
    if (o.ranks < 2 || o.ranks > 16) {
        usage(argv[0], "--ranks must be in [2, 16]");
    }
    if (o.max_size < 8 || o.max_size > (64u << 20)) {
        usage(argv[0], "--max-size must be in [8, 64 MiB]");
    }
    if (o.seed == 0) {
        o.seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32) | 1;
    }
    if (const char *inj = std::getenv("GDR_SOAK_INJECT_CORRUPTION"); inj && *inj) {
        o.inject = parse_number(argv[0], "GDR_SOAK_INJECT_CORRUPTION", inj, 1000);
    }
    return o;
}

// ------------------------------------------------------------------------------ payloads

uint64_t mix64(uint64_t x)  // splitmix64's finaliser: cheap, and every input bit matters
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// The payload of operation `index`: word k is mix64(key + k), key derived from (seed, index).
struct Payload {
    uint64_t key;
    Payload(uint64_t seed, uint64_t index) : key(mix64(seed ^ mix64(index + 0x9e3779b97f4a7c15))) {}

    void fill(uint8_t *p, size_t n) const
    {
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            uint64_t w = mix64(key + i / 8);
            std::memcpy(p + i, &w, 8);
        }
        if (i < n) {
            uint64_t w = mix64(key + i / 8);
            std::memcpy(p + i, &w, n - i);
        }
    }
    /// Offset of the first byte of p[0, n) that differs from fill(), or n.
    size_t first_mismatch(const uint8_t *p, size_t n) const
    {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t w = mix64(key + i / 8);
            size_t len = std::min<size_t>(8, n - i);
            if (std::memcmp(p + i, &w, len) != 0) {
                for (size_t k = 0; k < len; ++k) {
                    if (p[i + k] != uint8_t(w >> (8 * k))) {
                        return i + k;
                    }
                }
            }
        }
        return n;
    }
    uint8_t byte(size_t i) const { return uint8_t(mix64(key + i / 8) >> (8 * (i % 8))); }
};

/// 64-bit hash of a message (AM payloads): word-wise, then the tail and the length.
uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0x84222325cbf29ce4ull ^ n;
    size_t i   = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = mix64(h ^ w) + i;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p + i, n - i);
    return mix64(h ^ tail ^ (uint64_t(n - i) << 56));
}

constexpr uint8_t kGuard     = 0xA5;
constexpr size_t kGuardBytes = 8;
constexpr uint8_t kStaleByte = 0x5A;  // what a get destination holds before the get

// ------------------------------------------------------------------------------ op mix

/// What an operation is: the UCT data operations are tests/uct's Op values (Kind(op)), the
/// other kinds follow them.
enum class Kind {
    Atomic = int(Op::AmZcopy) + 1,
    TagEager,
    TagRndv,
    Collective,  // counted, never drawn: a round comes every --coll-every operations
    Count
};

bool is_uct_data(Kind k)
{
    return int(k) <= int(Op::AmZcopy);
}
Op uct_op(Kind k)
{
    return Op(int(k));
}
bool is_tag(Kind k)
{
    return k == Kind::TagEager || k == Kind::TagRndv;
}

const char *kind_name(Kind k)
{
    static const char *const others[] = {"atomic64", "tag_eager", "tag_rndv", "collective"};
    return is_uct_data(k) ? uctest::op_info(uct_op(k)).name : others[int(k) - int(Kind::Atomic)];
}

/// Relative frequency of each kind in the mix, in Kind order (put_short ... am_zcopy, then
/// atomics, eager and rendezvous tags; collectives come by --coll-every instead).
constexpr std::array<unsigned, size_t(Kind::Count)> kWeights = {8, 8, 8, 4,  6, 8, 8,
                                                                4, 8, 6, 10, 6, 2, 0};

struct Stats {
    std::array<uint64_t, size_t(Kind::Count)> ops{};
    std::array<uint64_t, size_t(Kind::Count)> bytes{};
    uint64_t total_ops() const
    {
        uint64_t s = 0;
        for (auto v : ops) {
            s += v;
        }
        return s;
    }
    uint64_t total_bytes() const
    {
        uint64_t s = 0;
        for (auto v : bytes) {
            s += v;
        }
        return s;
    }
};

/// A failure of the soak: what went wrong, at which operation.
struct SoakFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ------------------------------------------------------------------------------ collectives

/// The vectors of a collective round: element j of rank r's contribution.
uint64_t coll_element(uint64_t seed, uint64_t round, int rank, size_t j)
{
    return mix64(seed ^ mix64(round * 131 + uint64_t(rank)) ^ (j * 0x9e3779b97f4a7c15ull));
}

/// One collective round on any rank: allreduce(sum) and alltoall of `count` uint64 per rank,
/// both checked; returns the number of wrong elements this rank saw.
uint64_t coll_round(const coll::communicator &world, uint64_t seed, uint64_t round, size_t count)
{
    const int rank = world.rank(), size = world.size();
    std::vector<uint64_t> mine(count), sum(count), send(count * size_t(size)),
        recv(count * size_t(size));
    for (size_t j = 0; j < count; ++j) {
        mine[j] = coll_element(seed, round, rank, j);
    }
    world.allreduce(mine.data(), sum.data(), count, coll::sum);
    for (size_t j = 0; j < send.size(); ++j) {  // block d goes to rank d
        send[j] = coll_element(seed, round + 1, rank, j);
    }
    world.alltoall(send.data(), recv.data(), count);
    uint64_t wrong = 0;
    for (size_t j = 0; j < count; ++j) {
        uint64_t expected = 0;
        for (int r = 0; r < size; ++r) {
            expected += coll_element(seed, round, r, j);  // wraps, as the sum does
        }
        wrong += sum[j] != expected;
    }
    for (int from = 0; from < size; ++from) {  // block `from` of recv: block `rank` of its send
        for (size_t j = 0; j < count; ++j) {
            wrong += recv[size_t(from) * count + j] !=
                     coll_element(seed, round + 1, from, size_t(rank) * count + j);
        }
    }
    return wrong;
}

/// What rank 0 broadcasts before each round: the round, the element count, or stop.
struct RoundControl {
    uint64_t round;
    uint64_t count;  // UINT64_MAX: leave
};

/// Bounded waits for the collective ranks: a lost rank must end the soak, not hang it.
coll::call_options coll_bound()
{
    coll::call_options o;
    o.timeout = std::chrono::seconds(600);
    return o;
}

/// Ranks 1..n-1: follow rank 0's rounds until it says stop; report every wrong element in the
/// error-count allreduce that closes each round (a rank that exited instead would hang rank 0).
int run_coll_rank(const coll::bootstrap_params &params, uint64_t seed)
{
    ucp_cpp::context_params features;
    features.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;  // sleep while rank 0 works
    auto worker       = ucp_cpp::worker::create(ucp_cpp::context::create(features));
    auto world        = coll::communicator::bootstrap(worker, params);
    for (;;) {
        RoundControl ctl{};
        world.bcast(reinterpret_cast<uint64_t *>(&ctl), 2, 0, coll_bound());
        if (ctl.count == UINT64_MAX) {
            world.barrier(coll_bound());
            return 0;
        }
        uint64_t wrong = coll_round(world, seed, ctl.round, size_t(ctl.count)), total = 0;
        world.allreduce(&wrong, &total, 1, coll::sum, coll_bound());
    }
}

// ------------------------------------------------------------------------------ the soak

/// One operation of a batch and what is needed to check it once the batch is flushed.
struct Slot {
    uint64_t index      = 0;
    Kind kind           = Kind::Atomic;
    bool from_a         = true;  // initiator: a (toward b) or b (toward a)
    unsigned ep         = 0;
    size_t size         = 0;
    ucs_status_t posted = UCS_OK;
    std::unique_ptr<uctest::Transfer> transfer;  // UCT data kinds: owns the completion
    uint8_t *check_at = nullptr;  // where the payload must land (null: nothing to compare)
    // atomics
    uct_atomic_op_t aop = UCT_ATOMIC_OP_ADD;
    bool fetch = false, cswap = false;
    uint64_t operand = 0, compare = 0, fetched = 0, expect_fetched = 0;
    uctest::Completion *atomic_comp = nullptr;
    std::unique_ptr<uctest::Completion> comp_storage;
    // tag
    std::optional<ucp_cpp::request> send_req, recv_req;

    std::string describe() const
    {
        char buf[160];
        std::snprintf(buf, sizeof(buf), "op %" PRIu64 " (%s %s ep %u, %zu B)", index,
                      kind_name(kind), from_a ? "a->b" : "b->a", ep, size);
        return buf;
    }
};

/// One side of the UCT pair: its iface, the memory ops read and write, and its atomic words.
struct Side {
    std::unique_ptr<Entity> entity;
    std::unique_ptr<uctest::RegisteredBuffer> mem;  // per slot: [local | remote target] regions
    std::unique_ptr<uctest::RegisteredBuffer> words;  // one atomic word per slot
    std::unique_ptr<uctest::AmSink> sink;
    std::vector<uint64_t> model;  // what each atomic word must hold
    // AMs this side expects to receive in the current batch, by hash of the whole message
    std::unordered_map<uint64_t, int> expected_am;
    uint64_t am_expected_count = 0, am_received = 0;
    std::vector<std::string> am_unexpected;
};

const uct_iface_attr_t &attr_of(const Side &s)
{
    return s.entity->attr();
}

class Soak {
public:
    explicit Soak(const Options &o)
        : o_(o), rng_(o.seed), stride_(round_up(o.max_size + kGuardBytes))
    {}

    /// Runs the soak as rank 0 of the collectives (children: ranks 1.., already forked).
    int run(uint16_t port, std::vector<pid_t> children);

private:
    static size_t round_up(size_t n) { return (n + 4095) & ~size_t(4095); }

    void setup_uct(const uctest::TlResource &res);
    void setup_ucp();
    void setup_coll(uint16_t port);
    void batch(uint64_t first, unsigned count);
    void prepare(Slot &s);
    void start(Slot &s);
    void finish_batch(unsigned count);
    void stop_children(bool orderly);
    void check(Slot &s);
    void check_ams();
    void coll_round_here();
    size_t draw_size(size_t lo, size_t hi);
    Kind draw_kind();
    void inject(Slot &s, uint8_t *p);

    Side &initiator(const Slot &s) { return s.from_a ? a_ : b_; }
    Side &target_of(const Slot &s) { return s.from_a ? b_ : a_; }
    uint8_t *local_region(Side &side, unsigned slot)
    {
        return side.mem->data() + 2 * slot * stride_;
    }
    uint8_t *remote_region(Side &side, unsigned slot)
    {
        return side.mem->data() + (2 * slot + 1) * stride_;
    }
    uct_rkey_t rkey_of(const Side &target) const { return key(&target == &a_ ? rkey_a_ : rkey_b_); }
    uct_rkey_t words_rkey_of(const Side &target) const
    {
        return key(&target == &a_ ? wkey_a_ : wkey_b_);
    }
    static uct_rkey_t key(const std::unique_ptr<uctest::RemoteKey> &k)
    {
        return k ? k->rkey() : UCT_INVALID_RKEY;  // AM-only transports: never dereferenced
    }
    void progress_until(const std::function<bool()> &done, const std::string &what);
    std::string replay() const;

    const Options &o_;
    std::mt19937_64 rng_;
    size_t stride_;
    Stats stats_;
    Side a_, b_;
    std::vector<uctest::EpPair> pairs_;
    std::unique_ptr<uctest::RemoteKey> rkey_a_, rkey_b_, wkey_a_, wkey_b_;
    std::vector<Kind> mix_;  // kinds available on this transport, repeated by weight
    std::vector<Slot> slots_;
    bool injected_ = false;
    // UCP
    std::shared_ptr<ucp_cpp::worker> wa_, wb_;
    std::shared_ptr<ucp_cpp::endpoint> ab_, ba_;
    uint64_t ucp_requests_ = 0, ucp_completed_ = 0;
    uint64_t uct_inprogress_ = 0, uct_callbacks_ = 0;
    // collectives
    std::shared_ptr<ucp_cpp::worker> wc_;
    std::optional<coll::communicator> world_;
    uint64_t rounds_ = 0;
    std::vector<pid_t> children_;
};

std::string Soak::replay() const
{
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "replay: gdr_soak --seed %" PRIu64 " --ops %" PRIu64
                  " --max-size %zu --size-bias %g --eps %u --window %u --coll-every %" PRIu64
                  " --ranks %d",
                  o_.seed, o_.ops, o_.max_size, o_.size_bias, o_.eps, o_.window, o_.coll_every,
                  o_.ranks);
    return buf;
}

void Soak::setup_uct(const uctest::TlResource &res)
{
    for (Side *s : {&a_, &b_}) {
        s->entity = std::make_unique<Entity>(res);
        s->mem    = std::make_unique<uctest::RegisteredBuffer>(s->entity->md(),
                                                               2 * o_.window * stride_, 4096);
        s->words  = std::make_unique<uctest::RegisteredBuffer>(s->entity->md(),
                                                               o_.window * sizeof(uint64_t), 4096);
        s->words->fill(0);
        s->model.assign(o_.window, 0);
    }
    for (unsigned i = 0; i < o_.eps; ++i) {
        pairs_.push_back(uctest::connect_pair(*a_.entity, *b_.entity));
    }
    // Remote keys where the md packs them; an md that packs none (tcp's, the host variant,
    // whose put_zcopy serves UCP's rendezvous only) takes RMA and atomics out of the mix.
    try {
        auto comp = res.component;
        rkey_a_   = std::make_unique<uctest::RemoteKey>(comp, a_.mem->registration().packed_rkey());
        rkey_b_   = std::make_unique<uctest::RemoteKey>(comp, b_.mem->registration().packed_rkey());
        wkey_a_ = std::make_unique<uctest::RemoteKey>(comp, a_.words->registration().packed_rkey());
        wkey_b_ = std::make_unique<uctest::RemoteKey>(comp, b_.words->registration().packed_rkey());
    } catch (const std::runtime_error &e) {
        std::printf("gdr_soak: no remote keys (%s): no RMA, no atomics\n", e.what());
        rkey_a_.reset();
        rkey_b_.reset();
        wkey_a_.reset();
        wkey_b_.reset();
    }
    for (Side *s : {&a_, &b_}) {
        s->sink             = std::make_unique<uctest::AmSink>(*s->entity);
        s->sink->on_message = [s](const uint8_t *data, size_t length) {
            ++s->am_received;
            auto it = s->expected_am.find(hash_bytes(data, length));
            if (it == s->expected_am.end() || it->second == 0) {
                s->am_unexpected.push_back(std::to_string(length) + " B");
            } else {
                --it->second;
            }
        };
    }
    // The mix: what the transport advertises, by weight; the rest is reported once.
    const auto &attr = a_.entity->attr();
    std::string missing;
    for (size_t k = 0; k < size_t(Kind::Count); ++k) {
        Kind kind    = Kind(k);
        bool offered = true;
        if (is_uct_data(kind)) {
            const Op op = uct_op(kind);
            offered     = a_.entity->has_flag(uctest::op_info(op).cap_flag) &&
                      uctest::op_max_length(attr, op) >= uctest::op_min_length(attr, op) &&
                      (uctest::is_am(op) || wkey_b_);
        } else if (kind == Kind::Atomic) {
            offered = (attr.cap.atomic64.op_flags | attr.cap.atomic64.fop_flags) != 0 && wkey_b_;
        }
        if (!offered) {
            missing += std::string(" ") + kind_name(kind);
            continue;
        }
        mix_.insert(mix_.end(), kWeights[k], kind);
    }
    std::printf("gdr_soak: %s on %s, %u endpoint pairs, window %u; not in the mix (not advertised "
                "or no keys):%s\n",
                res.tl_name.c_str(), res.dev_name.c_str(), o_.eps, o_.window,
                missing.empty() ? " (none)" : missing.c_str());
}

void Soak::setup_ucp()
{
    ucp_cpp::context_params features;
    features.features = UCP_FEATURE_TAG;
    auto ctx          = ucp_cpp::context::create(features);
    wa_               = ucp_cpp::worker::create(ctx);
    wb_               = ucp_cpp::worker::create(ctx);
    ab_               = ucp_cpp::endpoint::connect(wa_, wb_->address());
    ba_               = ucp_cpp::endpoint::connect(wb_, wa_->address());
}

void Soak::setup_coll(uint16_t port)
{
    ucp_cpp::context_params features;
    features.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    wc_               = ucp_cpp::worker::create(ucp_cpp::context::create(features));
    world_.emplace(
        coll::communicator::bootstrap(wc_, coll::bootstrap_params{0, o_.ranks, "127.0.0.1", port}));
}

size_t Soak::draw_size(size_t lo, size_t hi)
{
    // log-uniform over [lo, hi] with the exponent's draw raised to size_bias: most operations
    // small (the bytes, not the count, bound the rate under TCG), yet the largest sizes come
    // up (1/256 of draws are the range's ends exactly: 0 B, the op's limit, 4 MiB)
    hi = std::min(hi, o_.max_size);
    if (hi <= lo) {
        return lo;
    }
    uint64_t r = rng_();
    if ((r & 255) == 0) {
        return (r & 256) ? lo : hi;
    }
    double u    = std::pow(std::uniform_real_distribution<double>(0, 1)(rng_), o_.size_bias);
    double span = std::log(double(hi - lo) + 1);
    return std::min(hi, lo + size_t(std::exp(u * span)) - 1);
}

Kind Soak::draw_kind()
{
    return mix_[rng_() % mix_.size()];
}

void Soak::progress_until(const std::function<bool()> &done, const std::string &what)
{
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!done()) {
        a_.entity->progress();
        b_.entity->progress();
        if (wa_) {
            wa_->progress();
            wb_->progress();
        }
        if (Clock::now() > deadline) {
            throw SoakFailure("timed out (60 s) waiting for " + what);
        }
    }
}

void Soak::inject(Slot &s, uint8_t *p)
{
    if (o_.inject != 0 && !injected_ && s.index >= o_.inject && s.size > 0) {
        p[s.size / 2] ^= 0x01;
        injected_ = true;
        std::printf("gdr_soak: GDR_SOAK_INJECT_CORRUPTION: flipped byte %zu of %s\n", s.size / 2,
                    s.describe().c_str());
    }
}

void Soak::prepare(Slot &s)
{
    s.kind     = draw_kind();
    s.from_a   = (rng_() & 1) != 0;
    s.ep       = unsigned(rng_() % o_.eps);
    s.posted   = UCS_OK;
    s.check_at = nullptr;
    s.send_req.reset();
    s.recv_req.reset();
    const auto &attr = initiator(s).entity->attr();
    if (is_uct_data(s.kind)) {
        Op op  = uct_op(s.kind);
        s.size = draw_size(uctest::op_min_length(attr, op), uctest::op_max_length(attr, op));
    } else if (s.kind == Kind::TagEager) {
        s.size = draw_size(0, o_.rndv_thresh - 1);
    } else if (s.kind == Kind::TagRndv) {
        s.size = draw_size(o_.rndv_thresh, o_.max_size);
    } else {
        s.size = sizeof(uint64_t);
    }
}

void Soak::start(Slot &s)
{
    unsigned slot = unsigned(&s - slots_.data());
    Side &self    = initiator(s);
    Side &peer    = target_of(s);
    uct_ep_h ep   = s.from_a ? pairs_[s.ep].ab : pairs_[s.ep].ba;
    Payload payload(o_.seed, s.index);
    auto entities    = {a_.entity.get(), b_.entity.get()};
    uint8_t *local   = local_region(self, slot);
    uint8_t *remote  = remote_region(peer, slot);
    uint64_t raddr   = reinterpret_cast<uintptr_t>(remote);
    size_t local_off = size_t(local - self.mem->data());

    if (is_uct_data(s.kind)) {
        Op op = uct_op(s.kind);
        if (uctest::is_am(op)) {
            payload.fill(local, s.size);
            uctest::Bytes msg;
            if (uctest::am_carries_header(attr_of(self), op)) {
                uint64_t seq = s.index;  // the header Transfer sends, in host order
                msg.insert(msg.end(), reinterpret_cast<uint8_t *>(&seq),
                           reinterpret_cast<uint8_t *>(&seq) + sizeof(seq));
            }
            msg.insert(msg.end(), local, local + s.size);
            ++peer.expected_am[hash_bytes(msg.data(), msg.size())];
            ++peer.am_expected_count;
        } else if (uctest::is_get(op)) {
            payload.fill(remote, s.size);  // the peer's memory is the source
            std::memset(local, kStaleByte, s.size);
            std::memset(local + s.size, kGuard, kGuardBytes);
            s.check_at = local;
        } else {
            payload.fill(local, s.size);
            std::memset(remote, kStaleByte, s.size);
            std::memset(remote + s.size, kGuard, kGuardBytes);
            s.check_at = remote;
        }
        s.transfer = std::make_unique<uctest::Transfer>(*self.entity, ep);
        s.posted   = s.transfer->post_retry(op, *self.mem, local_off, s.size, raddr, rkey_of(peer),
                                            s.index, entities);
        if (UCS_STATUS_IS_ERR(s.posted)) {
            throw SoakFailure(s.describe() + ": post failed: " + uctest::status_name(s.posted));
        }
    } else if (s.kind == Kind::Atomic) {
        const auto &caps = attr_of(self).cap.atomic64;
        // the ops this transport offers, post (op_flags) and fetch (fop_flags); cswap is a fetch
        std::vector<std::pair<uct_atomic_op_t, bool>> offered;
        for (auto op : {UCT_ATOMIC_OP_ADD, UCT_ATOMIC_OP_AND, UCT_ATOMIC_OP_OR, UCT_ATOMIC_OP_XOR,
                        UCT_ATOMIC_OP_SWAP, UCT_ATOMIC_OP_CSWAP}) {
            if (op != UCT_ATOMIC_OP_SWAP && op != UCT_ATOMIC_OP_CSWAP &&
                (caps.op_flags & UCS_BIT(op))) {
                offered.emplace_back(op, false);
            }
            if (caps.fop_flags & UCS_BIT(op)) {
                offered.emplace_back(op, true);
            }
        }
        auto pick        = offered[rng_() % offered.size()];
        s.aop            = pick.first;
        s.fetch          = pick.second;
        s.cswap          = s.aop == UCT_ATOMIC_OP_CSWAP;
        s.operand        = mix64(s.index ^ o_.seed);
        uint64_t &model  = peer.model[slot];
        s.compare        = (rng_() & 1) ? model : ~model;  // half of the cswaps must not swap
        s.expect_fetched = model;
        switch (s.aop) {
        case UCT_ATOMIC_OP_ADD:
            model += s.operand;
            break;
        case UCT_ATOMIC_OP_AND:
            model &= s.operand;
            break;
        case UCT_ATOMIC_OP_OR:
            model |= s.operand;
            break;
        case UCT_ATOMIC_OP_XOR:
            model ^= s.operand;
            break;
        case UCT_ATOMIC_OP_SWAP:
            model = s.operand;
            break;
        case UCT_ATOMIC_OP_CSWAP:
            model = model == s.compare ? s.operand : model;
            break;
        default:
            break;
        }
        uint64_t waddr  = peer.words->address() + slot * sizeof(uint64_t);
        uct_rkey_t wkey = words_rkey_of(peer);
        s.comp_storage  = std::make_unique<uctest::Completion>();
        s.fetched       = ~s.expect_fetched;
        auto &comp      = *s.comp_storage;
        s.posted        = uctest::post_with_retry(
            [&] {
                ucs_status_t st;
                if (s.cswap) {
                    st = uct_ep_atomic_cswap64(ep, s.compare, s.operand, waddr, wkey, &s.fetched,
                                                      comp.arm());
                } else if (s.fetch) {
                    st = uct_ep_atomic64_fetch(ep, s.aop, s.operand, &s.fetched, waddr, wkey,
                                                      comp.arm());
                } else {
                    return uct_ep_atomic64_post(ep, s.aop, s.operand, waddr, wkey);
                }
                comp.posted(st);
                return st;
            },
            entities);
        if (UCS_STATUS_IS_ERR(s.posted)) {
            throw SoakFailure(s.describe() +
                              ": atomic post failed: " + uctest::status_name(s.posted));
        }
    } else if (is_tag(s.kind)) {
        payload.fill(local, s.size);
        std::memset(remote, kStaleByte, s.size);
        std::memset(remote + s.size, kGuard, kGuardBytes);
        s.check_at = remote;
        auto &rx   = s.from_a ? *wb_ : *wa_;
        auto &tx   = s.from_a ? *ab_ : *ba_;
        // receive posted first (expected path) for half the messages, after the send for the
        // other half (unexpected path: eager data parked, rendezvous RTS parked)
        bool recv_first = (rng_() & 1) != 0;
        if (recv_first) {
            s.recv_req.emplace(rx.tag_recv(remote, s.size, s.index));
        }
        s.send_req.emplace(tx.tag_send(local, s.size, s.index));
        if (!recv_first) {
            s.recv_req.emplace(rx.tag_recv(remote, s.size, s.index));
        }
        ucp_requests_ += 2;
    }
}

void Soak::check(Slot &s)
{
    auto fail = [&](const std::string &what) { throw SoakFailure(s.describe() + ": " + what); };
    uctest::Completion *comp = s.transfer ? &s.transfer->completion() : s.comp_storage.get();
    if (comp != nullptr) {
        // posted INPROGRESS: called back exactly once; completed at post: never called back
        int expected = s.posted == UCS_INPROGRESS ? 1 : 0;
        if (comp->callbacks() != expected || comp->outstanding() != 0) {
            fail("completion called back " + std::to_string(comp->callbacks()) +
                 " times (expected " + std::to_string(expected) + "), " +
                 std::to_string(comp->outstanding()) + " still outstanding");
        }
        if (comp->status() != UCS_OK) {
            fail("completed with " + uctest::status_name(comp->status()));
        }
        uct_inprogress_ += uint64_t(expected);
        uct_callbacks_ += uint64_t(comp->callbacks());
    }
    if (is_tag(s.kind)) {
        for (auto *req : {&*s.send_req, &*s.recv_req}) {
            if (req->status() != UCS_OK) {
                fail(std::string(req == &*s.send_req ? "send" : "receive") + " completed with " +
                     uctest::status_name(req->status()));
            }
        }
        if (s.recv_req->length() != s.size) {
            fail("received " + std::to_string(s.recv_req->length()) + " B");
        }
        ucp_completed_ += 2;
    }
    if (s.kind == Kind::Atomic && (s.fetch || s.cswap) && s.fetched != s.expect_fetched) {
        char buf[96];
        std::snprintf(buf, sizeof(buf), "fetched 0x%016" PRIx64 ", the model says 0x%016" PRIx64,
                      s.fetched, s.expect_fetched);
        fail(buf);
    }
    if (s.check_at != nullptr) {
        inject(s, s.check_at);
        Payload payload(o_.seed, s.index);
        size_t at = payload.first_mismatch(s.check_at, s.size);
        if (at != s.size) {
            char buf[128];
            std::snprintf(buf, sizeof(buf),
                          "CORRUPTION: byte %zu of the payload is 0x%02x, expected 0x%02x", at,
                          s.check_at[at], payload.byte(at));
            fail(buf);
        }
        for (size_t g = 0; g < kGuardBytes; ++g) {
            if (s.check_at[s.size + g] != kGuard) {
                fail("OVERRUN: guard byte " + std::to_string(g) + " after the payload changed");
            }
        }
    }
    stats_.ops[size_t(s.kind)] += 1;
    stats_.bytes[size_t(s.kind)] += s.size;
}

void Soak::finish_batch(unsigned count)
{
    for (Side *side : {&a_, &b_}) {
        ucs_status_t st = uctest::flush_and_wait(*side->entity, nullptr,
                                                 {a_.entity.get(), b_.entity.get()});
        if (st != UCS_OK) {
            throw SoakFailure("iface flush: " + uctest::status_name(st) + " (batch of op " +
                              std::to_string(slots_[0].index) + ")");
        }
    }
    auto all_done = [&] {
        for (unsigned i = 0; i < count; ++i) {
            Slot &s                  = slots_[i];
            uctest::Completion *comp = s.transfer ? &s.transfer->completion()
                                                  : s.comp_storage.get();
            if ((comp && !comp->done()) || (s.send_req && !s.send_req->done()) ||
                (s.recv_req && !s.recv_req->done())) {
                return false;
            }
        }
        return a_.am_received >= a_.am_expected_count && b_.am_received >= b_.am_expected_count;
    };
    progress_until(all_done, "the completions and active messages of the batch of op " +
                                 std::to_string(slots_[0].index));
    for (unsigned i = 0; i < count; ++i) {
        check(slots_[i]);
    }
    for (Side *side : {&a_, &b_}) {
        const char *name = side == &a_ ? "a" : "b";
        if (!side->am_unexpected.empty() || side->am_received != side->am_expected_count) {
            throw SoakFailure(std::string("CORRUPTION: side ") + name + " received " +
                              std::to_string(side->am_received) + " active messages of " +
                              std::to_string(side->am_expected_count) + " expected, " +
                              std::to_string(side->am_unexpected.size()) +
                              " matching no payload sent (first: " +
                              (side->am_unexpected.empty() ? "-" : side->am_unexpected[0]) +
                              ") in the batch of ops " + std::to_string(slots_[0].index) + ".." +
                              std::to_string(slots_[count - 1].index));
        }
        side->expected_am.clear();
        side->am_expected_count = side->am_received = 0;
        side->sink->messages.clear();  // checked through the hash; keep memory flat
        for (unsigned w = 0; w < o_.window; ++w) {
            uint64_t actual;
            std::memcpy(&actual, side->words->data() + w * sizeof(uint64_t), sizeof(actual));
            if (actual != side->model[w]) {
                char buf[160];
                std::snprintf(buf, sizeof(buf),
                              "CORRUPTION: atomic word %u of side %s is 0x%016" PRIx64
                              ", the model says 0x%016" PRIx64 " (batch of op %" PRIu64 ")",
                              w, name, actual, side->model[w], slots_[0].index);
                throw SoakFailure(buf);
            }
        }
    }
    for (unsigned i = 0; i < count; ++i) {
        slots_[i].transfer.reset();
        slots_[i].comp_storage.reset();
        slots_[i].send_req.reset();
        slots_[i].recv_req.reset();
    }
}

void Soak::batch(uint64_t first, unsigned count)
{
    for (unsigned i = 0; i < count; ++i) {
        slots_[i].index = first + i;
        prepare(slots_[i]);
        start(slots_[i]);
    }
    finish_batch(count);
}

void Soak::coll_round_here()
{
    RoundControl ctl{2 * rounds_, draw_size(1, o_.max_size / sizeof(uint64_t) / size_t(o_.ranks))};
    world_->bcast(reinterpret_cast<uint64_t *>(&ctl), 2, 0, coll_bound());
    uint64_t wrong = coll_round(*world_, o_.seed, ctl.round, size_t(ctl.count)), total = 0;
    world_->allreduce(&wrong, &total, 1, coll::sum, coll_bound());
    if (total != 0) {
        throw SoakFailure("CORRUPTION: collective round " + std::to_string(rounds_) + " (" +
                          std::to_string(ctl.count) +
                          " elements a rank): " + std::to_string(total) +
                          " wrong elements over all ranks (" + std::to_string(wrong) + " here)");
    }
    ++rounds_;
    stats_.ops[size_t(Kind::Collective)] += 2;  // the allreduce and the alltoall
    stats_.bytes[size_t(Kind::Collective)] += ctl.count * sizeof(uint64_t) * size_t(1 + o_.ranks);
}

void Soak::stop_children(bool orderly)
{
    if (orderly && world_) {
        RoundControl stop{0, UINT64_MAX};
        world_->bcast(reinterpret_cast<uint64_t *>(&stop), 2, 0, coll_bound());
        world_->barrier(coll_bound());
        // leave before the ranks' exit is seen: our endpoints to them close now, not on errors
        world_.reset();
        wc_.reset();
    }
    int failed = 0;
    for (pid_t pid : children_) {
        if (!orderly) {
            kill(pid, SIGKILL);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    children_.clear();
    if (orderly && failed != 0) {
        throw SoakFailure(std::to_string(failed) + " collective rank(s) failed");
    }
}

int Soak::run(uint16_t port, std::vector<pid_t> children)
{
    children_ = std::move(children);
    try {
        auto found = uctest::target_resource();
        if (!found.first) {
            stop_children(false);
            if (uctest::target().dev.empty()) {
                std::printf("gdr_soak: SKIP: %s\n", found.second.c_str());
                return 77;
            }
            std::fprintf(stderr, "gdr_soak: FAIL: %s\n", found.second.c_str());
            return 1;
        }
        if (!children_.empty()) {
            setup_coll(port);
        }
        setup_uct(*found.first);
        setup_ucp();
        slots_.resize(o_.window);

        auto t0 = Clock::now(), last_report = t0;
        auto elapsed  = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
        uint64_t next = 0, next_coll = o_.coll_every;
        while (next < o_.ops && !(o_.seconds > 0 && elapsed() >= o_.seconds) && !g_stop_requested) {
            unsigned count = unsigned(std::min<uint64_t>(o_.window, o_.ops - next));
            batch(next, count);
            next += count;
            if (o_.coll_every != 0 && next >= next_coll) {
                coll_round_here();
                next_coll += o_.coll_every;
            }
            if (Clock::now() - last_report > std::chrono::seconds(30)) {
                last_report = Clock::now();
                std::printf("gdr_soak: %" PRIu64 " ops, %.1f MiB, %.0f s\n", stats_.total_ops(),
                            double(stats_.total_bytes()) / (1 << 20), elapsed());
                std::fflush(stdout);
            }
        }
        double secs = elapsed();
        if (o_.inject != 0 && !injected_) {
            throw SoakFailure("GDR_SOAK_INJECT_CORRUPTION=" + std::to_string(o_.inject) +
                              ": no put, get or tag operation with data at or after it ran");
        }
        stop_children(true);
        // every UCP request finished (each was checked as it completed; nothing is left)
        if (ucp_completed_ != ucp_requests_) {
            throw SoakFailure("LEAK: " + std::to_string(ucp_requests_ - ucp_completed_) +
                              " UCP requests never completed");
        }
        if (uct_callbacks_ != uct_inprogress_) {
            throw SoakFailure("UCT completions: " + std::to_string(uct_callbacks_) +
                              " callbacks for " + std::to_string(uct_inprogress_) +
                              " operations in progress");
        }
        std::printf("gdr_soak: %-12s %12s %16s\n", "kind", "ops", "bytes");
        for (size_t k = 0; k < size_t(Kind::Count); ++k) {
            std::printf("gdr_soak: %-12s %12" PRIu64 " %16" PRIu64 "\n", kind_name(Kind(k)),
                        stats_.ops[k], stats_.bytes[k]);
        }
        std::printf("gdr_soak: PASS: %" PRIu64 " ops (%" PRIu64 " UCT/UCP + %" PRIu64
                    " collective rounds), %" PRIu64 " bytes, %.1f s, %.0f ops/s, seed %" PRIu64
                    "; 0 corrupted, %" PRIu64 " UCT completions each called back once, %" PRIu64
                    " UCP requests all completed\n",
                    stats_.total_ops(), next, rounds_, stats_.total_bytes(), secs,
                    double(stats_.total_ops()) / secs, o_.seed, uct_callbacks_, ucp_requests_);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gdr_soak: FAIL: %s\ngdr_soak: seed %" PRIu64 "; %s\n", e.what(),
                     o_.seed, replay().c_str());
        stop_children(false);
        return 1;
    }
}

/// The plugin registers its component from an ELF constructor, which must run before UCX's
/// first component query (tests/uct/main.cpp does the same for the suite).
void load_plugin()
{
    std::string path;
    if (const char *env = std::getenv("GDR_PLUGIN")) {
        path = env;  // set but empty: explicitly none
    } else if (uctest::target().tl.rfind("gdr", 0) == 0) {
#ifdef GDR_SOAK_DEFAULT_PLUGIN
        path = GDR_SOAK_DEFAULT_PLUGIN;
#endif
    }
    if (!path.empty()) {
        ucp_cpp::load_plugin(path);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    Options o = parse(argc, argv);
    // SIGINT/SIGTERM end a long run at the next batch with the final checks and the summary
    // (outstanding work drained, every request accounted for), instead of losing them
    struct sigaction stop{};
    stop.sa_handler = [](int) { g_stop_requested = 1; };
    sigaction(SIGINT, &stop, nullptr);
    sigaction(SIGTERM, &stop, nullptr);
    std::printf("gdr_soak: seed %" PRIu64 ", ops %" PRIu64 ", seconds %g, max size %zu\n", o.seed,
                o.ops, o.seconds, o.max_size);
    std::fflush(stdout);
    // UCP over the transport under test: as tests/uct (GDR_TEST_UCX_TLS overrides); the UD
    // auxiliary transport needs the DGID check off on rxe (docs/rxe-vm.md#pitfalls)
    if (!std::getenv("UCX_TLS")) {
        const char *tls = std::getenv("GDR_TEST_UCX_TLS");
        std::string v   = tls && *tls ? tls : uctest::target().tl + ",ud_verbs:aux";
        setenv("UCX_TLS", v.c_str(), 1);
    }
    setenv("UCX_UD_VERBS_ETH_DGID_CHECK", "n", 0);
    setenv("UCX_RNDV_THRESH", std::to_string(o.rndv_thresh).c_str(), 0);

    // Collective ranks first, before anything of UCX exists in this process (fork would copy
    // it); each dies with us (PDEATHSIG) so a failed soak leaves no rank waiting.
    // the kernel's pick: a pid-made port can be one another process listens on
    const uint16_t port = gdr_test::free_loopback_port();
    std::vector<pid_t> children;
    for (int r = 1; o.coll_every != 0 && r < o.ranks; ++r) {
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            try {
                load_plugin();
                _exit(run_coll_rank(coll::bootstrap_params{r, o.ranks, "127.0.0.1", port}, o.seed));
            } catch (const std::exception &e) {
                std::fprintf(stderr, "gdr_soak: collective rank %d: %s\n", r, e.what());
                _exit(1);
            }
        }
        children.push_back(pid);
    }
    try {
        load_plugin();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gdr_soak: FAIL: %s\n", e.what());
        return 1;
    }
    Soak soak(o);
    return soak.run(port, std::move(children));
}
