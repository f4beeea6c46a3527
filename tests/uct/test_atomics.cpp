// Every advertised atomic (32/64-bit, post and fetch, cswap) against a remote word, checking both
// the remote result and the fetched old value; gdr_rc's 32-bit atomics (compare-and-swap loops on
// the 64-bit word that contains them) on both halves of a word, under contention, mixed with
// 64-bit ones, misaligned, and at the edge of a registration.
#include "pair_fixture.h"

#include <algorithm>
#include <cinttypes>
#include <memory>

namespace uctest {
namespace {

struct AtomicOpName {
    uct_atomic_op_t op;
    const char *name;
};
const AtomicOpName kAtomicOps[] = {
    {UCT_ATOMIC_OP_ADD, "add"}, {UCT_ATOMIC_OP_AND, "and"},   {UCT_ATOMIC_OP_OR, "or"},
    {UCT_ATOMIC_OP_XOR, "xor"}, {UCT_ATOMIC_OP_SWAP, "swap"}, {UCT_ATOMIC_OP_CSWAP, "cswap"},
};

template <typename T> T apply(uct_atomic_op_t op, T old, T value)
{
    switch (op) {
    case UCT_ATOMIC_OP_ADD:
        return static_cast<T>(old + value);
    case UCT_ATOMIC_OP_AND:
        return old & value;
    case UCT_ATOMIC_OP_OR:
        return old | value;
    case UCT_ATOMIC_OP_XOR:
        return old ^ value;
    case UCT_ATOMIC_OP_SWAP:
        return value;
    default:
        return old;
    }
}

class Atomics : public PairTest {
protected:
    template <typename T> void run_width(uint64_t op_flags, uint64_t fop_flags);
    template <typename T> void run_at(size_t offset, uint64_t op_flags, uint64_t fop_flags);
    /// Skips when the width has no advertised atomics, else runs and reports them.
    template <typename T> void run_advertised(uint64_t op_flags, uint64_t fop_flags);
    int tested_ = 0;
};

ucs_status_t post_atomic(uct_ep_h ep, uct_atomic_op_t op, uint32_t value, uint64_t addr,
                         uct_rkey_t rkey)
{
    return uct_ep_atomic32_post(ep, op, value, addr, rkey);
}
ucs_status_t post_atomic(uct_ep_h ep, uct_atomic_op_t op, uint64_t value, uint64_t addr,
                         uct_rkey_t rkey)
{
    return uct_ep_atomic64_post(ep, op, value, addr, rkey);
}
ucs_status_t fetch_atomic(uct_ep_h ep, uct_atomic_op_t op, uint32_t value, uint32_t *result,
                          uint64_t addr, uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_ep_atomic32_fetch(ep, op, value, result, addr, rkey, comp);
}
ucs_status_t fetch_atomic(uct_ep_h ep, uct_atomic_op_t op, uint64_t value, uint64_t *result,
                          uint64_t addr, uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_ep_atomic64_fetch(ep, op, value, result, addr, rkey, comp);
}
ucs_status_t cswap_atomic(uct_ep_h ep, uint32_t compare, uint32_t swap, uint64_t addr,
                          uct_rkey_t rkey, uint32_t *result, uct_completion_t *comp)
{
    return uct_ep_atomic_cswap32(ep, compare, swap, addr, rkey, result, comp);
}
ucs_status_t cswap_atomic(uct_ep_h ep, uint64_t compare, uint64_t swap, uint64_t addr,
                          uct_rkey_t rkey, uint64_t *result, uct_completion_t *comp)
{
    return uct_ep_atomic_cswap64(ep, compare, swap, addr, rkey, result, comp);
}

template <typename T> void Atomics::run_width(uint64_t op_flags, uint64_t fop_flags)
{
    // a 32-bit op on either half of a 64-bit word (both offsets naturally aligned, not at the
    // start), the other half a sentinel that no op may change
    for (size_t offset = 8; offset < 16; offset += sizeof(T)) {
        SCOPED_TRACE("offset " + std::to_string(offset));
        run_at<T>(offset, op_flags, fop_flags);
    }
}

template <typename T> void Atomics::run_at(size_t offset, uint64_t op_flags, uint64_t fop_flags)
{
    const char *width = sizeof(T) == 4 ? "32" : "64";
    RegisteredBuffer word(b_->md(), 64, 4096);
    RemoteKey rkey(a_->md().component(), word.registration().packed_rkey());
    T *remote           = reinterpret_cast<T *>(word.data() + offset);
    const uint64_t addr = word.address() + offset;
    const T initial     = static_cast<T>(0x5a5a5a5a0f0f0f0fULL),
            operand     = static_cast<T>(0x0123456789abcdefULL);
    uint32_t *neighbour = reinterpret_cast<uint32_t *>(
        word.data() + (sizeof(T) == 4 ? offset ^ 4 : offset + sizeof(T)));
    const uint32_t fence = 0xc3c3c3c3u;
    auto entities        = {a_.get(), b_.get()};
    *neighbour           = fence;  // the other half of a 32-bit op's word (64-bit: the next word)

    for (const auto &o : kAtomicOps) {
        const bool post = o.op != UCT_ATOMIC_OP_CSWAP && (op_flags & UCS_BIT(o.op));
        if (post) {
            SCOPED_TRACE(std::string("atomic") + width + "_post " + o.name);
            *remote = initial;
            ASSERT_EQ(UCS_OK,
                      post_with_retry(
                          [&] { return post_atomic(pair_.ab, o.op, operand, addr, rkey.rkey()); },
                          entities));
            ASSERT_EQ(UCS_OK, flush(pair_.ab));
            EXPECT_EQ(apply<T>(o.op, initial, operand), *remote);
            EXPECT_EQ(fence, *neighbour) << "the neighbouring 4 bytes changed";
            ++tested_;
        }
        if (fop_flags & UCS_BIT(o.op)) {
            SCOPED_TRACE(std::string("atomic") + width + "_fetch " + o.name);
            *remote  = initial;
            T result = 0;
            Completion comp;
            ucs_status_t st = post_with_retry(
                [&] {
                    ucs_status_t s = o.op == UCT_ATOMIC_OP_CSWAP
                                         ? cswap_atomic(pair_.ab, initial, operand, addr,
                                                        rkey.rkey(), &result, comp.arm())
                                         : fetch_atomic(pair_.ab, o.op, operand, &result, addr,
                                                        rkey.rkey(), comp.arm());
                    comp.posted(s);
                    return s;
                },
                entities);
            ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
            ASSERT_TRUE(wait([&] { return comp.done(); }, "atomic fetch completion"));
            ASSERT_EQ(UCS_OK, comp.status());
            EXPECT_EQ(initial, result) << "fetched value";
            const T expected = o.op == UCT_ATOMIC_OP_CSWAP ? operand
                                                           : apply<T>(o.op, initial, operand);
            EXPECT_EQ(expected, *remote) << "remote value";
            if (o.op == UCT_ATOMIC_OP_CSWAP) {  // a failing compare must leave the word alone
                Completion miss;
                T before = *remote, fetched = 0;
                st = post_with_retry(
                    [&] {
                        ucs_status_t s = cswap_atomic(pair_.ab, static_cast<T>(~before), initial,
                                                      addr, rkey.rkey(), &fetched, miss.arm());
                        miss.posted(s);
                        return s;
                    },
                    entities);
                ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
                ASSERT_TRUE(wait([&] { return miss.done(); }, "cswap (miss) completion"));
                EXPECT_EQ(before, fetched);
                EXPECT_EQ(before, *remote) << "cswap with a wrong compare value modified memory";
            }
            EXPECT_EQ(fence, *neighbour) << "the neighbouring 4 bytes changed";
            ++tested_;
        }
    }
}

template <typename T> void Atomics::run_advertised(uint64_t op_flags, uint64_t fop_flags)
{
    const int width = 8 * sizeof(T);
    if ((op_flags | fop_flags) == 0) {
        GTEST_SKIP() << res_.tl_name << " advertises no " << width << "-bit atomics";
    }
    run_width<T>(op_flags, fop_flags);
    std::printf("[   INFO   ] %d %d-bit atomic ops tested (op_flags 0x%" PRIx64
                " fop_flags 0x%" PRIx64 ")\n",
                tested_, width, op_flags, fop_flags);
}

TEST_F(Atomics, Every64BitOp)
{
    run_advertised<uint64_t>(a_->attr().cap.atomic64.op_flags, a_->attr().cap.atomic64.fop_flags);
}

TEST_F(Atomics, Every32BitOp)
{
    if (res_.tl_name == "gdr_rc") {  // gdr_rc does at 32 bits whatever it does at 64
        EXPECT_EQ(a_->attr().cap.atomic64.op_flags, a_->attr().cap.atomic32.op_flags);
        EXPECT_EQ(a_->attr().cap.atomic64.fop_flags, a_->attr().cap.atomic32.fop_flags);
    }
    run_advertised<uint32_t>(a_->attr().cap.atomic32.op_flags, a_->attr().cap.atomic32.fop_flags);
}

// Initiators (interfaces of their own, one QP each) connected to one target, and a word in the
// target's registered memory with each initiator's key to it: what the contended tests share.
struct InitiatorsOfOneWord {
    InitiatorsOfOneWord(const TlResource &res, Entity &target, int count)
        : word(target.md(), 64, 4096),
          remote(reinterpret_cast<uint64_t *>(word.data() + 8)),
          addr(word.address() + 8)
    {
        for (int i = 0; i < count; ++i) {
            from.push_back(std::make_unique<Entity>(res));
            pairs.push_back(connect_pair(*from.back(), target));
            rkeys.push_back(std::make_unique<RemoteKey>(from.back()->md().component(),
                                                        word.registration().packed_rkey()));
        }
    }
    RegisteredBuffer word;
    uint64_t *remote;  // naturally aligned, not at the start
    uint64_t addr;
    std::vector<std::unique_ptr<Entity>> from;
    std::vector<EpPair> pairs;
    std::vector<std::unique_ptr<RemoteKey>> rkeys;
};

// and/or/xor/swap are compare-and-swap loops on gdr_rc (fetch, compute, cswap, retry on a miss):
// correct alone, they are atomic only if a loop that lost the race retries. Three initiators
// (interfaces of their own, one QP each) set and then clear disjoint bits of one word, every op
// posted before any completes, so the loops interleave on the target; a lost update leaves a bit
// wrong. Transports that do these ops natively pass the same way.
TEST(AtomicsContended, CasLoopOpsFromThreeInitiatorsLoseNoUpdate)
{
    TlResource res;
    UCTEST_REQUIRE_TARGET(res);
    constexpr int kInitiators = 3, kBitsEach = 16;
    Entity target(res);
    InitiatorsOfOneWord w(res, target, kInitiators);
    auto &from            = w.from;
    auto &pairs           = w.pairs;
    auto &rkeys           = w.rkeys;
    uint64_t *remote      = w.remote;
    const uint64_t addr   = w.addr;
    const uint64_t needed = UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_AND);
    if ((from[0]->attr().cap.atomic64.op_flags & needed) != needed) {
        GTEST_SKIP() << res.tl_name << " does not advertise 64-bit atomic or/and";
    }
    std::initializer_list<Entity *> all = {from[0].get(), from[1].get(), from[2].get(), &target};
    auto bit = [](int initiator, int k) { return 1ull << (initiator * kBitsEach + k); };
    // post every op of a phase round-robin, then flush every initiator
    auto phase = [&](uct_atomic_op_t op, bool set) {
        for (int k = 0; k < kBitsEach; ++k) {
            for (int i = 0; i < kInitiators; ++i) {
                const uint64_t operand = set ? bit(i, k) : ~bit(i, k);
                ASSERT_EQ(UCS_OK, post_with_retry(
                                      [&] {
                                          return uct_ep_atomic64_post(pairs[i].ab, op, operand,
                                                                      addr, rkeys[i]->rkey());
                                      },
                                      all));
            }
        }
        for (int i = 0; i < kInitiators; ++i) {
            ASSERT_EQ(UCS_OK, flush_and_wait(*from[i], pairs[i].ab, all));
        }
    };
    const uint64_t every_bit = (1ull << (kInitiators * kBitsEach)) - 1;
    *remote                  = 0;
    phase(UCT_ATOMIC_OP_OR, true);
    EXPECT_EQ(every_bit, *remote) << "or from " << kInitiators << " initiators lost bits 0x"
                                  << std::hex << (every_bit & ~*remote);
    phase(UCT_ATOMIC_OP_AND, false);
    EXPECT_EQ(0u, *remote) << "and from " << kInitiators << " initiators left bits 0x" << std::hex
                           << *remote;
}

// gdr_rc's compare-and-swap loops do not read the word first: their first CAS compares with a
// guess (what the endpoint's own CASes will have left there, 0 for a word it has not changed),
// and a miss returns the word to go on from. Every way a guess can be wrong must still give each
// op the word it changed: a word that is not 0, the target's CPU writing it, another initiator
// changing it, the endpoint's own native fetch-add on it, and ops posted in bursts from two
// initiators, so that retries and fresh guesses interleave. Transports that do these ops
// natively pass the same way.
TEST(AtomicsContended, WrongGuessesStillFetchTheWordEachOpChanged)
{
    TlResource res;
    UCTEST_REQUIRE_TARGET(res);
    Entity target(res);
    InitiatorsOfOneWord w(res, target, 2);
    auto &from            = w.from;
    auto &pairs           = w.pairs;
    auto &rkeys           = w.rkeys;
    uint64_t *remote      = w.remote;
    const uint64_t addr   = w.addr;
    const uint64_t needed = UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) |
                            UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_XOR) |
                            UCS_BIT(UCT_ATOMIC_OP_SWAP);
    if ((from[0]->attr().cap.atomic64.fop_flags & needed) != needed) {
        GTEST_SKIP() << res.tl_name << " does not advertise every 64-bit fetching atomic";
    }
    std::initializer_list<Entity *> all = {from[0].get(), from[1].get(), &target};
    // posts one fetching op from initiator i, counted by comp; its old value lands in *result
    auto post = [&](int i, uct_atomic_op_t op, uint64_t operand, uint64_t *result,
                    Completion &comp) {
        ucs_status_t st = post_with_retry(
            [&] {
                ucs_status_t s = uct_ep_atomic64_fetch(pairs[i].ab, op, operand, result, addr,
                                                       rkeys[i]->rkey(), comp.arm());
                comp.posted(s);
                return s;
            },
            all);
        ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
    };
    auto fetch = [&](int i, uct_atomic_op_t op, uint64_t operand) {
        uint64_t result = 0;
        Completion comp;
        post(i, op, operand, &result, comp);
        EXPECT_TRUE(progress_until([&] { return comp.done(); }, all, "atomic fetch"));
        EXPECT_EQ(UCS_OK, comp.status());
        return result;
    };

    const uint64_t x = 0x5a5a5a5a0f0f0f0fULL, a = 0x0123456789abcdefULL;
    *remote = x;  // not the blind guess 0
    EXPECT_EQ(x, fetch(0, UCT_ATOMIC_OP_XOR, a));
    EXPECT_EQ(x ^ a, fetch(0, UCT_ATOMIC_OP_XOR, a));  // guessed right
    EXPECT_EQ(x, *remote);
    *remote = 77;  // the target's CPU
    EXPECT_EQ(77u, fetch(0, UCT_ATOMIC_OP_SWAP, a));
    EXPECT_EQ(a, fetch(1, UCT_ATOMIC_OP_XOR, x));  // another initiator
    EXPECT_EQ(a ^ x, fetch(0, UCT_ATOMIC_OP_OR, 0xff));
    EXPECT_EQ((a ^ x) | 0xff, fetch(0, UCT_ATOMIC_OP_ADD, 1));  // native: not in the guess
    EXPECT_EQ(((a ^ x) | 0xff) + 1, fetch(0, UCT_ATOMIC_OP_AND, ~0xf0ULL));
    const uint64_t before_burst = (((a ^ x) | 0xff) + 1) & ~0xf0ULL;
    ASSERT_EQ(before_burst, *remote);

    // bursts: every op of both initiators posted before any completes, round-robin
    constexpr int kEach = 48;
    std::vector<uint64_t> operand(2 * kEach), fetched(2 * kEach);
    uint64_t expected_end = before_burst;
    for (size_t k = 0; k < operand.size(); ++k) {
        operand[k] = (k + 1) * 0x9e3779b97f4a7c15ULL;  // distinct, not 0
        expected_end ^= operand[k];
    }
    Completion burst;
    for (int k = 0; k < kEach; ++k) {
        for (int i = 0; i < 2; ++i) {
            post(i, UCT_ATOMIC_OP_XOR, operand[2 * k + i], &fetched[2 * k + i], burst);
        }
    }
    ASSERT_TRUE(progress_until([&] { return burst.done(); }, all, "the bursts' fetches"));
    ASSERT_EQ(UCS_OK, burst.status());
    EXPECT_EQ(expected_end, *remote) << "a lost or repeated update";
    // linearizable: the ops, each from the word it fetched, chain from before_burst to the end
    std::vector<bool> used(operand.size());
    uint64_t value = before_burst;
    for (size_t step = 0; step < operand.size(); ++step) {
        size_t k = 0;
        while (k < operand.size() && (used[k] || fetched[k] != value)) {
            ++k;
        }
        ASSERT_LT(k, operand.size())
            << "after " << step << " ops no op fetched 0x" << std::hex << value;
        used[k] = true;
        value ^= operand[k];
    }
    EXPECT_EQ(expected_end, value);
}

