// Compiled schedules kept and run again: the plan cache of repeated calls (no allocation on a
// repeated call), persistent collectives (<collective>_init, start many), and the algorithms
// and automatic choices added with them (linear gather / scatter / alltoall, the k-nomial
// reduce-scatter).  Ranks as workers of one process (coll_harness.hpp).  Its own binary: it
// counts the process's operator new calls.
// The replaced global operator new / delete below pair malloc with free; GCC 12 sees them next
// to every new-expression of this file and warns of a mismatch that is none.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "coll_checks.hpp"
#include "coll_harness.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void *operator new(std::size_t bytes)
{
    if (counting.load(std::memory_order_relaxed))
        allocations.fetch_add(1, std::memory_order_relaxed);
    if (void *p = std::malloc(bytes == 0 ? 1 : bytes))
        return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept
{
    std::free(p);
}
void operator delete(void *p, std::size_t) noexcept
{
    std::free(p);
}

namespace coll_test {
namespace {

/// Drives one request per rank to completion without allocating (world.run() keeps vectors).
void drive_all(std::vector<coll::request> &requests)
{
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (bool done = false; !done;) {
        done = true;
        for (auto &req : requests)
            done = req.test() && done;
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "collectives did not complete";
    }
    for (auto &req : requests) {
        ASSERT_EQ(req.status(), UCS_OK) << req.error();
        req = coll::request();  // drop the handle: the kept schedule is idle again
    }
}

class CollPlans : public ::testing::TestWithParam<int> {
protected:
    local_world world{GetParam()};
};

// The new algorithms against the references of coll_checks.hpp, every root, in place or not.
TEST_P(CollPlans, LinearAndKnomialAlgorithms)
{
    const int p = world.size();
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1000)}) {
        for (int root : {0, p - 1, p / 2}) {
            for (bool in_place : {false, true}) {
                check_gather<int32_t>(world, count, root, in_place, coll::algorithm::linear);
                check_scatter<int32_t>(world, count, root, in_place, coll::algorithm::linear);
                check_gather<double>(world, count, root, in_place, coll::algorithm::binomial);
                check_scatter<double>(world, count, root, in_place, coll::algorithm::binomial);
            }
            check_reduce<int64_t>(world, count, coll::op_kind::sum, coll::algorithm::binomial,
                                  root);
        }
        for (bool in_place : {false, true}) {
            check_alltoall<int16_t>(world, count, in_place, coll::algorithm::linear);
            check_alltoall<int16_t>(world, count, in_place, coll::algorithm::pairwise);
            for (coll::op_kind op : {coll::op_kind::sum, coll::op_kind::max}) {
                check_reduce_scatter<float>(world, count, op, in_place, coll::algorithm::knomial);
                check_reduce_scatter<int32_t>(world, count, op, in_place, coll::algorithm::ring);
            }
        }
    }
}

// A kept schedule runs again on new contents of the same buffers, and a call with other
// buffers gets its own: results right every time, whatever the cache holds.
TEST_P(CollPlans, RepeatedCallsReuseThePlanAndStayRight)
{
    const int p = world.size();
    for (coll::algorithm algo : coll::algorithms_of(coll::collective::allreduce)) {
        if (algo == coll::algorithm::recursive_doubling && (p & (p - 1)) != 0)
            continue;
        for (int round = 0; round < 4; ++round) {
            // rounds 0, 1: the same buffers (a hit the second time); 2: in place; 3: again
            check_allreduce<float>(world, 33, coll::op_kind::sum, algo, round == 2);
        }
    }
    for (int round = 0; round < 3; ++round) {
        check_gather<int32_t>(world, 5, 0, false);
        check_alltoall<int32_t>(world, 3, false);
        check_reduce_scatter<int32_t>(world, 4, coll::op_kind::sum, false);
        check_bcast<int8_t>(world, 9, p - 1, coll::algorithm::automatic);
    }
}

