// Host tests of the plugin inside the installed UCX (no RDMA device needed).
#include "run_command.h"

#include <gtest/gtest.h>
#include <uct/api/uct.h>

#include <dlfcn.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <string>
#include <vector>

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

// Component gdr has an md per verbs device ("gdr_rxe0"); without one it lists none, and says
// nothing about it (PluginRdma.UcxInfoListsGdrRcOnDevice checks an md with its transport)
TEST(Plugin, ListsAnMdPerDeviceInUcxInfo)
{
    auto r = run_command(with_plugin(GDR_PLUGIN_PATH, "ucx_info -d"));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output.find("libuct_gdr:"), std::string::npos) << r.output;
    if (have_verbs_device()) {
        EXPECT_NE(r.output.find("# Memory domain: gdr_"), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("#     Component: gdr\n"), std::string::npos) << r.output;
    } else {
        EXPECT_EQ(r.output.find("Memory domain: gdr"), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("gdr"), std::string::npos) << "error spam:\n" << r.output;
    }
}

// md_open of a name that is not one of the component's mds: refused, naming the mds' form,
// never opened on some device anyway (in process: the plugin loaded by dlopen)
TEST(Plugin, MdOpenOfAnotherNameIsRefused)
{
    ASSERT_NE(dlopen(GDR_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL), nullptr) << dlerror();
    uct_component_h *components = nullptr;
    unsigned count              = 0;
    ASSERT_EQ(UCS_OK, uct_query_components(&components, &count));
    uct_component_h gdr = nullptr;
    for (unsigned i = 0; i < count; ++i) {
        uct_component_attr_t attr{};
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if (uct_component_query(components[i], &attr) == UCS_OK &&
            std::strcmp(attr.name, "gdr") == 0) {
            gdr = components[i];
        }
    }
    ASSERT_NE(gdr, nullptr) << "component gdr not registered";
    uct_md_config_t *config = nullptr;
    ASSERT_EQ(UCS_OK, uct_md_config_read(gdr, nullptr, nullptr, &config));
    for (const char *name : {"gdr", "gdr_", "ib", "rxe0", "gdr_no_such_device"}) {
        SCOPED_TRACE(name);
        uct_md_h md = nullptr;
        EXPECT_EQ(UCS_ERR_NO_DEVICE, uct_md_open(gdr, name, config, &md));
    }
    uct_config_release(config);
    uct_release_component_list(components);
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

}  // namespace
