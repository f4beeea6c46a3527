// The plugin on a real verbs device (the Soft-RoCE VM, or a host with an HCA).
#include "run_command.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <infiniband/verbs.h>
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

}  // namespace
