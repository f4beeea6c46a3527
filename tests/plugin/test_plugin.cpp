// Host tests of the plugin inside the installed UCX (no RDMA device needed).
#include "run_command.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <infiniband/verbs.h>

namespace {

bool have_verbs_device()
{
    int n             = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (list != nullptr) {
        ibv_free_device_list(list);
    }
    return n > 0;
}

TEST(Plugin, RegistersMdGdrInUcxInfo)
{
    auto r = run_command(with_plugin(GDR_PLUGIN_PATH, "ucx_info -d"));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("# Memory domain: gdr\n#     Component: gdr"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("libuct_gdr:"), std::string::npos) << r.output;
    if (!have_verbs_device()) {
        // the md is listed with no transport resources, and nothing else is said
        auto md = r.output.substr(r.output.find("# Memory domain: gdr"));
        md      = md.substr(0, md.find("# Memory domain:", 5));
        EXPECT_NE(md.find("no supported devices found"), std::string::npos) << md;
        EXPECT_EQ(md.find("Transport: gdr_rc"), std::string::npos) << md;
        EXPECT_EQ(r.output.find("gdr_rc: "), std::string::npos) << "error spam:\n" << r.output;
    }
}

TEST(Plugin, ConfigTableInUcxInfo)
{
    auto r = run_command(with_plugin(GDR_PLUGIN_PATH, "ucx_info -c"));
    ASSERT_EQ(r.status, 0) << r.output;
    for (const char *var : {"UCX_GDR_GPU_DIRECT_RDMA=", "UCX_GDR_DMABUF=", "UCX_GDR_TX_QUEUE_LEN=",
                            "UCX_GDR_RX_QUEUE_LEN=", "UCX_GDR_RX_MAX_BUFS=", "UCX_GDR_SEG_SIZE=",
                            "UCX_GDR_MAX_INLINE=", "UCX_GDR_TIMEOUT=", "UCX_GDR_RETRY_COUNT=",
                            "UCX_GDR_RNR_RETRY_COUNT=", "UCX_GDR_GID_INDEX=", "UCX_GDR_MTU=",
                            "UCX_GDR_SL=", "UCX_GDR_TRAFFIC_CLASS="}) {
        EXPECT_NE(r.output.find(var), std::string::npos) << var << " missing";
    }
}

TEST(Plugin, WithoutPluginNoGdr)
{
    auto r = run_command("timeout 60 ucx_info -d");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output.find("Memory domain: gdr"), std::string::npos);
}

// A plugin built for another UCX minor release must refuse to register,
// say so in one line, and leave UCX working.
TEST(Plugin, AbiGuardRefusesMismatchedUcx)
{
    auto r = run_command(with_plugin(GDR_PLUGIN_SKEW_PATH, "ucx_info -d"));
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output.find("Memory domain: gdr"), std::string::npos) << r.output;
    auto pos = r.output.find("libuct_gdr: not registering component 'gdr': built for UCX 1.");
    ASSERT_NE(pos, std::string::npos) << r.output;
    EXPECT_NE(r.output.find("rebuild ucx-gdr against this UCX", pos), std::string::npos);
    EXPECT_EQ(r.output.find("libuct_gdr:", pos + 1), std::string::npos) << "more than one line";
    EXPECT_NE(r.output.find("Memory domain: self"), std::string::npos) << "UCX itself broke";
}

// A value UCX's parser cannot read is reported with the variable's name.
TEST(Plugin, GarbageConfigValueNamed)
{
    auto r = run_command(with_plugin(GDR_PLUGIN_PATH, "UCX_GDR_TX_QUEUE_LEN=lots ucx_info -c"));
    EXPECT_NE(r.output.find("Invalid value for TX_QUEUE_LEN: 'lots'"), std::string::npos)
        << r.output;
}

// UCX_GDR_GPU_DIRECT_RDMA=yes where it cannot be met: md open fails and says why.
TEST(Plugin, GpuDirectYesWithoutCudaFailsMdOpen)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (cuda == nullptr) {
        cuda = dlopen("libcuda.so.1", RTLD_LAZY);
    }
    if (cuda != nullptr) {
        GTEST_SKIP() << "libcuda present: the 'yes' verdict depends on the HCA (gpu/rdma tests)";
    }
    auto r = run_command(with_plugin(GDR_PLUGIN_PATH, "UCX_GDR_GPU_DIRECT_RDMA=yes ucx_info -d"));
    EXPECT_NE(r.output.find("failed to open memory domain gdr"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("GPUDirect RDMA required"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("libcuda.so.1"), std::string::npos) << r.output;
}

TEST(Plugin, ContradictoryGpuPolicyFailsMdOpen)
{
    auto r = run_command(
        with_plugin(GDR_PLUGIN_PATH, "UCX_GDR_GPU_DIRECT_RDMA=no UCX_GDR_DMABUF=yes ucx_info -d"));
    EXPECT_NE(r.output.find("failed to open memory domain gdr"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("UCX_GDR_DMABUF=yes contradicts UCX_GDR_GPU_DIRECT_RDMA=no"),
              std::string::npos)
        << r.output;
}

}  // namespace
