// What UCX's own UCT suite (test/gtest/uct, run by tests/ucx-gtest) caught on gdr_rc and this
// suite did not: each case here pins one of those fixes in the project's own tests, and, like
// the rest of the suite, runs against any transport (GDR_TEST_TL=rc_verbs validates it).
#include "pair_fixture.h"

#include <uct_v2.h>  // uct_md_mem_dereg_v2

#include <algorithm>
#include <cstring>

namespace uctest {
namespace {

class Conformance : public PairTest {
protected:
    bool is_gdr() const { return res_.tl_name == "gdr_rc"; }
};

// uct_p2p_rma_test starts every op at length 0 with UCT_INVALID_RKEY, and UCX's peer-failure
// tests post uct_ep_put_short(ep, NULL, 0, 0, 0): a zero-length RDMA touches no remote memory,
// so no key is needed (the HCA checks none) and no value of one may crash the transport.
TEST_F(Conformance, ZeroLengthRmaNeedsNoRemoteKey)
{
    RegisteredBuffer local(a_->md(), 4096);
    Transfer t(*a_, pair_.ab);
    int posted = 0;
    for (Op op : {Op::PutShort, Op::PutBcopy, Op::PutZcopy, Op::GetBcopy, Op::GetZcopy}) {
        if (!a_->has_flag(op_info(op).cap_flag) || (op_min_length(a_->attr(), op) > 0)) {
            continue;
        }
        for (uct_rkey_t rkey : {UCT_INVALID_RKEY, uct_rkey_t(0)}) {
            ucs_status_t st = t.post_retry(op, local, 0, 0, 0, rkey, 0, {a_.get(), b_.get()});
            EXPECT_TRUE(st == UCS_OK || st == UCS_INPROGRESS)
                << op_info(op).name << " of 0 bytes, rkey " << std::hex << rkey << ": "
                << status_name(st);
            ++posted;
        }
    }
    if (a_->has_flag(UCT_IFACE_FLAG_PUT_SHORT)) {
        EXPECT_EQ(UCS_OK, uct_ep_put_short(pair_.ab, nullptr, 0, 0, 0));
    }
    if (posted == 0) {
        GTEST_SKIP() << "no RMA op takes 0 bytes";
    }
    EXPECT_EQ(UCS_OK, flush(pair_.ab));
    EXPECT_TRUE(t.completion().done());
    EXPECT_EQ(UCS_OK, t.completion().status());
    EXPECT_TRUE(a_->errors.empty())
        << "endpoint failed: " << status_name(a_->errors.front().status);
}

// A non-empty transfer with no usable key fails cleanly: gdr_rc refuses it at the call
// (UCS_ERR_INVALID_PARAM, nothing posted); a transport that posts it anyway must report the
// remote access error through the error handler. Either way the process goes on.
TEST_F(Conformance, RmaWithoutRemoteKeyFailsCleanly)
{
    UCTEST_REQUIRE_CAP(UCT_IFACE_FLAG_PUT_BCOPY);
    RegisteredBuffer local(a_->md(), 4096);
    Transfer t(*a_, pair_.ab);
    for (uct_rkey_t rkey : {UCT_INVALID_RKEY, uct_rkey_t(0)}) {
        ucs_status_t st = t.post_retry(Op::PutBcopy, local, 0, 64, 0x1000, rkey, 0,
                                       {a_.get(), b_.get()});
        if (is_gdr()) {
            EXPECT_EQ(UCS_ERR_INVALID_PARAM, st) << "rkey " << std::hex << rkey;
        } else if (st == UCS_OK) {
            (void)flush(pair_.ab);
            EXPECT_TRUE(a_->failed(pair_.ab)) << "a put with no key succeeded";
            return;  // the endpoint is gone
        }
    }
    EXPECT_EQ(UCS_OK, flush(pair_.ab));  // nothing was posted: the endpoint still works
}

// uct_flush_test.*_flush_ep_*: flush(CANCEL) right after an unsignaled send that the HCA has
// already executed. That WR left the send queue without a completion, so moving the QP to the
// error state flushes nothing for it: the flush must still complete (UCX's rc_verbs posts a
// signaled WR first; gdr_rc hung here).
TEST_F(Conformance, FlushCancelAfterSilentlyCompletedSendCompletes)
{
    UCTEST_REQUIRE_CAP(UCT_IFACE_FLAG_PUT_SHORT);
    RegisteredBuffer local(a_->md(), 4096), remote(b_->md(), 4096);
    RemoteKey rkey(a_->md().component(), remote.registration().packed_rkey());
    local.fill(0x5a);
    remote.fill(0);
    ASSERT_EQ(UCS_OK, uct_ep_put_short(pair_.ab, local.data(), 8, remote.address(), rkey.rkey()));
    // executed by the HCA (the data is there) but, being unsignaled, never completed
    ASSERT_TRUE(wait([&] { return remote.data()[7] == 0x5a; }, "the put to land"));
    Completion comp;
    ucs_status_t st = start_flush(pair_.ab, UCT_FLUSH_FLAG_CANCEL, comp, {a_.get(), b_.get()});
    ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
    if (st == UCS_INPROGRESS) {
        EXPECT_TRUE(wait([&] { return comp.done(); }, "flush(CANCEL) to complete", Seconds(20)));
    }
    EXPECT_TRUE(a_->errors.empty()) << "a cancel is not a failure";
}

// test_uct_pending.send_ooo_with_comp: a send issued from a completion callback must not
// overtake a request already waiting on the pending queue (UCP's ordering rests on it).
struct OrderProbe {
    uct_completion_t comp;  // first: the callback recovers the probe from it
    uct_ep_h ep;
    uct_pending_req_t req;
    static constexpr uint64_t kPending = 0x9e9d, kFromCallback = 0xc0c0;
    std::vector<uint64_t> seen;
    bool pending_sent = false;

