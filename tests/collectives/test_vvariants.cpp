// The v-variants (allgatherv, alltoallv, gatherv, scatterv, reduce_scatter with counts) on 1..8
// ranks (workers of this process, coll_harness.hpp): every algorithm, uneven counts with zeros,
// blocks with gaps in any order, in place, several element types and every built-in reduction,
// each result against a reference computed here; nonblocking ones in flight together with other
// collectives; persistent ones started again; counts that disagree between ranks fail with an
// error that names the rank.
#include "coll_vchecks.hpp"

#include <memory>

namespace coll_test {
namespace {

using coll::algorithm;
using coll::collective;

/// The shapes every algorithm runs: three count patterns (zeros at different ranks), small and
/// larger blocks, packed and with gaps.
std::vector<v_shape> shapes(bool symmetric = false)
{
    std::vector<v_shape> all;
    for (unsigned seed : {0u, 1u, 2u}) {
        for (size_t scale : {size_t(1), size_t(5)}) {
            for (size_t gap : {size_t(0), size_t(3)})
                all.push_back(v_shape{seed, scale, gap, symmetric});
        }
    }
    return all;
}

/// automatic and every algorithm of @p which.
std::vector<algorithm> algorithms_and_automatic(collective which)
{
    std::vector<algorithm> all = coll::algorithms_of(which);
    all.insert(all.begin(), algorithm::automatic);
    return all;
}

std::vector<int> roots(int p)
{
    return p == 1 ? std::vector<int>{0} : std::vector<int>{0, p - 1};
}

class CollVariants : public ::testing::TestWithParam<int> {
protected:
    local_world world{GetParam()};
};

TEST_P(CollVariants, AllgathervEveryAlgorithmShapeInPlace)
{
    for (algorithm algo : algorithms_and_automatic(collective::allgatherv)) {
        for (const v_shape &s : shapes()) {
            check_allgatherv<int32_t>(world, s, algo, false);
            check_allgatherv<int32_t>(world, s, algo, true);
        }
    }
}

TEST_P(CollVariants, AlltoallvEveryAlgorithmShapeInPlace)
{
    for (algorithm algo : algorithms_and_automatic(collective::alltoallv)) {
        for (const v_shape &s : shapes())
            check_alltoallv<int32_t>(world, s, algo, false);
        for (const v_shape &s : shapes(/*symmetric=*/true))
            check_alltoallv<int32_t>(world, s, algo, true);
    }
}

TEST_P(CollVariants, GathervScattervEveryRootShapeInPlace)
{
    for (int root : roots(GetParam())) {
        for (const v_shape &s : shapes()) {
            for (bool in_place : {false, true}) {
                check_gatherv<int32_t>(world, s, root, algorithm::automatic, in_place);
                check_scatterv<int32_t>(world, s, root, algorithm::linear, in_place);
            }
        }
    }
}

TEST_P(CollVariants, ReduceScatterWithCountsEveryAlgorithmOpShape)
{
    for (algorithm algo : algorithms_and_automatic(collective::reduce_scatterv)) {
        for (const v_shape &s : shapes()) {
            for (coll::op_kind op : {coll::op_kind::sum, coll::op_kind::prod, coll::op_kind::min,
                                     coll::op_kind::max}) {
                check_reduce_scatterv<int32_t>(world, s, op, algo, false);
            }
            check_reduce_scatterv<int32_t>(world, s, coll::op_kind::sum, algo, true);
        }
    }
}

TEST_P(CollVariants, EveryElementType)
{
    const v_shape s{1, 3, 2}, symmetric{2, 3, 2, true};
    const int root = GetParam() / 2;
    auto each      = [&](auto zero) {
        using T = decltype(zero);
        for (bool in_place : {false, true}) {
            check_allgatherv<T>(world, s, algorithm::automatic, in_place);
            check_alltoallv<T>(world, in_place ? symmetric : s, algorithm::automatic, in_place);
            check_gatherv<T>(world, s, root, algorithm::automatic, in_place);
            check_scatterv<T>(world, s, root, algorithm::automatic, in_place);
            check_reduce_scatterv<T>(world, s, coll::op_kind::sum, algorithm::automatic, in_place);
        }
        check_reduce_scatterv<T>(world, s, coll::op_kind::max, algorithm::ring, false);
        check_reduce_scatterv<T>(world, s, coll::op_kind::min, algorithm::knomial, false);
    };
    each(int8_t{});
    each(uint16_t{});
    each(int32_t{});
    each(int64_t{});
    each(uint64_t{});
    each(float{});
    each(double{});
}

// Large uneven blocks (rendezvous transfers), through the ring and the linear schedules.
TEST_P(CollVariants, LargeUnevenBlocks)
{
    const v_shape s{1, 50000, 7};
    check_allgatherv<float>(world, s, algorithm::ring, false);
    check_allgatherv<float>(world, s, algorithm::linear, true);
    check_alltoallv<double>(world, v_shape{2, 20000, 5}, algorithm::pairwise, false);
    check_gatherv<int32_t>(world, s, GetParam() - 1, algorithm::linear, false);
    check_scatterv<int32_t>(world, s, 0, algorithm::linear, false);
    check_reduce_scatterv<float>(world, s, coll::op_kind::sum, algorithm::ring, false);
}

// Every v-variant started on every rank together with other collectives, all in flight at
// once, then driven together: the tags keep them apart.
TEST_P(CollVariants, NonblockingInFlightWithOtherCollectives)
{
    const int p = GetParam();
    const v_shape s{1, 2, 3};
    const std::vector<size_t> counts = s.column(p, 0);
    const v_blocks blocks(counts, s.gap);
    struct rank_buffers {
        std::vector<int32_t> own, gathered, all_in, all_out, allreduce, reduced, scattered,
            gathered_v;
    };
    std::vector<rank_buffers> b(static_cast<size_t>(p));
    const v_blocks packed(counts, 0);  // reduce_scatter's blocks
    const size_t total = packed.extent;
    for (int r = 0; r < p; ++r) {
        auto &x = b[size_t(r)];
        for (size_t k = 0; k < counts[size_t(r)]; ++k)
            x.own.push_back(payload<int32_t>(r, k));
        x.gathered.assign(blocks.extent + 1, untouched<int32_t>);
        x.gathered_v.assign(blocks.extent + 1, untouched<int32_t>);
        x.allreduce.assign(5, r + 1);
        for (size_t i = 0; i < total; ++i)
            x.all_in.push_back(input<int32_t>(r, i, coll::op_kind::sum));
        x.reduced.assign(counts[size_t(r)] + 1, untouched<int32_t>);
        x.scattered.assign(counts[size_t(r)] + 1, untouched<int32_t>);
    }
    const std::vector<int32_t> root_blocks = spread<int32_t>(blocks, [](int i, size_t k) {
        return payload<int32_t>(i, k);
    });
    std::vector<coll::request> requests;
    for (int r = 0; r < p; ++r) {
        auto &x                        = b[size_t(r)];
        const coll::communicator &comm = world.comm(r);
        const size_t mine              = counts[size_t(r)];
        requests.push_back(
            comm.iallgatherv(x.own.data(), mine, x.gathered.data(), counts, blocks.displs));
        requests.push_back(comm.iallreduce(x.allreduce.data(), x.allreduce.data(), 5, coll::sum));
        requests.push_back(
            comm.ireduce_scatter(x.all_in.data(), x.reduced.data(), counts, coll::sum));
        requests.push_back(comm.ibarrier());
        requests.push_back(
            comm.igatherv(x.own.data(), mine, x.gathered_v.data(), counts, blocks.displs, p - 1));
        requests.push_back(
            comm.iscatterv(root_blocks.data(), counts, blocks.displs, x.scattered.data(), mine, 0));
        requests.push_back(comm.ialltoallv(x.own.data(), std::vector<size_t>(size_t(p), 0), {},
                                           x.all_out.data(), std::vector<size_t>(size_t(p), 0),
                                           {}));
    }
    local_world::drive(requests);
    const std::vector<int32_t> gathered = spread<int32_t>(blocks, [](int i, size_t k) {
        return payload<int32_t>(i, k);
    });
    for (int r = 0; r < p; ++r) {
        auto &x                = b[size_t(r)];
        const std::string what = "rank " + std::to_string(r);
        EXPECT_TRUE(same_buffer(x.gathered, gathered, "allgatherv " + what));
        EXPECT_EQ(x.allreduce, std::vector<int32_t>(5, p * (p + 1) / 2)) << what;
        for (size_t k = 0; k < counts[size_t(r)]; ++k) {
            EXPECT_EQ(x.reduced[k],
                      reference<int32_t>(p, packed.at[size_t(r)] + k, coll::op_kind::sum))
                << "reduce_scatter " << what;
            EXPECT_EQ(x.scattered[k], payload<int32_t>(r, k)) << "scatterv " << what;
        }
        if (r == p - 1)
            EXPECT_TRUE(same_buffer(x.gathered_v, gathered, "gatherv " + what));
    }
}

// Persistent v-variants: made once, started three times on new contents, interleaved with an
// ordinary call.
TEST_P(CollVariants, PersistentStartedAgain)
{
    const int p = GetParam();
    const v_shape s{2, 3, 1};
    const std::vector<size_t> counts = s.column(p, 0);
    const v_blocks blocks(counts, s.gap);
    std::vector<std::vector<float>> own(static_cast<size_t>(p)), all(static_cast<size_t>(p)),
        reduced(static_cast<size_t>(p)), input_all(static_cast<size_t>(p));
    const size_t total = v_blocks(counts, 0).extent;
    std::vector<coll::persistent> gather_plans, reduce_plans;
    for (int r = 0; r < p; ++r) {
        own[size_t(r)].assign(counts[size_t(r)], 0.f);
        all[size_t(r)].assign(blocks.extent + 1, untouched<float>);
        input_all[size_t(r)].assign(total, 0.f);
        reduced[size_t(r)].assign(counts[size_t(r)] + 1, untouched<float>);
        gather_plans.push_back(
            world.comm(r).allgatherv_init(own[size_t(r)].data(), counts[size_t(r)],
                                          all[size_t(r)].data(), counts, blocks.displs));
        reduce_plans.push_back(world.comm(r).reduce_scatter_init(input_all[size_t(r)].data(),
                                                                 reduced[size_t(r)].data(), counts,
                                                                 coll::sum));
        EXPECT_EQ(gather_plans.back().which(), collective::allgatherv);
        EXPECT_EQ(reduce_plans.back().which(), collective::reduce_scatterv);
    }
    for (int round = 0; round < 3; ++round) {
        for (int r = 0; r < p; ++r) {
            for (size_t k = 0; k < counts[size_t(r)]; ++k)
                own[size_t(r)][k] = float(round * 100 + r * 10) + float(k);
            for (size_t i = 0; i < total; ++i)
                input_all[size_t(r)][i] = float(round + r) + float(i);
        }
        std::vector<coll::request> requests;
        for (int r = 0; r < p; ++r) {
            requests.push_back(gather_plans[size_t(r)].start());
            requests.push_back(world.comm(r).ibarrier());
            requests.push_back(reduce_plans[size_t(r)].start());
        }
        local_world::drive(requests);
        const auto expected = spread<float>(blocks, [&](int i, size_t k) {
            return float(round * 100 + i * 10) + float(k);
        });
        const v_blocks packed(counts, 0);
        for (int r = 0; r < p; ++r) {
            ASSERT_TRUE(same_buffer(all[size_t(r)], expected,
                                    "persistent allgatherv round " + std::to_string(round)));
            for (size_t k = 0; k < counts[size_t(r)]; ++k) {
                float sum = 0;
                for (int q = 0; q < p; ++q)
                    sum += float(round + q) + float(packed.at[size_t(r)] + k);
                ASSERT_EQ(reduced[size_t(r)][k], sum)
                    << "persistent reduce_scatter round " << round;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollVariants, ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8),
                         [](const auto &info) { return "ranks" + std::to_string(info.param); });

// ---------------------------------------------------------------- errors

/// Issues @p issue on every rank, drives them until rank @p detecting completed (and the others
/// a little longer), and returns the status and message of every rank ("" while running).
std::vector<std::pair<ucs_status_t, std::string>> outcomes(
    local_world &world, const std::function<coll::request(int)> &issue, int detecting)
{
    std::vector<coll::request> requests;
    for (int r = 0; r < world.size(); ++r)
        requests.push_back(issue(r));
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
        bool all_done = true;
        for (auto &req : requests)
            all_done = req.test() && all_done;
        if (all_done || (requests[size_t(detecting)].done() &&
                         std::chrono::steady_clock::now() > deadline - 15s)) {
            break;
        }
    }
    std::vector<std::pair<ucs_status_t, std::string>> out;
    for (auto &req : requests)
        out.emplace_back(req.status(), req.error());
    return out;
}

/// Rank @p r failed with UCS_ERR_MESSAGE_TRUNCATED and a message that contains @p needles.
void expect_truncated(const std::vector<std::pair<ucs_status_t, std::string>> &got, int r,
                      std::initializer_list<const char *> needles)
{
    ASSERT_EQ(got[size_t(r)].first, UCS_ERR_MESSAGE_TRUNCATED)
        << "rank " << r << ": " << got[size_t(r)].second;
    for (const char *needle : needles) {
        EXPECT_NE(got[size_t(r)].second.find(needle), std::string::npos)
            << got[size_t(r)].second << " (looked for: " << needle << ")";
    }
    EXPECT_NE(got[size_t(r)].second.find("different counts"), std::string::npos);
}

// A rank whose counts disagree with its peers' fails the collective with an error naming the
// rank it received from, whether the message came longer or shorter, or empty.
TEST(CollVariantsErrors, CountsThatDisagreeNameTheRank)
{
    // gatherv: the root expects 5 elements from rank 2, which sends 3 (and rank 1 sends 2
    // where 0 are expected).
    {
        local_world world(4);
        std::vector<int32_t> own(8, 1), recv(64, 0);
        const std::vector<size_t> root_counts{1, 0, 5, 1};
        const std::vector<size_t> sends{1, 2, 3, 1};
        auto got = outcomes(
            world,
            [&](int r) {
                return world.comm(r).igatherv(own.data(), sends[size_t(r)], recv.data(),
                                              root_counts, {}, 0, with(algorithm::linear));
            },
            0);
        expect_truncated(got, 0, {"(this rank) expected"});
        const std::string &m = got[0].second;
        EXPECT_TRUE(m.find("rank 2 sent 12 bytes where rank 0 (this rank) expected 20") !=
                        std::string::npos ||
                    m.find("rank 1 sent more than the 0 bytes rank 0 (this rank) expected") !=
                        std::string::npos)
            << m;
    }
    // scatterv: rank 3 expects 4 elements, the root sends it 2.
    {
        local_world world(4);
        std::vector<int32_t> blocks(64, 1), recv(8, 0);
        const std::vector<size_t> root_counts{1, 1, 1, 2}, mine{1, 1, 1, 4};
        auto got = outcomes(
            world,
            [&](int r) {
                return world.comm(r).iscatterv(blocks.data(), root_counts, {}, recv.data(),
                                               mine[size_t(r)], 0);
            },
            3);
        expect_truncated(got, 3, {"rank 0 sent 8 bytes where rank 3 (this rank) expected 16"});
    }
    // alltoallv: rank 1 sends rank 2 three elements, rank 2 expects one.
    {
        local_world world(3);
        std::vector<int32_t> send(64, 1), recv(64, 0);
        auto got = outcomes(
            world,
            [&](int r) {
                std::vector<size_t> out(3, 1), in(3, 1);
                if (r == 1)
                    out[2] = 3;
                return world.comm(r).ialltoallv(send.data(), out, {}, recv.data(), in, {});
            },
            2);
        expect_truncated(got, 2, {"rank 1 sent more than the 4 bytes rank 2 (this rank) expected"});
    }
    // allgatherv, ring: rank 0's block is 2 elements to every rank but rank 2, which counts 6;
    // its left neighbour forwards the block, and the message says so.
    for (algorithm algo : {algorithm::ring, algorithm::linear}) {
        local_world world(4);
        std::vector<std::vector<int32_t>> recv(4, std::vector<int32_t>(64, 0));
        std::vector<int32_t> own(8, 1);
        auto got = outcomes(
            world,
            [&](int r) {
                std::vector<size_t> counts{2, 1, 1, 1};
                if (r == 2)
                    counts[0] = 6;
                return world.comm(r).iallgatherv(own.data(), counts[size_t(r)],
                                                 recv[size_t(r)].data(), counts, {}, with(algo));
            },
            2);
        if (algo == algorithm::ring) {
            expect_truncated(
                got, 2, {"rank 1 sent 8 bytes where rank 2 (this rank) expected 24 (for block 0"});
        } else {
            expect_truncated(got, 2, {"rank 0 sent 8 bytes where rank 2 (this rank) expected 24"});
        }
    }
    // reduce_scatter with counts: rank 1 gives 3 counts that sum alike but split differently.
    for (algorithm algo : {algorithm::ring, algorithm::knomial}) {
        local_world world(3);
        std::vector<std::vector<float>> data(3, std::vector<float>(16, 1.f));
        auto got = outcomes(
            world,
            [&](int r) {
                const std::vector<size_t> counts = r == 1 ? std::vector<size_t>{2, 2, 2}
                                                          : std::vector<size_t>{1, 2, 4};
                return world.comm(r).ireduce_scatter(data[size_t(r)].data(),
                                                     data[size_t(r)].data() + 8, counts, coll::sum,
                                                     with(algo));
            },
            1);
        bool someone = false;
        for (const auto &[status, message] : got) {
            if (status == UCS_ERR_MESSAGE_TRUNCATED) {
                someone = true;
                EXPECT_NE(message.find("different counts"), std::string::npos) << message;
            }
        }
        if (algo == algorithm::ring)
            EXPECT_TRUE(someone) << "a ring with blocks of other sizes completed";
        // k-nomial moves whole vectors of the same total: the split is not seen (as in MPI,
        // counts that disagree are erroneous, and not every disagreement is detected).
    }
}

TEST(CollVariantsErrors, BadArgumentsAreClearErrors)
{
    local_world world(3);
    std::vector<int32_t> buf(64, 0);
    auto expect_invalid = [](auto &&call, const std::string &needle) {
        try {
            call();
            ADD_FAILURE() << "accepted: " << needle;
        } catch (const ucp_cpp::ucx_error &e) {
            EXPECT_EQ(e.status(), UCS_ERR_INVALID_PARAM) << e.what();
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    const coll::communicator &c = world.comm(1);
    int32_t *b                  = buf.data();
    expect_invalid([&] { (void)c.iallgatherv(b, 1, b, {1, 1}, {}); },
                   "coll::allgatherv: recv_counts has 2 values for a communicator of size 3");
    expect_invalid([&] { (void)c.iallgatherv(b, 1, b, {1, 1, 1}, {0, 1}); },
                   "coll::allgatherv: displs has 2 values");
    expect_invalid([&] { (void)c.iallgatherv(b, 2, b, {1, 1, 1}, {}); },
                   "send_count = 2 differs from recv_counts[1] = 1");
    expect_invalid([&] { (void)c.ialltoallv(b, {1, 2, 1}, {}, b + 8, {1, 1, 1}, {}); },
                   "coll::alltoallv: send_counts[rank] = 2 differs from recv_counts[1] = 1");
    expect_invalid([&] { (void)c.ialltoallv(b, {1, 1, 1}, {}, b + 8, {1, 1, 1, 1}, {}); },
                   "recv_counts has 4 values");
    expect_invalid([&] { (void)c.igatherv(b, 1, b, {1, 1, 1}, {}, 3); },
                   "coll::gatherv: root 3 is not a rank");
    expect_invalid([&] { (void)c.iscatterv(b, {1, 1, 1}, {}, b, 1, -1); },
                   "coll::scatterv: root -1 is not a rank");
    expect_invalid([&] { (void)c.iscatterv(b, {1, 1}, {}, b, 1, 1); },
                   "coll::scatterv: send_counts has 2 values");
    expect_invalid([&] { (void)c.igatherv(b, 2, b, {1, 1, 1}, {}, 1); },
                   "coll::gatherv: send_count = 2 differs from recv_counts[1] = 1");
    expect_invalid([&] { (void)c.ireduce_scatter(b, b, {1, 1}, coll::sum); },
                   "coll::reduce_scatterv: recv_counts has 2 values");
    expect_invalid([&] { (void)c.iallgatherv(b, 1, b, {1, 1, 1}, {}, with(algorithm::bruck)); },
                   "bruck does not implement it");
    expect_invalid(
        [&] { (void)c.ialltoallv(b, {1, 1, 1}, {}, b + 8, {1, 1, 1}, {}, with(algorithm::ring)); },
        "ring does not implement it");
    // Non-roots' root arguments are ignored: empty ones are fine (and nothing was issued by
    // the calls above, so the three ranks still agree on their sequence numbers).
    std::vector<std::vector<int32_t>> out(3, std::vector<int32_t>(8, 0));
    world.run([&](int r) {
        return world.comm(r).igatherv(out[size_t(r)].data(), 1,
                                      r == 0 ? buf.data() : static_cast<int32_t *>(nullptr),
                                      r == 0 ? coll::counts_view(std::vector<size_t>{1, 1, 1})
                                             : coll::counts_view(),
                                      {}, 0);
    });
}

}  // namespace
}  // namespace coll_test