// ---- 32-bit atomics on gdr_rc: compare-and-swap loops on the 64-bit word that contains them ----

// The address of the half of the 64-bit word at `word` that holds its high 32 bits
uint64_t high_half(uint64_t word)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return word + 4;
#else
    return word;
#endif
}

// Posts one 32-bit fetching op (cswap when op is UCT_ATOMIC_OP_CSWAP, compare = `compare`),
// counted by `comp`; its old value lands in *result.
void post_fetch32(uct_ep_h ep, uct_atomic_op_t op, uint32_t operand, uint32_t compare,
                  uint32_t *result, uint64_t addr, uct_rkey_t rkey, Completion &comp,
                  std::initializer_list<Entity *> entities)
{
    ucs_status_t st = post_with_retry(
        [&] {
            ucs_status_t s = op == UCT_ATOMIC_OP_CSWAP
                                 ? uct_ep_atomic_cswap32(ep, compare, operand, addr, rkey, result,
                                                         comp.arm())
                                 : uct_ep_atomic32_fetch(ep, op, operand, result, addr, rkey,
                                                         comp.arm());
            comp.posted(s);
            return s;
        },
        entities);
    ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
}

// `fetched - start` (mod 2^32) is 0, 1, ..., n-1 in some order: n fetch-adds of 1 from `start`
// each fetched a different value, none lost or repeated.
::testing::AssertionResult fetched_each_step_once(std::vector<uint32_t> fetched, uint32_t start)
{
    for (auto &v : fetched) {
        v -= start;
    }
    std::sort(fetched.begin(), fetched.end());
    for (size_t k = 0; k < fetched.size(); ++k) {
        if (fetched[k] != k) {
            return ::testing::AssertionFailure()
                   << "fetch-add " << k << " of " << fetched.size() << " fetched start+"
                   << fetched[k] << " (a lost or repeated step)";
        }
    }
    return ::testing::AssertionSuccess();
}

