// PCI topology classification and ACS on the synthetic trees of tests/fixtures
// (see tests/fixtures/make_fixtures.py for the layout of each box).
#include "gdr_topo.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace gdr::topo;

namespace {

std::string fixture(const std::string &name)
{
    return std::string(GDR_FIXTURES_DIR) + "/" + name;
}

PciDevice pci(const SysRoot &sys, const std::string &bdf)
{
    std::string error;
    auto dev = read_pci_device(sys, bdf, &error);
    if (!dev) {
        ADD_FAILURE() << bdf << ": " << error;
        return {};
    }
    return *dev;
}

Link link_between(const SysRoot &sys, const std::string &a, const std::string &b)
{
    return classify(sys, pci(sys, a), pci(sys, b)).link;
}

const RdmaDevice &rdma(const Topology &topo, const std::string &name)
{
    for (const auto &dev : topo.rdma_devices) {
        if (dev.name == name) {
            return dev;
        }
    }
    throw std::runtime_error("no RDMA device " + name);
}

/// A fixture box with one GPU and what gdr_topo finds nearest to it.
struct OneGpuBox {
    explicit OneGpuBox(const std::string &name) : sys(fixture(name)), topo(Topology::discover(sys))
    {
        EXPECT_EQ(topo.gpus.size(), 1u) << name;
        if (!topo.gpus.empty()) {
            nearest = nearest_rdma_device(sys, topo, topo.gpus[0]);
        }
    }
    SysRoot sys;
    Topology topo;  // owns the device `nearest` points to
    std::optional<NearestRdma> nearest;
};

}  // namespace

TEST(PciAddress, ParsesOnlyCanonicalAddresses)
{
    auto addr = PciAddress::parse("0000:8a:1f.7");
    ASSERT_TRUE(addr);
    EXPECT_EQ(addr->bus, 0x8a);
    EXPECT_EQ(addr->device, 0x1f);
    EXPECT_EQ(addr->function, 7);
    EXPECT_EQ(addr->str(), "0000:8a:1f.7");
    for (const char *bad : {"", "0000:8a:1f", "0000:8a:20.0", "0000:8a:1f.8", "8a:1f.7",
                            "0000:8a:1f.7x", "pci0000:00", "zzzz:00:00.0"}) {
        EXPECT_FALSE(PciAddress::parse(bad)) << bad;
    }
}

TEST(Discover, DgxFindsGpusHcasAndSockets)
{
    SysRoot sys(fixture("dgx"));
    Topology topo = Topology::discover(sys);
    ASSERT_EQ(topo.gpus.size(), 3u);
    EXPECT_EQ(topo.gpus[0].bdf, "0000:05:00.0");
    EXPECT_EQ(topo.gpus[2].bdf, "0000:83:00.0");
    EXPECT_EQ(topo.gpus[2].numa_node, 1);
    ASSERT_EQ(topo.rdma_devices.size(), 4u);
    ASSERT_TRUE(rdma(topo, "mlx5_0").pci);
    EXPECT_EQ(rdma(topo, "mlx5_0").pci->bdf, "0000:06:00.0");
    EXPECT_EQ(rdma(topo, "mlx5_3").pci->path.front(), "pci0000:40");
    EXPECT_EQ(topo.numa_socket, (std::map<int, int>{{0, 0}, {1, 1}}));
}

// The five classes on one box, with config space readable (PCIe port types known) and as an
// unprivileged user sees it (64 bytes: the switch layout is inferred) - same answers.
class DgxClassification : public ::testing::TestWithParam<const char *> {};

