// Faults at the UCT level over the transport under test (gdr_rc): a
// peer SIGKILLed in the middle of a bandwidth stream, a peer frozen with SIGSTOP, hundreds of
// endpoints on one interface, a registration over the locked-memory limit. Each one ends in an
// error status within a bound derived from the configuration below (or, for the frozen peer, in
// none: see FrozenPeer), and a third process's endpoint keeps moving correct data afterwards.
// docs/reliability.md has the table with the measured times.
#include "peer_process.h"
#include "uct_ops.h"

#include <linux/capability.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace uctest {
namespace {

/// The RC timeout and retry count this suite sets (UCX_GDR_TIMEOUT / UCX_GDR_RETRY_COUNT).
constexpr double kAckTimeout   = 0.1;
constexpr unsigned kRetryCount = 3;

std::vector<ConfigOverride> rc_overrides()
{
    return {
        {{"RC_TIMEOUT", "TIMEOUT"}, std::to_string(int(kAckTimeout * 1000)) + "ms"},
        {{"RC_RETRY_COUNT", "RETRY_COUNT"}, std::to_string(kRetryCount)},
        {{"IB_RX_QUEUE_LEN", "RX_QUEUE_LEN"}, "256"},  // 2 MiB of receive buffers, not 32
    };
}

/// How long a dead peer takes to show on a busy RC QP: the HCA resends an unacknowledged
/// request RETRY_COUNT times, one local ACK timeout apart, then fails it with
/// IBV_WC_RETRY_EXC_ERR. The timeout is the IBTA code the plugin rounds up to
/// (gdr_iface_ack_timeout_exp: 4.096 us x 2^ceil(log2(t / 4.096 us))): 100 ms -> 134 ms.
Seconds rc_detection_time()
{
    const double unit = 4.096e-6;
    return Seconds((kRetryCount + 1) * unit * std::exp2(std::ceil(std::log2(kAckTimeout / unit))));
}

/// The bound asserted: 10 x the nominal time, since a loaded TCG guest runs its timers late;
/// still far below anything that looks like a hang (5.4 s).
Seconds detection_bound()
{
    return 10 * rc_detection_time();
}

double seconds_since(std::chrono::steady_clock::time_point start)
{
    return Seconds(std::chrono::steady_clock::now() - start).count();
}

/// A peer process connected to `self`, with its registered buffer's key unpacked.
struct ConnectedPeer {
    PeerProcess process;
    uct_ep_h ep = nullptr;
    std::unique_ptr<RemoteKey> rkey;
};

class PeerFaults : public ::testing::Test {
protected:
    void SetUp() override
    {
        UCTEST_REQUIRE_TARGET(res_);
        self_ = std::make_unique<Entity>(res_, rc_overrides());
        UCTEST_SKIP_UNLESS_CAP(*self_, UCT_IFACE_FLAG_PUT_ZCOPY);
        UCTEST_SKIP_UNLESS_CAP(*self_, UCT_IFACE_FLAG_GET_ZCOPY);
        for (auto *p : {&victim_, &witness_}) {
            *p = std::make_unique<ConnectedPeer>();
            std::string why;
            ASSERT_TRUE((*p)->process.connect(*self_, &(*p)->ep, &why)) << why;
            (*p)->rkey = std::make_unique<RemoteKey>(self_->md().component(),
                                                     (*p)->process.packed_rkey);
        }
        local_ = std::make_unique<RegisteredBuffer>(self_->md(), PeerProcess::kBufferSize, 4096);
        std::printf("[   INFO   ] RC timeout %.0f ms x %u retries: a dead peer shows after "
                    "%.2f s nominal, asserted within %.2f s\n",
                    kAckTimeout * 1e3, kRetryCount, rc_detection_time().count(),
                    detection_bound().count());
    }
    void TearDown() override
    {
        victim_.reset();
        witness_.reset();
        local_.reset();
        self_.reset();
    }

    /// One zero-copy op of the whole peer buffer, waited for; returns its completion status.
    ucs_status_t whole_buffer(Op op, ConnectedPeer &peer, Seconds deadline = kDefaultDeadline)
    {
        Transfer t(*self_, peer.ep);
        ucs_status_t st = t.post_retry(op, *local_, 0, PeerProcess::kBufferSize,
                                       peer.process.remote_address, peer.rkey->rkey(), 0,
                                       {self_.get()});
        if (st != UCS_INPROGRESS) {
            return st;
        }
        if (!progress_until([&] { return t.completion().done(); }, {self_.get()},
                            std::string(op_info(op).name) + " of the peer's buffer", deadline)) {
            return UCS_ERR_TIMED_OUT;
        }
        return t.completion().status();
    }