#define UCTEST_REQUIRE_FOP32(entity, ops)                                                   \
    do {                                                                                    \
        if (((entity).attr().cap.atomic32.fop_flags & (ops)) != (ops)) {                    \
            GTEST_SKIP() << (entity).resource().tl_name << " advertises no 32-bit atomics " \
                         << "(UCP emulates them over active messages)";                     \
        }                                                                                   \
    } while (0)

// Two initiators (one QP each) and a word of the target's, on a transport with 32-bit fetch-add
class Atomics32 : public ::testing::Test {
protected:
    void SetUp() override
    {
        UCTEST_REQUIRE_TARGET(res_);
        target_ = std::make_unique<Entity>(res_);
        w_      = std::make_unique<InitiatorsOfOneWord>(res_, *target_, 2);
        UCTEST_REQUIRE_FOP32(*w_->from[0], UCS_BIT(UCT_ATOMIC_OP_ADD));
    }
    TlResource res_;
    std::unique_ptr<Entity> target_;
    std::unique_ptr<InitiatorsOfOneWord> w_;
};

// Both halves of one word from two initiators (one QP each), every op in flight before any
// completes: each CAS of one half competes with those of the other half, and a half's CAS that
// wrote its half back stale, or let a carry through, would show. The low half wraps past
// 0xffffffff midway: a carry leaking into the high half changes its end value.
TEST_F(Atomics32, BothHalvesOfOneWordFromTwoInitiatorsEndExact)
{
    InitiatorsOfOneWord &w              = *w_;
    std::initializer_list<Entity *> all = {w.from[0].get(), w.from[1].get(), target_.get()};
    constexpr int kEach                 = 48;  // per initiator and half: 192 ops in flight
    const uint64_t half[2]              = {high_half(w.addr) ^ 4, high_half(w.addr)};  // low, high
    const uint32_t start[2]             = {0xffffffffu - kEach, 0x12345678u};
    uint32_t *mem[2];
    for (int h = 0; h < 2; ++h) {
        mem[h]  = reinterpret_cast<uint32_t *>(w.word.data() + 8 + (half[h] - w.addr));
        *mem[h] = start[h];
    }
    std::vector<uint32_t> fetched[2] = {std::vector<uint32_t>(2 * kEach),
                                        std::vector<uint32_t>(2 * kEach)};
    Completion comp;
    for (int k = 0; k < kEach; ++k) {
        for (int i = 0; i < 2; ++i) {
            for (int h = 0; h < 2; ++h) {
                post_fetch32(w.pairs[i].ab, UCT_ATOMIC_OP_ADD, 1, 0, &fetched[h][i * kEach + k],
                             half[h], w.rkeys[i]->rkey(), comp, all);
            }
        }
    }
    ASSERT_TRUE(progress_until([&] { return comp.done(); }, all, "the fetch-adds"));
    ASSERT_EQ(UCS_OK, comp.status());
    for (int h = 0; h < 2; ++h) {
        SCOPED_TRACE(h ? "high half" : "low half");
        EXPECT_EQ(static_cast<uint32_t>(start[h] + 2 * kEach), *mem[h]);
        EXPECT_TRUE(fetched_each_step_once(fetched[h], start[h]));
    }
}

