// A peer process that dies (SIGKILL): the survivor's outstanding operations complete with an
// error, the error handler reports the endpoint, an idle endpoint's failure is found by ep_check
// (also after a send that gets no completion), an endpoint held by a fence behind a
// compare-and-swap loop fails and gives back its pending requests, all within a bounded time;
// the survivor's interface keeps serving other endpoints.
#include "peer_process.h"
#include "uct_ops.h"

#include <cstring>
#include <thread>

namespace uctest {
namespace {

/// Detection bound with the suite's RC timeout override (100 ms x 3 retries): generous for a
/// loaded emulated guest, small enough that a hang is obvious.
constexpr Seconds kDetectionDeadline{30.0};

#define UCTEST_ASSERT_CAP(flag) UCTEST_SKIP_UNLESS_CAP(*self_, flag)

class PeerDeath : public ::testing::Test {
protected:
    void SetUp() override
    {
        UCTEST_REQUIRE_TARGET(res_);
        self_ = std::make_unique<Entity>(res_, iface_overrides());
        std::printf("[   INFO   ] iface overrides applied:");
        for (const auto &o : self_->applied_overrides()) {
            std::printf(" %s", o.c_str());
        }
        std::printf("%s\n", self_->applied_overrides().empty() ? " none (transport defaults)" : "");
        peer_ = std::make_unique<PeerProcess>();
        std::string why;
        ASSERT_TRUE(peer_->connect(*self_, &ep_, &why)) << why;
        rkey_  = std::make_unique<RemoteKey>(self_->md().component(), peer_->packed_rkey);
        local_ = std::make_unique<RegisteredBuffer>(self_->md(), PeerProcess::kBufferSize, 4096);
    }
    virtual std::vector<ConfigOverride> iface_overrides() const
    {
        return default_iface_overrides();
    }

    void TearDown() override
    {
        peer_.reset();
        local_.reset();
        rkey_.reset();
        self_.reset();
    }

    /// The connection works before the kill (so a later error is the death, not a setup bug).
    void check_alive()
    {
        UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_GET_ZCOPY);
        local_->fill(0);
        Transfer t(*self_, ep_);
        ucs_status_t st = t.post_retry(Op::GetZcopy, *local_, 0, PeerProcess::kBufferSize,
                                       peer_->remote_address, rkey_->rkey(), 0, {self_.get()});
        ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
        ASSERT_TRUE(progress_until([&] { return t.completion().done(); }, {self_.get()},
                                   "get from the live peer"));
        ASSERT_EQ(UCS_OK, t.completion().status());
        ASSERT_TRUE(local_->check_pattern(PeerProcess::kSeed, PeerProcess::kBufferSize, 0));
    }

    /// An 8-byte put_short to the peer's buffer, retried while the send queue is full (10 s).
    ucs_status_t put_short_retry(const uint64_t &value)
    {
        ucs_status_t st;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while ((st = uct_ep_put_short(ep_, &value, sizeof(value), peer_->remote_address,
                                      rkey_->rkey())) == UCS_ERR_NO_RESOURCE &&
               std::chrono::steady_clock::now() < deadline) {
            self_->progress();
        }
        return st;
    }

    /// After the failure: destroy the dead endpoint; the iface still serves a new in-process pair.
    void check_survivor_iface()
    {
        self_->destroy_ep(ep_);
        ep_ = nullptr;
        Entity other(res_);
        EpPair pair = connect_pair(*self_, other);
        RegisteredBuffer there(other.md(), 64 << 10, 4096);
        RemoteKey key(self_->md().component(), there.registration().packed_rkey());
        local_->fill_pattern(5);
        Transfer t(*self_, pair.ab);
        ucs_status_t st = t.post_retry(Op::PutZcopy, *local_, 0, 64 << 10, there.address(),
                                       key.rkey(), 0, {self_.get(), &other});
        ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS);
        ASSERT_EQ(UCS_OK, flush_and_wait(*self_, pair.ab, {self_.get(), &other}));
        EXPECT_TRUE(there.check_pattern(5, 64 << 10, 0));
    }

