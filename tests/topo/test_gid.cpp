// The GID rule shared by gdr_rc and gdr-doctor, over sysfs GID tables and in-memory tables.
#include "gdr_topo.hpp"

#include <algorithm>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cstring>

using namespace gdr::topo;

namespace {

std::string fixture(const std::string &name)
{
    return std::string(GDR_FIXTURES_DIR) + "/" + name;
}

gdr_gid_entry_t entry(unsigned index, const char *ipv6, gdr_gid_type_t type)
{
    gdr_gid_entry_t e{};
    e.index = index;
    e.type  = type;
    EXPECT_EQ(inet_pton(AF_INET6, ipv6, e.raw), 1) << ipv6;
    return e;
}

ucs_status_t select_from(const std::vector<gdr_gid_entry_t> &table, bool ethernet,
                         int override_index, gdr_gid_selection_t *out, gdr_reason_t *reason)
{
    return gdr_select_gid_from_table(table.data(), table.size(), ethernet, override_index, out,
                                     reason);
}

}  // namespace

TEST(GidTable, ReadsRoceTableFromSysfs)
{
    SysRoot sys(fixture("two_socket"));
    RdmaPort port = read_port(sys, "mlx5_0", 1);
    EXPECT_TRUE(port.is_active());
    EXPECT_EQ(port.state, "ACTIVE");
    EXPECT_EQ(port.phys_state, "LinkUp");
    EXPECT_EQ(port.rate, "100 Gb/sec (4X EDR)");
    EXPECT_TRUE(port.is_ethernet());
    EXPECT_EQ(port.netdev, "ens1f0np0");
    EXPECT_EQ(port.netdev_mtu, 1500);
    EXPECT_EQ(port.derived_active_mtu(), 1024);
    ASSERT_EQ(port.gids.size(), 4u) << "the two empty slots are skipped";
    EXPECT_EQ(port.gids[0].type, GidType::RoCEv1);
    EXPECT_EQ(port.gids[3].type, GidType::RoCEv2);
    EXPECT_EQ(port.gids[3].address(), "::ffff:10.0.0.5");
    EXPECT_TRUE(port.gids[3].is_ipv4_mapped());
    EXPECT_TRUE(port.gids[0].is_link_local());
    EXPECT_EQ(list_ports(sys, "mlx5_0"), std::vector<unsigned>{1});
}

TEST(GidTable, OnlyRoceV2GidAtIndex3IsChosen)
{
    gdr_gid_selection_t sel;
    gdr_reason_t why;
    ASSERT_EQ(gdr_select_gid(fixture("two_socket").c_str(), "mlx5_0", 1, -1, &sel, &why), UCS_OK);
    EXPECT_EQ(sel.index, 3);
    EXPECT_EQ(sel.type, GDR_GID_TYPE_ROCE_V2);
    EXPECT_NE(std::strstr(why.text, "RoCE v2, IPv4-mapped ::ffff:10.0.0.5 on ens1f0np0"), nullptr)
        << why.text;
}

TEST(GidTable, InfinibandUsesIndexZero)
{
    gdr_gid_selection_t sel;
    gdr_reason_t why;
    ASSERT_EQ(gdr_select_gid(fixture("dgx").c_str(), "mlx5_0", 1, -1, &sel, &why), UCS_OK);
    EXPECT_EQ(sel.index, 0);
    EXPECT_EQ(sel.type, GDR_GID_TYPE_IB);
    EXPECT_NE(std::strstr(why.text, "InfiniBand"), nullptr) << why.text;
}

