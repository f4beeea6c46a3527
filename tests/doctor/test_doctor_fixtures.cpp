// gdr-doctor on the synthetic boxes of tests/fixtures: each seed case gives its finding,
// with a fix, and the exit status that goes with it.
#include "doctor_run.hpp"

#include <algorithm>

using nlohmann::json;

namespace {

void expect_fix_on_every_problem(const DoctorRun &run)
{
    for (const auto &f : run.json.at("findings")) {
        if (f.at("status") == "warn" || f.at("status") == "fail") {
            EXPECT_TRUE(f.at("fix").is_string() && !f.at("fix").get<std::string>().empty())
                << f.dump();
        }
    }
}

bool contains(const json &j, const std::string &key, const std::string &text)
{
    return j.at(key).get<std::string>().find(text) != std::string::npos;
}

}  // namespace

TEST(DoctorFixtures, DgxBoxIsReady)
{
    DoctorRun run = run_doctor("--json --root " + fixture("dgx"));
    EXPECT_EQ(run.exit_status, 0) << run.out;
    EXPECT_EQ(run.json.at("verdict"), "ready");
    EXPECT_EQ(run.json.at("schema"), "gdr-doctor/1");
    EXPECT_EQ(run.json.at("live"), false);
    const json &topo = run.json.at("topology");
    ASSERT_EQ(topo.at("devices").size(), 7u);
    EXPECT_EQ(topo.at("devices")[3].at("name"), "mlx5_0");
    EXPECT_EQ(topo.at("matrix")[0], json({"X", "PXB", "SYS", "PIX", "SYS", "PHB", "NODE"}));
    EXPECT_EQ(topo.at("matrix")[1][3], "PXB");
    EXPECT_EQ(topo.at("devices")[2].at("socket"), 1);
    EXPECT_EQ(run.finding("topology.nearest", "GPU1").at("status"), "ok");
    EXPECT_TRUE(contains(run.finding("topology.nearest", "GPU1"), "message", "mlx5_0 is PXB"));
    EXPECT_EQ(run.finding("topology.acs", "GPU0<->mlx5_0").at("status"), "ok");
    EXPECT_EQ(run.finding("rdma.gid", "mlx5_2:1").at("status"), "ok");
    EXPECT_EQ(run.json.at("rdma_devices")[2].at("ports")[0].at("gid_selection").at("index"), 3);
    EXPECT_EQ(run.json.at("rdma_devices")[2].at("ports")[0].at("active_mtu"), 4096);
    // live probes are not run against a tree of another machine
    EXPECT_EQ(run.finding("ucx.plugin").at("status"), "unknown");
    EXPECT_EQ(run.finding("gpu.dmabuf", "GPU0").at("status"), "unknown");
}