// 32-bit ops on both halves mixed with 64-bit adds (verbs' own fetch-add) on the same word, from
// two initiators: every op linearizes with every other, whatever its width. The low half does
// not wrap, so the 64-bit adds' carries stay inside it and the end value is the plain sum.
TEST_F(Atomics32, MixedWith64BitAddsOnTheSameWord)
{
    InitiatorsOfOneWord &w              = *w_;
    std::initializer_list<Entity *> all = {w.from[0].get(), w.from[1].get(), target_.get()};
    if (!(w.from[1]->attr().cap.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_ADD))) {
        GTEST_SKIP() << res_.tl_name << " has no 64-bit fetch-add";
    }
    constexpr int kEach  = 48;
    const uint64_t high  = high_half(w.addr);
    const uint64_t low   = high ^ 4;
    const uint64_t start = 0x0000100000000010ULL;
    *w.remote            = start;
    std::vector<uint32_t> high_fetched(kEach), low_fetched(kEach);
    std::vector<uint64_t> word_fetched(kEach);
    Completion comp;
    for (int k = 0; k < kEach; ++k) {
        // initiator 0: +1 on the high half, +2 on the low half (32 bits); initiator 1: +1 and
        // +2^32 on the whole word (64 bits)
        post_fetch32(w.pairs[0].ab, UCT_ATOMIC_OP_ADD, 1, 0, &high_fetched[k], high,
                     w.rkeys[0]->rkey(), comp, all);
        post_fetch32(w.pairs[0].ab, UCT_ATOMIC_OP_ADD, 2, 0, &low_fetched[k], low,
                     w.rkeys[0]->rkey(), comp, all);
        ASSERT_EQ(UCS_OK, post_with_retry(
                              [&] {
                                  return uct_ep_atomic64_post(w.pairs[1].ab, UCT_ATOMIC_OP_ADD, 1,
                                                              w.addr, w.rkeys[1]->rkey());
                              },
                              all));
        ucs_status_t st = post_with_retry(
            [&] {
                ucs_status_t s = uct_ep_atomic64_fetch(w.pairs[1].ab, UCT_ATOMIC_OP_ADD, 1ull << 32,
                                                       &word_fetched[k], w.addr, w.rkeys[1]->rkey(),
                                                       comp.arm());
                comp.posted(s);
                return s;
            },
            all);
        ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
    }
    ASSERT_TRUE(progress_until([&] { return comp.done(); }, all, "the mixed atomics"));
    ASSERT_EQ(UCS_OK, comp.status());
    ASSERT_EQ(UCS_OK, flush_and_wait(*w.from[1], w.pairs[1].ab, all));
    EXPECT_EQ(start + kEach * (1 + 2) + (uint64_t(2 * kEach) << 32), *w.remote)
        << std::hex << "end value 0x" << *w.remote;
    // the high half moves by 1 for each 32-bit op and each 64-bit +2^32: the 32-bit ops'
    // fetched values are distinct and in range, as are the 64-bit fetched words' high halves
    std::vector<uint32_t> highs(high_fetched);
    for (uint64_t v : word_fetched) {
        highs.push_back(static_cast<uint32_t>(v >> 32));
    }
    EXPECT_TRUE(fetched_each_step_once(highs, static_cast<uint32_t>(start >> 32)));
    for (uint32_t v : low_fetched) {  // moved by +2 (32-bit) and +1 (64-bit) steps only
        EXPECT_LE(static_cast<uint32_t>(start), v);
        EXPECT_GT(static_cast<uint32_t>(start) + 3 * kEach, v);
    }
}

