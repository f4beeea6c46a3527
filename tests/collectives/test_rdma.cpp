// rdma label: a small slice of the collectives suite over the gdr plugin's gdr_rc transport
// (UCX_TLS from COLL_TEST_TLS, default below), skipped without a verbs device.  Kept small: in
// CI it runs in a Soft-RoCE VM under TCG.  Run: tests/rxe-vm/run ctest -L rdma -R "^coll_rdma"
#include "coll_harness.hpp"

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

}  // namespace
}  // namespace coll_test
