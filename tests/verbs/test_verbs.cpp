// gdr_verbs without a device: the conversions, and opening or listing "every device" where there
// may be none.
#include "gdr_verbs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

TEST(Mtu, BytesAndBackAgree)
{
    for (unsigned bytes : {256u, 512u, 1024u, 2048u, 4096u}) {
        EXPECT_EQ(gdr_verbs_mtu_bytes(gdr_verbs_mtu_from_bytes(bytes)), bytes);
        EXPECT_EQ(gdr_verbs_mtu_bytes(gdr_verbs_mtu_from_bytes(bytes + 1)), bytes) << "rounds down";
    }
    EXPECT_EQ(gdr_verbs_mtu_bytes(gdr_verbs_mtu_from_bytes(8192)), 4096u);
    EXPECT_EQ(gdr_verbs_mtu_from_bytes(255), static_cast<enum ibv_mtu>(0));
    EXPECT_EQ(gdr_verbs_mtu_bytes(static_cast<enum ibv_mtu>(0)), 0u);
    EXPECT_EQ(gdr_verbs_mtu_bytes(static_cast<enum ibv_mtu>(9)), 0u);
}

// No device (or no verbs in the kernel) is not an error, for opening every device or listing them
// (what md gdr's query_resources shows): UCS_OK and whatever there is
TEST(OpenAllAndList, NoDeviceIsNotAnError)
{
    std::vector<gdr_device_t> devs(GDR_VERBS_MAX_DEVICES);
    std::vector<gdr_device_name_t> names(GDR_VERBS_MAX_DEVICES);
    unsigned count = ~0u, listed = ~0u;
    gdr_reason_t why;

    ASSERT_EQ(gdr_verbs_open_all(devs.data(), devs.size(), &count, &why), UCS_OK) << why.text;
    EXPECT_LE(count, devs.size());
    for (unsigned i = 0; i < count; ++i) {
        EXPECT_GT(devs[i].num_ports, 0u) << devs[i].name << ": opened without an active port";
        gdr_verbs_close(&devs[i]);
    }
    ASSERT_EQ(gdr_verbs_list(names.data(), names.size(), &listed, &why), UCS_OK) << why.text;
    EXPECT_EQ(listed, count);
    EXPECT_EQ(gdr_verbs_open_all(devs.data(), 0, &count, nullptr), UCS_OK)
        << "a NULL reason is allowed";
    EXPECT_EQ(count, 0u);
    EXPECT_EQ(gdr_verbs_list(names.data(), 0, &listed, nullptr), UCS_OK);
    EXPECT_EQ(listed, 0u);
}

// Opening one device by name (an md's device): a name that is no device is UCS_ERR_NO_DEVICE,
// says so, and leaves nothing to close; every device open_all opens opens by its name too
TEST(Open, ByNameOnlyWhatExists)
{
    gdr_device_t dev;
    gdr_reason_t why;

    std::memset(&dev, 0xff, sizeof(dev));
    EXPECT_EQ(gdr_verbs_open("no_such_device", &dev, &why), UCS_ERR_NO_DEVICE);
    EXPECT_NE(why.text[0], '\0');
    EXPECT_EQ(dev.ctx, nullptr) << "nothing open after a failure";
    EXPECT_EQ(dev.pd, nullptr);

    std::vector<gdr_device_t> devs(GDR_VERBS_MAX_DEVICES);
    unsigned count = 0;
    ASSERT_EQ(gdr_verbs_open_all(devs.data(), devs.size(), &count, &why), UCS_OK) << why.text;
    for (unsigned i = 0; i < count; ++i) {
        ASSERT_EQ(gdr_verbs_open(devs[i].name, &dev, &why), UCS_OK)
            << devs[i].name << ": " << why.text;
        EXPECT_STREQ(dev.name, devs[i].name);
        EXPECT_EQ(dev.num_ports, devs[i].num_ports);
        EXPECT_NE(dev.pd, nullptr);
        gdr_verbs_close(&dev);
        gdr_verbs_close(&devs[i]);
    }
}

}  // namespace
