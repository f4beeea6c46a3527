// The same remote-access faults seen through UCP: with UCX_TLS restricted to the transport under
// test (plus the UD auxiliary transport for wireup), a put/get/atomic with a foreign key or an
// address outside the registration completes with an error status, the endpoint's UCP error
// handler runs, and another endpoint between the same workers keeps moving correct data.
#include "uct_harness.h"

#include <ucp/api/ucp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

namespace uctest {
namespace {

void check(ucs_status_t st, const char *what)
{
    if (st != UCS_OK) {
        throw std::runtime_error(std::string(what) + ": " + status_name(st));
    }
}

/// UCX_TLS for UCP runs: GDR_TEST_UCX_TLS, else "<tl>,ud_verbs:aux" (UCP wires up a
/// connect-to-ep transport through an auxiliary one).
std::string ucp_tls()
{
    const char *env = std::getenv("GDR_TEST_UCX_TLS");
    return env && *env ? env : target().tl + ",ud_verbs:aux";
}

class UcpContext {
public:
    UcpContext()
    {
        // UCX 1.13's UD drops every packet on rxe otherwise (docs/rxe-vm.md#pitfalls). An environment
        // variable, not ucp_config_modify(): UCP 1.13 does not map that name onto ud_verbs.
        setenv("UCX_UD_VERBS_ETH_DGID_CHECK", "n", 0);
        ucp_config_t *cfg = nullptr;
        check(ucp_config_read(nullptr, nullptr, &cfg), "ucp_config_read");
        check(ucp_config_modify(cfg, "TLS", ucp_tls().c_str()), "UCX_TLS");
        check(ucp_config_modify(cfg, "NET_DEVICES", target().dev.c_str()), "UCX_NET_DEVICES");
        // atomics through the transport's own ops, not UCP's software emulation over AM (which
        // executes at the target without looking at the key, so the faults would not fault)
        check(ucp_config_modify(cfg, "ATOMIC_MODE", "device"), "UCX_ATOMIC_MODE");
        ucp_params_t params{};
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_TAG;
        ucs_status_t st   = ucp_init(&params, cfg, &context);
        ucp_config_release(cfg);
        check(st, "ucp_init");
    }
    ~UcpContext() { ucp_cleanup(context); }
    UcpContext(const UcpContext &)            = delete;
    UcpContext &operator=(const UcpContext &) = delete;
    ucp_context_h context                     = nullptr;
};

class UcpWorker {
public:
    explicit UcpWorker(ucp_context_h ctx)
    {
        ucp_worker_params_t params{};
        params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        params.thread_mode = UCS_THREAD_MODE_SINGLE;
        check(ucp_worker_create(ctx, &params, &worker), "ucp_worker_create");
        check(ucp_worker_get_address(worker, &address, &address_length), "ucp_worker_get_address");
    }
    ~UcpWorker()
    {
        ucp_worker_release_address(worker, address);
        ucp_worker_destroy(worker);
    }
    UcpWorker(const UcpWorker &)            = delete;
    UcpWorker &operator=(const UcpWorker &) = delete;
    ucp_worker_h worker                     = nullptr;
    ucp_address_t *address                  = nullptr;
    size_t address_length                   = 0;
};

/// Host memory mapped with ucp_mem_map on a context, with its packed rkey.
class UcpMemory {
public:
    UcpMemory(ucp_context_h ctx, void *address, size_t length) : ctx_(ctx)
    {
        ucp_mem_map_params_t params{};
        params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        params.address    = address;
        params.length     = length;
        check(ucp_mem_map(ctx, &params, &memh), "ucp_mem_map");
        void *buf   = nullptr;
        size_t size = 0;
        check(ucp_rkey_pack(ctx, memh, &buf, &size), "ucp_rkey_pack");
        packed.assign(static_cast<uint8_t *>(buf), static_cast<uint8_t *>(buf) + size);
        ucp_rkey_buffer_release(buf);
    }
    ~UcpMemory() { ucp_mem_unmap(ctx_, memh); }
    UcpMemory(const UcpMemory &)            = delete;
    UcpMemory &operator=(const UcpMemory &) = delete;
    ucp_mem_h memh                          = nullptr;
    Bytes packed;

private:
    ucp_context_h ctx_;
};

/// An unpacked UCP remote key, destroyed with its scope (also when an assertion returns early).
class UcpRkey {
public:
    UcpRkey(ucp_ep_h ep, const Bytes &packed)
    {
        check(ucp_ep_rkey_unpack(ep, packed.data(), &rkey), "ucp_ep_rkey_unpack");
    }
    ~UcpRkey() { ucp_rkey_destroy(rkey); }
    UcpRkey(const UcpRkey &)            = delete;
    UcpRkey &operator=(const UcpRkey &) = delete;
    ucp_rkey_h rkey                     = nullptr;
};

struct EpState {
    int errors          = 0;
    ucs_status_t status = UCS_OK;
};

struct RequestState {
    bool done           = false;
    ucs_status_t status = UCS_INPROGRESS;
};

enum class UcpOp {
    Put,
    Get,
    FetchAdd
};
const char *ucp_op_name(UcpOp op)
{
    return op == UcpOp::Put ? "put" : op == UcpOp::Get ? "get" : "atomic_fadd";
}
void PrintTo(UcpOp op, std::ostream *os)
{
    *os << ucp_op_name(op);
}

class UcpRemoteAccessErrors : public ::testing::TestWithParam<UcpOp> {
protected:
    static constexpr size_t kSize = 64 << 10;
    static constexpr size_t kPad  = 1 << 20;

