// rdma label: a small slice of the collectives suite over the gdr plugin's gdr_rc transport
// (UCX_TLS from COLL_TEST_TLS, default below), skipped without a verbs device.  Kept small: in
// CI it runs in a Soft-RoCE VM under TCG.  Run: tests/rxe-vm/run ctest -L rdma -R "^coll_rdma"
#include "../common/loopback_port.hpp"
#include "coll_processes.hpp"
#include "rdma_resources.hpp"

#include <cstdlib>
#include <filesystem>

namespace coll_test {
namespace {

class CollRdma : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::error_code ec;
        std::filesystem::directory_iterator it("/sys/class/infiniband", ec);
        if (ec || it == std::filesystem::directory_iterator()) {
            GTEST_SKIP() << "no verbs device (/sys/class/infiniband is empty)";
        }
        ucp_cpp::load_plugin(COLL_TEST_RDMA_PLUGIN);  // before the first context
        // gdr_rc for data, ud_verbs only to wire it up; UCX 1.13's ud_verbs drops every packet
        // on rxe unless its DGID check is off (docs/rxe-vm.md). The caller's values win.
        setenv("COLL_TEST_TLS", "gdr_rc,ud_verbs:aux,self", 0);
        setenv("UCX_UD_VERBS_ETH_DGID_CHECK", "n", 0);
    }
};

template <class T>
void allreduce_matches_reference(local_world &world, size_t count, coll::op_kind op,
                                 coll::algorithm algo)
{
    const int p = world.size();
    std::vector<std::vector<T>> data(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
        for (size_t i = 0; i < count; ++i)
            data[size_t(r)].push_back(input<T>(r, i, op));
    }
    coll::call_options options;
    options.algo = algo;
    world.run([&](int r) {
        return world.comm(r).iallreduce(data[size_t(r)].data(), data[size_t(r)].data(), count,
                                        op_object(op), options);
    });
    std::vector<T> expected(count);
    for (size_t i = 0; i < count; ++i)
        expected[i] = reference<T>(p, i, op);
    for (int r = 0; r < p; ++r) {
        ASSERT_TRUE(equal_elements(data[size_t(r)].data(), expected.data(), count,
                                   "rank " + std::to_string(r)));
    }
}

TEST_F(CollRdma, AllreduceAlgorithmsThreeRanks)
{
    local_world world(3);
    for (coll::op_kind op : {coll::op_kind::sum, coll::op_kind::max}) {
        allreduce_matches_reference<int32_t>(world, 7, op, coll::algorithm::recursive_doubling);
        allreduce_matches_reference<int32_t>(world, 7, op, coll::algorithm::ring);
    }
    allreduce_matches_reference<float>(world, (size_t(1) << 20) / sizeof(float), coll::op_kind::sum,
                                       coll::algorithm::automatic);
}

TEST_F(CollRdma, BcastAndAlltoallThreeRanks)
{
    local_world world(3);
    std::vector<std::vector<uint8_t>> buf(3, std::vector<uint8_t>(size_t(256) << 10));
    for (size_t i = 0; i < buf[1].size(); ++i)
        buf[1][i] = uint8_t(i * 7 + 3);
    world.run([&](int r) {
        return world.comm(r).ibcast(buf[size_t(r)].data(), buf[size_t(r)].size(), 1);
    });
    EXPECT_EQ(buf[0], buf[1]);
    EXPECT_EQ(buf[2], buf[1]);
    std::vector<std::vector<int64_t>> send(3), recv(3, std::vector<int64_t>(3 * 1000));
    for (int r = 0; r < 3; ++r) {
        for (int i = 0; i < 3 * 1000; ++i)
            send[size_t(r)].push_back(r * 100000 + i);
    }
    world.run([&](int r) {
        return world.comm(r).ialltoall(send[size_t(r)].data(), recv[size_t(r)].data(), 1000);
    });
    // every element: block `from` of rank r's output is block r of rank from's input
    for (int r = 0; r < 3; ++r) {
        std::vector<int64_t> expected;
        for (int from = 0; from < 3; ++from) {
            for (int i = 0; i < 1000; ++i)
                expected.push_back(from * 100000 + r * 1000 + i);
        }
        ASSERT_TRUE(equal_elements(recv[size_t(r)].data(), expected.data(), expected.size(),
                                   "alltoall rank " + std::to_string(r)));
    }
}