    /// The third process, untouched by the fault, still reads its pattern and takes a write.
    void check_witness()
    {
        local_->fill(0);
        ASSERT_EQ(UCS_OK, whole_buffer(Op::GetZcopy, *witness_));
        ASSERT_TRUE(local_->check_pattern(PeerProcess::kSeed, PeerProcess::kBufferSize, 0));
        local_->fill_pattern(PeerProcess::kSeed + 1);
        ASSERT_EQ(UCS_OK, whole_buffer(Op::PutZcopy, *witness_));
        local_->fill(0);
        ASSERT_EQ(UCS_OK, whole_buffer(Op::GetZcopy, *witness_));
        EXPECT_TRUE(local_->check_pattern(PeerProcess::kSeed + 1, PeerProcess::kBufferSize, 0));
        EXPECT_FALSE(self_->failed(witness_->ep));
    }

    /// Streams 64 KiB writes (zero-copy and, where the iface has it, bcopy in turn) to the victim,
    /// keeping the send queue full, and calls fault() once `warmup` bytes went through. Returns
    /// the seconds from fault() to the endpoint's failure (error handler called and every write
    /// completed), or a negative number if that did not happen within detection_bound() (a test
    /// failure unless `expect_failure` is false: then every write must have succeeded).
    double stream_until_failure(size_t warmup, const std::function<void()> &fault,
                                bool expect_failure = true)
    {
        const size_t chunk   = 64 << 10;
        const bool has_bcopy = self_->has_flag(UCT_IFACE_FLAG_PUT_BCOPY) &&
                               self_->attr().cap.put.max_bcopy >= chunk;
        Transfer t(*self_, victim_->ep);
        size_t posted     = 0;
        bool faulted      = false;
        auto start        = std::chrono::steady_clock::now();
        const auto begin  = start;
        ucs_status_t last = UCS_OK;
        for (;;) {
            // what the posts that completed carried (bcopy ones complete at once)
            const size_t done_bytes = (posted - size_t(t.completion().outstanding())) * chunk;
            if (!faulted && seconds_since(begin) > kDefaultDeadline.count()) {
                ADD_FAILURE() << "only " << done_bytes << " bytes streamed to the live peer";
                return -1;
            }
            if (!faulted && done_bytes >= warmup) {
                if (warmup > 0) {
                    std::printf("[   INFO   ] %.1f MiB streamed at %.1f MiB/s, then the fault\n",
                                done_bytes / 1048576.0,
                                done_bytes / 1048576.0 / seconds_since(begin));
                }
                fault();
                faulted = true;
                start   = std::chrono::steady_clock::now();
            }
            if (faulted && self_->failed(victim_->ep) && t.completion().done()) {
                break;
            }
            if (faulted && seconds_since(start) > detection_bound().count()) {
                if (expect_failure) {
                    ADD_FAILURE() << "no failure within " << detection_bound().count()
                                  << " s: " << t.completion().outstanding()
                                  << " writes outstanding, error "
                                  << "handler " << (self_->failed(victim_->ep) ? "" : "not ")
                                  << "called; last post returned " << status_name(last);
                    return -1;
                }
                EXPECT_TRUE(progress_until([&] { return t.completion().done(); }, {self_.get()},
                                           "the writes after the fault"));
                EXPECT_EQ(UCS_OK, t.completion().status());
                EXPECT_FALSE(self_->failed(victim_->ep));
                std::printf("[   INFO   ] %zu writes, %.2f s after the fault no failure: %s\n",
                            posted, seconds_since(start),
                            status_name(t.completion().status()).c_str());
                return -1;
            }
            if (!UCS_STATUS_IS_ERR(last)) {
                const Op op         = has_bcopy && (posted % 2) ? Op::PutBcopy : Op::PutZcopy;
                const size_t offset = (posted * chunk) % PeerProcess::kBufferSize;
                last = t.post(op, *local_, offset, chunk, victim_->process.remote_address + offset,
                              victim_->rkey->rkey(), 0);
                if (last != UCS_ERR_NO_RESOURCE) {
                    ++posted;
                }
            }
            self_->progress();
        }
        const double took = seconds_since(start);
        EXPECT_TRUE(UCS_STATUS_IS_ERR(t.completion().status()))
            << status_name(t.completion().status());
        EXPECT_TRUE(UCS_STATUS_IS_ERR(self_->errors.front().status));
        std::printf("[   INFO   ] %zu writes posted; the endpoint failed %.2f s after the fault: "
                    "writes %s, error handler %s, last post %s\n",
                    posted, took, status_name(t.completion().status()).c_str(),
                    status_name(self_->errors.front().status).c_str(), status_name(last).c_str());
        return took;
    }