    TlResource res_;
    std::unique_ptr<Entity> self_;
    std::unique_ptr<PeerProcess> peer_;
    std::unique_ptr<RemoteKey> rkey_;
    std::unique_ptr<RegisteredBuffer> local_;
    uct_ep_h ep_ = nullptr;
};

TEST_F(PeerDeath, OutstandingOperationsCompleteWithError)
{
    check_alive();
    if (IsSkipped() || HasFatalFailure()) {
        return;
    }
    peer_->kill_and_reap();

    // a burst of reads and writes toward the dead peer, all outstanding at once
    Transfer t(*self_, ep_);
    const size_t chunk = 32 << 10;
    int posted         = 0;
    for (size_t off = 0; off + chunk <= PeerProcess::kBufferSize; off += chunk) {
        for (Op op : {Op::PutZcopy, Op::GetZcopy}) {
            if (!self_->has_flag(op_info(op).cap_flag)) {
                continue;
            }
            ucs_status_t st = t.post(op, *local_, off, chunk, peer_->remote_address + off,
                                     rkey_->rkey(), 0);
            if (st == UCS_ERR_NO_RESOURCE) {
                break;  // enough outstanding
            }
            ASSERT_TRUE(st == UCS_INPROGRESS || UCS_STATUS_IS_ERR(st)) << status_name(st);
            ++posted;
        }
    }
    if (self_->has_flag(UCT_IFACE_FLAG_EP_CHECK)) {
        EXPECT_EQ(UCS_OK, uct_ep_check(ep_, 0, nullptr));
    }
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(progress_until([&] { return t.completion().done() && self_->failed(ep_); },
                               {self_.get()}, "outstanding operations to the dead peer to fail",
                               kDetectionDeadline))
        << t.completion().outstanding() << " of " << posted
        << " operations outstanding, error handler "
        << (self_->failed(ep_) ? "called" : "not called");
    const double took = Seconds(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(UCS_STATUS_IS_ERR(t.completion().status())) << status_name(t.completion().status());
    for (const auto &e : self_->errors) {
        EXPECT_TRUE(UCS_STATUS_IS_ERR(e.status));
    }
    std::printf(
        "[   INFO   ] %d ops to the dead peer failed with %s after %.2f s; error handler: %s\n",
        posted, status_name(t.completion().status()).c_str(), took,
        status_name(self_->errors.front().status).c_str());
    check_survivor_iface();
}

TEST_F(PeerDeath, IdleEndpointCheckDetectsDeadPeer)
{
    UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_EP_CHECK);
    check_alive();
    if (IsSkipped() || HasFatalFailure()) {
        return;
    }
    peer_->kill_and_reap();
    // nothing outstanding: only the keepalive probe can find out
    ASSERT_EQ(UCS_OK, uct_ep_check(ep_, 0, nullptr));
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(progress_until([&] { return self_->failed(ep_); }, {self_.get()},
                               "ep_check to report the dead peer", kDetectionDeadline));
    std::printf("[   INFO   ] ep_check reported %s after %.2f s\n",
                status_name(self_->errors.front().status).c_str(),
                Seconds(std::chrono::steady_clock::now() - start).count());
    EXPECT_TRUE(UCS_STATUS_IS_ERR(self_->errors.front().status));
    // a flush of the failed endpoint must finish (with an error), not hang
    ucs_status_t st = flush_and_wait(*self_, ep_, {self_.get()}, 0, kDetectionDeadline);
    EXPECT_NE(UCS_ERR_TIMED_OUT, st);
    check_survivor_iface();
}

