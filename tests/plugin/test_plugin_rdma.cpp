// The plugin on a real verbs device (the Soft-RoCE VM, or a host with an HCA).
#include "run_command.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

std::string first_device()
{
    int n             = 0;
    ibv_device **list = ibv_get_device_list(&n);
    std::string name  = (list != nullptr && n > 0) ? ibv_get_device_name(list[0]) : "";
    if (list != nullptr) {
        ibv_free_device_list(list);
    }
    return name;
}

TEST(PluginRdma, UcxInfoListsGdrRcOnDevice)
{
    const std::string dev = first_device();
    if (dev.empty()) {
        GTEST_SKIP() << "no verbs device";
    }
    auto r = run_command(with_plugin(GDR_PLUGIN_PATH, "ucx_info -d"));
    ASSERT_EQ(r.status, 0) << r.output;
    auto md = r.output.find("# Memory domain: gdr");
    ASSERT_NE(md, std::string::npos) << r.output;
    auto end     = r.output.find("# Memory domain:", md + 5);
    auto section = r.output.substr(md, end == std::string::npos ? std::string::npos : end - md);
    EXPECT_NE(section.find("Transport: gdr_rc"), std::string::npos) << section;
    EXPECT_NE(section.find("Device: " + dev + ":1"), std::string::npos) << section;
    EXPECT_NE(section.find("put_zcopy"), std::string::npos) << section;
    EXPECT_NE(section.find("am_bcopy"), std::string::npos) << section;
    EXPECT_NE(section.find("connection: to ep"), std::string::npos) << section;
}

// Out-of-range values are refused at iface open with the variable's name.
TEST(PluginRdma, OutOfRangeConfigFailsIfaceOpen)
{
    const std::string dev = first_device();
    if (dev.empty()) {
        GTEST_SKIP() << "no verbs device";
    }
    for (const char *bad : {"UCX_GDR_RETRY_COUNT=9", "UCX_GDR_MTU=3000", "UCX_GDR_GID_INDEX=999",
                            "UCX_GDR_TX_QUEUE_LEN=0", "UCX_GDR_RX_MAX_BUFS=0"}) {
        // -t gdr_rc: no other transport's interface is opened (five runs of a whole
        // `ucx_info -d` passed the test's 120 s in the VM at load average 18)
        auto r = run_command(
            with_plugin(GDR_PLUGIN_PATH, std::string(bad) + " ucx_info -d -t gdr_rc"));
        std::string var = std::string(bad).substr(0, std::string(bad).find('='));
        EXPECT_NE(r.output.find(var), std::string::npos) << bad << ":\n" << r.output;
        auto md = r.output.find("# Memory domain: gdr");
        ASSERT_NE(md, std::string::npos);
        auto end     = r.output.find("# Memory domain:", md + 5);
        auto section = r.output.substr(md, end - md);
        EXPECT_NE(section.find("failed to open interface"), std::string::npos)
            << bad << " was accepted:\n"
            << section;
        EXPECT_EQ(section.find("capabilities:"), std::string::npos) << bad << " was accepted";
    }
}

// UCX_GDR_GPU_DIRECT_RDMA=yes where it cannot be met: md open fails and says why.
// (an md needs a verbs device: component gdr has an md per device)
TEST(PluginRdma, GpuDirectYesWithoutCudaFailsMdOpen)
{
    if (first_device().empty()) {
        GTEST_SKIP() << "no verbs device";
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (cuda == nullptr) {
        cuda = dlopen("libcuda.so.1", RTLD_LAZY);
    }
    if (cuda != nullptr) {
        GTEST_SKIP() << "libcuda present: the 'yes' verdict depends on the HCA (gpu/rdma tests)";
    }
    // -t gdr_rc: every md is opened, no other transport's interface (seconds each in the VM)
    auto r = run_command(
        with_plugin(GDR_PLUGIN_PATH, "UCX_GDR_GPU_DIRECT_RDMA=yes ucx_info -d -t gdr_rc"));
    EXPECT_NE(r.output.find("failed to open memory domain gdr"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("GPUDirect RDMA required"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("libcuda.so.1"), std::string::npos) << r.output;
}

TEST(PluginRdma, ContradictoryGpuPolicyFailsMdOpen)
{
    if (first_device().empty()) {
        GTEST_SKIP() << "no verbs device";
    }
    auto r = run_command(
        with_plugin(GDR_PLUGIN_PATH,
                    "UCX_GDR_GPU_DIRECT_RDMA=no UCX_GDR_DMABUF=yes ucx_info -d -t gdr_rc"));
    EXPECT_NE(r.output.find("failed to open memory domain gdr"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("UCX_GDR_DMABUF=yes contradicts UCX_GDR_GPU_DIRECT_RDMA=no"),
              std::string::npos)
        << r.output;
}

// A verbs device whose md name would be longer than UCX's md names (15 characters) has no md,
// and a process says so once: UCP init (ucx_info -u t -p) lists the mds more than once (twice in
// UCX 1.13), the first listing warns, the later ones leave a debug line.  The device is added for the test: the VM only.
// Its name, 12 characters, still fits the ib md's names, so only md gdr leaves it out.
TEST(PluginRdma, DeviceWithTooLongAnMdNameIsWarnedOncePerProcess)
{
    if (std::getenv("RXE_VM") == nullptr || geteuid() != 0) {
        GTEST_SKIP() << "adds an rxe device: the Soft-RoCE VM only";
    }
    const std::string dev = "rxe_long_nm0", netdev = "gdrlongnet";
    struct Remove {
        std::string command;
        ~Remove() { run_command(command); }  // also when an assertion returns early
    } remove{"rdma link delete " + dev + "; ip link del " + netdev};
    auto r = run_command("ip link add " + netdev + " type dummy && ip addr add 198.18.0.1/24 dev " +
                         netdev + " && ip link set " + netdev + " up && rdma link add " + dev +
                         " type rxe netdev " + netdev +
                         " && for i in $(seq 150); do ibv_devinfo -d " + dev +
                         " | grep -q PORT_ACTIVE && exit 0; sleep 0.2; done; exit 1");
    ASSERT_EQ(r.status, 0) << dev << " not added or not ACTIVE within 30 s:\n" << r.output;

    r = run_command(with_plugin(GDR_PLUGIN_PATH, "UCX_LOG_LEVEL=debug ucx_info -u t -p"));
    ASSERT_EQ(r.status, 0) << r.output;
    const std::string report = "gdr: verbs device " + dev + " has no md: 'gdr_" + dev +
                               "' is longer than UCX's md names (15 characters)";
    unsigned warnings = 0, debug_lines = 0;
    for (size_t begin = 0, end; begin < r.output.size(); begin = end + 1) {
        end                     = std::min(r.output.find('\n', begin), r.output.size());
        const std::string line  = r.output.substr(begin, end - begin);
        const bool reports_this = line.find(report) != std::string::npos;
        warnings += reports_this && line.find(" WARN ") != std::string::npos;
        debug_lines += reports_this && line.find(" DEBUG ") != std::string::npos;
    }
    EXPECT_EQ(warnings, 1u) << r.output;
    EXPECT_GE(debug_lines, 1u) << "UCP init listed the mds once only?";
    std::printf("[   INFO   ] %u listings in one process: 1 warning, %u debug lines\n",
                warnings + debug_lines, debug_lines);
}

}  // namespace