// A 32-bit atomic at an address that is not 4-byte aligned is refused at once (a CAS of the word
// would otherwise change bytes of two lanes); the word is untouched and the endpoint still works.
TEST_F(Atomics, Misaligned32BitAddressIsRefused)
{
    UCTEST_REQUIRE_FOP32(*a_, UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_CSWAP));
    if (res_.tl_name != "gdr_rc") {
        GTEST_SKIP() << "the refusal is gdr_rc's contract (docs/atomics.md)";
    }
    RegisteredBuffer word(b_->md(), 64, 4096);
    word.fill(0x11);
    RemoteKey rkey(a_->md().component(), word.registration().packed_rkey());
    const uint64_t addr = word.address() + 8 + 2;  // 2 mod 4
    uint32_t result     = 0;
    Completion comp;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_atomic32_post(pair_.ab, UCT_ATOMIC_OP_ADD, 1, addr, rkey.rkey()));
    ucs_status_t st = uct_ep_atomic32_fetch(pair_.ab, UCT_ATOMIC_OP_XOR, 1, &result, addr,
                                            rkey.rkey(), comp.arm());
    comp.posted(st);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, st);
    st = uct_ep_atomic_cswap32(pair_.ab, 0x11111111u, 1, addr, rkey.rkey(), &result, comp.arm());
    comp.posted(st);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, st);
    ASSERT_EQ(UCS_OK, flush(pair_.ab));
    EXPECT_TRUE(word.check_pattern(0, 0, 0x11)) << "a refused atomic changed memory";
    Completion good;
    post_fetch32(pair_.ab, UCT_ATOMIC_OP_ADD, 1, 0, &result, addr - 2, rkey.rkey(), good,
                 {a_.get(), b_.get()});
    ASSERT_TRUE(wait([&] { return good.done(); }, "an aligned fetch-add after the refusals"));
    EXPECT_EQ(UCS_OK, good.status());
    EXPECT_EQ(0x11111111u, result);
}