    TlResource res_;
    std::unique_ptr<Entity> self_;
    std::unique_ptr<ConnectedPeer> victim_, witness_;
    std::unique_ptr<RegisteredBuffer> local_;
};

TEST_F(PeerFaults, KilledDuringBandwidthStream)
{
    const double took = stream_until_failure(4 << 20, [&] { victim_->process.kill_and_reap(); });
    ASSERT_GE(took, 0);
    EXPECT_LT(took, detection_bound().count());
    check_witness();
}

// A stopped process still has its QPs: the kernel (here rxe; an HCA in hardware) answers RDMA
// reads and writes without it, so one-sided traffic to a frozen peer keeps completing, correctly,
// and no transport can call that a failure. What does need the peer's CPU (a reply, a collective
// step) ends in the caller's own timeout: ucp_cpp's collectives fail with UCS_ERR_TIMED_OUT
// (CollProcesses.RankFrozenMidAllreduceTimesOutTheOthers). Checked here: no false failure, no
// hang, and once the frozen peer is killed the same bound as a live kill.
TEST_F(PeerFaults, FrozenPeerStillAnswersRdmaThenFailsWhenKilled)
{
    ASSERT_EQ(0, ::kill(victim_->process.pid(), SIGSTOP));
    local_->fill_pattern(PeerProcess::kSeed + 2);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(UCS_OK, whole_buffer(Op::PutZcopy, *victim_, detection_bound()));
    local_->fill(0);
    ASSERT_EQ(UCS_OK, whole_buffer(Op::GetZcopy, *victim_, detection_bound()));
    EXPECT_TRUE(local_->check_pattern(PeerProcess::kSeed + 2, PeerProcess::kBufferSize, 0));
    if (self_->has_flag(UCT_IFACE_FLAG_EP_CHECK)) {
        ASSERT_EQ(UCS_OK, uct_ep_check(victim_->ep, 0, nullptr));
    }
    // as long as a dead peer would take to show: nothing may fail meanwhile
    progress_until([] { return false; }, {self_.get()}, "", 2 * rc_detection_time());
    EXPECT_FALSE(self_->failed(victim_->ep));
    std::printf("[   INFO   ] frozen peer: 2 x 256 KiB read/written correctly, no failure in "
                "%.2f s\n",
                seconds_since(start));
    const double took = stream_until_failure(0, [&] { victim_->process.kill_and_reap(); });
    ASSERT_GE(took, 0);
    EXPECT_LT(took, detection_bound().count());
    check_witness();
}

/// The device faults change the VM's own rxe0 and its netdev: only as root, only inside the
/// throw-away Soft-RoCE VM (tests/rxe-vm/run exports RXE_VM, RXE_DEV and RXE_IF), and each one
/// leaves the device as it found it. CI runs them last (tests/run-all), in their own ctest.
class DeviceFaults : public PeerFaults {
protected:
    void SetUp() override
    {
        const char *vm = std::getenv("RXE_VM"), *dev = std::getenv("RXE_DEV");
        const char *netdev = std::getenv("RXE_IF");
        if (!vm || std::strcmp(vm, "1") != 0 || !dev || !netdev || geteuid() != 0) {
            GTEST_SKIP() << "changes the device: only as root in the Soft-RoCE VM (RXE_VM=1)";
        }
        dev_    = dev;
        netdev_ = netdev;
        PeerFaults::SetUp();
    }

    static int sh(const std::string &command)
    {
        std::printf("[   INFO   ] # %s\n", command.c_str());
        std::fflush(stdout);
        const int st = std::system(command.c_str());
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }

    /// Waits until the device's port 1 is ACTIVE again; returns the seconds it took (< 0: never).
    double wait_port_active(Seconds deadline = Seconds(30))
    {
        const auto start       = std::chrono::steady_clock::now();
        const std::string path = "/sys/class/infiniband/" + dev_ + "/ports/1/state";
        while (seconds_since(start) < deadline.count()) {
            char state[64]{};
            if (FILE *f = std::fopen(path.c_str(), "r")) {
                (void)!std::fgets(state, sizeof(state), f);
                std::fclose(f);
            }
            if (std::strstr(state, "ACTIVE")) {
                return seconds_since(start);
            }
            usleep(100000);
        }
        return -1;
    }

    /// Everything of this process on the device closed: its endpoints, interface, md and peers.
    void close_everything()
    {
        victim_.reset();
        witness_.reset();
        local_.reset();
        self_.reset();
    }

