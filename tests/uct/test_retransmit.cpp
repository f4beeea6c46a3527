// Work that goes out twice: the RC retransmission timeout at its minimum (UCX_GDR_TIMEOUT=10us,
// 8.192 us, which Soft-RoCE rounds up to one jiffy), so that under emulation requests are sent
// again while their responses are still on the way and the responder sees them twice. Each
// operation must still complete, once, with its own result.
//
// On Soft-RoCE (rxe) a work request with IBV_SEND_FENCE waits until every RDMA read and atomic
// credit of the QP is back -- its own included once it has been sent -- so a retransmission that
// rewinds the send queue to a fenced read or atomic leaves that request waiting for itself, and
// the QP stops for good. gdr_rc's default fence there is the strong one (UCX_GDR_FENCE=auto): no
// IBV_SEND_FENCE on any request, the operation after a fence waits for everything before it to
// complete (docs/atomics.md, "On Soft-RoCE"). UCX_GDR_FENCE=weak (the flag, as UCX's
// rc_verbs) makes both tests below hang at their first retransmission on the 6.1 and 6.12 kernels.
#include "pair_fixture.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <fstream>

namespace uctest {
namespace {

/// A port counter of the device under test (Soft-RoCE's hw_counters), or -1 where there is none:
/// duplicate_request (requests the responder saw twice), completer_retry_err (times the requester
/// went back to resend).
long port_counter(const char *name)
{
    const std::string &dev = target().dev;
    const size_t colon     = dev.find(':');
    if (colon == std::string::npos) {
        return -1;
    }
    std::ifstream f("/sys/class/infiniband/" + dev.substr(0, colon) + "/ports/" +
                    dev.substr(colon + 1) + "/hw_counters/" + name);
    long v = -1;
    return (f >> v) ? v : -1;
}

class Retransmitted : public ::testing::Test {
protected:
    static constexpr int kWindow = 8;  ///< operations in flight
    static constexpr int kMinOps = 2000, kMaxOps = 30000;
    static constexpr long kWantDuplicates = 20;  ///< retransmissions that make a run count
    /// the longest an operation may take: the retransmission timer fires every few ms
    static constexpr Seconds kOpDeadline{15.0};

    void SetUp() override
    {
        UCTEST_REQUIRE_TARGET(res_);
        auto overrides = default_iface_overrides();
        for (auto &o : overrides) {
            if (std::find(o.names.begin(), o.names.end(), "TIMEOUT") != o.names.end()) {
                o.value = "10us";
            } else if (std::find(o.names.begin(), o.names.end(), "RETRY_COUNT") != o.names.end()) {
                o.value = "7";  // the most there are: a QP that stops shows as a hang
            }
        }
        a_    = std::make_unique<Entity>(res_, overrides);
        b_    = std::make_unique<Entity>(res_, overrides);
        pair_ = connect_pair(*a_, *b_);
        mem_  = std::make_unique<RegisteredBuffer>(b_->md(), 4096, 4096);
        rkey_ = std::make_unique<RemoteKey>(a_->md().component(),
                                            mem_->registration().packed_rkey());
        mem_->fill(0);
    }

    /// Runs `post(k)` (one fenced operation counted by comp_, after whatever it puts first) for
    /// k = 0, 1, ... with kWindow in flight, until kMaxOps or, past kMinOps, kWantDuplicates
    /// retransmissions; returns the number of operations, or -1 after a failure.
    int run(const std::function<ucs_status_t(int)> &post)
    {
        const long before  = port_counter("duplicate_request");
        const long retries = port_counter("completer_retry_err");
        int k              = 0;
        auto waited_for    = [&](int limit) {
            if (progress_until([&] { return comp_.outstanding() <= limit; }, {a_.get(), b_.get()},
                               "the fenced operations", kOpDeadline)) {
                return true;
            }
            ADD_FAILURE() << comp_.outstanding() << " of " << k << " fenced operations still "
                          << "outstanding after " << kOpDeadline.count() << " s; the requester "
                          << "went back to resend " << since(retries, "completer_retry_err")
                          << " time(s), " << since(before, "duplicate_request")
                          << " request(s) were answered twice";
            return false;
        };
        for (; k < kMaxOps; ++k) {
            if (k >= kMinOps && k % 500 == 0 &&
                since(before, "duplicate_request") >= kWantDuplicates) {
                break;
            }
            if (!waited_for(kWindow - 1)) {
                return -1;
            }
            ucs_status_t st = post_with_retry([&] { return post(k); }, {a_.get(), b_.get()});
            if (st != UCS_OK && st != UCS_INPROGRESS) {
                ADD_FAILURE() << "operation " << k << ": " << status_name(st);
                return -1;
            }
        }
        if (!waited_for(0)) {
            return -1;
        }
        EXPECT_EQ(UCS_OK, comp_.status());
        EXPECT_TRUE(a_->errors.empty()) << status_name(a_->errors.front().status);
        duplicates_ = since(before, "duplicate_request");
        std::printf("[   INFO   ] %d fenced operations, %ld requests answered twice\n", k,
                    duplicates_);
        return k;
    }