TEST_F(PeerDeath, EndpointCheckAfterUnsignaledSendDetectsDeadPeer)
{
    UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_EP_CHECK);
    UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_PUT_SHORT);
    check_alive();
    if (IsSkipped() || HasFatalFailure()) {
        return;
    }
    // A send without a completion (likely unsignaled: no CQE will ever say it was done), acked by
    // the live peer; then silence, like a rendezvous RTS waiting for its answer. ep_check must not
    // take "posted but not completed" for traffic that will report the peer's death.
    const uint64_t value  = 0x5a5a5a5a5a5a5a5aull;
    const ucs_status_t st = put_short_retry(value);
    ASSERT_EQ(UCS_OK, st) << status_name(st);
    const auto settle = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < settle) {
        self_->progress();  // the peer acks the write
    }
    peer_->kill_and_reap();
    ucs_status_t check = uct_ep_check(ep_, 0, nullptr);
    ASSERT_TRUE(check == UCS_OK || check == UCS_ERR_NO_RESOURCE) << status_name(check);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(progress_until(
        [&] {
            if (check == UCS_ERR_NO_RESOURCE) {
                check = uct_ep_check(ep_, 0, nullptr);  // retried, as UCP's keepalive does
            }
            return self_->failed(ep_);
        },
        {self_.get()}, "ep_check after an unsignaled send to report the dead peer",
        kDetectionDeadline));
    std::printf("[   INFO   ] ep_check reported %s after %.2f s\n",
                status_name(self_->errors.front().status).c_str(),
                Seconds(std::chrono::steady_clock::now() - start).count());
    EXPECT_TRUE(UCS_STATUS_IS_ERR(self_->errors.front().status));
    check_survivor_iface();
}

// A fence while a 32-bit atomic (gdr_rc's compare-and-swap loop) is in flight holds the endpoint:
// its operations answer NO_RESOURCE and wait on the pending queue until the loop is done. When the
// peer dies then, the loop ends with the endpoint's error, the hold goes with it, and nothing is
// lost or left hanging: the atomic's completion reports the error, the error handler is called,
// later operations fail at once (not NO_RESOURCE forever), the pending request comes back through
// pending_purge exactly once (as UCP's error handling purges it), and a flush finishes.
TEST_F(PeerDeath, FenceHeldEndpointFailsAndGivesBackItsPendingRequests)
{
    UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_PENDING);
    UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_PUT_SHORT);
    if (!(self_->attr().cap.atomic32.fop_flags & UCS_BIT(UCT_ATOMIC_OP_ADD))) {
        GTEST_SKIP() << "no 32-bit atomic fetch-add";
    }
    check_alive();
    if (IsSkipped() || HasFatalFailure()) {
        return;
    }
    peer_->kill_and_reap();

    // the loop's first CAS goes to the dead peer: the loop runs until the transport gives up
    uint32_t fetched_value = 0;
    Completion fetched;
    ucs_status_t st = uct_ep_atomic32_fetch(ep_, UCT_ATOMIC_OP_ADD, 1, &fetched_value,
                                            peer_->remote_address, rkey_->rkey(), fetched.arm());
    fetched.posted(st);
    ASSERT_EQ(UCS_INPROGRESS, st) << status_name(st);
    ASSERT_EQ(UCS_OK, uct_ep_fence(ep_, 0));
    const uint64_t value = 0x0123456789abcdefull;
    st = uct_ep_put_short(ep_, &value, sizeof(value), peer_->remote_address + 64, rkey_->rkey());
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, st)
        << "a put after the fence went out while the loop ran: " << status_name(st);

    PendingPut req(ep_, &value, peer_->remote_address + 64, rkey_->rkey());
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep_, &req.req, 0)) << "the held endpoint refused it";

    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(progress_until([&] { return fetched.done() && self_->failed(ep_); }, {self_.get()},
                               "the fenced atomic loop to the dead peer to fail",
                               kDetectionDeadline))
        << "atomic " << (fetched.done() ? "completed" : "outstanding") << ", error handler "
        << (self_->failed(ep_) ? "called" : "not called");
    const double took = Seconds(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(UCS_STATUS_IS_ERR(fetched.status())) << status_name(fetched.status());
    EXPECT_FALSE(req.sent) << "the pending put reached a dead peer?";

    // the hold is gone with the loop: the endpoint's error now, not "retry later"
    st = uct_ep_put_short(ep_, &value, sizeof(value), peer_->remote_address + 64, rkey_->rkey());
    EXPECT_TRUE(UCS_STATUS_IS_ERR(st) && st != UCS_ERR_NO_RESOURCE) << status_name(st);
    uct_ep_pending_purge(ep_, PendingPut::purge_cb, nullptr);
    EXPECT_EQ(1, req.purged) << "the pending request ran " << req.runs << " time(s)";
    std::printf("[   INFO   ] the fenced loop failed with %s after %.2f s; pending request ran "
                "%d time(s), purged %d\n",
                status_name(fetched.status()).c_str(), took, req.runs, req.purged);
    ucs_status_t flushed = flush_and_wait(*self_, ep_, {self_.get()}, 0, kDetectionDeadline);
    EXPECT_NE(UCS_ERR_TIMED_OUT, flushed);
    check_survivor_iface();
}