    /// A new md and interface, and a new peer process, move correct data.
    void check_fresh_start()
    {
        self_    = std::make_unique<Entity>(res_, rc_overrides());
        local_   = std::make_unique<RegisteredBuffer>(self_->md(), PeerProcess::kBufferSize, 4096);
        witness_ = std::make_unique<ConnectedPeer>();
        std::string why;
        ASSERT_TRUE(witness_->process.connect(*self_, &witness_->ep, &why)) << why;
        witness_->rkey = std::make_unique<RemoteKey>(self_->md().component(),
                                                     witness_->process.packed_rkey);
        check_witness();
    }

    std::string dev_, netdev_;
};

TEST_F(DeviceFaults, NetdevDownUnderTrafficFailsAndUpServesNewEndpoints)
{
    const std::string up = "ip link set " + netdev_ + " up";
    struct Up {
        std::string command;
        ~Up() { sh(command); }  // also when an assertion returns early
    } restore{up};
    const double took = stream_until_failure(4 << 20, [&] {
        ASSERT_EQ(0, sh("ip link set " + netdev_ + " down"));
    });
    ASSERT_GE(took, 0);
    EXPECT_LT(took, detection_bound().count());
    close_everything();
    ASSERT_EQ(0, sh(up));
    const double active = wait_port_active();
    ASSERT_GE(active, 0) << dev_ << " not ACTIVE 30 s after " << up;
    std::printf("[   INFO   ] %s ACTIVE %.2f s after the netdev came up\n", dev_.c_str(), active);
    check_fresh_start();
}

// rxe has no disassociate_ucontext: the kernel keeps a device for as long as a process has it open
// (ib_uverbs_remove_one waits for the last one), so `rdma link delete` under traffic blocks, the
// traffic goes on unharmed, and the delete completes once the process closes the device. (An HCA
// whose driver disassociates, mlx5, would send IBV_EVENT_DEVICE_FATAL instead: not testable here.)
TEST_F(DeviceFaults, DeviceDeletedUnderTrafficWaitsForTheProcessThenComesBack)
{
    const std::string add = "rdma link add " + dev_ + " type rxe netdev " + netdev_;
    struct Readd {
        std::string dev, command;
        ~Readd()
        {
            if (access(("/sys/class/infiniband/" + dev).c_str(), F_OK) != 0) {
                sh(command);
            }
        }
    } restore{dev_, add};
    pid_t deleter     = -1;
    const double took = stream_until_failure(
        4 << 20,
        [&] {
            deleter = fork();
            if (deleter == 0) {
                execlp("rdma", "rdma", "link", "delete", dev_.c_str(), nullptr);
                _exit(127);
            }
        },
        false);
    ASSERT_GT(deleter, 0);
    EXPECT_LT(took, 0) << "the endpoint failed while the delete waited";
    check_witness();
    int status = 0;
    EXPECT_EQ(0, waitpid(deleter, &status, WNOHANG)) << "the delete finished under traffic";
    close_everything();
    const auto start = std::chrono::steady_clock::now();
    pid_t r          = 0;
    while ((r = waitpid(deleter, &status, WNOHANG)) == 0 &&
           seconds_since(start) < detection_bound().count()) {
        usleep(10000);
    }
    ASSERT_EQ(deleter, r) << "rdma link delete still blocked " << detection_bound().count()
                          << " s after this process closed the device";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    std::printf("[   INFO   ] rdma link delete completed %.2f s after the device was closed\n",
                seconds_since(start));
    ASSERT_EQ(0, sh(add));
    const double active = wait_port_active();
    ASSERT_GE(active, 0) << dev_ << " not ACTIVE 30 s after " << add;
    check_fresh_start();
}

/// Hundreds of endpoints (a QP each) between two interfaces: every one carries its own write,
/// and the interface still serves the third process. rxe's own limits are far away (max_qp
/// 1048560, max_cq 1048576 in the VM); what is reachable is covered by the memlock test below.
TEST_F(PeerFaults, HundredsOfEndpointsEachCarryData)
{
    constexpr int kPairs = 128;
    Entity other(res_, rc_overrides());
    RegisteredBuffer target(other.md(), kPairs * sizeof(uint64_t), 4096);
    RemoteKey key(self_->md().component(), target.registration().packed_rkey());
    target.fill(0);
    std::vector<EpPair> pairs;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPairs; ++i) {
        try {
            pairs.push_back(connect_pair(*self_, other));
        } catch (const std::exception &e) {
            // a provider limit: it must be a UCS error; the endpoints made so far must still work
            std::printf("[   INFO   ] endpoint %d refused: %s\n", 2 * i, e.what());
            break;
        }
    }
    const double connect_s = seconds_since(start);
    ASSERT_EQ(size_t(kPairs), pairs.size()) << "the VM's rxe limits are far above this";
    for (size_t i = 0; i < pairs.size(); ++i) {
        uint64_t value = 0x1000 + i;
        ASSERT_EQ(UCS_OK, post_with_retry(
                              [&] {
                                  return uct_ep_put_short(pairs[i].ab, &value, sizeof(value),
                                                          target.address() + i * sizeof(value),
                                                          key.rkey());
                              },
                              {self_.get(), &other}));
    }
    ASSERT_EQ(UCS_OK, flush_and_wait(*self_, nullptr, {self_.get(), &other}));
    const auto *words = reinterpret_cast<const uint64_t *>(target.data());
    for (size_t i = 0; i < pairs.size(); ++i) {
        ASSERT_EQ(0x1000 + i, words[i]) << "endpoint " << i;
    }
    std::printf("[   INFO   ] %d endpoints (%d QPs in this process) connected in %.2f s, each "
                "wrote its word\n",
                2 * kPairs, 2 * kPairs + 2, connect_s);
    EXPECT_TRUE(self_->errors.empty());
    check_witness();
}