    void SetUp() override
    {
        UCTEST_REQUIRE_TARGET(res_);
        ctx_ = std::make_unique<UcpContext>();
        a_   = std::make_unique<UcpWorker>(ctx_->context);
        b_   = std::make_unique<UcpWorker>(ctx_->context);
        // the target buffer has unregistered, mapped memory around it
        map_len_ = kPad + kSize + kPad;
        map_     = static_cast<uint8_t *>(
            mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        ASSERT_NE(MAP_FAILED, static_cast<void *>(map_));
        remote_     = map_ + kPad;
        remote_mem_ = std::make_unique<UcpMemory>(ctx_->context, remote_, kSize);
        local_.assign(kSize, 0);
    }
    void TearDown() override
    {
        for (ucp_ep_h ep : eps_) {
            close_ep(ep);
        }
        eps_.clear();
        remote_mem_.reset();
        if (map_ && map_ != MAP_FAILED) {
            munmap(map_, map_len_);
        }
        b_.reset();
        a_.reset();
        ctx_.reset();
    }

    ucp_ep_h connect(UcpWorker &from, UcpWorker &to, EpState *state)
    {
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                            UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.address        = to.address;
        params.err_mode       = UCP_ERR_HANDLING_MODE_PEER;
        params.err_handler.cb = [](void *arg, ucp_ep_h, ucs_status_t status) {
            auto *s = static_cast<EpState *>(arg);
            ++s->errors;
            s->status = status;
        };
        params.err_handler.arg = state;
        ucp_ep_h ep            = nullptr;
        check(ucp_ep_create(from.worker, &params, &ep), "ucp_ep_create");
        eps_.push_back(ep);
        return ep;
    }

    void close_ep(ucp_ep_h ep)
    {
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        void *req          = ucp_ep_close_nbx(ep, &param);
        if (UCS_PTR_IS_PTR(req)) {
            wait([&] { return ucp_request_check_status(req) != UCS_INPROGRESS; }, "ep close");
            ucp_request_free(req);
        }
    }

    ::testing::AssertionResult wait(const std::function<bool()> &done, const std::string &what,
                                    Seconds deadline = kDefaultDeadline)
    {
        const auto start = std::chrono::steady_clock::now();
        while (!done()) {
            ucp_worker_progress(a_->worker);
            ucp_worker_progress(b_->worker);
            if (std::chrono::steady_clock::now() - start > deadline) {
                return ::testing::AssertionFailure()
                       << "timed out after " << deadline.count() << " s waiting for " << what;
            }
        }
        return ::testing::AssertionSuccess();
    }

    /// Starts `op` and returns its final status (waiting for it), UCS_ERR_TIMED_OUT on a hang.
    ucs_status_t run_op(UcpOp op, ucp_ep_h ep, void *buf, size_t len, uint64_t addr,
                        ucp_rkey_h rkey)
    {
        RequestState rs;
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send      = [](void *, ucs_status_t status, void *user) {
            auto *r   = static_cast<RequestState *>(user);
            r->done   = true;
            r->status = status;
        };
        param.user_data  = &rs;
        uint64_t operand = 1;
        void *req        = nullptr;
        switch (op) {
        case UcpOp::Put:
            req = ucp_put_nbx(ep, buf, len, addr, rkey, &param);
            break;
        case UcpOp::Get:
            req = ucp_get_nbx(ep, buf, len, addr, rkey, &param);
            break;
        case UcpOp::FetchAdd:
            param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
            param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
            param.reply_buffer = buf;
            req = ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &operand, 1, addr & ~uint64_t(7), rkey,
                                    &param);
            break;
        }
        if (!UCS_PTR_IS_PTR(req)) {
            return UCS_PTR_STATUS(req);
        }
        ucs_status_t st = wait([&] { return rs.done; }, "UCP operation") ? rs.status
                                                                         : UCS_ERR_TIMED_OUT;
        if (st != UCS_ERR_TIMED_OUT) {
            ucp_request_free(req);
        }
        return st;
    }