// RETRY_COUNT=7, the default UCX and gdr_rc ship: an HCA gives up after seven retries, Soft-RoCE
// never does, and there gdr_rc's stall check (UCX_GDR_STALL_TIMEOUT=auto) keeps the same bound,
// TIMEOUT x 8. A dead peer's endpoint fails with "Endpoint timeout" within it; a live, idle one
// with a send that will never complete by itself (unsignaled, acked) is left alone.
class PeerDeathAtRetrySeven : public PeerDeath {
protected:
    std::vector<ConfigOverride> iface_overrides() const override
    {
        auto o = default_iface_overrides();
        for (auto &e : o) {
            if (e.names.back() == "RETRY_COUNT") {
                e.value = "7";
            }
        }
        return o;
    }
    /// rc_verbs on Soft-RoCE retries for ever at 7: nothing bounds it there
    void skip_unbounded()
    {
        if (res_.tl_name != "gdr_rc" && res_.dev_name.rfind("rxe", 0) == 0) {
            GTEST_SKIP() << res_.tl_name << " retries for ever at RETRY_COUNT=7 on Soft-RoCE";
        }
    }
    /// TIMEOUT (100 ms, 4.096 us x 2^15 on the wire) x (7 + 1)
    static constexpr double kTimeoutTimesTries = 0.134 * 8;
    /// and a quarter for the check: the wait is first seen at one check (every eighth of the
    /// bound) and the endpoint fails at the first past the bound
    static constexpr double kBound = kTimeoutTimesTries * 10 / 8;

    /// Two writes of `value`, the first (nothing in flight) asking for a completion and the second
    /// not, then progress for `seconds`: the unsignaled write keeps the iface polling, so its
    /// stall checks run and see the endpoint with nothing waited on
    void unsignaled_write_then_progress_for(uint64_t value, double seconds)
    {
        for (int i = 0; i < 2; ++i) {
            const ucs_status_t st = put_short_retry(value);
            ASSERT_EQ(UCS_OK, st) << status_name(st);
        }
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        while (std::chrono::steady_clock::now() < end) {
            self_->progress();
        }
    }

    /// Kills the peer after `idle` seconds without a call into UCT (an application computing),
    /// posts a put to it and waits for the put and the endpoint to fail; returns the seconds
    /// from the post to the failure
    double put_to_killed_peer_after(std::chrono::duration<double> idle)
    {
        std::this_thread::sleep_for(idle);
        peer_->kill_and_reap();
        Transfer t(*self_, ep_);
        ucs_status_t st = t.post_retry(Op::PutZcopy, *local_, 0, 64 << 10, peer_->remote_address,
                                       rkey_->rkey(), 0, {self_.get()});
        EXPECT_TRUE(st == UCS_INPROGRESS || UCS_STATUS_IS_ERR(st)) << status_name(st);
        const auto start = std::chrono::steady_clock::now();
        EXPECT_TRUE(progress_until([&] { return t.completion().done() && self_->failed(ep_); },
                                   {self_.get()}, "a put to the dead peer to fail",
                                   kDetectionDeadline));
        const double took = Seconds(std::chrono::steady_clock::now() - start).count();
        if (!self_->errors.empty()) {
            std::printf("[   INFO   ] the put failed with %s after %.2f s (bound %.2f s)\n",
                        status_name(self_->errors.front().status).c_str(), took, kBound);
            EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, self_->errors.front().status)
                << status_name(self_->errors.front().status);
        }
        return took;
    }
};