/// Drops CAP_IPC_LOCK from this process (root ignores RLIMIT_MEMLOCK with it, as the VM's tests
/// run): effective, permitted and inheritable sets.
bool drop_ipc_lock(std::string *why)
{
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &header, data) != 0) {
        *why = std::string("capget: ") + std::strerror(errno);
        return false;
    }
    const unsigned word = CAP_IPC_LOCK / 32, bit = 1u << (CAP_IPC_LOCK % 32);
    data[word].effective &= ~bit;
    data[word].permitted &= ~bit;
    data[word].inheritable &= ~bit;
    if (syscall(SYS_capset, &header, data) != 0) {
        *why = std::string("capset: ") + std::strerror(errno);
        return false;
    }
    return true;
}

/// In a child process (a death test: the limit and the lost capability stay there): the locked
/// memory limit at 1 MiB, an md opened, 8 MiB registered. The registration fails with
/// UCS_ERR_NO_MEMORY and a log line naming the limit; a registration under it still works.
void register_over_memlock_limit()
{
    const rlimit limit{1 << 20, 1 << 20};
    std::string why;
    if (setrlimit(RLIMIT_MEMLOCK, &limit) != 0 || !drop_ipc_lock(&why)) {
        std::fprintf(stderr, "cannot set up the limit: %s %s\n", std::strerror(errno), why.c_str());
        std::exit(2);
    }
    auto found = target_resource();
    // no registration cache: the md's own ibv_reg_mr is what must fail, and say why
    MemoryDomain md(*found.first, {{{"RCACHE"}, "no"}});
    const size_t length = 8 << 20;
    void *buffer        = aligned_alloc(4096, length);
    std::memset(buffer, 1, length);
    uct_mem_h memh  = nullptr;
    ucs_status_t st = uct_md_mem_reg(md.md(), buffer, length, UCT_MD_MEM_ACCESS_ALL, &memh);
    std::fprintf(stderr, "registration of 8 MiB under a 1 MiB limit: %s\n",
                 status_name(st).c_str());
    if (st != UCS_ERR_NO_MEMORY) {
        std::exit(3);
    }
    // what fits the limit still registers: the failure left nothing pinned behind
    st = uct_md_mem_reg(md.md(), buffer, 256 << 10, UCT_MD_MEM_ACCESS_ALL, &memh);
    std::fprintf(stderr, "registration of 256 KiB: %s\n", status_name(st).c_str());
    if (st != UCS_OK) {
        std::exit(4);
    }
    uct_md_mem_dereg(md.md(), memh);
    std::free(buffer);
    std::exit(0);
}

TEST(MemlockFault, RegistrationOverTheLimitIsAClearError)
{
    TlResource res;
    UCTEST_REQUIRE_TARGET(res);
    (void)res;
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: no inherited UCX state
    // the death test matches the child's stderr; UCX logs to stdout unless told (read by UCS
    // at load time, so this reaches the child only)
    setenv("UCX_LOG_FILE", "stderr", 1);
    EXPECT_EXIT(register_over_memlock_limit(), ::testing::ExitedWithCode(0),
                "ibv_reg_mr\\(.*length=8388608.*\\) failed: Cannot allocate memory; the "
                "locked-memory limit \\(RLIMIT_MEMLOCK, ulimit -l\\) is 1024 KiB");
    unsetenv("UCX_LOG_FILE");
}

}  // namespace
}  // namespace uctest