TEST(GidTable, ExplicitIndexOverridesTheRule)
{
    const std::string root = fixture("two_socket");
    gdr_gid_selection_t sel;
    gdr_reason_t why;
    ASSERT_EQ(gdr_select_gid(root.c_str(), "mlx5_0", 1, 1, &sel, &why), UCS_OK);
    EXPECT_EQ(sel.index, 1);
    EXPECT_EQ(sel.type, GDR_GID_TYPE_ROCE_V1);
    EXPECT_NE(std::strstr(why.text, "requested explicitly"), nullptr) << why.text;
    EXPECT_EQ(gdr_select_gid(root.c_str(), "mlx5_0", 1, 4, &sel, &why), UCS_ERR_INVALID_PARAM)
        << "slot 4 is empty";
    EXPECT_EQ(sel.index, -1);
    EXPECT_EQ(gdr_select_gid(root.c_str(), "mlx5_0", 1, 200, &sel, &why), UCS_ERR_INVALID_PARAM);
    EXPECT_EQ(gdr_select_gid(root.c_str(), "nosuchdev", 1, -1, &sel, &why), UCS_ERR_NO_DEVICE);
    EXPECT_STREQ(why.text, "no RDMA device nosuchdev");
    EXPECT_EQ(gdr_select_gid(root.c_str(), "mlx5_0", 7, -1, &sel, &why), UCS_ERR_NO_ELEM)
        << "no port 7";
}

TEST(GidRule, PreferenceOrder)
{
    const auto v1 = GDR_GID_TYPE_ROCE_V1, v2 = GDR_GID_TYPE_ROCE_V2;
    std::vector<gdr_gid_entry_t> table = {entry(0, "fe80::1", v1),
                                          entry(1, "fe80::1", v2),
                                          entry(2, "2001:db8::7", v1),
                                          entry(3, "2001:db8::7", v2),
                                          entry(4, "::ffff:192.0.2.9", v1),
                                          entry(5, "::ffff:192.0.2.9", v2),
                                          entry(6, "::ffff:192.0.2.10", v2)};
    gdr_gid_selection_t sel;
    gdr_reason_t why;
    // Each round removes the winner: IPv4 v2 (lowest index first), IPv6 global v2,
    // link-local v2, then v1 (lowest index).
    for (int expected : {5, 6, 3, 1, 0, 2, 4}) {
        ASSERT_EQ(select_from(table, true, -1, &sel, &why), UCS_OK);
        EXPECT_EQ(sel.index, expected) << why.text;
        table.erase(std::find_if(table.begin(), table.end(), [&](const gdr_gid_entry_t &e) {
            return static_cast<int>(e.index) == expected;
        }));
    }
    EXPECT_EQ(select_from(table, true, -1, &sel, &why), UCS_ERR_NO_ELEM);
    EXPECT_EQ(sel.index, -1);
    EXPECT_NE(std::strstr(why.text, "no IP address"), nullptr) << why.text;
}

TEST(GidRule, ReasonsSayWhy)
{
    gdr_gid_selection_t sel;
    gdr_reason_t why;
    ASSERT_EQ(select_from({entry(0, "fe80::1", GDR_GID_TYPE_ROCE_V1)}, true, -1, &sel, &why),
              UCS_OK);
    EXPECT_NE(std::strstr(why.text, "not routable"), nullptr) << why.text;
    ASSERT_EQ(select_from({entry(2, "fe80::1", GDR_GID_TYPE_ROCE_V2)}, true, -1, &sel, &why),
              UCS_OK);
    EXPECT_NE(std::strstr(why.text, "link-local"), nullptr) << why.text;
    // An all-zero entry is an empty slot, not a GID.
    gdr_gid_entry_t zero{};
    zero.type = GDR_GID_TYPE_ROCE_V2;
    EXPECT_EQ(select_from({zero}, true, -1, &sel, &why), UCS_ERR_NO_ELEM);
    EXPECT_EQ(gdr_select_gid_from_table(nullptr, 1, 1, -1, &sel, &why), UCS_ERR_INVALID_PARAM);
    EXPECT_EQ(gdr_select_gid_from_table(nullptr, 0, 1, -1, nullptr, nullptr), UCS_ERR_INVALID_PARAM)
        << "a NULL reason is allowed";
}
