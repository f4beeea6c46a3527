// rdma label: gdr_perftest over the gdr plugin (gdr_rc, ud_verbs for wireup), short runs of
// tag_lat and put_bw with the byte accounting checked; skipped without a verbs device.
// PERFTEST_RDMA_TLS overrides the transports.
#include "perftest_run.hpp"

#include <filesystem>

namespace perftest_test {
namespace {

TEST(PerftestRdma, TagLatencyAndPutBandwidthOverGdrRc)
{
    std::error_code ec;
    std::filesystem::directory_iterator devices("/sys/class/infiniband", ec);
    if (ec || devices == std::filesystem::directory_iterator()) {
        GTEST_SKIP() << "no verbs device (/sys/class/infiniband is empty)";
    }
    ::setenv("UCX_UD_VERBS_ETH_DGID_CHECK", "n", 0);
    ::setenv("PERFTEST_RDMA_TLS", "gdr_rc,ud_verbs:aux", 0);
    scratch tmp;
    auto r = run_tool({"--plugin", GDR_PERFTEST_PLUGIN, "-x", std::getenv("PERFTEST_RDMA_TLS"),
                       "-t", "tag_lat,put_bw", "-s", "8,64K", "-n", "50", "-w", "5", "--timeout",
                       "60", "--json", tmp.path("r.json")},
                      {}, std::chrono::seconds(240));
    ASSERT_EQ(r.status, 0) << r.describe();
    std::printf("%s", r.out.c_str());
    auto doc = load_json(tmp.path("r.json"));
    EXPECT_EQ(doc["passed"], true);
    ASSERT_EQ(doc["results"].size(), 4u);
    for (const auto &row : doc["results"]) {
        const uint64_t size = row["size"], per_iter = row["test"] == "tag_lat" ? 2 : 1;
        EXPECT_EQ(row["bytes_verified"].get<uint64_t>(), per_iter * 50 * size) << row.dump();
        EXPECT_EQ(row["check"], "ok");
    }
}

}  // namespace
}  // namespace perftest_test
