// gdr_verbs on a real (or Soft-RoCE) device: statuses and reason lines of its C API, and no C++
// exception out of an entry point even when every allocation of gdr_verbs_open_all fails in turn.
#include "gdr_verbs.h"
#include "gdr_verbs_post.h"
#include "../common/alloc_failures.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <chrono>
#include <cstring>
#include <vector>

namespace {

// RC loopback: @a qp (RESET) connected to itself on @a port, RESET -> INIT -> RTR -> RTS
ucs_status_t connect_to_itself(struct ibv_qp *qp, const gdr_port_info_t &port, uint32_t psn,
                               gdr_reason_t *why)
{
    gdr_qp_local_t local{};
    local.port_num      = port.port_num;
    local.gid_index     = (port.gid_index >= 0) ? port.gid_index : 0;
    local.mtu           = port.active_mtu;
    local.psn           = psn;
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
    return gdr_verbs_qp_connect(qp, &local, &self, why);
}

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

    EXPECT_EQ(gdr_verbs_qp_create(dev.pd, cq, cq, nullptr, 1u << 30, 1, 0, &max_inline, &qp,
                                  nullptr, &why),
              UCS_ERR_IO_ERROR)
        << "a send queue no device has";
    EXPECT_NE(std::strstr(why.text, "ibv_create_qp(RC, send_wr=1073741824"), nullptr) << why.text;
    ASSERT_EQ(gdr_verbs_qp_create(dev.pd, cq, cq, nullptr, 16, 1, 0, &max_inline, &qp, nullptr,
                                  &why),
              UCS_OK)
        << why.text;

    EXPECT_EQ(connect_to_itself(qp, port, 0x123, &why), UCS_OK) << why.text;
    EXPECT_EQ(gdr_verbs_qp_to_error(qp, &why), UCS_OK) << why.text;
    EXPECT_STREQ(why.text, "");
    ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
}

// gdr_verbs_post() on a QP connected to itself, through each of its two ways into the provider
// (the ibv_wr_* builders where the provider has them, ibv_post_send): every opcode gdr_rc posts
// moves the right bytes, inline and from registered memory, and a zero-length write completes.
class VerbsPost : public Verbs, public ::testing::WithParamInterface<bool> {
protected:
    void SetUp() override
    {
        Verbs::SetUp();
        if (IsSkipped()) {
            return;
        }
        const gdr_device_t &dev     = devs_[0];
        const gdr_port_info_t &port = dev.ports[0];
        gdr_reason_t why;

        cq_  = ibv_create_cq(dev.ctx, 64, nullptr, nullptr, 0);
        rcq_ = ibv_create_cq(dev.ctx, 64, nullptr, nullptr, 0);
        ASSERT_NE(cq_, nullptr);
        ASSERT_NE(rcq_, nullptr);
        uint32_t max_inline = 64;
        ASSERT_EQ(gdr_verbs_qp_create(dev.pd, cq_, rcq_, nullptr, 32, 2,
                                      GetParam() ? GDR_VERBS_WR_API_SEND_OPS : 0, &max_inline, &qp_,
                                      &qpx_, &why),
                  UCS_OK)
            << why.text;
        if (GetParam() && qpx_ == nullptr) {
            GTEST_SKIP() << dev.name << ": the provider has no ibv_wr_* builders for RC";
        }
        if (!GetParam()) {
            ASSERT_EQ(qpx_, nullptr) << "no builders were asked for";
        }
        mem_.assign(4096, 0);
        mr_ = ibv_reg_mr(dev.pd, mem_.data(), mem_.size(),
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                             IBV_ACCESS_REMOTE_ATOMIC);
        ASSERT_NE(mr_, nullptr);

        ASSERT_EQ(connect_to_itself(qp_, port, 0x42, &why), UCS_OK) << why.text;
    }

    void TearDown() override
    {
        if (qp_ != nullptr) {
            ibv_destroy_qp(qp_);
        }
        if (mr_ != nullptr) {
            ibv_dereg_mr(mr_);
        }
        for (ibv_cq *cq : {cq_, rcq_}) {
            if (cq != nullptr) {
                ibv_destroy_cq(cq);
            }
        }
        Verbs::TearDown();
    }

    uint64_t addr(size_t offset) { return reinterpret_cast<uintptr_t>(mem_.data() + offset); }

    gdr_verbs_wr_t wr(enum ibv_wr_opcode opcode, size_t remote, size_t local, uint32_t length,
                      unsigned flags = 0)
    {
        gdr_verbs_wr_t w{};
        w.opcode      = opcode;
        w.send_flags  = flags | IBV_SEND_SIGNALED;
        w.wr_id       = ++wr_id_;
        w.remote_addr = addr(remote);
        w.rkey        = mr_->rkey;
        w.sge         = {addr(local), length, mr_->lkey};
        return w;
    }

    // the next completion of @a cq, or a failure when none comes in 10 s
    static void wait(ibv_cq *cq, ibv_wc *wc)
    {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        int n      = 0;
        while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && std::chrono::steady_clock::now() < until) {
        }
        ASSERT_EQ(n, 1) << "no completion in 10 s";
        ASSERT_EQ(wc->status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc->status);
    }

    // posts @a w and waits for its send completion
    void post_and_wait(const gdr_verbs_wr_t &w, enum ibv_wc_opcode expected)
    {
        ASSERT_EQ(gdr_verbs_post(qp_, qpx_, &w), 0);
        ibv_wc wc{};
        ASSERT_NO_FATAL_FAILURE(wait(cq_, &wc));
        EXPECT_EQ(wc.wr_id, w.wr_id);
        EXPECT_EQ(wc.opcode, expected);
    }

    std::vector<uint8_t> mem_;
    struct ibv_cq *cq_     = nullptr;
    struct ibv_cq *rcq_    = nullptr;
    struct ibv_qp *qp_     = nullptr;
    struct ibv_qp_ex *qpx_ = nullptr;
    struct ibv_mr *mr_     = nullptr;
    uint64_t wr_id_        = 0;
};