    /// Flushes an endpoint; the final status, UCS_ERR_TIMED_OUT on a hang.
    ucs_status_t flush_ep(ucp_ep_h ep)
    {
        ucp_request_param_t param{};
        void *req = ucp_ep_flush_nbx(ep, &param);
        if (!UCS_PTR_IS_PTR(req)) {
            return UCS_PTR_STATUS(req);
        }
        ucs_status_t st = UCS_INPROGRESS;
        if (!wait([&] { return (st = ucp_request_check_status(req)) != UCS_INPROGRESS; },
                  "ep flush")) {
            return UCS_ERR_TIMED_OUT;
        }
        ucp_request_free(req);
        return st;
    }

    TlResource res_;
    std::unique_ptr<UcpContext> ctx_;
    std::unique_ptr<UcpWorker> a_, b_;
    std::unique_ptr<UcpMemory> remote_mem_;
    std::vector<ucp_ep_h> eps_;
    uint8_t *map_ = nullptr, *remote_ = nullptr;
    size_t map_len_ = 0;
    Bytes local_;
};

/// Whether UCP 1.13 puts 64-bit atomics on the transport itself: its amo lane selection wants
/// every op of UCP_ATOMIC_OP_MASK/UCP_ATOMIC_FOP_MASK (wireup/select.c); otherwise it emulates
/// atomics over active messages, executed by the target's UCP without any key check.
bool transport_carries_ucp_atomics(const TlResource &res)
{
    const uint64_t post = UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) |
                          UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_XOR);
    const uint64_t fetch = post | UCS_BIT(UCT_ATOMIC_OP_SWAP) | UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    Entity probe(res);
    const auto &a = probe.attr().cap.atomic64;
    return probe.has_flag(UCT_IFACE_FLAG_ATOMIC_DEVICE) && (a.op_flags & post) == post &&
           (a.fop_flags & fetch) == fetch;
}