    static void on_comp(uct_completion_t *self)
    {
        auto *p         = reinterpret_cast<OrderProbe *>(self);
        ucs_status_t st = uct_ep_am_short(p->ep, kAmId, kFromCallback, nullptr, 0);
        EXPECT_TRUE(st == UCS_OK || st == UCS_ERR_NO_RESOURCE) << status_name(st);
    }
    static ucs_status_t on_pending(uct_pending_req_t *self)
    {
        auto *p         = ucs_container_of(self, OrderProbe, req);
        ucs_status_t st = uct_ep_am_short(p->ep, kAmId, kPending, nullptr, 0);
        p->pending_sent = (st == UCS_OK);
        return st;
    }
    static ucs_status_t on_am(void *arg, void *data, size_t, unsigned)
    {
        uint64_t hdr;
        std::memcpy(&hdr, data, sizeof(hdr));
        static_cast<OrderProbe *>(arg)->seen.push_back(hdr);
        return UCS_OK;
    }
};

TEST_F(Conformance, SendFromCompletionCallbackDoesNotOvertakePending)
{
    UCTEST_REQUIRE_CAP(UCT_IFACE_FLAG_AM_ZCOPY);
    UCTEST_REQUIRE_CAP(UCT_IFACE_FLAG_AM_SHORT);
    UCTEST_REQUIRE_CAP(UCT_IFACE_FLAG_PENDING);
    OrderProbe probe{};
    probe.ep          = pair_.ab;
    probe.comp.func   = &OrderProbe::on_comp;
    probe.comp.count  = 1;
    probe.comp.status = UCS_OK;
    probe.req.func    = &OrderProbe::on_pending;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(b_->iface(), kAmId, &OrderProbe::on_am, &probe, 0));

    RegisteredBuffer buf(a_->md(), 4096);
    uct_iov_t iov{buf.data(), 32, buf.memh(), 0, 1};
    uint64_t hdr    = 1;
    ucs_status_t st = uct_ep_am_zcopy(pair_.ab, kAmId, &hdr, sizeof(hdr), &iov, 1, 0, &probe.comp);
    ASSERT_FALSE(UCS_STATUS_IS_ERR(st)) << status_name(st);
    // fill the send queue without progressing, then queue one request
    do {
        st = uct_ep_am_short(pair_.ab, kAmId, 2, nullptr, 0);
    } while (st == UCS_OK);
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, st);
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(pair_.ab, &probe.req, 0));

    ASSERT_TRUE(wait([&] { return probe.pending_sent; }, "the pending request to be sent"));
    ASSERT_EQ(UCS_OK, flush(pair_.ab));
    ASSERT_TRUE(wait(
        [&] { return std::count(probe.seen.begin(), probe.seen.end(), OrderProbe::kPending) == 1; },
        "the pending message to arrive"));
    auto pending_at  = std::find(probe.seen.begin(), probe.seen.end(), OrderProbe::kPending);
    auto callback_at = std::find(probe.seen.begin(), probe.seen.end(), OrderProbe::kFromCallback);
    EXPECT_TRUE(callback_at == probe.seen.end() || callback_at > pending_at)
        << "the callback's message arrived before the pending one";
    uct_iface_set_am_handler(b_->iface(), kAmId, nullptr, nullptr, 0);
}