// The point of the cache: after the first call, the same call again allocates nothing (no
// operation, no closure, no scratch), on every rank, for every collective.
TEST_P(CollPlans, RepeatedCallAllocatesNothing)
{
    const int p    = world.size();
    const size_t n = 4096;
    using T        = float;
    auto buffers   = [&](size_t elements) {
        return std::vector<std::vector<T>>(size_t(p), std::vector<T>(elements, T(1)));
    };
    auto send = buffers(n * size_t(p)), recv = buffers(n * size_t(p));
    std::vector<coll::request> requests(static_cast<size_t>(p));
    const std::vector<std::pair<const char *, std::function<coll::request(int)>>> calls = {
        {"barrier", [&](int r) { return world.comm(r).ibarrier(); }},
        {"bcast", [&](int r) { return world.comm(r).ibcast(recv[size_t(r)].data(), n, 0); }},
        {"reduce",
         [&](int r) {
             return world.comm(r).ireduce(send[size_t(r)].data(), recv[size_t(r)].data(), n,
                                          coll::sum, 0);
         }},
        {"allreduce",
         [&](int r) {
             return world.comm(r).iallreduce(send[size_t(r)].data(), recv[size_t(r)].data(), n,
                                             coll::sum);
         }},
        {"allgather",
         [&](int r) {
             return world.comm(r).iallgather(send[size_t(r)].data(), recv[size_t(r)].data(), n);
         }},
        {"reduce_scatter",
         [&](int r) {
             return world.comm(r).ireduce_scatter(send[size_t(r)].data(), recv[size_t(r)].data(), n,
                                                  coll::sum);
         }},
        {"alltoall",
         [&](int r) {
             return world.comm(r).ialltoall(send[size_t(r)].data(), recv[size_t(r)].data(), n);
         }},
        {"gather",
         [&](int r) {
             return world.comm(r).igather(send[size_t(r)].data(), recv[size_t(r)].data(), n, 0);
         }},
        {"scatter",
         [&](int r) {
             return world.comm(r).iscatter(send[size_t(r)].data(), recv[size_t(r)].data(), n, 0);
         }},
    };
    for (const auto &[name, call] : calls) {
        for (int warm = 0; warm < 2; ++warm) {  // builds the plans, connects the endpoints
            for (int r = 0; r < p; ++r)
                requests[size_t(r)] = call(r);
            drive_all(requests);
        }
        allocations = 0;
        counting    = true;
        for (int again = 0; again < 5; ++again) {
            for (int r = 0; r < p; ++r)
                requests[size_t(r)] = call(r);
            drive_all(requests);
        }
        counting = false;
        EXPECT_EQ(allocations.load(), 0) << name << " on " << p << " ranks allocated";
    }
}