TEST(DoctorFixtures, TwoSocketSeedCases)
{
    DoctorRun run = run_doctor("--json --root " + fixture("two_socket"));
    EXPECT_EQ(run.exit_status, 1) << run.out;
    EXPECT_EQ(run.json.at("verdict"), "degraded");
    expect_fix_on_every_problem(run);

    // GPU on NUMA 1, HCA on NUMA 0
    json numa = run.finding("topology.nearest", "GPU0");
    EXPECT_EQ(numa.at("status"), "warn");
    EXPECT_TRUE(contains(numa, "message", "GPU on NUMA 1, mlx5_0 on NUMA 0")) << numa.dump();
    EXPECT_TRUE(contains(numa, "fix", "numactl --cpunodebind=1")) << numa.dump();
    EXPECT_EQ(run.json.at("topology").at("nearest")[0].at("link"), "SYS");

    // RoCE port whose only v2 GID is at index 3
    json gid = run.finding("rdma.gid", "mlx5_0:1");
    EXPECT_EQ(gid.at("status"), "ok");
    EXPECT_TRUE(contains(gid, "message", "GID 3: RoCE v2, IPv4-mapped ::ffff:10.0.0.5"))
        << gid.dump();
    const json &port = run.json.at("rdma_devices")[0].at("ports")[0];
    EXPECT_EQ(port.at("gid_selection").at("index"), 3);
    EXPECT_EQ(port.at("gids").size(), 4u);
    EXPECT_EQ(port.at("gids")[3].at("type"), "RoCE v2");
    EXPECT_TRUE(contains(run.finding("rdma.gid_default", "mlx5_0:1"), "message", "perftest -x 3"));

    // netdev MTU 1500 -> RoCE MTU 1024
    json mtu = run.finding("rdma.mtu", "mlx5_0:1");
    EXPECT_EQ(mtu.at("status"), "warn");
    EXPECT_TRUE(contains(mtu, "fix", "mtu 9000")) << mtu.dump();
    EXPECT_EQ(port.at("active_mtu"), 1024);
    EXPECT_EQ(port.at("active_mtu_source"), "netdev MTU 1500");

    // no nvidia-peermem (and dma-buf cannot be confirmed from a tree)
    json peermem = run.finding("system.peermem");
    EXPECT_EQ(peermem.at("status"), "warn");
    EXPECT_TRUE(contains(peermem, "fix", "modprobe nvidia-peermem"));
    EXPECT_EQ(run.json.at("system").at("peermem").at("loaded"), false);

    // config space readable only to 64 bytes: ACS is "could not read", never a guess
    json acs = run.finding("topology.acs", "GPU0<->mlx5_0");
    EXPECT_EQ(acs.at("status"), "unknown");
    EXPECT_TRUE(contains(acs, "message", "could not read ACS")) << acs.dump();

    EXPECT_EQ(run.finding("system.memlock").at("status"), "warn");
    EXPECT_EQ(run.json.at("system").at("memlock").at("soft_limit"), 65536);
    EXPECT_EQ(run.finding("system.iommu").at("status"), "warn");
    EXPECT_EQ(run.json.at("system").at("iommu").at("mode"), "translated");
}

TEST(DoctorFixtures, AcsOnABridgeIsFound)
{
    DoctorRun run = run_doctor("--json --root " + fixture("acs"));
    EXPECT_EQ(run.exit_status, 1) << run.out;
    json acs = run.finding("topology.acs", "GPU0<->mlx5_0");
    EXPECT_EQ(acs.at("status"), "warn");
    EXPECT_TRUE(contains(acs, "message", "0000:02:00.0 (ACSCtl: SrcValid+ TransBlk- ReqRedir+"))
        << acs.dump();
    EXPECT_TRUE(contains(acs, "message", "0000:02:01.0")) << acs.dump();
    EXPECT_TRUE(contains(acs, "fix", "setpci -s 0000:02:00.0 ECAP_ACS+0x6.w=0000")) << acs.dump();
    const json &bridges = run.json.at("topology").at("nearest")[0].at("acs");
    ASSERT_EQ(bridges.size(), 3u);
    EXPECT_EQ(bridges[1].at("state"), "redirecting");
    EXPECT_EQ(bridges[1].at("control"), 0x1d);
    EXPECT_EQ(run.finding("system.iommu").at("status"), "ok");
    EXPECT_EQ(run.finding("system.peermem").at("status"), "ok");
    // only the ACS finding degrades this box
    for (const auto &f : run.json.at("findings")) {
        if (f.at("check") != "topology.acs") {
            EXPECT_TRUE(f.at("status") != "warn" && f.at("status") != "fail") << f.dump();
        }
    }
}

TEST(DoctorFixtures, NoRdmaDeviceIsNotReady)
{
    DoctorRun run = run_doctor("--json --root " + fixture("no_rdma"));
    EXPECT_EQ(run.exit_status, 2) << run.out;
    EXPECT_EQ(run.json.at("verdict"), "not ready");
    EXPECT_EQ(run.finding("rdma.devices").at("status"), "fail");
    EXPECT_EQ(run.finding("topology.nearest", "GPU0").at("status"), "info");
}

