// gdr-doctor on the live system.  Needs a verbs device: run in the Soft-RoCE VM
// (tests/rxe-vm/run ctest -L rdma), where rxe0 must be ACTIVE and the chosen GID must be the
// RoCE v2 IPv4 one ($RXE_GID_INDEX, computed by the VM's init).
#include "doctor_run.hpp"

#include <dirent.h>

namespace {

bool have_rdma_device()
{
    DIR *dir = ::opendir("/sys/class/infiniband");
    if (dir == nullptr) {
        return false;
    }
    bool found = false;
    while (struct dirent *e = ::readdir(dir)) {
        found = found || e->d_name[0] != '.';
    }
    ::closedir(dir);
    return found;
}

}  // namespace

TEST(DoctorLive, ReportsTheRdmaDeviceAndTheGidGdrRcUses)
{
    if (!have_rdma_device()) {
        GTEST_SKIP() << "no RDMA device in /sys/class/infiniband";
    }
    DoctorRun run = run_doctor("--json");
    ASSERT_GE(run.exit_status, 0);
    ASSERT_LE(run.exit_status, 2) << run.err;
    EXPECT_EQ(run.json.at("live"), true);
    const char *want = std::getenv("RXE_DEV");
    const std::string dev_name =
        want ? want : run.json.at("rdma_devices").at(0).at("name").get<std::string>();
    const nlohmann::json *dev = nullptr;
    for (const auto &d : run.json.at("rdma_devices")) {
        if (d.at("name") == dev_name) {
            dev = &d;
        }
    }
    ASSERT_NE(dev, nullptr) << dev_name << " not reported:\n" << run.out;
    const auto &port = dev->at("ports").at(0);
    EXPECT_EQ(port.at("state"), "ACTIVE") << port.dump(2);
    EXPECT_EQ(run.finding("rdma.port", dev_name + ":1").at("status"), "ok");
    EXPECT_TRUE(port.at("active_mtu").is_number()) << "ibv_query_port answered nothing";
    EXPECT_EQ(port.at("active_mtu_source"), "ibv_query_port");

    if (port.at("link_layer") == "Ethernet") {
        const auto &sel = port.at("gid_selection");
        ASSERT_TRUE(sel.at("index").is_number()) << sel.dump();
        int index                    = sel.at("index");
        const nlohmann::json *chosen = nullptr;
        for (const auto &g : port.at("gids")) {
            if (g.at("index") == index) {
                chosen = &g;
            }
        }
        ASSERT_NE(chosen, nullptr);
        EXPECT_EQ(chosen->at("type"), "RoCE v2");
        EXPECT_EQ(chosen->at("ipv4_mapped"), true) << chosen->dump();
        if (const char *expected = std::getenv("RXE_GID_INDEX")) {
            EXPECT_EQ(index, std::atoi(expected))
                << "the VM's init found the IPv4 RoCE v2 GID elsewhere";
        }
    }
    // The verbs probe ran and gave a definite answer about dma-buf.
    EXPECT_TRUE(dev->at("dmabuf_probe").at("result") == "supported" ||
                dev->at("dmabuf_probe").at("result") == "unsupported")
        << dev->dump(2);
    // UCX answered (the plugin may or may not be built yet: the report says which).
    EXPECT_EQ(run.finding("ucx.version").at("status"), "ok");
    nlohmann::json plugin = run.finding("ucx.plugin");
    EXPECT_TRUE(plugin.at("status") == "ok" || plugin.at("status") == "fail") << plugin.dump();
    EXPECT_FALSE(plugin.at("message").get<std::string>().empty());
}