TEST_P(UcpRemoteAccessErrors, ReportedToErrorHandlerOthersGoOn)
{
    const UcpOp op = GetParam();
    if (op == UcpOp::FetchAdd && !transport_carries_ucp_atomics(res_)) {
        GTEST_SKIP() << res_.tl_name
                     << " lacks 64-bit and/or/xor/swap: UCP emulates atomics over AM, which "
                     << "checks no remote key (covered at UCT level by Rma/RemoteAccessErrors)";
    }
    EpState bystander_state;
    ucp_ep_h bystander = connect(*a_, *b_, &bystander_state);
    UcpRkey bystander_rkey(bystander, remote_mem_->packed);
    const ucp_rkey_h bystander_key = bystander_rkey.rkey;
    ASSERT_EQ(UCS_OK, flush_ep(bystander));  // wired up before anything fails

    // a second context registers the same memory: a valid key of another protection domain
    UcpContext other_ctx;
    UcpMemory foreign(other_ctx.context, remote_, kSize);

    const struct {
        const char *name;
        const Bytes &key;
        uint64_t addr;
    } faults[] = {
        {"foreign_key", foreign.packed, reinterpret_cast<uintptr_t>(remote_)},
        {"past_end", remote_mem_->packed, reinterpret_cast<uintptr_t>(remote_) + kSize + kPad / 2},
    };
    for (const auto &f : faults) {
        SCOPED_TRACE(f.name);
        EpState state;
        ucp_ep_h victim = connect(*a_, *b_, &state);
        std::optional<UcpRkey> victim_rkey(std::in_place, victim, f.key);
        const ucp_rkey_h rkey = victim_rkey->rkey;
        ASSERT_EQ(UCS_OK, flush_ep(victim));
        const uint8_t *target = reinterpret_cast<const uint8_t *>(f.addr & ~uint64_t(7));
        const Bytes before(target, target + 64);

        ucs_status_t st = run_op(op, victim, local_.data(), 64, f.addr, rkey);
        ASSERT_NE(UCS_ERR_TIMED_OUT, st) << ucp_op_name(op) << " hung";
        ucs_status_t fst = flush_ep(victim);
        ASSERT_NE(UCS_ERR_TIMED_OUT, fst) << "flush of the failed endpoint hung";
        ASSERT_TRUE(wait([&] { return state.errors > 0; }, "the UCP error handler", Seconds(30)))
            << ucp_op_name(op) << " completed with " << status_name(st) << ", flush with "
            << status_name(fst);
        EXPECT_TRUE(UCS_STATUS_IS_ERR(st) || UCS_STATUS_IS_ERR(fst))
            << "neither the operation nor the flush reported an error";
        EXPECT_TRUE(UCS_STATUS_IS_ERR(state.status));
        EXPECT_TRUE(std::equal(before.begin(), before.end(), target))
            << "the faulty access modified memory";
        std::printf("[   INFO   ] %s/%s: op %s, flush %s, error handler %s\n", f.name,
                    ucp_op_name(op), status_name(st).c_str(), status_name(fst).c_str(),
                    status_name(state.status).c_str());
        victim_rkey.reset();  // before its endpoint goes
        close_ep(victim);
        eps_.erase(std::find(eps_.begin(), eps_.end(), victim));

        // the other endpoint between the same workers still moves correct data both ways
        Bytes out(kSize), back(kSize, 0);
        for (size_t i = 0; i < kSize; ++i) {
            out[i] = RegisteredBuffer::pattern_byte(static_cast<uint32_t>(f.addr), i);
        }
        ASSERT_EQ(UCS_OK, run_op(UcpOp::Put, bystander, out.data(), kSize,
                                 reinterpret_cast<uintptr_t>(remote_), bystander_key));
        ASSERT_EQ(UCS_OK, flush_ep(bystander));
        ASSERT_EQ(UCS_OK, run_op(UcpOp::Get, bystander, back.data(), kSize,
                                 reinterpret_cast<uintptr_t>(remote_), bystander_key));
        EXPECT_EQ(0, std::memcmp(out.data(), remote_, kSize)) << "bystander put";
        EXPECT_EQ(out, back) << "bystander get";
        EXPECT_EQ(0, bystander_state.errors) << "the bystander endpoint was failed too";
    }
}

INSTANTIATE_TEST_SUITE_P(Ucp, UcpRemoteAccessErrors,
                         ::testing::Values(UcpOp::Put, UcpOp::Get, UcpOp::FetchAdd),
                         [](const ::testing::TestParamInfo<UcpOp> &info) {
                             return ucp_op_name(info.param);
                         });

}  // namespace
}  // namespace uctest