// Persistent collectives: made once, started many times on changing inputs, interleaved with
// ordinary calls on the same communicator; each start's result is right.
TEST_P(CollPlans, PersistentCollectivesStartManyTimes)
{
    const int p    = world.size();
    const size_t n = 10;
    std::vector<std::vector<int64_t>> in(static_cast<size_t>(p)), out(static_cast<size_t>(p)),
        blocks(static_cast<size_t>(p)), gathered(static_cast<size_t>(p));
    std::vector<coll::persistent> allreduce, allgather, bcast, barrier, reduce_scatter;
    for (int r = 0; r < p; ++r) {
        in[size_t(r)].assign(n * size_t(p), 0);
        out[size_t(r)].assign(n * size_t(p), 0);
        blocks[size_t(r)].assign(n, 0);
        gathered[size_t(r)].assign(n * size_t(p), 0);
        auto &c = world.comm(r);
        allreduce.push_back(
            c.allreduce_init(in[size_t(r)].data(), out[size_t(r)].data(), n, coll::sum));
        allgather.push_back(
            c.allgather_init(blocks[size_t(r)].data(), gathered[size_t(r)].data(), n));
        bcast.push_back(c.bcast_init(blocks[size_t(r)].data(), n, p - 1));
        barrier.push_back(c.barrier_init());
        reduce_scatter.push_back(
            c.reduce_scatter_init(in[size_t(r)].data(), blocks[size_t(r)].data(), n, coll::max));
        EXPECT_TRUE(allreduce.back().valid());
        EXPECT_EQ(allreduce.back().which(), coll::collective::allreduce);
        EXPECT_NE(allreduce.back().algorithm(), coll::algorithm::automatic);
    }
    std::vector<coll::request> requests(static_cast<size_t>(p));
    auto start_all = [&](std::vector<coll::persistent> &made) {
        for (int r = 0; r < p; ++r)
            requests[size_t(r)] = made[size_t(r)].start();
        drive_all(requests);
    };
    for (int64_t round = 0; round < 6; ++round) {
        for (int r = 0; r < p; ++r) {
            for (size_t i = 0; i < n * size_t(p); ++i)
                in[size_t(r)][i] = round * 1000 + r * 10 + int64_t(i);
        }
        start_all(allreduce);
        for (int r = 0; r < p; ++r) {
            for (size_t i = 0; i < n; ++i) {
                const int64_t expected = int64_t(p) * (round * 1000 + int64_t(i)) +
                                         10 * int64_t(p) * (p - 1) / 2;
                ASSERT_EQ(out[size_t(r)][i], expected) << "allreduce round " << round;
            }
        }
        start_all(reduce_scatter);
        for (int r = 0; r < p; ++r) {
            for (size_t i = 0; i < n; ++i) {
                ASSERT_EQ(blocks[size_t(r)][i],
                          round * 1000 + (p - 1) * 10 + int64_t(size_t(r) * n + i))
                    << "reduce_scatter round " << round << " rank " << r;
            }
        }
        for (int r = 0; r < p; ++r) {
            for (size_t i = 0; i < n; ++i)
                blocks[size_t(r)][i] = round + r + int64_t(i);
        }
        start_all(allgather);
        for (int r = 0; r < p; ++r) {
            for (int q = 0; q < p; ++q) {
                for (size_t i = 0; i < n; ++i)
                    ASSERT_EQ(gathered[size_t(r)][size_t(q) * n + i], round + q + int64_t(i));
            }
        }
        // an ordinary call between two starts takes its own sequence number
        check_allreduce<int32_t>(world, 3, coll::op_kind::sum, coll::algorithm::automatic, false);
        start_all(bcast);
        for (int r = 0; r < p; ++r) {
            for (size_t i = 0; i < n; ++i)
                ASSERT_EQ(blocks[size_t(r)][i], round + (p - 1) + int64_t(i)) << "bcast";
        }
        start_all(barrier);
    }
}

// A persistent collective on a custom reduction keeps its own copy of it, and a start while
// the previous one is in flight is refused with UCS_ERR_BUSY (MPI calls it erroneous).
TEST(CollPlansApi, PersistentCustomReductionAndBusyStart)
{
    local_world world(3);
    std::vector<std::vector<int32_t>> buf(3, std::vector<int32_t>(4));
    std::vector<coll::persistent> made;
    {
        auto mul_plus_one = coll::reduction::custom<int32_t>(
            [](int32_t a, int32_t b) { return a + b + 1; });
        for (int r = 0; r < 3; ++r)
            made.push_back(world.comm(r).allreduce_init(buf[size_t(r)].data(),
                                                        buf[size_t(r)].data(), 4, mul_plus_one));
    }  // the reduction the calls were given is gone: the plans hold copies
    for (int r = 0; r < 3; ++r)
        std::fill(buf[size_t(r)].begin(), buf[size_t(r)].end(), r);
    std::vector<coll::request> requests;
    for (int r = 0; r < 3; ++r)
        requests.push_back(made[size_t(r)].start());
    try {
        (void)made[0].start();
        ADD_FAILURE() << "a second start while the first is in flight was accepted";
    } catch (const ucp_cpp::ucx_error &e) {
        EXPECT_EQ(e.status(), UCS_ERR_BUSY) << e.what();
    }
    drive_all(requests);
    for (int r = 0; r < 3; ++r)
        EXPECT_EQ(buf[size_t(r)][0], 0 + 1 + 2 + 2) << "rank " << r;  // (a op b) adds 1 per op
    coll::persistent none;
    EXPECT_FALSE(none.valid());
    EXPECT_THROW((void)none.start(), ucp_cpp::ucx_error);
}