TEST_P(DgxClassification, AllClassesOnOneBox)
{
    SysRoot sys(fixture(GetParam()));
    const std::string gpu0 = "0000:05:00.0", gpu1 = "0000:09:00.0", gpu2 = "0000:83:00.0";
    const std::string mlx5_0 = "0000:06:00.0", mlx5_1 = "0000:84:00.0", mlx5_2 = "0000:0a:00.0",
                      mlx5_3 = "0000:41:00.0";
    EXPECT_EQ(link_between(sys, gpu0, gpu0), Link::Self);
    EXPECT_EQ(link_between(sys, gpu0, mlx5_0), Link::PIX);
    EXPECT_EQ(link_between(sys, gpu1, mlx5_0), Link::PXB);
    EXPECT_EQ(link_between(sys, gpu0, gpu1), Link::PXB);
    EXPECT_EQ(link_between(sys, gpu0, mlx5_2), Link::PHB);
    EXPECT_EQ(link_between(sys, gpu0, mlx5_3), Link::NODE);
    EXPECT_EQ(link_between(sys, gpu0, mlx5_1), Link::SYS);
    EXPECT_EQ(link_between(sys, gpu2, mlx5_1), Link::PIX);
    EXPECT_EQ(link_between(sys, gpu2, mlx5_0), Link::SYS);
    // symmetric
    EXPECT_EQ(link_between(sys, mlx5_0, gpu1), Link::PXB);

    PciPath pxb = classify(sys, pci(sys, gpu1), pci(sys, mlx5_0));
    EXPECT_EQ(pxb.common_ancestor, "0000:01:00.0");
    EXPECT_EQ(pxb.switches, 3);
    EXPECT_EQ(pxb.bridges, (std::vector<std::string>{"0000:01:00.0", "0000:02:01.0", "0000:07:00.0",
                                                     "0000:08:00.0", "0000:02:00.0", "0000:03:00.0",
                                                     "0000:04:01.0"}));
    PciPath pix = classify(sys, pci(sys, gpu0), pci(sys, mlx5_0));
    EXPECT_EQ(pix.switches, 1);
    EXPECT_EQ(pix.common_ancestor, "0000:03:00.0");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DgxClassification, ::testing::Values("dgx", "dgx_user"));

TEST(Discover, NearestHcaPrefersTheClosest)
{
    SysRoot sys(fixture("dgx"));
    Topology topo                                            = Topology::discover(sys);
    const std::vector<std::pair<std::string, Link>> expected = {{"mlx5_0", Link::PIX},
                                                                {"mlx5_0", Link::PXB},
                                                                {"mlx5_1", Link::PIX}};
    for (size_t i = 0; i < topo.gpus.size(); ++i) {
        auto nearest = nearest_rdma_device(sys, topo, topo.gpus[i]);
        ASSERT_TRUE(nearest) << i;
        EXPECT_EQ(nearest->device->name, expected[i].first) << "GPU" << i;
        EXPECT_EQ(nearest->path.link, expected[i].second) << "GPU" << i;
    }
}

TEST(Discover, TwoSocketGpuAndHcaOnDifferentNodes)
{
    OneGpuBox box("two_socket");
    const auto &nearest = box.nearest;
    ASSERT_TRUE(nearest);
    EXPECT_EQ(nearest->device->name, "mlx5_0");
    EXPECT_EQ(nearest->path.link, Link::SYS);
    EXPECT_NE(nearest->path.explanation.find("NUMA nodes (1 and 0)"), std::string::npos)
        << nearest->path.explanation;
    // both root ports are crossed
    EXPECT_EQ(nearest->path.bridges, (std::vector<std::string>{"0000:80:01.0", "0000:00:02.0"}));
}

TEST(Discover, NoRdmaDevices)
{
    OneGpuBox box("no_rdma");
    EXPECT_TRUE(box.topo.rdma_devices.empty());
    EXPECT_FALSE(box.nearest);
}

TEST(Discover, MissingRootGivesAnEmptyBoxNotACrash)
{
    SysRoot sys("/nonexistent/gdr-topo-root");
    Topology topo = Topology::discover(sys);
    EXPECT_TRUE(topo.gpus.empty());
    EXPECT_TRUE(topo.rdma_devices.empty());
    std::string error;
    EXPECT_FALSE(read_pci_device(sys, "0000:00:00.0", &error));
    EXPECT_NE(error.find("no such PCI device"), std::string::npos) << error;
    EXPECT_FALSE(read_pci_device(sys, "not-a-bdf", &error));
    EXPECT_NE(error.find("not a PCI address"), std::string::npos) << error;
}

