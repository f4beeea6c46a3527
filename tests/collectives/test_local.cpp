// Every collective x type x op x algorithm at small sizes (0, 1, odd, >= ranks), a few at 1 MiB,
// one at 64 MiB, for 1, 2, 3, 4, 5 and 8 ranks, each checked against a reference computed here.
// Ranks are workers of this process driven by one thread (see coll_harness.hpp).  CollSchedule
// runs the allreduce schedules of 1..40 ranks without UCX (a message-matching simulator).
#include "coll_checks.hpp"

#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <tuple>

namespace coll_test {
namespace {

template <class F> void for_each_type(F &&f)
{
    f(int8_t{});
    f(int16_t{});
    f(int32_t{});
    f(int64_t{});
    f(uint8_t{});
    f(uint16_t{});
    f(uint32_t{});
    f(uint64_t{});
    f(float{});
    f(double{});
}

constexpr coll::op_kind all_ops[] = {coll::op_kind::sum, coll::op_kind::prod, coll::op_kind::min,
                                     coll::op_kind::max};

/// A world of @p size ranks whose k-nomial allreduce has radix @p radix (the radix is a
/// setting of the communicator).
std::unique_ptr<local_world> knomial_world(int size, int radix)
{
    return std::make_unique<local_world>(size, coll::config().knomial_radix(radix));
}

/// The k-nomial radices every allreduce matrix runs besides the default (4).
constexpr int other_knomial_radices[] = {2, 3, 8};


class CollLocal : public ::testing::TestWithParam<int> {
protected:
    local_world world{GetParam()};
    // Sizes: empty, one element, odd, and at least one element per rank (ring/scatter paths).
    std::vector<size_t> small_counts() const { return {0, 1, 7, size_t(GetParam()) * 3 + 2}; }
};

TEST_P(CollLocal, AllreduceEveryTypeOpAlgorithm)
{
    std::vector<std::unique_ptr<local_world>> radix_worlds;
    for (int radix : other_knomial_radices) {
        radix_worlds.push_back(knomial_world(GetParam(), radix));
    }
    for_each_type([&](auto t) {
        using T = decltype(t);
        for (coll::op_kind op : all_ops) {
            for (size_t count : small_counts()) {
                for (auto algo : {coll::algorithm::automatic, coll::algorithm::recursive_doubling,
                                  coll::algorithm::ring, coll::algorithm::rabenseifner,
                                  coll::algorithm::knomial}) {
                    check_allreduce<T>(world, count, op, algo, false);
                }
                for (auto &other : radix_worlds) {
                    check_allreduce<T>(*other, count, op, coll::algorithm::knomial, false);
                }
                for (auto algo : {coll::algorithm::automatic, coll::algorithm::knomial,
                                  coll::algorithm::rabenseifner}) {
                    check_allreduce<T>(world, count, op, algo, true);
                }
            }
        }
    });
}

TEST_P(CollLocal, AllreduceAutomaticAcrossThresholds)
{
    // Each side of the allreduce cut-overs at this size, float and int64.
    const coll::thresholds cut;
    const size_t cuts[] = {cut.allreduce_rabenseifner,
                           std::max(cut.allreduce_ring(world.size()), cut.allreduce_rabenseifner)};
    for (size_t cut : cuts) {
        for (size_t bytes : {cut - 8, cut, cut + 8}) {
            check_allreduce<float>(world, bytes / sizeof(float), coll::op_kind::sum,
                                   coll::algorithm::automatic, false);
            check_allreduce<int64_t>(world, bytes / sizeof(int64_t), coll::op_kind::max,
                                     coll::algorithm::automatic, true);
        }
    }
}

TEST_P(CollLocal, ReduceEveryTypeOpAlgorithmRoot)
{
    const int p = world.size();
    for_each_type([&](auto t) {
        using T = decltype(t);
        for (coll::op_kind op : all_ops) {
            for (size_t count : small_counts()) {
                for (auto algo :
                     {coll::algorithm::binomial, coll::algorithm::reduce_scatter_gather}) {
                    for (int root : {0, p - 1, p / 2}) {
                        check_reduce<T>(world, count, op, algo, root);
                    }
                }
            }
        }
    });
}

TEST_P(CollLocal, ReduceScatterEveryTypeOp)
{
    for_each_type([&](auto t) {
        using T = decltype(t);
        for (coll::op_kind op : all_ops) {
            for (size_t count : {size_t(0), size_t(1), size_t(5)}) {
                check_reduce_scatter<T>(world, count, op, false);
                check_reduce_scatter<T>(world, count, op, true);
            }
        }
    });
}

// ---------------------------------------------------------------- data movement


TEST_P(CollLocal, DataMovementEveryTypeAlgorithmRoot)
{
    const int p     = world.size();
    const bool pof2 = (p & (p - 1)) == 0;
    for_each_type([&](auto t) {
        using T = decltype(t);
        for (size_t count : small_counts()) {
            for (int root : {0, p - 1, p / 2}) {
                for (auto algo : {coll::algorithm::automatic, coll::algorithm::binomial,
                                  coll::algorithm::scatter_allgather}) {
                    check_bcast<T>(world, count, root, algo);
                }
                for (bool in_place : {false, true}) {
                    check_gather<T>(world, count, root, in_place);
                    check_scatter<T>(world, count, root, in_place);
                }
            }
            for (bool in_place : {false, true}) {
                for (auto algo :
                     {coll::algorithm::automatic, coll::algorithm::ring, coll::algorithm::bruck}) {
                    check_allgather<T>(world, count, algo, in_place);
                }
                if (pof2) {
                    check_allgather<T>(world, count, coll::algorithm::recursive_doubling, in_place);
                }
                check_alltoall<T>(world, count, in_place);
            }
        }
    });
}

TEST_P(CollLocal, BarrierWaitsForEveryRank)
{
    const int p = world.size();
    for (int round = 0; round < 3; ++round) {
        std::vector<coll::request> early;
        for (int r = 0; r + 1 < p; ++r)
            early.push_back(world.comm(r).ibarrier());
        // Without the last rank nobody may leave (progress all the others for a while).
        const auto until = std::chrono::steady_clock::now() + 50ms;
        while (std::chrono::steady_clock::now() < until) {
            for (auto &req : early) {
                ASSERT_FALSE(req.test()) << "barrier completed before rank " << p - 1 << " entered";
            }
        }
        early.push_back(world.comm(p - 1).ibarrier());
        local_world::drive(early);
    }
}

TEST_P(CollLocal, OneMiBSelectedCombinations)
{
    const size_t mib = size_t(1) << 20;
    check_allreduce<float>(world, mib / sizeof(float), coll::op_kind::sum,
                           coll::algorithm::automatic, false);
    check_allreduce<int32_t>(world, mib / sizeof(int32_t), coll::op_kind::max,
                             coll::algorithm::recursive_doubling, true);
    check_allreduce<double>(world, mib / sizeof(double) + 3, coll::op_kind::sum,
                            coll::algorithm::rabenseifner, true);
    check_allreduce<uint16_t>(*knomial_world(world.size(), 3), mib / sizeof(uint16_t) + 1,
                              coll::op_kind::sum, coll::algorithm::knomial, false);
    check_reduce<double>(world, mib / sizeof(double), coll::op_kind::min,
                         coll::algorithm::automatic, world.size() - 1);
    check_reduce_scatter<int64_t>(world, mib / sizeof(int64_t) / size_t(world.size()),
                                  coll::op_kind::sum, false);
    check_bcast<uint8_t>(world, mib + 3, world.size() / 2, coll::algorithm::automatic);
    check_allgather<uint32_t>(world, mib / sizeof(uint32_t) / size_t(world.size()) + 1,
                              coll::algorithm::automatic, false);
    check_alltoall<uint16_t>(world, mib / sizeof(uint16_t) / size_t(world.size()), false);
    check_gather<int16_t>(world, mib / sizeof(int16_t) / size_t(world.size()), 0, false);
    check_scatter<int16_t>(world, mib / sizeof(int16_t) / size_t(world.size()), 0, false);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollLocal, ::testing::Values(1, 2, 3, 4, 5, 8),
                         [](const auto &info) { return "ranks" + std::to_string(info.param); });

// ---------------------------------------------------------------- single configurations

TEST(CollLocalLarge, Allreduce64MiBThreeRanks)
{
    local_world world(3);
    check_allreduce<float>(world, (size_t(64) << 20) / sizeof(float), coll::op_kind::sum,
                           coll::algorithm::automatic, false);
}

TEST(CollLocalLarge, AllreduceSixAndSevenRanks)
{
    // Two or three folded rank pairs (rem >= 2: the matrix's sizes fold at most one) and
    // k-nomial shapes 4+2 extras / 3x2 / 7, live over UCX; the simulator covers 1..40 ranks.
    for (int p : {6, 7}) {
        local_world world(p);
        auto radix3 = knomial_world(p, 3), radix8 = knomial_world(p, 8);
        for (size_t count : {size_t(1), size_t(7), size_t(1000) + size_t(p)}) {
            for (auto algo : {coll::algorithm::automatic, coll::algorithm::recursive_doubling,
                              coll::algorithm::ring, coll::algorithm::rabenseifner}) {
                check_allreduce<int32_t>(world, count, coll::op_kind::sum, algo, false);
                check_allreduce<float>(world, count, coll::op_kind::max, algo, true);
            }
            for (local_world *radix_world : {&world, radix3.get(), radix8.get()}) {
                check_allreduce<int32_t>(*radix_world, count, coll::op_kind::sum,
                                         coll::algorithm::knomial, false);
                check_allreduce<double>(*radix_world, count, coll::op_kind::min,
                                        coll::algorithm::knomial, true);
            }
        }
        for (size_t kib :
             {20, 128}) {  // automatic: Rabenseifner at 20 KiB (6, 7 ranks), ring at 128 KiB
            check_allreduce<float>(world, (kib << 10) / sizeof(float) + 1, coll::op_kind::sum,
                                   coll::algorithm::automatic, false);
        }
    }
}

TEST(CollLocalApi, CustomReductionAndTypeMismatch)
{
    local_world world(3);
    auto bit_or = coll::reduction::custom<uint32_t>([](uint32_t a, uint32_t b) { return a | b; });
    std::vector<std::vector<uint32_t>> buf(3);
    for (int r = 0; r < 3; ++r)
        buf[size_t(r)] = {1u << r, 0x100u << r, 0};
    world.run([&](int r) {
        return world.comm(r).iallreduce(buf[size_t(r)].data(), buf[size_t(r)].data(), 3, bit_or);
    });
    for (int r = 0; r < 3; ++r)
        EXPECT_EQ(buf[size_t(r)], (std::vector<uint32_t>{7u, 0x700u, 0u}));
    float f = 1;
    try {
        (void)world.comm(0).iallreduce(&f, &f, 1, bit_or);
        FAIL() << "a uint32 reduction accepted float data";
    } catch (const ucp_cpp::ucx_error &e) {
        EXPECT_EQ(e.status(), UCS_ERR_INVALID_PARAM);
        EXPECT_NE(std::string(e.what()).find("uint32"), std::string::npos) << e.what();
    }
}

TEST(CollLocalApi, BadArgumentsAreClearErrors)
{
    local_world world(3);
    int value           = 0;
    auto expect_invalid = [](auto &&call, const char *needle) {
        try {
            call();
            ADD_FAILURE() << "accepted: " << needle;
        } catch (const ucp_cpp::ucx_error &e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_invalid([&] { (void)world.comm(0).ibcast(&value, 1, 3); }, "root 3");
    expect_invalid(
        [&] {
            (void)world.comm(0).iallreduce(&value, &value, 1, coll::sum,
                                           with(coll::algorithm::bruck));
        },
        "does not implement");
    expect_invalid(
        [&] {
            (void)world.comm(0).iallgather(&value, &value, 1,
                                           with(coll::algorithm::recursive_doubling));
        },
        "power-of-two");
    expect_invalid(
        [&] { (void)world.comm(0).iallgather(&value, &value, 1, with(coll::algorithm::knomial)); },
        "does not implement");
    expect_invalid([&] { (void)coll::communicator().rank(); }, "not a valid communicator");
}

TEST(CollLocalApi, ConfiguredAlgorithmRunsOnOddSizes)
{
    // Ring for a one-element allreduce on 5 ranks (empty blocks) must still be right; the
    // radix reaches the k-nomial schedule.
    for (auto algo :
         {coll::algorithm::ring, coll::algorithm::knomial, coll::algorithm::rabenseifner}) {
        local_world world(5,
                          coll::config().use(coll::collective::allreduce, algo).knomial_radix(5));
        check_allreduce<int32_t>(world, 1, coll::op_kind::sum, coll::algorithm::automatic, false);
        check_allreduce<double>(world, 13, coll::op_kind::sum, coll::algorithm::automatic, true);
        EXPECT_EQ(world.ran(), std::vector<coll::algorithm>(5, algo)) << coll::name_of(algo);
    }
}

// Endpoints are created on the first transfer with a peer (so that many ranks do not mean P - 1 QPs each): a ring rank holds 2, not
// P - 1; recursive doubling on 8 ranks talks to log2 8 = 3 peers.  Fails if the engine connects
// to every rank at construction (7 each) or skips connecting a peer it receives from (1).
TEST(CollLocalApi, EndpointsOnlyToThePeersTheAlgorithmTalksTo)
{
    constexpr int ranks = 8;
    local_world world(ranks,
                      coll::config().use(coll::collective::allreduce, coll::algorithm::ring));
    for (int r = 0; r < ranks; ++r)
        EXPECT_EQ(world.comm(r).connected_peers(), 0) << "rank " << r << " before any collective";
    check_allreduce<int32_t>(world, 1000, coll::op_kind::sum, coll::algorithm::automatic, false);
    ASSERT_EQ(world.ran(), std::vector<coll::algorithm>(ranks, coll::algorithm::ring));
    for (int r = 0; r < ranks; ++r)
        EXPECT_EQ(world.comm(r).connected_peers(), 2) << "rank " << r << " after a ring";
    // Recursive doubling adds the partners r ^ 2 and r ^ 4 (r ^ 1 is a ring neighbour or new):
    // the union of both algorithms' peers, still not the full mesh.
    check_allreduce<int32_t>(world, 7, coll::op_kind::sum, coll::algorithm::recursive_doubling,
                             false);
    for (int r = 0; r < ranks; ++r) {
        std::set<int> peers{(r + 1) % ranks, (r + ranks - 1) % ranks, r ^ 1, r ^ 2, r ^ 4};
        EXPECT_EQ(world.comm(r).connected_peers(), int(peers.size()))
            << "rank " << r << " after ring and recursive doubling";
    }
}

TEST(CollLocalApi, CountMismatchFailsInsteadOfHanging)
{
    local_world world(2);
    std::vector<int32_t> a(4, 1), b(8, 1);
    std::vector<coll::request> requests;
    requests.push_back(world.comm(0).iallreduce(a.data(), a.data(), a.size(), coll::sum));
    requests.push_back(world.comm(1).iallreduce(b.data(), b.data(), b.size(), coll::sum));
    try {
        local_world::drive(requests, 20s);
        FAIL() << "mismatched counts completed";
    } catch (const ucp_cpp::ucx_error &e) {
        EXPECT_NE(e.status(), UCS_ERR_TIMED_OUT) << e.what();
    }
}

// A rank whose count differs is caught by the ranks that receive from it; the others would wait
// for ranks that gave up.  The failure notice ends them too: every rank fails (none times out)
// with a text naming both ranks of the message that disagreed.
TEST(CollLocalApi, CountMismatchIsNamedOnEveryRank)
{
    constexpr int ranks = 4;
    local_world world(ranks);
    std::vector<std::vector<int32_t>> data;
    std::vector<coll::request> requests;
    coll::call_options ring;
    ring.algo = coll::algorithm::ring;
    for (int r = 0; r < ranks; ++r) {
        data.emplace_back(r == 2 ? 128 : 64, 1);
        requests.push_back(world.comm(r).iallreduce(data[size_t(r)].data(), data[size_t(r)].data(),
                                                    data[size_t(r)].size(), coll::sum, ring));
    }
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    bool all_done       = false;
    while (!all_done && std::chrono::steady_clock::now() < deadline) {
        all_done = true;
        for (auto &req : requests)
            all_done = req.test() && all_done;
    }
    ASSERT_TRUE(all_done) << "a rank still waits 20 s after the mismatch";
    for (int r = 0; r < ranks; ++r) {
        const coll::request &req = requests[size_t(r)];
        EXPECT_EQ(req.status(), UCS_ERR_MESSAGE_TRUNCATED) << "rank " << r << ": " << req.error();
        EXPECT_NE(req.error().find("different counts"), std::string::npos)
            << "rank " << r << ": " << req.error();
        EXPECT_NE(req.error().find("rank 2"), std::string::npos)
            << "rank " << r << ": " << req.error();
    }
}

// A collective nobody waits for any more (its caller gave up after a timeout, then dropped the
// request and the communicator) must not keep the engine alive: the engine held its operations
// in flight and each held the engine, so the engine, its endpoints and the worker leaked (found
// by LeakSanitizer with a frozen rank).  The last handle going fails the collective and closes
// the endpoints by force.
TEST(CollLocalApi, AbandonedCollectiveReleasesTheEngineAndTheWorker)
{
    auto context = make_context();
    ucp_cpp::worker_params params;
    params.close_timeout = 300ms;
    auto mine            = ucp_cpp::worker::create(context, params);
    auto peer            = ucp_cpp::worker::create(context, params);
    const std::vector<ucp_cpp::worker_address> addresses{mine->address(), peer->address()};
    const std::weak_ptr<ucp_cpp::worker> watched = mine;
    std::vector<int32_t> data(1024, 1);
    {
        auto comm      = coll::communicator::from_addresses(mine, 0, addresses, {});
        auto peer_comm = coll::communicator::from_addresses(peer, 1, addresses, {});
        auto request   = comm.iallreduce(data.data(), data.data(), data.size(), coll::sum);
        try {
            request.wait(200ms);  // the peer never joins
            FAIL() << "an allreduce of one rank completed";
        } catch (const ucp_cpp::ucx_error &e) {
            EXPECT_EQ(e.status(), UCS_ERR_TIMED_OUT) << e.what();
        }
        mine.reset();
    }
    EXPECT_TRUE(watched.expired())
        << "the worker outlived every handle: the abandoned allreduce keeps its engine alive";
}

TEST(CollLocalApi, SplitDupAndConcurrentCollectives)
{
    local_world world(5);
    std::vector<coll::communicator> halves(5), copies(5), none(5);
    coll::call_options bounded;
    bounded.timeout = 30s;
    on_rank_threads(5, [&](int r) {
        // even ranks in reverse order, odd ranks in order
        halves[size_t(r)] = world.comm(r).split(r % 2, r % 2 == 0 ? -r : r);
        copies[size_t(r)] = halves[size_t(r)].dup();
        none[size_t(r)]   = world.comm(r).split(r == 4 ? -1 : 7, 0);
    });
    for (int r = 0; r < 5; ++r) {
        const auto &h = halves[size_t(r)];
        ASSERT_EQ(h.size(), r % 2 == 0 ? 3 : 2);
        const int expected_rank = r % 2 == 0 ? (4 - r) / 2 : r / 2;
        EXPECT_EQ(h.rank(), expected_rank) << "world rank " << r;
        EXPECT_EQ(h.world_rank(h.rank()), r);
        EXPECT_EQ(copies[size_t(r)].size(), h.size());
        EXPECT_EQ(none[size_t(r)].valid(), r != 4);
    }
    // Three collectives in flight per rank at once, on the parent, a split and its dup.
    std::vector<int64_t> world_sum(5), half_sum(5), copy_max(5);
    std::vector<coll::request> requests;
    for (int r = 0; r < 5; ++r) {
        world_sum[size_t(r)] = half_sum[size_t(r)] = copy_max[size_t(r)] = r;
        requests.push_back(
            world.comm(r).iallreduce(&world_sum[size_t(r)], &world_sum[size_t(r)], 1, coll::sum));
        requests.push_back(
            copies[size_t(r)].iallreduce(&copy_max[size_t(r)], &copy_max[size_t(r)], 1, coll::max));
        requests.push_back(
            halves[size_t(r)].iallreduce(&half_sum[size_t(r)], &half_sum[size_t(r)], 1, coll::sum));
    }
    local_world::drive(requests);
    for (int r = 0; r < 5; ++r) {
        EXPECT_EQ(world_sum[size_t(r)], 10);
        EXPECT_EQ(half_sum[size_t(r)], r % 2 == 0 ? 6 : 4);
        EXPECT_EQ(copy_max[size_t(r)], r % 2 == 0 ? 4 : 3);
    }
    // The sub-communicator of the odd ranks works with the blocking API on their own threads.
    on_rank_threads(5, [&](int r) {
        if (r % 2 == 0)
            return;
        int32_t v = r;
        halves[size_t(r)].allreduce(&v, 1, coll::prod, bounded);
        if (v != 3)
            throw std::runtime_error("odd-rank product " + std::to_string(v));
    });
}

TEST(CollLocalApi, NonblockingOverlapsUserTaggedTraffic)
{
    local_world world(3);
    // The user's wildcard receives (space bits kept, as tag.hpp asks) sit posted before and
    // during the collectives: they must get the user's messages only.
    auto &w0 = *world.comm(0).owner();
    std::vector<uint64_t> user_in(2, 0), user_out{0xabcdef, 0x123456};
    std::vector<ucp_cpp::request> user_recvs;
    for (auto &slot : user_in) {
        user_recvs.push_back(w0.tag_recv(&slot, sizeof(slot), 0, ucp_cpp::tag_space::user_mask(0)));
    }
    std::vector<int32_t> a(3 * 100), b(3 * 100);
    std::vector<coll::request> requests;
    for (int r = 0; r < 3; ++r) {
        for (int i = 0; i < 100; ++i)
            a[size_t(r * 100 + i)] = r + i;
        for (int i = 0; i < 100; ++i)
            b[size_t(r * 100 + i)] = r * i;
        requests.push_back(
            world.comm(r).iallreduce(&a[size_t(r * 100)], &a[size_t(r * 100)], 100, coll::sum));
        requests.push_back(world.comm(r).ibcast(&b[size_t(r * 100)], 100, 2));
    }
    // User traffic from rank 1 to rank 0 in the middle of it, on its own endpoint.
    auto to_rank0 = ucp_cpp::endpoint::connect(world.comm(1).owner(), w0.address());
    std::vector<ucp_cpp::request> user_sends;
    user_sends.push_back(to_rank0->tag_send(&user_out[0], 8, 42));
    local_world::drive(requests);
    user_sends.push_back(to_rank0->tag_send(&user_out[1], 8, 43));
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    auto all_user_done  = [&] {
        bool done = true;
        for (auto &req : user_recvs)
            done = req.test() && done;
        for (auto &req : user_sends)
            done = req.test() && done;
        return done;
    };
    while (!all_user_done()) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "user traffic stuck";
    }
    EXPECT_EQ(user_recvs[0].sender_tag(), 42u);
    EXPECT_EQ(user_recvs[1].sender_tag(), 43u);
    EXPECT_EQ(user_in, user_out);
    for (int r = 0; r < 3; ++r) {
        for (int i = 0; i < 100; ++i) {
            EXPECT_EQ(a[size_t(r * 100 + i)], 3 * i + 3);
            EXPECT_EQ(b[size_t(r * 100 + i)], 2 * i);
        }
    }
}

// ---------------------------------------------------------------- schedules without UCX

namespace detail = ucp_cpp::coll::detail;

/// Runs the schedules of all ranks against each other in memory: a round's transfers are posted
/// together; a receive matches the send with the same (sender, receiver, step), which must carry
/// the same byte count (the data is copied at the match: the sender's round, and so its buffer,
/// cannot move on before); a round completes once all its transfers matched, then its `then`
/// runs.  Fails on a duplicate (sender, receiver, step), a size mismatch, or a deadlock.
::testing::AssertionResult simulate(std::vector<detail::schedule> &plans)
{
    const int p = int(plans.size());
    using key   = std::tuple<int, int, uint32_t>;  // sender, receiver, step
    std::set<key> seen_sends, seen_recvs;
    std::map<key, const detail::transfer *> open_sends, open_recvs;
    std::vector<size_t> next(size_t(p), 0);
    std::vector<int> outstanding(size_t(p), 0);
    std::vector<bool> busy(size_t(p), false);
    for (auto &plan : plans) {
        if (plan.prologue)
            plan.prologue();
    }
    for (bool moved = true; moved;) {
        moved = false;
        for (int r = 0; r < p; ++r) {
            auto &plan = plans[size_t(r)];
            if (!busy[size_t(r)] && next[size_t(r)] < plan.rounds.size()) {
                busy[size_t(r)] = true;
                moved           = true;
                for (const detail::transfer &t : plan.rounds[next[size_t(r)]].transfers) {
                    const key k = t.is_send ? key{r, t.peer, t.step} : key{t.peer, r, t.step};
                    if (!(t.is_send ? seen_sends : seen_recvs).insert(k).second) {
                        return ::testing::AssertionFailure()
                               << "rank " << r << ": a second " << (t.is_send ? "send" : "receive")
                               << " from " << std::get<0>(k) << " to " << std::get<1>(k)
                               << " with step " << std::get<2>(k);
                    }
                    auto &others = t.is_send ? open_recvs : open_sends;
                    auto match   = others.find(k);
                    if (match == others.end()) {
                        (t.is_send ? open_sends : open_recvs)[k] = &t;
                        ++outstanding[size_t(r)];
                        continue;
                    }
                    const detail::transfer &send = t.is_send ? t : *match->second,
                                           &recv = t.is_send ? *match->second : t;
                    if (send.bytes != recv.bytes) {
                        return ::testing::AssertionFailure()
                               << "step " << std::get<2>(k) << " from " << std::get<0>(k) << " to "
                               << std::get<1>(k) << ": " << send.bytes << " bytes sent, "
                               << recv.bytes << " expected";
                    }
                    if (send.bytes)
                        std::memcpy(recv.buffer, send.buffer, send.bytes);
                    --outstanding[size_t(match->second == &send ? std::get<0>(k) : std::get<1>(k))];
                    others.erase(match);
                }
            }
            if (busy[size_t(r)] && outstanding[size_t(r)] == 0) {
                auto &then = plan.rounds[next[size_t(r)]++].then;
                if (then)
                    then();
                busy[size_t(r)] = false;
                moved           = true;
            }
        }
    }
    for (int r = 0; r < p; ++r) {
        if (next[size_t(r)] != plans[size_t(r)].rounds.size() || busy[size_t(r)]) {
            return ::testing::AssertionFailure()
                   << "deadlock: rank " << r << " stuck in round " << next[size_t(r)] << " of "
                   << plans[size_t(r)].rounds.size();
        }
    }
    if (!open_sends.empty() || !open_recvs.empty()) {
        return ::testing::AssertionFailure() << "unmatched transfers left";
    }
    return ::testing::AssertionSuccess();
}

/// Builds @p algo's allreduce schedule (the algorithm table's builder, in place) of every rank
/// of @p p on buffers[r] and simulates it.
template <class T>
::testing::AssertionResult simulate_allreduce(std::vector<std::vector<T>> &buffers,
                                              coll::algorithm algo, int radix)
{
    const int p = int(buffers.size());
    std::vector<detail::schedule> plans(static_cast<size_t>(p));
    const detail::builder build = detail::row_of(algo).builder_for(coll::collective::allreduce);
    for (int r = 0; r < p; ++r) {
        detail::context c{plans[size_t(r)], r, p, coll::datatype_of<T>(), sizeof(T)};
        detail::arguments call;
        call.recv          = reinterpret_cast<std::byte *>(buffers[size_t(r)].data());
        call.send          = call.recv;
        call.count         = buffers[0].size();
        call.op            = &coll::sum;
        call.knomial_radix = radix;
        build(c, call);
    }
    return simulate(plans);
}

TEST(CollSchedule, AllreduceAnySizeAndRadixMatchesAndIsBitIdentical)
{
    // Every allreduce algorithm of the table (k-nomial at radix 2..9): steps unique per pair,
    // sizes agree, no deadlock, exact int64 sums, and double sums bit-identical on every rank
    // (values whose sum depends on the association order).
    std::vector<std::pair<coll::algorithm, int>> variants;
    for (coll::algorithm algo : coll::algorithms_of(coll::collective::allreduce)) {
        for (int radix = 2; radix <= (algo == coll::algorithm::knomial ? 9 : 2); ++radix) {
            variants.emplace_back(algo, radix);
        }
    }
    for (int p = 1; p <= 40; ++p) {
        for (const auto &[algo, radix] : variants) {
            for (size_t count : {size_t(1), size_t(5), size_t(2 * p + 3)}) {
                const std::string what = std::string(coll::name_of(algo)) + " radix " +
                                         std::to_string(radix) + " p=" + std::to_string(p) +
                                         " count=" + std::to_string(count);
                std::vector<std::vector<int64_t>> ints(static_cast<size_t>(p),
                                                       std::vector<int64_t>(count));
                std::vector<std::vector<double>> reals(static_cast<size_t>(p),
                                                       std::vector<double>(count));
                for (int r = 0; r < p; ++r) {
                    for (size_t i = 0; i < count; ++i) {
                        ints[size_t(r)][i]  = int64_t(r + 1) * 1000 + int64_t(i);
                        reals[size_t(r)][i] = 1.0 / double(r + 3) + 1e8 * double(r % 3) + double(i);
                    }
                }
                ASSERT_TRUE(simulate_allreduce(ints, algo, radix)) << what;
                ASSERT_TRUE(simulate_allreduce(reals, algo, radix)) << what;
                for (int r = 0; r < p; ++r) {
                    for (size_t i = 0; i < count; ++i) {
                        ASSERT_EQ(ints[size_t(r)][i],
                                  int64_t(p) * (p + 1) / 2 * 1000 + int64_t(p) * int64_t(i))
                            << what << " rank " << r << " element " << i;
                        ASSERT_EQ(std::memcmp(&reals[size_t(r)][i], &reals[0][i], sizeof(double)), 0)
                            << what << ": rank " << r << " element " << i
                            << " differs from rank 0 (" << reals[size_t(r)][i] << " vs "
                            << reals[0][i] << ")";
                    }
                }
            }
        }
    }
}

TEST(CollSchedule, AllreduceRingCutOver)
{
    const coll::thresholds cut;
    const size_t unit = cut.allreduce_alpha_beta;
    EXPECT_EQ(cut.allreduce_ring(2), 0u);
    EXPECT_EQ(cut.allreduce_ring(3), 0u);
    EXPECT_EQ(cut.allreduce_ring(4), 16 * unit);
    EXPECT_EQ(cut.allreduce_ring(5), unit);
    EXPECT_EQ(cut.allreduce_ring(6), 2 * unit);
    EXPECT_EQ(cut.allreduce_ring(8), 64 * unit);
    EXPECT_EQ(cut.allreduce_ring(12), 7 * unit);
    EXPECT_EQ(cut.allreduce_ring(16), 176 * unit);
}

TEST(CollSchedule, KnomialShapes)
{
    auto shape = [](int p, int k) { return detail::knomial_shape_of(p, k); };
    EXPECT_EQ(shape(8, 4).radices, (std::vector<int>{4, 2}));
    EXPECT_EQ(shape(8, 4).core, 8);
    EXPECT_EQ(shape(8, 3).radices, (std::vector<int>{3, 2}));
    EXPECT_EQ(shape(8, 3).core, 6);  // 2 extra ranks folded
    EXPECT_EQ(shape(5, 4).core, 4);
    EXPECT_EQ(shape(3, 8).radices, (std::vector<int>{3}));  // radix clamped to p: one round
    EXPECT_EQ(shape(1, 4).radices, (std::vector<int>{}));
    for (int p = 1; p <= 200; ++p) {
        for (int k = 2; k <= 9; ++k) {
            const auto s = shape(p, k);
            int product  = 1;
            for (int radix : s.radices)
                product *= radix;
            ASSERT_EQ(product, s.core);
            ASSERT_LE(s.core, p);
            ASSERT_LE(p - s.core, s.core)
                << "p=" << p << " k=" << k << ": a core rank would proxy two extras";
        }
    }
}

}  // namespace
}  // namespace coll_test