// test_md.dereg_bad_arg: an md that does not advertise UCT_MD_FLAG_INVALIDATE refuses
// dereg(INVALIDATE) with UCS_ERR_UNSUPPORTED, and the handle stays registered (nothing lost).
TEST_F(Conformance, DeregInvalidateIsRefusedWithoutTheCapability)
{
    if (a_->md().attr().cap.flags & UCT_MD_FLAG_INVALIDATE) {
        GTEST_SKIP() << "md " << res_.md_name << " supports invalidation";
    }
    std::vector<uint8_t> mem(1 << 20);
    uct_mem_h memh;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(a_->md().md(), mem.data(), mem.size(),
                                     UCT_MD_MEM_ACCESS_REMOTE_PUT, &memh));
    uct_completion_t comp{[](uct_completion_t *) {}, 1, UCS_OK};
    uct_md_mem_dereg_params_t params{};
    params.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH | UCT_MD_MEM_DEREG_FIELD_FLAGS |
                        UCT_MD_MEM_DEREG_FIELD_COMPLETION;
    params.memh  = memh;
    params.flags = UCT_MD_MEM_DEREG_FLAG_INVALIDATE;
    params.comp  = &comp;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_md_mem_dereg_v2(a_->md().md(), &params));
    EXPECT_EQ(1, comp.count);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(a_->md().md(), memh));
}

// md gdr allocates like UCX's ib md reports (UCT_MD_FLAG_ALLOC, max_alloc): upstream's p2p data
// tests size their transfers by max_alloc and ran nothing while it was 0. The memory is host
// memory, registered: a peer can write into it with the packed key.
TEST_F(Conformance, AllocatedMemoryIsRemotelyWritable)
{
    const uct_md_attr_t &attr = b_->md().attr();
    if (!(attr.cap.flags & UCT_MD_FLAG_ALLOC)) {
        ASSERT_FALSE(is_gdr()) << "md gdr must allocate (upstream's p2p tests need max_alloc)";
        GTEST_SKIP() << "md " << res_.md_name << " does not allocate";
    }
    ASSERT_GT(attr.cap.max_alloc, 1u << 20);
    ASSERT_TRUE(attr.cap.alloc_mem_types & UCS_BIT(UCS_MEMORY_TYPE_HOST));
    // through UCT's allocator, as UCP and the upstream suite reach it
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_md_h mds[]            = {b_->md().md()};
    uct_mem_alloc_params_t params{};
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS | UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS | UCT_MEM_ALLOC_PARAM_FIELD_NAME;
    params.flags     = UCT_MD_MEM_ACCESS_ALL;
    params.mem_type  = UCS_MEMORY_TYPE_HOST;
    params.mds.mds   = mds;
    params.mds.count = 1;
    params.name      = "conformance";
    uct_allocated_memory_t mem;
    ASSERT_EQ(UCS_OK, uct_mem_alloc(10000, &method, 1, &params, &mem));  // the md rounds up
    ASSERT_EQ(UCT_ALLOC_METHOD_MD, mem.method);
    ASSERT_GE(mem.length, 10000u);
    ASSERT_NE(nullptr, mem.memh);
    std::memset(mem.address, 0, mem.length);
    Bytes packed(attr.rkey_packed_size);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(b_->md().md(), mem.memh, packed.data()));
    {
        RemoteKey rkey(a_->md().component(), packed);
        RegisteredBuffer src(a_->md(), 8192);
        src.fill_pattern(7);
        Transfer t(*a_, pair_.ab);
        Op op           = a_->has_flag(UCT_IFACE_FLAG_PUT_ZCOPY) ? Op::PutZcopy : Op::PutBcopy;
        size_t n        = std::min<size_t>(8192, op_max_length(a_->attr(), op));
        ucs_status_t st = t.post_retry(op, src, 0, n, reinterpret_cast<uintptr_t>(mem.address),
                                       rkey.rkey(), 0, {a_.get(), b_.get()});
        ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
        ASSERT_EQ(UCS_OK, flush(pair_.ab));
        EXPECT_EQ(0, std::memcmp(src.data(), mem.address, n));
    }
    if (is_gdr()) {  // deregistering allocated memory is refused: it stays allocated
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_dereg(b_->md().md(), mem.memh));
    }
    EXPECT_EQ(UCS_OK, uct_mem_free(&mem));
}