/// Rank @p r of the on-demand test: a ring allreduce (UCP_CPP_COLL_ALLREDUCE_ALGORITHM=ring),
/// then what the rank holds: {endpoints, RC QPs in the kernel's tracker for this pid}.
std::pair<int, long> ring_allreduce_and_count(coll::communicator world)
{
    const int p = world.size(), r = world.rank();
    std::vector<int64_t> data(4096);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = int64_t(r) * 1000 + int64_t(i);
    const auto start = std::chrono::steady_clock::now();
    auto req         = world.iallreduce(data.data(), data.data(), data.size(), coll::sum);
    // 8 processes on the VM's 2 emulated CPUs: the wireup of the first collective is slow.
    req.wait(3 * ucp_cpp_test::op_timeout);
    std::fprintf(stderr, "[rank %d] ring allreduce (with its wireup): %.1f s\n", r,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    PEER_CHECK(req.algorithm() == coll::algorithm::ring);
    for (size_t i = 0; i < data.size(); ++i)
        PEER_CHECK(data[i] == int64_t(p) * (p - 1) / 2 * 1000 + int64_t(p) * int64_t(i));
    return {world.connected_peers(), gdr_bench::rc_qps()};
}

// The collectives connect on demand.  8 ranks, one process each (the kernel counts
// QPs by pid), run a ring allreduce over gdr_rc; each must hold its 2 ring neighbours'
// endpoints and at most 2 RC QPs (at least 1: UCP 1.13 may serve one peer over the ud aux
// lane, docs/scale.md), where an engine connecting to every rank holds 7.
TEST_F(CollRdma, RingAllreduceOpensQpsToRingNeighboursOnly)
{
    constexpr int ranks = 8;
    setenv("UCP_CPP_COLL_ALLREDUCE_ALGORITHM", "ring", 1);
    struct unset {
        ~unset() { unsetenv("UCP_CPP_COLL_ALLREDUCE_ALGORITHM"); }
    } restore;
    const uint16_t port = gdr_test::free_loopback_port();
    const auto bound    = std::chrono::duration_cast<std::chrono::milliseconds>(
        3 * ucp_cpp_test::op_timeout);
    std::vector<std::unique_ptr<ucp_cpp_test::peer_process>> others;
    for (int r = 1; r < ranks; ++r) {
        others.push_back(
            std::make_unique<ucp_cpp_test::peer_process>([=](ucp_cpp_test::channel &control) {
                auto world        = join(rendezvous(r, ranks, port, bound));
                auto [peers, qps] = ring_allreduce_and_count(world);
                control.send_value(uint64_t(peers));
                control.send_value(uint64_t(qps));
                // Leave only once every rank finished: a rank that exits looks dead to a
                // neighbour still receiving from it.
                (void)control.recv_value(bound);
            }));
    }
    auto world        = join(rendezvous(0, ranks, port, bound));
    auto [peers, qps] = ring_allreduce_and_count(world);
    std::vector<std::pair<int, long>> held{{peers, qps}};
    for (auto &other : others) {
        const int their_peers = int(other->control().recv_value(bound));
        held.emplace_back(their_peers, long(other->control().recv_value(bound)));
    }
    for (auto &other : others)
        other->control().send_value(1);
    for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(held[size_t(r)].first, 2) << "rank " << r << ": endpoints";
        EXPECT_GE(held[size_t(r)].second, 1) << "rank " << r << ": RC QPs";
        EXPECT_LE(held[size_t(r)].second, 2) << "rank " << r << ": RC QPs";
        std::printf("rank %d: %d endpoints, %ld RC QPs\n", r, held[size_t(r)].first,
                    held[size_t(r)].second);
    }
    for (size_t i = 0; i < others.size(); ++i)
        EXPECT_EQ(others[i]->wait_exit_progressing(*world.owner(), bound), 0) << "rank " << i + 1;
}

}  // namespace
}  // namespace coll_test
