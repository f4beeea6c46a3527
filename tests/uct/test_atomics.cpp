// Every advertised atomic (32/64-bit, post and fetch, cswap) against a remote word, checking both
// the remote result and the fetched old value.
#include "pair_fixture.h"

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
    const char *width = sizeof(T) == 4 ? "32" : "64";
    RegisteredBuffer word(b_->md(), 64, 4096);
    RemoteKey rkey(a_->md().component(), word.registration().packed_rkey());
    T *remote = reinterpret_cast<T *>(word.data() + 8);  // naturally aligned, not at the start
    const uint64_t addr = word.address() + 8;
    const T initial     = static_cast<T>(0x5a5a5a5a0f0f0f0fULL),
            operand     = static_cast<T>(0x0123456789abcdefULL);
    auto entities       = {a_.get(), b_.get()};

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

}  // namespace
}  // namespace uctest