// plan_cache(0) (UCP_CPP_COLL_PLAN_CACHE=0) builds every call anew: still right, and allocating.
TEST(CollPlansApi, PlanCacheCanBeTurnedOff)
{
    EXPECT_EQ(coll::config().plan_cache(), 16u);
    local_world world(2, coll::config().plan_cache(0));
    std::vector<std::vector<float>> a(2, std::vector<float>(64, 1.0f));
    std::vector<coll::request> requests(2);
    for (int again = 0; again < 3; ++again) {
        allocations = 0;
        counting    = true;
        for (int r = 0; r < 2; ++r)
            requests[size_t(r)] = world.comm(r).iallreduce(a[size_t(r)].data(), a[size_t(r)].data(),
                                                           64, coll::sum);
        drive_all(requests);
        counting = false;
        EXPECT_GT(allocations.load(), 0);
    }
    EXPECT_EQ(a[0][0], 8.0f);
}

// The automatic choices of the collectives that got a second algorithm follow coll::thresholds.
TEST(CollPlansApi, AutomaticChoiceFollowsTheThresholds)
{
    coll::thresholds cut;
    using coll::algorithm;
    using coll::collective;
    auto chosen = [&](collective which, size_t count, size_t elem, int p) {
        return coll::detail::row_of(which).automatic(cut, count, elem, p);
    };
    EXPECT_EQ(chosen(collective::gather, cut.gather_linear, 1, 8), algorithm::linear);
    EXPECT_EQ(chosen(collective::gather, cut.gather_linear - 1, 1, 8), algorithm::binomial);
    EXPECT_EQ(chosen(collective::scatter, cut.scatter_linear / 8, 1, 8), algorithm::linear);
    EXPECT_EQ(chosen(collective::scatter, cut.scatter_linear / 8 - 1, 1, 8), algorithm::binomial);
    EXPECT_EQ(chosen(collective::alltoall, cut.alltoall_pairwise, 1, 8), algorithm::pairwise);
    EXPECT_EQ(chosen(collective::alltoall, 1, 1, 8), algorithm::linear);
    EXPECT_EQ(chosen(collective::alltoall, 1, 1, 4), algorithm::pairwise);
    EXPECT_EQ(chosen(collective::reduce_scatter, cut.reduce_scatter_ring / 8, 1, 8),
              algorithm::ring);
    EXPECT_EQ(chosen(collective::reduce_scatter, 1, 1, 8), algorithm::knomial);
    EXPECT_EQ(chosen(collective::reduce_scatter, 1, 1, 4), algorithm::ring);
    EXPECT_EQ(chosen(collective::bcast, cut.bcast_scatter_allgather, 1, 4),
              algorithm::scatter_allgather);
    EXPECT_EQ(chosen(collective::bcast, cut.bcast_scatter_allgather - 1, 1, 4),
              algorithm::binomial);
    EXPECT_EQ(chosen(collective::allreduce, 1024, 1, 16), algorithm::recursive_doubling);
    EXPECT_EQ(chosen(collective::allreduce, 1024, 1, 12), algorithm::knomial);
    EXPECT_EQ(chosen(collective::allreduce, cut.allreduce_ring(8), 1, 8), algorithm::ring);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollPlans, ::testing::Values(1, 2, 3, 4, 5, 8),
                         [](const auto &info) { return "ranks" + std::to_string(info.param); });

}  // namespace
}  // namespace coll_test