TEST_P(VerbsPost, EveryOpcodeMovesTheRightBytes)
{
    // RDMA write from registered memory, then inline from the stack
    for (size_t i = 0; i < 256; ++i) {
        mem_[i] = static_cast<uint8_t>(i * 7 + 1);
    }
    post_and_wait(wr(IBV_WR_RDMA_WRITE, 1024, 0, 256), IBV_WC_RDMA_WRITE);
    EXPECT_EQ(std::memcmp(&mem_[1024], &mem_[0], 256), 0);
    uint64_t word = 0x1122334455667788ull;
    auto w        = wr(IBV_WR_RDMA_WRITE, 1536, 0, sizeof(word), IBV_SEND_INLINE);
    w.sge         = {reinterpret_cast<uintptr_t>(&word), sizeof(word), 0};
    post_and_wait(w, IBV_WC_RDMA_WRITE);
    word = 0;  // inline: the provider copied it at post time
    EXPECT_EQ(std::memcmp(&mem_[1536], "\x88\x77\x66\x55\x44\x33\x22\x11", 8), 0);

    // RDMA read back what the first write put there
    post_and_wait(wr(IBV_WR_RDMA_READ, 1024, 2048, 256), IBV_WC_RDMA_READ);
    EXPECT_EQ(std::memcmp(&mem_[2048], &mem_[0], 256), 0);

    // fetch-add and compare-and-swap on an 8-byte word; the old value lands in the SGE
    uint64_t target = 40, fetched = 0;
    std::memcpy(&mem_[3072], &target, 8);
    w             = wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 3072, 3080, 8);
    w.compare_add = 2;
    post_and_wait(w, IBV_WC_FETCH_ADD);
    std::memcpy(&fetched, &mem_[3080], 8);
    std::memcpy(&target, &mem_[3072], 8);
    EXPECT_EQ(fetched, 40u);
    EXPECT_EQ(target, 42u);
    w             = wr(IBV_WR_ATOMIC_CMP_AND_SWP, 3072, 3088, 8);
    w.compare_add = 42;
    w.swap        = 7;
    post_and_wait(w, IBV_WC_COMP_SWAP);
    std::memcpy(&fetched, &mem_[3088], 8);
    std::memcpy(&target, &mem_[3072], 8);
    EXPECT_EQ(fetched, 42u);
    EXPECT_EQ(target, 7u);

    // a zero-length write (the flush's NOP) completes
    post_and_wait(wr(IBV_WR_RDMA_WRITE, 0, 0, 0), IBV_WC_RDMA_WRITE);
}

TEST_P(VerbsPost, SendWithImmediateArrivesWhole)
{
    ibv_sge rsge{addr(2048), 512, mr_->lkey};
    ibv_recv_wr rwr{}, *bad = nullptr;
    rwr.wr_id   = 99;
    rwr.sg_list = &rsge;
    rwr.num_sge = 1;
    ASSERT_EQ(ibv_post_recv(qp_, &rwr, &bad), 0);
    const char text[] = "one inline buffer: header and payload gathered";
    auto w            = wr(IBV_WR_SEND_WITH_IMM, 0, 0, sizeof(text), IBV_SEND_INLINE);
    w.sge             = {reinterpret_cast<uintptr_t>(text), sizeof(text), 0};
    w.imm_data        = htonl(5);
    post_and_wait(w, IBV_WC_SEND);
    ibv_wc wc{};
    ASSERT_NO_FATAL_FAILURE(wait(rcq_, &wc));
    EXPECT_EQ(wc.wr_id, 99u);
    EXPECT_EQ(wc.byte_len, sizeof(text));
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(ntohl(wc.imm_data), 5u);
    EXPECT_EQ(std::memcmp(&mem_[2048], text, sizeof(text)), 0);
}

INSTANTIATE_TEST_SUITE_P(Posting, VerbsPost, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool> &info) {
                             return info.param ? std::string("WrApi") : std::string("PostSend");
                         });

// The listing names exactly the devices open_all opens (those with an active port), in the same
// order, and opens none it keeps: md gdr's query_resources lists what md_open can open.
TEST_F(Verbs, ListNamesTheDevicesOpenAllOpens)
{
    std::vector<gdr_device_name_t> names(GDR_VERBS_MAX_DEVICES);
    unsigned count = 0;
    gdr_reason_t why;

    ASSERT_EQ(gdr_verbs_list(names.data(), names.size(), &count, &why), UCS_OK) << why.text;
    ASSERT_EQ(count, count_) << why.text;
    for (unsigned i = 0; i < count; ++i) {
        EXPECT_STREQ(names[i].name, devs_[i].name);
    }
    ASSERT_EQ(gdr_verbs_list(names.data(), 1, &count, &why), UCS_OK) << why.text;
    EXPECT_EQ(count, 1u) << "stops at max_names";
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
