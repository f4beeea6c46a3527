// gdr_verbs on a real (or Soft-RoCE) device: statuses and reason lines of its C API, and no C++
// exception out of an entry point even when every allocation of gdr_verbs_open_all fails in turn.
#include "gdr_verbs.h"
#include "../common/alloc_failures.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

class Verbs : public ::testing::Test {
protected:
    void SetUp() override
    {
        gdr_reason_t why;
        ASSERT_EQ(gdr_verbs_open_all(devs_.data(), devs_.size(), &count_, &why), UCS_OK)
            << why.text;
        if (count_ == 0) {
            GTEST_SKIP() << "no verbs device with an active port (" << why.text
                         << "); run in the Soft-RoCE VM";
        }
    }

    void TearDown() override
    {
        for (unsigned i = 0; i < count_; ++i) {
            gdr_verbs_close(&devs_[i]);
        }
    }

    std::vector<gdr_device_t> devs_ = std::vector<gdr_device_t>(GDR_VERBS_MAX_DEVICES);
    unsigned count_                 = 0;
};

TEST_F(Verbs, PortGidStatusesSayWhy)
{
    const gdr_device_t &dev = devs_[0];
    const uint8_t port      = dev.ports[0].port_num;
    union ibv_gid gid;
    gdr_reason_t why;
    int index = -1;

    if (dev.ports[0].gid_index >= 0) {
        ASSERT_EQ(gdr_verbs_port_gid(&dev, port, -1, &gid, &index, &why), UCS_OK) << why.text;
        EXPECT_EQ(index, dev.ports[0].gid_index);
        EXPECT_STREQ(why.text, "");
    }
    EXPECT_EQ(gdr_verbs_port_gid(&dev, port, 200, &gid, &index, &why), UCS_ERR_INVALID_PARAM);
    EXPECT_NE(std::strstr(why.text, "GID index 200 is empty or invalid"), nullptr) << why.text;
    EXPECT_EQ(gdr_verbs_port_gid(&dev, 99, -1, &gid, &index, &why), UCS_ERR_NO_DEVICE);
    EXPECT_NE(std::strstr(why.text, "port 99 is not active"), nullptr) << why.text;
}

// A QP created, connected to itself (RC loopback: RESET -> INIT -> RTR -> RTS), moved to the error
// state; and the reason line of a QP no device can create
TEST_F(Verbs, QpCreateConnectAndErrorState)
{
    const gdr_device_t &dev     = devs_[0];
    const gdr_port_info_t &port = dev.ports[0];
    struct ibv_cq *cq           = ibv_create_cq(dev.ctx, 16, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    struct ibv_qp *qp   = nullptr;
    uint32_t max_inline = 64;
    gdr_reason_t why;

    EXPECT_EQ(gdr_verbs_qp_create(dev.pd, cq, cq, nullptr, 1u << 30, 1, &max_inline, &qp, &why),
              UCS_ERR_IO_ERROR)
        << "a send queue no device has";
    EXPECT_NE(std::strstr(why.text, "ibv_create_qp(RC, send_wr=1073741824"), nullptr) << why.text;
    ASSERT_EQ(gdr_verbs_qp_create(dev.pd, cq, cq, nullptr, 16, 1, &max_inline, &qp, &why), UCS_OK)
        << why.text;

    gdr_qp_local_t local{};
    local.port_num      = port.port_num;
    local.gid_index     = (port.gid_index >= 0) ? port.gid_index : 0;
    local.mtu           = port.active_mtu;
    local.psn           = 0x123;
    local.sl            = port.sm_sl;
    local.hop_limit     = 64;
    local.timeout       = 14;
    local.retry_count   = 7;
    local.rnr_retry     = 7;
    local.min_rnr_timer = 12;
    local.max_rd_atomic = 1;
    gdr_qp_remote_t self{};
    self.qp_num    = qp->qp_num;
    self.psn       = local.psn;
    self.lid       = port.lid;
    self.is_global = (port.link_layer == IBV_LINK_LAYER_ETHERNET);
    self.mtu       = port.active_mtu;
    self.gid       = port.gid;
    EXPECT_EQ(gdr_verbs_qp_connect(qp, &local, &self, &why), UCS_OK) << why.text;
    EXPECT_EQ(gdr_verbs_qp_to_error(qp, &why), UCS_OK) << why.text;
    EXPECT_STREQ(why.text, "");
    ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
}

// An allocation that fails inside gdr_verbs_open_all (its device names, skip list, GID tables)
// comes back as UCS_ERR_NO_MEMORY; the devices it had opened stay usable and are closed by the
// caller, the one it was opening is closed by the library.
TEST_F(Verbs, OpenAllUnderAllocationFailures)
{
    std::vector<gdr_device_t> devs(GDR_VERBS_MAX_DEVICES);
    unsigned count = 0;

    gdr_test::every_allocation_fails_in_turn(
        "gdr_verbs_open_all",
        [&](gdr_reason_t *why) {
            return gdr_verbs_open_all(devs.data(), devs.size(), &count, why);
        },
        [&] {
            for (unsigned i = 0; i < count; ++i) {
                EXPECT_NE(devs[i].pd, nullptr) << devs[i].name;
                gdr_verbs_close(&devs[i]);
            }
        });
}

}  // namespace