TEST(DoctorFixtures, ExplicitGidIndexIsShownAndJudged)
{
    DoctorRun run   = run_doctor("--json --gid-index 1 --root " + fixture("two_socket"));
    const json &sel = run.json.at("rdma_devices")[0].at("ports")[0].at("gid_selection");
    EXPECT_EQ(sel.at("index"), 1);
    EXPECT_EQ(sel.at("override"), 1);
    json gid = run.finding("rdma.gid", "mlx5_0:1");
    EXPECT_EQ(gid.at("status"), "warn") << "index 1 is RoCE v1";

    DoctorRun empty = run_doctor("--json --gid-index 5 --root " + fixture("two_socket"));
    EXPECT_EQ(empty.finding("rdma.gid", "mlx5_0:1").at("status"), "fail");
    EXPECT_EQ(empty.exit_status, 2);
}

TEST(DoctorFixtures, HumanReportHasSymbolsFixesAndVerdict)
{
    DoctorRun run = run_doctor("--root " + fixture("two_socket"), false);
    EXPECT_EQ(run.exit_status, 1);
    EXPECT_NE(run.out.find("\u26a0 GPU0: nearest RDMA device mlx5_0 is SYS"), std::string::npos)
        << run.out;
    EXPECT_NE(run.out.find("      fix: "), std::string::npos);
    EXPECT_NE(run.out.find("*  3    ::ffff:10.0.0.5"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("Verdict: degraded (exit 1)"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("GPU0    X     SYS     1     1"), std::string::npos) << run.out;
}

TEST(DoctorCli, NonexistentRootIsACleanError)
{
    DoctorRun run = run_doctor("--json --root /nonexistent/gdr-doctor-root", false);
    EXPECT_EQ(run.exit_status, 3);
    EXPECT_TRUE(run.out.empty()) << run.out;
    EXPECT_NE(run.err.find("--root /nonexistent/gdr-doctor-root: No such file or directory"),
              std::string::npos)
        << run.err;
}

TEST(DoctorCli, BadArgumentsAreUsageErrors)
{
    for (const char *args :
         {"--gid-index abc", "--gid-index -1", "--root", "--frobnicate", "--root /etc/hostname"}) {
        DoctorRun run = run_doctor(args, false);
        EXPECT_EQ(run.exit_status, 3) << args;
        EXPECT_NE(run.err.find("usage: gdr-doctor"), std::string::npos) << args << ": " << run.err;
    }
    DoctorRun help = run_doctor("--help", false);
    EXPECT_EQ(help.exit_status, 0);
    EXPECT_NE(help.out.find("exit status: 0 ready"), std::string::npos);
}

TEST(DoctorPlugin, LoadsTheBuiltPluginIntoUcx)
{
    const std::string plugin = GDR_TEST_PLUGIN;
    if (plugin.empty()) {
        GTEST_SKIP() << "the plugin is not part of this build";
    }
    DoctorRun run = run_doctor("--json --plugin " + shell_quote(plugin));
    json found    = run.finding("ucx.plugin");
    EXPECT_EQ(found.at("status"), "ok") << found.dump() << "\n" << run.err;
    EXPECT_EQ(run.json.at("ucx").at("plugin"), "loaded");
    const json &components = run.json.at("ucx").at("components");
    EXPECT_NE(std::find(components.begin(), components.end(), "gdr"), components.end());
}

TEST(DoctorPlugin, ReportsAPluginThatRefusesToRegister)
{
    const std::string plugin = GDR_TEST_PLUGIN_SKEW;
    if (plugin.empty()) {
        GTEST_SKIP() << "the ABI-skewed plugin is not part of this build";
    }
    DoctorRun run = run_doctor("--json --plugin " + shell_quote(plugin));
    EXPECT_EQ(run.exit_status, 2);
    EXPECT_EQ(run.json.at("ucx").at("plugin"), "not-registered");
    EXPECT_EQ(run.finding("ucx.plugin").at("status"), "fail");

    DoctorRun missing = run_doctor("--json --plugin /nonexistent/libuct_gdr.so");
    EXPECT_EQ(missing.json.at("ucx").at("plugin"), "not-found");
    EXPECT_TRUE(contains(missing.finding("ucx.plugin"), "message", "does not exist"));
}