TEST(SysRoot, LinksLeavingTheTreeAreNotFollowed)
{
    namespace fs  = std::filesystem;
    fs::path root = fs::temp_directory_path() / ("gdr-topo-escape-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "sys/bus/pci/devices");
    fs::create_symlink("/sys/devices", root / "sys/bus/pci/devices/0000:00:00.0");
    SysRoot sys(root.string());
    EXPECT_FALSE(sys.resolve("/sys/bus/pci/devices/0000:00:00.0"));
    EXPECT_FALSE(read_pci_device(sys, "0000:00:00.0"));
    fs::remove_all(root);
}

TEST(Acs, RedirectingDownstreamPortsAreFound)
{
    OneGpuBox box("acs");
    const SysRoot &sys  = box.sys;
    const auto &nearest = box.nearest;
    ASSERT_TRUE(nearest);
    EXPECT_EQ(nearest->path.link, Link::PIX);
    std::vector<std::string> redirecting;
    for (const auto &bridge : nearest->path.bridges) {
        BridgeAcs acs = read_acs(sys, bridge);
        if (acs.blocks_p2p()) {
            redirecting.push_back(bridge);
        }
    }
    EXPECT_EQ(redirecting, (std::vector<std::string>{"0000:02:00.0", "0000:02:01.0"}));
    BridgeAcs ds = read_acs(sys, "0000:02:00.0");
    EXPECT_EQ(ds.state, BridgeAcs::State::Redirecting);
    EXPECT_EQ(ds.control, 0x001d);
    EXPECT_EQ(ds.detail, "ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ "
                         "EgressCtrl- DirectTrans-");
    EXPECT_EQ(read_acs(sys, "0000:00:01.0").state, BridgeAcs::State::Disabled);
    EXPECT_EQ(read_acs(sys, "0000:01:00.0").state, BridgeAcs::State::NotCapable);
}

TEST(Acs, UnprivilegedViewIsReportedAsUnreadable)
{
    SysRoot sys(fixture("dgx_user"));
    BridgeAcs acs = read_acs(sys, "0000:04:00.0");
    EXPECT_EQ(acs.state, BridgeAcs::State::Unreadable);
    EXPECT_NE(acs.detail.find("64 bytes"), std::string::npos) << acs.detail;
    EXPECT_EQ(read_acs(SysRoot(fixture("dgx")), "0000:04:00.0").state, BridgeAcs::State::Disabled);
    EXPECT_EQ(read_acs(sys, "0000:ff:00.0").state, BridgeAcs::State::Unreadable);
}

TEST(Acs, DecodesEveryControlBit)
{
    EXPECT_EQ(decode_acs_control(0x7f), "ACSCtl: SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ "
                                        "UpstreamFwd+ EgressCtrl+ DirectTrans+");
    EXPECT_EQ(decode_acs_control(0), "ACSCtl: SrcValid- TransBlk- ReqRedir- CmpltRedir- "
                                     "UpstreamFwd- EgressCtrl- DirectTrans-");
}

TEST(CApi, RdmaDevicePciAndClassify)
{
    const std::string root = fixture("dgx");
    gdr_pci_addr_t addr{};
    gdr_reason_t why;
    int numa = -2;
    ASSERT_EQ(gdr_topo_rdma_device_pci(root.c_str(), "mlx5_1", &addr, &numa, &why), UCS_OK);
    EXPECT_EQ(addr.bus, 0x84);
    EXPECT_EQ(numa, 1);
    EXPECT_STREQ(why.text, "") << "a success leaves no reason";
    EXPECT_EQ(gdr_topo_rdma_device_pci(root.c_str(), "mlx5_9", &addr, &numa, &why),
              UCS_ERR_NO_DEVICE);
    EXPECT_STREQ(why.text, "no RDMA device mlx5_9");
    EXPECT_EQ(gdr_topo_rdma_device_pci(root.c_str(), "../../etc", &addr, &numa, nullptr),
              UCS_ERR_NO_DEVICE);
    EXPECT_EQ(gdr_topo_rdma_device_pci(root.c_str(), nullptr, &addr, &numa, &why),
              UCS_ERR_INVALID_PARAM);

    gdr_topo_link_t link = GDR_TOPO_UNKNOWN;
    ASSERT_EQ(gdr_topo_classify(root.c_str(), "0000:09:00.0", "0000:06:00.0", &link, &why), UCS_OK);
    EXPECT_STREQ(gdr_topo_link_name(link), "PXB");
    EXPECT_EQ(gdr_topo_classify(root.c_str(), "0000:09:00.0", "0000:77:00.0", &link, &why),
              UCS_ERR_NO_DEVICE);
    EXPECT_NE(std::strstr(why.text, "0000:77:00.0: no such PCI device"), nullptr) << why.text;
    EXPECT_STREQ(gdr_topo_link_name(static_cast<gdr_topo_link_t>(42)), "?");
}
