// RMA with a wrong remote key or outside the registered range: the operation completes with an
// error (or is refused), the endpoint is reported to the iface error handler, nothing crashes or
// hangs, and other endpoints of the same interfaces keep working.
#include "pair_fixture.h"

#include <algorithm>

namespace uctest {
namespace {

enum class Fault {
    ForeignKey,  ///< a valid key of the same memory, from another md (protection domain)
    StaleKey,  ///< a key whose registration was released (md registration cache disabled)
    PastEnd,  ///< valid key, address past the end of the registered range
    StraddlingEnd,  ///< valid key, range starting inside and ending outside the registration
    /// a key of the same memory from a second registration that asked for every remote access
    /// but the op's own (remote write for a put, read for a get, atomic for an atomic): an MR
    /// must grant no more than it was asked for
    NarrowedAccess,
};
const char *fault_name(Fault f)
{
    switch (f) {
    case Fault::ForeignKey:
        return "foreign_key";
    case Fault::StaleKey:
        return "stale_key";
    case Fault::PastEnd:
        return "past_end";
    case Fault::StraddlingEnd:
        return "straddling_end";
    case Fault::NarrowedAccess:
        return "narrowed_access";
    }
    return "?";
}

/// An RMA op that can hit remote memory: a data op, or one of the atomics.
enum class RmaOp {
    PutShort,
    PutBcopy,
    PutZcopy,
    GetBcopy,
    GetZcopy,
    AtomicAdd64,
    AtomicFetchAdd64,
    AtomicCswap64
};
struct RmaOpInfo {
    RmaOp op;
    const char *name;
};
const RmaOpInfo kRmaOps[] = {
    {RmaOp::PutShort, "put_short"},
    {RmaOp::PutBcopy, "put_bcopy"},
    {RmaOp::PutZcopy, "put_zcopy"},
    {RmaOp::GetBcopy, "get_bcopy"},
    {RmaOp::GetZcopy, "get_zcopy"},
    {RmaOp::AtomicAdd64, "atomic64_add"},
    {RmaOp::AtomicFetchAdd64, "atomic64_fadd"},
    {RmaOp::AtomicCswap64, "atomic64_cswap"},
};

void PrintTo(RmaOp op, std::ostream *os)
{
    *os << kRmaOps[static_cast<int>(op)].name;
}

class RemoteAccessErrors : public PairTest, public ::testing::WithParamInterface<RmaOp> {
protected:
    // Without the registration cache, deregistration really invalidates the key (UCX's ib md
    // keeps cached registrations alive). Harmless for the other faults.
    std::vector<ConfigOverride> md_overrides() const override
    {
        return {{{"REG_METHODS"}, "direct"},  // UCX's ib md: register directly, no rcache
                {{"RCACHE"}, "no"}};  // the usual name of such a switch elsewhere
    }

    bool supported(RmaOp op) const;
    /// Data op of the same kind for Transfer, if `op` is one.
    static std::optional<Op> data_op(RmaOp op);
    /// Runs `op` on a fresh endpoint pair against `fault`; checks error reporting and recovery.
    void run_fault(RmaOp op, Fault fault);
    /// Every remote access but the one `op` needs.
    static unsigned access_without(RmaOp op);
    /// A fresh pair still moves data correctly in both directions.
    void check_bystander(EpPair &bystander, RegisteredBuffer &remote, RemoteKey &rkey);

    /// Bytes one faulty access moves: 64, or the op's minimum when larger (get_zcopy on rc_verbs).
    size_t op_length(RmaOp op) const
    {
        auto d = data_op(op);
        return d ? std::max<size_t>(64, op_min_length(a_->attr(), *d)) : sizeof(uint64_t);
    }