// A 4-byte registration on either half of a 64-bit word: the HCA checks the CAS of the whole word
// against the registration, so gdr's md registers the whole words a buffer touches (same pages).
// Without the registration cache (which registers whole pages anyway), so that the registration
// is exactly what the md made of the 4 bytes. The other half is outside the buffer: untouched.
class AtomicsRegistrationEdge : public PairTest {
protected:
    std::vector<ConfigOverride> md_overrides() const override { return {{{"RCACHE"}, "no"}}; }
};

TEST_F(AtomicsRegistrationEdge, FourByteRegistrationOnEitherHalfOfAWord)
{
    UCTEST_REQUIRE_FOP32(*a_, UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_CSWAP));
    const auto &applied = b_->md().applied_overrides();
    if (std::none_of(applied.begin(), applied.end(), [](const std::string &a) {
            return a.find("RCACHE=") != std::string::npos;  // "RCACHE=no" (1.17+: "GDR_RCACHE=no")
        })) {
        GTEST_SKIP() << "md " << res_.md_name << " has no RCACHE switch";
    }
    RegisteredBuffer page(a_->md(), 4096, 4096);  // mapped memory to carve from (a's md)
    auto all = {a_.get(), b_.get()};
    for (size_t offset : {size_t(16), size_t(20)}) {
        SCOPED_TRACE("4 bytes at 8k+" + std::to_string(offset % 8));
        uint32_t *mine  = reinterpret_cast<uint32_t *>(page.data() + offset);
        uint32_t *other = reinterpret_cast<uint32_t *>(page.data() + (offset ^ 4));
        *mine           = 100;
        *other          = 0xc3c3c3c3u;
        Registration reg(b_->md(), mine, sizeof(uint32_t));
        RemoteKey rkey(a_->md().component(), reg.packed_rkey());
        uint32_t added = 0, swapped = 0;
        Completion comp;
        post_fetch32(pair_.ab, UCT_ATOMIC_OP_ADD, 5, 0, &added, page.address() + offset,
                     rkey.rkey(), comp, all);
        ASSERT_TRUE(wait([&] { return comp.done(); }, "fetch-add"));
        ASSERT_EQ(UCS_OK, comp.status()) << "the HCA refused the word around a 4-byte buffer";
        post_fetch32(pair_.ab, UCT_ATOMIC_OP_CSWAP, 7, 105, &swapped, page.address() + offset,
                     rkey.rkey(), comp, all);
        ASSERT_TRUE(wait([&] { return comp.done(); }, "cswap"));
        ASSERT_EQ(UCS_OK, comp.status());
        EXPECT_EQ(100u, added);
        EXPECT_EQ(105u, swapped);
        EXPECT_EQ(7u, *mine);
        EXPECT_EQ(0xc3c3c3c3u, *other) << "the other half of the word changed";
        EXPECT_TRUE(a_->errors.empty()) << "endpoint failed: " << status_name(a_->errors[0].status);
    }
}

}  // namespace
}  // namespace uctest