TEST_F(PeerDeathAtRetrySeven, DeadPeerFailsWithinTheTimeoutBound)
{
    skip_unbounded();
    UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_PUT_ZCOPY);
    check_alive();
    if (IsSkipped() || HasFatalFailure()) {
        return;
    }
    const double took = put_to_killed_peer_after(std::chrono::seconds(0));
    // the bound holds on an idle guest; a loaded one stretches every timer alike
    EXPECT_LT(took, 10 * kBound) << "far past TIMEOUT x (RETRY_COUNT + 1)";
    check_survivor_iface();
}

// The endpoint idle for longer than the bound (the last check saw nothing in flight), then a put
// to a peer that died meanwhile: the wait starts at the put, so the endpoint gets the whole
// bound before it fails, not a verdict at the first check
TEST_F(PeerDeathAtRetrySeven, AnIdleSpellDoesNotCountTowardsTheBound)
{
    skip_unbounded();
    UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_PUT_ZCOPY);
    check_alive();
    if (IsSkipped() || HasFatalFailure()) {
        return;
    }
    // checks see the endpoint idle for half a bound, then no call into UCT for three bounds
    ASSERT_NO_FATAL_FAILURE(unsignaled_write_then_progress_for(0x0123456789abcdefull, kBound / 2));
    const double took = put_to_killed_peer_after(std::chrono::duration<double>(3 * kBound));
    // load only lengthens it; 0.9: the iface's clock and this one may differ by a little
    EXPECT_GE(took, 0.9 * kTimeoutTimesTries) << "failed before TIMEOUT x (RETRY_COUNT + 1)";
    EXPECT_LT(took, 10 * kBound) << "far past TIMEOUT x (RETRY_COUNT + 1)";
    check_survivor_iface();
}

TEST_F(PeerDeathAtRetrySeven, LiveIdleEndpointWithAnUnsignaledSendIsLeftAlone)
{
    UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_PUT_SHORT);
    check_alive();
    if (IsSkipped() || HasFatalFailure()) {
        return;
    }
    // idle, progressing, three bounds long: nothing may fail
    const uint64_t value = 0x0123456789abcdefull;
    ASSERT_NO_FATAL_FAILURE(unsignaled_write_then_progress_for(value, 3 * kBound));
    EXPECT_FALSE(self_->failed(ep_)) << "a live peer's endpoint failed while idle: "
                                     << status_name(self_->errors.front().status);
    EXPECT_EQ(UCS_OK, flush_and_wait(*self_, ep_, {self_.get()}, 0, kDetectionDeadline));
    // and the connection still works: the peer holds what was written
    UCTEST_ASSERT_CAP(UCT_IFACE_FLAG_GET_ZCOPY);
    local_->fill(0);
    Transfer t(*self_, ep_);
    ucs_status_t st = t.post_retry(Op::GetZcopy, *local_, 0, sizeof(value), peer_->remote_address,
                                   rkey_->rkey(), 0, {self_.get()});
    ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS) << status_name(st);
    ASSERT_TRUE(progress_until([&] { return t.completion().done(); }, {self_.get()},
                               "get from the idle peer"));
    ASSERT_EQ(UCS_OK, t.completion().status());
    uint64_t read_back;
    std::memcpy(&read_back, local_->data(), sizeof(read_back));
    EXPECT_EQ(value, read_back);
}

}  // namespace
}  // namespace uctest