// test_md.reg_advise: an md that advertises UCT_MD_FLAG_ADVISE takes UCT_MADV_WILLNEED on a part
// of a registration; gdr refuses a range outside it.
TEST_F(Conformance, AdviceOnARegisteredRange)
{
    if (!(a_->md().attr().cap.flags & UCT_MD_FLAG_ADVISE)) {
        ASSERT_FALSE(is_gdr()) << "md gdr must advertise UCT_MD_FLAG_ADVISE";
        GTEST_SKIP() << "md " << res_.md_name << " takes no advice";
    }
    RegisteredBuffer buf(a_->md(), 1 << 20);
    EXPECT_EQ(UCS_OK, uct_md_mem_advise(a_->md().md(), buf.memh(), buf.data() + 7, 32 << 10,
                                        UCT_MADV_WILLNEED));
    if (is_gdr()) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_md_mem_advise(a_->md().md(), buf.memh(), buf.data() + (1 << 20) - 8, 4096,
                                    UCT_MADV_WILLNEED));
    }
}

// uct_p2p_am_alignment: iface params am_alignment/am_align_offset place the received payload
// so that (data + offset) is aligned; invalid combinations are refused at iface open.
class AmAlignment : public Conformance {
protected:
    std::unique_ptr<Entity> receiver(size_t alignment, size_t offset, uint64_t fields)
    {
        return std::make_unique<Entity>(res_, default_iface_overrides(), md_overrides(),
                                        [=](uct_iface_params_t &p) {
                                            p.field_mask |= fields;
                                            p.am_alignment    = alignment;
                                            p.am_align_offset = offset;
                                        });
    }
};

TEST_F(AmAlignment, ReceivedDataIsAligned)
{
    constexpr size_t kAlign = 256;
    for (size_t offset : {size_t(0), size_t(8), size_t(100)}) {
        auto rx  = receiver(kAlign, offset,
                            UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT |
                                UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET);
        EpPair p = connect_pair(*a_, *rx);
        AmSink sink(*rx);
        std::vector<uintptr_t> misaligned;
        sink.on_message = [&](const uint8_t *data, size_t) {
            if ((reinterpret_cast<uintptr_t>(data) + offset) % kAlign != 0) {
                misaligned.push_back(reinterpret_cast<uintptr_t>(data));
            }
        };
        RegisteredBuffer buf(a_->md(), 4096);
        Transfer t(*a_, p.ab);
        size_t sent = 0;
        for (Op op : {Op::AmShort, Op::AmBcopy, Op::AmZcopy}) {
            if (a_->has_flag(op_info(op).cap_flag)) {
                size_t n        = std::min<size_t>(200, op_max_length(a_->attr(), op));
                ucs_status_t st = t.post_retry(op, buf, 0, n, 0, 0, sent, {a_.get(), rx.get()});
                ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
                ++sent;
            }
        }
        ASSERT_TRUE(progress_until([&] { return sink.messages.size() == sent; },
                                   {a_.get(), rx.get()}, "the messages"));
        EXPECT_TRUE(misaligned.empty())
            << misaligned.size() << " of " << sent << " messages misaligned at offset " << offset;
        ASSERT_EQ(UCS_OK, flush_and_wait(*a_, p.ab, {a_.get(), rx.get()}));
        a_->destroy_ep(p.ab);
        rx->destroy_ep(p.ba);
    }
}

TEST_F(AmAlignment, InvalidParametersAreRefused)
{
    struct Case {
        size_t alignment, offset;
        uint64_t fields;
    };
    for (Case c : {Case{0, 0, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT},
                   Case{3, 1, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT},
                   Case{0, 11, UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET},  // offset without alignment
                   Case{8, 8, UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET}}) {
        try {
            receiver(c.alignment, c.offset, c.fields);
            ADD_FAILURE() << "alignment " << c.alignment << " offset " << c.offset << " accepted";
        } catch (const std::runtime_error &e) {
            EXPECT_NE(std::string::npos, std::string(e.what()).find("Invalid parameter"))
                << e.what();
        }
    }
}