    /// How much port_counter(name) rose since it read `before` (-1: no such counter)
    static long since(long before, const char *name)
    {
        const long now = port_counter(name);
        return (before < 0 || now < 0) ? -1 : now - before;
    }

    /// With the device's counter readable, a run without a retransmission tested nothing.
    void require_retransmissions()
    {
        if (duplicates_ == 0) {
            GTEST_SKIP() << "no request went out twice in " << kMaxOps
                         << " operations: nothing was tested";
        }
    }

    /// put_short of `value` to `addr`, retried by run()
    ucs_status_t put(uint64_t value, uint64_t addr)
    {
        return uct_ep_put_short(pair_.ab, &value, sizeof(value), addr, rkey_->rkey());
    }

    TlResource res_;
    std::unique_ptr<Entity> a_, b_;
    EpPair pair_;
    std::unique_ptr<RegisteredBuffer> mem_;
    std::unique_ptr<RemoteKey> rkey_;
    Completion comp_;
    long duplicates_ = -1;
};

// put; fence; fetch-add of a counter, kWindow of them in flight: each fetch-add completes, the
// counter ends exact and each fetched a different value (none lost, none applied twice).
TEST_F(Retransmitted, FencedFetchAddsBehindPutsAllCompleteOnce)
{
    if (!(a_->attr().cap.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_ADD))) {
        GTEST_SKIP() << res_.tl_name << " advertises no 64-bit fetch-add";
    }
    const uint64_t counter = mem_->address() + 8, other = mem_->address() + 64;
    std::vector<uint64_t> fetched(kMaxOps, ~0ull);
    bool fenced = false;  // the put of operation k went out, its fence not yet
    const int n = run([&](int k) {
        if (!fenced) {
            ucs_status_t st = put(0xf00d000000000000ull | k, other);
            if (st != UCS_OK) {
                return st;
            }
            EXPECT_EQ(UCS_OK, uct_ep_fence(pair_.ab, 0));
            fenced = true;
        }
        ucs_status_t st = uct_ep_atomic64_fetch(pair_.ab, UCT_ATOMIC_OP_ADD, 1, &fetched[k],
                                                counter, rkey_->rkey(), comp_.arm());
        comp_.posted(st);
        if (st != UCS_ERR_NO_RESOURCE) {
            fenced = false;
        }
        return st;
    });
    ASSERT_GT(n, 0);
    uint64_t end;
    std::memcpy(&end, mem_->data() + 8, sizeof(end));
    EXPECT_EQ(static_cast<uint64_t>(n), end) << "a fetch-add lost or applied twice";
    std::vector<uint64_t> sorted(fetched.begin(), fetched.begin() + n);
    std::sort(sorted.begin(), sorted.end());
    for (int k = 0; k < n; ++k) {
        ASSERT_EQ(static_cast<uint64_t>(k), sorted[k])
            << "the fetch-adds did not fetch 0.." << n - 1 << " once each";
    }
    require_retransmissions();
}

// put; fence; get of what the put wrote (to one of 64 words, so that a retransmitted get reads
// its own put's value), kWindow in flight: each get completes with that value.
TEST_F(Retransmitted, FencedGetsBehindPutsAllCompleteWithThePutsData)
{
    UCTEST_SKIP_UNLESS_CAP(*a_, UCT_IFACE_FLAG_GET_BCOPY);
    UCTEST_SKIP_UNLESS_CAP(*a_, UCT_IFACE_FLAG_PUT_SHORT);
    const uct_unpack_callback_t unpack = [](void *arg, const void *data, size_t length) {
        std::memcpy(arg, data, length);
    };
    std::vector<uint64_t> got(kMaxOps, ~0ull);
    auto value  = [](int k) { return 0x6e7000000000000ull | static_cast<uint64_t>(k); };
    bool fenced = false;
    const int n = run([&](int k) {
        const uint64_t addr = mem_->address() + 8 * (k % 64);
        if (!fenced) {
            ucs_status_t st = put(value(k), addr);
            if (st != UCS_OK) {
                return st;
            }
            EXPECT_EQ(UCS_OK, uct_ep_fence(pair_.ab, 0));
            fenced = true;
        }
        ucs_status_t st = uct_ep_get_bcopy(pair_.ab, unpack, &got[k], sizeof(got[k]), addr,
                                           rkey_->rkey(), comp_.arm());
        comp_.posted(st);
        if (st != UCS_ERR_NO_RESOURCE) {
            fenced = false;
        }
        return st;
    });
    ASSERT_GT(n, 0);
    for (int k = 0; k < n; ++k) {
        ASSERT_EQ(value(k), got[k])
            << std::hex << "get " << std::dec << k << " did not read what the put before it wrote";
    }
    require_retransmissions();
}

}  // namespace
}  // namespace uctest