    static constexpr size_t kRemoteSize = 64 << 10;
};

bool RemoteAccessErrors::supported(RmaOp op) const
{
    const auto &c = a_->attr().cap;
    switch (op) {
    case RmaOp::AtomicAdd64:
        return c.atomic64.op_flags & UCS_BIT(UCT_ATOMIC_OP_ADD);
    case RmaOp::AtomicFetchAdd64:
        return c.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_ADD);
    case RmaOp::AtomicCswap64:
        return c.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    default: {
        Op d = *data_op(op);
        return a_->has_flag(op_info(d).cap_flag) && op_max_length(a_->attr(), d) >= op_length(op);
    }
    }
}

std::optional<Op> RemoteAccessErrors::data_op(RmaOp op)
{
    switch (op) {
    case RmaOp::PutShort:
        return Op::PutShort;
    case RmaOp::PutBcopy:
        return Op::PutBcopy;
    case RmaOp::PutZcopy:
        return Op::PutZcopy;
    case RmaOp::GetBcopy:
        return Op::GetBcopy;
    case RmaOp::GetZcopy:
        return Op::GetZcopy;
    default:
        return std::nullopt;
    }
}

unsigned RemoteAccessErrors::access_without(RmaOp op)
{
    switch (op) {
    case RmaOp::PutShort:
    case RmaOp::PutBcopy:
    case RmaOp::PutZcopy:
        return UCT_MD_MEM_ACCESS_ALL & ~UCT_MD_MEM_ACCESS_REMOTE_PUT;
    case RmaOp::GetBcopy:
    case RmaOp::GetZcopy:
        return UCT_MD_MEM_ACCESS_ALL & ~UCT_MD_MEM_ACCESS_REMOTE_GET;
    default:
        return UCT_MD_MEM_ACCESS_ALL & ~UCT_MD_MEM_ACCESS_REMOTE_ATOMIC;
    }
}

void RemoteAccessErrors::check_bystander(EpPair &bystander, RegisteredBuffer &remote,
                                         RemoteKey &rkey)
{
    RegisteredBuffer local(a_->md(), kRemoteSize, 4096), back(a_->md(), kRemoteSize, 4096);
    local.fill_pattern(4242);
    back.fill(0);
    Transfer t(*a_, bystander.ab);
    ASSERT_NE(UCS_ERR_TIMED_OUT, t.post_retry(Op::PutZcopy, local, 0, kRemoteSize, remote.address(),
                                              rkey.rkey(), 0, {a_.get(), b_.get()}));
    ASSERT_EQ(UCS_OK, uct_ep_fence(bystander.ab, 0));
    ASSERT_NE(UCS_ERR_TIMED_OUT, t.post_retry(Op::GetZcopy, back, 0, kRemoteSize, remote.address(),
                                              rkey.rkey(), 0, {a_.get(), b_.get()}));
    ASSERT_TRUE(wait([&] { return t.completion().done(); }, "bystander put+get"));
    ASSERT_EQ(UCS_OK, t.completion().status())
        << "a healthy endpoint failed after another one's error";
    ASSERT_EQ(UCS_OK, flush(bystander.ab));
    EXPECT_TRUE(remote.check_pattern(4242, kRemoteSize, 0));
    EXPECT_TRUE(back.check_pattern(4242, kRemoteSize, 0));
    EXPECT_FALSE(a_->failed(bystander.ab));
}

void RemoteAccessErrors::run_fault(RmaOp op, Fault fault)
{
    if (!data_op(op) && fault == Fault::StraddlingEnd) {
        return;  // an aligned 8-byte atomic cannot straddle the end of a page-multiple registration
    }
    RegisteredBuffer remote(b_->md(), kRemoteSize);  // 1 MiB of unregistered mapping on each side
    remote.fill(0);
    RegisteredBuffer local(a_->md(), kRemoteSize, 4096);
    local.fill_pattern(1);
    RemoteKey good_key(a_->md().component(), remote.registration().packed_rkey());

    // the key and address of the faulty access
    std::optional<MemoryDomain> other_md;
    std::optional<Registration> other_reg;
    std::optional<RegisteredBuffer> stale_target;
    std::optional<RemoteKey> bad_key;
    uint64_t addr = remote.address();
    switch (fault) {
    case Fault::ForeignKey:
        other_md.emplace(res_);
        other_reg.emplace(*other_md, remote.data(), kRemoteSize);
        bad_key.emplace(a_->md().component(), other_reg->packed_rkey());
        break;
    case Fault::NarrowedAccess:
        // the target's md registers it once more (no registration cache: REG_METHODS/RCACHE)
        other_reg.emplace(b_->md(), remote.data(), kRemoteSize, access_without(op));
        bad_key.emplace(a_->md().component(), other_reg->packed_rkey());
        break;
    case Fault::StaleKey:
        if (b_->md().applied_overrides().empty()) {
            std::printf(
                "[   NOTE   ] md %s has neither REG_METHODS nor RCACHE: assuming it caches no "
                "registrations\n",
                res_.md_name.c_str());
        }
        // a separate mapping whose only registration is released once its key is packed
        stale_target.emplace(b_->md(), kRemoteSize);
        bad_key.emplace(a_->md().component(), stale_target->registration().packed_rkey());
        stale_target->registration().release();
        addr = stale_target->address();
        break;
    case Fault::PastEnd:
        addr = remote.address() + kRemoteSize + remote.pad() / 2;
        break;
    case Fault::StraddlingEnd:
        addr = remote.address() + kRemoteSize - op_length(op) / 2;
        break;
    }
    const uct_rkey_t rkey = bad_key ? bad_key->rkey() : good_key.rkey();
    // All target addresses are mapped in this process: nothing there may change.
    const uint8_t *target_bytes = reinterpret_cast<const uint8_t *>(addr & ~uint64_t(7));
    const Bytes before(target_bytes, target_bytes + op_length(op));

    EpPair victim = connect_pair(*a_, *b_);
    Transfer t(*a_, victim.ab);
    uint64_t fetched = 0;
    ucs_status_t posted;
    const uint64_t aligned = addr & ~uint64_t(7);
    switch (op) {
    case RmaOp::AtomicAdd64:
        posted = post_with_retry(
            [&] { return uct_ep_atomic64_post(victim.ab, UCT_ATOMIC_OP_ADD, 1, aligned, rkey); },
            {a_.get(), b_.get()});
        break;
    case RmaOp::AtomicFetchAdd64:
    case RmaOp::AtomicCswap64:
        posted = post_with_retry(
            [&] {
                uct_completion_t *c = t.completion().arm();
                ucs_status_t s      = op == RmaOp::AtomicCswap64
                                          ? uct_ep_atomic_cswap64(victim.ab, 0, 1, aligned, rkey,
                                                                  &fetched, c)
                                          : uct_ep_atomic64_fetch(victim.ab, UCT_ATOMIC_OP_ADD, 1,
                                                                  &fetched, aligned, rkey, c);
                t.completion().posted(s);
                return s;
            },
            {a_.get(), b_.get()});
        break;
    default:
        posted = t.post_retry(*data_op(op), local, 0, op_length(op), addr, rkey, 0,
                              {a_.get(), b_.get()});
    }
    ASSERT_NE(UCS_ERR_TIMED_OUT, posted);
    const bool refused_at_once = UCS_STATUS_IS_ERR(posted);
    if (!refused_at_once) {
        // a flush makes even completion-less ops (put_short, atomic post) report their outcome
        Completion flush_comp;
        ucs_status_t fs = start_flush(victim.ab, 0, flush_comp, {a_.get(), b_.get()});
        ASSERT_TRUE(
            wait([&] { return a_->failed(victim.ab) && t.completion().done() && flush_comp.done(); },
                 "error report of the faulty access", Seconds(30)))
            << "error handler " << (a_->failed(victim.ab) ? "called" : "NOT called") << ", "
            << t.completion().outstanding() << " op completion(s) and " << flush_comp.outstanding()
            << " flush completion(s) outstanding (flush returned " << status_name(fs) << ")";
        EXPECT_TRUE(UCS_STATUS_IS_ERR(flush_comp.status()) || UCS_STATUS_IS_ERR(fs))
            << "flush of the failed endpoint reported success";
        if (t.completion().callbacks() > 0) {
            EXPECT_TRUE(UCS_STATUS_IS_ERR(t.completion().status()))
                << "the faulty operation completed with " << status_name(t.completion().status());
        }
        for (const auto &e : a_->errors) {
            if (e.ep == victim.ab) {
                EXPECT_TRUE(UCS_STATUS_IS_ERR(e.status));
                std::printf("[   INFO   ] %s/%s: error handler got %s\n", fault_name(fault),
                            kRmaOps[static_cast<int>(op)].name, status_name(e.status).c_str());
            }
        }
    } else {
        std::printf("[   INFO   ] %s/%s: refused at post with %s\n", fault_name(fault),
                    kRmaOps[static_cast<int>(op)].name, status_name(posted).c_str());
    }
    EXPECT_TRUE(std::equal(before.begin(), before.end(), target_bytes))
        << "the faulty access modified the memory it targeted";
    a_->destroy_ep(victim.ab);
    b_->destroy_ep(victim.ba);

    SCOPED_TRACE("bystander endpoint after the error");
    EpPair bystander = connect_pair(*a_, *b_);
    check_bystander(bystander, remote, good_key);
    check_bystander(pair_, remote, good_key);  // the pair created before the error too
}

TEST_P(RemoteAccessErrors, ReportedAndContained)
{
    const RmaOp op = GetParam();
    if (!supported(op)) {
        GTEST_SKIP() << res_.tl_name << " does not advertise " << kRmaOps[static_cast<int>(op)].name
                     << " for " << op_length(op) << " B";
    }
    for (Fault f : {Fault::ForeignKey, Fault::StaleKey, Fault::PastEnd, Fault::StraddlingEnd,
                    Fault::NarrowedAccess}) {
        SCOPED_TRACE(fault_name(f));
        if (f == Fault::NarrowedAccess && res_.component_name != "gdr") {
            // UCX's ib md registers every MR with all remote access, whatever the flags say
            std::printf("[   NOTE   ] %s: not run on md component %s (ours only)\n", fault_name(f),
                        res_.component_name.c_str());
            continue;
        }
        run_fault(op, f);
        if (HasFatalFailure()) {
            return;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Rma, RemoteAccessErrors,
                         ::testing::Values(RmaOp::PutShort, RmaOp::PutBcopy, RmaOp::PutZcopy,
                                           RmaOp::GetBcopy, RmaOp::GetZcopy, RmaOp::AtomicAdd64,
                                           RmaOp::AtomicFetchAdd64, RmaOp::AtomicCswap64),
                         [](const ::testing::TestParamInfo<RmaOp> &info) {
                             return std::string(kRmaOps[static_cast<int>(info.param)].name);
                         });

}  // namespace
}  // namespace uctest