// uct_p2p_am_misc.no_rx_buffs: when the receiver keeps every buffer it may have (RX_MAX_BUFS),
// the sender is held back (UCS_ERR_NO_RESOURCE) instead of anything being dropped, and traffic
// resumes once the receiver releases them.
class RxBufferLimit : public Conformance {
protected:
    std::vector<ConfigOverride> receiver_overrides() const
    {
        auto o = default_iface_overrides();  // later entries win
        o.push_back({{"IB_RX_QUEUE_LEN", "RX_QUEUE_LEN"}, "64"});
        o.push_back({{"IB_RX_MAX_BUFS", "RX_MAX_BUFS"}, std::to_string(kMaxBufs)});
        return o;
    }
    static ucs_status_t keep(void *arg, void *data, size_t, unsigned flags)
    {
        auto *self = static_cast<RxBufferLimit *>(arg);
        ++self->received_;
        if (self->hold_ && (flags & UCT_CB_PARAM_FLAG_DESC)) {
            self->held_.push_back(data);
            return UCS_INPROGRESS;  // the buffer stays ours until uct_iface_release_desc
        }
        return UCS_OK;
    }
    static constexpr size_t kMaxBufs = 1024;  // rc_verbs grows its pool by 1024: no less
    std::vector<void *> held_;
    size_t received_ = 0;
    bool hold_       = true;
};

TEST_F(RxBufferLimit, SenderWaitsWhileReceiverHoldsEveryBuffer)
{
    UCTEST_REQUIRE_CAP(UCT_IFACE_FLAG_AM_SHORT);
    auto rx = std::make_unique<Entity>(res_, receiver_overrides());
    if (std::none_of(rx->applied_overrides().begin(), rx->applied_overrides().end(),
                     [](const std::string &s) {
                         return s.find("RX_MAX_BUFS") != std::string::npos;
                     })) {
        ASSERT_FALSE(is_gdr()) << "gdr_rc must have UCX_GDR_RX_MAX_BUFS";
        GTEST_SKIP() << res_.tl_name << " has no receive buffer limit";
    }
    EpPair p = connect_pair(*a_, *rx);
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(rx->iface(), kAmId, &RxBufferLimit::keep, this, 0));
    uint64_t payload = 42;
    size_t sent      = 0;
    ucs_status_t st  = UCS_OK;
    auto until       = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    // while the receiver holds everything, sends stop being accepted
    while (std::chrono::steady_clock::now() < until) {
        st = uct_ep_am_short(p.ab, kAmId, sent, &payload, sizeof(payload));
        if (st == UCS_OK) {
            ++sent;
        } else if (st == UCS_ERR_NO_RESOURCE) {
            // resources may come back as completions arrive: give them a moment
            bool more = false;
            for (int i = 0; i < 2000 && !more; ++i) {
                a_->progress();
                rx->progress();
                more = (uct_ep_am_short(p.ab, kAmId, sent, &payload, sizeof(payload)) == UCS_OK);
            }
            if (!more) {
                break;
            }
            ++sent;
        } else {
            break;
        }
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, st) << "the sender never ran out after " << sent << " messages";
    EXPECT_LE(held_.size(), kMaxBufs);
    EXPECT_TRUE(a_->errors.empty());
    // release: everything sent arrives, and sending works again
    hold_ = false;
    for (void *desc : held_) {
        uct_iface_release_desc(desc);
    }
    held_.clear();
    ASSERT_EQ(UCS_OK,
              post_with_retry(
                  [&] { return uct_ep_am_short(p.ab, kAmId, sent, &payload, sizeof(payload)); },
                  {a_.get(), rx.get()}));
    ++sent;
    ASSERT_TRUE(progress_until([&] { return received_ == sent; }, {a_.get(), rx.get()},
                               "every message after the release"));
    ASSERT_EQ(UCS_OK, flush_and_wait(*a_, p.ab, {a_.get(), rx.get()}));
    EXPECT_TRUE(a_->errors.empty());
    uct_iface_set_am_handler(rx->iface(), kAmId, nullptr, nullptr, 0);
    a_->destroy_ep(p.ab);
    rx->destroy_ep(p.ba);
}

}  // namespace
}  // namespace uctest
