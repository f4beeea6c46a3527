// Transport-generic UCT test harness: finds the transport under test, opens interfaces on it,
// connects endpoints, registers memory and drives progress with deadlines.
//
// The transport comes from the environment so the same suite validates UCX's own rc_verbs today
// and the gdr_rc transport of libuct_gdr.so tomorrow:
//   GDR_TEST_TL   transport name            (default gdr_rc)
//   GDR_TEST_DEV  device name, e.g. rxe0:1  (default: port 1 of the first verbs device)
//   GDR_PLUGIN    path of libuct_gdr.so, dlopen'ed by main() before any UCX call
//
// Threading: everything here is single-threaded (UCS_THREAD_MODE_SINGLE workers); an Entity and
// the objects created from it must be used from the thread that created them.
// Lifetime: objects borrow their Entity/MemoryDomain; destroy them before it (declare them after).
#pragma once

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace uctest {

using Bytes   = std::vector<uint8_t>;
using Seconds = std::chrono::duration<double>;

/// Upper bound of any single wait in the suite; a transport that needs longer is broken.
constexpr Seconds kDefaultDeadline{60.0};

/// Transport and device under test, read once from the environment.
struct Target {
    std::string tl;  ///< e.g. "gdr_rc", "rc_verbs"
    std::string dev;  ///< e.g. "rxe0:1"; empty when no verbs device exists
};
const Target &target();

/// "rxe0:1"-style name of port 1 of the first verbs device, or empty when there is none.
std::string first_verbs_device_port();

/// Where a transport lives: which component, which md of it.
struct TlResource {
    uct_component_h component = nullptr;
    std::string component_name;
    std::string md_name;
    std::string tl_name;
    std::string dev_name;
};

/// Searches every component's md resources for one offering `tl` on `dev`. On failure returns
/// nullopt and writes the transports that *are* available into `why`.
std::optional<TlResource> find_tl(const std::string &tl, const std::string &dev, std::string *why);

/// The resource of target(), or a skip reason naming what is missing ("" when found).
std::pair<std::optional<TlResource>, std::string> target_resource();

/// Skips the current test (GTEST_SKIP) when there is no verbs device; fails it when there is one
/// but the requested transport is absent (a plugin that stopped registering gdr_rc, a wrong
/// GDR_TEST_TL: a run that tests nothing must not pass); otherwise stores the resource in `out`.
/// Use at the top of SetUp().
#define UCTEST_REQUIRE_TARGET(out)                 \
    do {                                           \
        auto found_ = ::uctest::target_resource(); \
        if (!found_.first) {                       \
            if (::uctest::target().dev.empty()) {  \
                GTEST_SKIP() << found_.second;     \
            }                                      \
            GTEST_FAIL() << found_.second;         \
        }                                          \
        (out) = *found_.first;                     \
    } while (0)

/// Skips the current test unless `entity` (an Entity) advertises cap.flags bit `flag`.
#define UCTEST_SKIP_UNLESS_CAP(entity, flag)                                             \
    do {                                                                                 \
        if (!(entity).has_flag(flag)) {                                                  \
            GTEST_SKIP() << (entity).resource().tl_name << " does not advertise " #flag; \
        }                                                                                \
    } while (0)

/// Config values applied to every iface the suite opens (names without the UCX_ prefix, applied
/// with uct_config_modify; a name the transport does not know is ignored). They shorten RC
/// retry timeouts so that error and peer-death tests finish in seconds.
struct ConfigOverride {
    std::vector<std::string> names;  ///< tried in order; the first one the config knows is set
    std::string value;
};
std::vector<ConfigOverride> default_iface_overrides();

/// An open md (its own protection domain) plus memory registration on it.
class MemoryDomain {
public:
    explicit MemoryDomain(const TlResource &res,
                          const std::vector<ConfigOverride> &md_overrides = {});
    ~MemoryDomain();
    MemoryDomain(const MemoryDomain &)            = delete;
    MemoryDomain &operator=(const MemoryDomain &) = delete;

    uct_md_h md() const { return md_; }
    uct_component_h component() const { return res_.component; }
    const uct_md_attr_t &attr() const { return attr_; }
    const TlResource &resource() const { return res_; }
    /// Names of md_overrides the md config accepted.
    const std::vector<std::string> &applied_overrides() const { return applied_; }

private:
    TlResource res_;
    uct_md_h md_ = nullptr;
    uct_md_attr_t attr_{};
    std::vector<std::string> applied_;
};

/// One registration of [address, address+length) on an md; deregisters on destruction.
class Registration {
public:
    /// `access`: the UCT_MD_MEM_ACCESS_* flags asked for (the security tests narrow them).
    Registration(const MemoryDomain &md, void *address, size_t length,
                 unsigned access = UCT_MD_MEM_ACCESS_ALL);
    ~Registration() { release(); }
    Registration(const Registration &)            = delete;
    Registration &operator=(const Registration &) = delete;

    uct_mem_h memh() const { return memh_; }
    /// Packed remote key, to be unpacked by the peer (RemoteKey).
    Bytes packed_rkey() const;
    /// Deregisters now (the packed key stays in the caller's hands, stale).
    void release();

private:
    const MemoryDomain &md_;
    uct_mem_h memh_ = nullptr;
};

/// Page-aligned host memory surrounded by `pad` bytes of mapped but never registered memory
/// (so an address just outside the registered range is still a valid local address), registered
/// on `md`. The guard bytes after size() are filled with kGuardByte to catch overruns.
class RegisteredBuffer {
public:
    static constexpr uint8_t kGuardByte = 0xA5;
    static constexpr size_t kGuard      = 64;

    RegisteredBuffer(const MemoryDomain &md, size_t size, size_t pad = 1u << 20);
    ~RegisteredBuffer();
    RegisteredBuffer(const RegisteredBuffer &)            = delete;
    RegisteredBuffer &operator=(const RegisteredBuffer &) = delete;

    uint8_t *data() const { return data_; }
    size_t size() const { return size_; }
    uint64_t address() const { return reinterpret_cast<uintptr_t>(data_); }
    uct_mem_h memh() const { return reg_->memh(); }
    Registration &registration() { return *reg_; }
    /// Bytes of unregistered mapping before data() and after the page holding the guard bytes.
    size_t pad() const { return pad_; }

    /// data[0..size) = pattern(seed), guard bytes = kGuardByte.
    void fill_pattern(uint32_t seed);
    /// data[0..size) = byte, guard bytes = kGuardByte.
    void fill(uint8_t byte);
    /// Checks data[0..n) == pattern(seed), data[n..size) == rest and the kGuard bytes after
    /// size() still kGuardByte; on failure names the first wrong offset and which part it is in.
    ::testing::AssertionResult check_pattern(uint32_t seed, size_t n, uint8_t rest) const;

    /// Deterministic byte sequence (little-endian 64-bit hashes of the word index); different
    /// seeds give different sequences.
    static uint8_t pattern_byte(uint32_t seed, size_t i);

private:
    uint8_t *map_   = nullptr;
    size_t map_len_ = 0, pad_ = 0, size_ = 0;
    uint8_t *data_ = nullptr;
    std::optional<Registration> reg_;
};

/// Unpacked remote key; released on destruction.
class RemoteKey {
public:
    RemoteKey(uct_component_h component, const Bytes &packed);
    ~RemoteKey();
    RemoteKey(const RemoteKey &)            = delete;
    RemoteKey &operator=(const RemoteKey &) = delete;
    uct_rkey_t rkey() const { return bundle_.rkey; }

private:
    uct_component_h component_;
    uct_rkey_bundle_t bundle_{};
};

/// An error reported through the iface error handler.
struct EpError {
    uct_ep_h ep;
    ucs_status_t status;
};

/// Async context + worker + md + one iface of the target transport, with an error handler that
/// records every reported endpoint failure (and returns UCS_OK, i.e. "handled": anything else is
/// fatal in UCX's RC transports).
class Entity {
public:
    /// Adjusts the iface params before uct_iface_open (e.g. AM alignment).
    using ParamsHook = std::function<void(uct_iface_params_t &)>;

    explicit Entity(const TlResource &res,
                    const std::vector<ConfigOverride> &iface_overrides = default_iface_overrides(),
                    const std::vector<ConfigOverride> &md_overrides    = {},
                    const ParamsHook &params_hook                      = nullptr);
    ~Entity();
    Entity(const Entity &)            = delete;
    Entity &operator=(const Entity &) = delete;

    uct_iface_h iface() const { return iface_; }
    uct_worker_h worker() const { return worker_; }
    const uct_iface_attr_t &attr() const { return attr_; }
    const MemoryDomain &md() const { return md_; }
    const TlResource &resource() const { return md_.resource(); }
    bool has_flag(uint64_t flag) const { return (attr_.cap.flags & flag) != 0; }
    /// Names of iface_overrides the iface config accepted.
    const std::vector<std::string> &applied_overrides() const { return applied_; }

    unsigned progress() { return uct_worker_progress(worker_); }

    /// Endpoint addressing, for connecting in one process or across a pipe.
    struct Address {
        Bytes device, iface, ep;  ///< ep empty for connect-to-iface transports
    };
    /// Creates an endpoint toward a peer; with CONNECT_TO_EP it is connected later by
    /// connect(ep, peer) and its own address is in `local.ep`.
    uct_ep_h create_ep(Address *local);
    /// For CONNECT_TO_IFACE transports: an endpoint connected to `peer` at once.
    uct_ep_h create_ep_to_iface(const Address &peer);
    void connect(uct_ep_h ep, const Address &peer);
    Address address() const;
    void destroy_ep(uct_ep_h ep);

    std::vector<EpError> errors;
    bool failed(uct_ep_h ep) const;

private:
    static ucs_status_t on_error(void *arg, uct_ep_h ep, ucs_status_t status);

    MemoryDomain md_;
    ucs_async_context_t *async_ = nullptr;
    uct_worker_h worker_        = nullptr;
    uct_iface_h iface_          = nullptr;
    uct_iface_attr_t attr_{};
    std::vector<uct_ep_h> eps_;
    std::vector<std::string> applied_;
};

/// Endpoints a->b and b->a in one process.
struct EpPair {
    uct_ep_h ab = nullptr, ba = nullptr;
};
EpPair connect_pair(Entity &a, Entity &b);

/// Progresses the entities until done() or the deadline; returns failure with `what` on timeout.
::testing::AssertionResult progress_until(const std::function<bool()> &done,
                                          std::initializer_list<Entity *> entities,
                                          const std::string &what,
                                          Seconds deadline = kDefaultDeadline);

/// Runs post() until it returns something other than UCS_ERR_NO_RESOURCE, progressing meanwhile.
/// Returns the final status (UCS_ERR_TIMED_OUT if resources never came back).
ucs_status_t post_with_retry(const std::function<ucs_status_t()> &post,
                             std::initializer_list<Entity *> entities,
                             Seconds deadline = kDefaultDeadline);

/// A pending request (uct_ep_pending_add) that posts one 8-byte put_short when dispatched.
/// Counts its runs and, through purge_cb (for uct_ep_pending_purge), its purges. Stays queued
/// (answers NO_RESOURCE) until the put is accepted. Must outlive its place in the queue.
struct PendingPut {
    uct_pending_req_t req;  // first: the callbacks recover PendingPut from it
    uct_ep_h ep;
    const uint64_t *value;
    uint64_t addr;
    uct_rkey_t rkey;
    int runs   = 0;
    int purged = 0;
    bool sent  = false;

    PendingPut(uct_ep_h ep, const uint64_t *value, uint64_t addr, uct_rkey_t rkey);
    static void purge_cb(uct_pending_req_t *self, void *arg);
};

/// Counts completions of any number of operations sharing one uct_completion_t.
class Completion {
public:
    Completion();
    /// Call before posting an operation with this completion.
    uct_completion_t *arm();
    /// Call with the post's return value: UCS_OK and errors complete at once.
    void posted(ucs_status_t status);
    bool done() const { return impl_.comp.count == 0; }
    ucs_status_t status() const { return impl_.comp.status; }
    /// How many times the transport invoked the callback (count reached zero).
    int callbacks() const { return callbacks_; }
    int outstanding() const { return impl_.comp.count; }
    Completion(const Completion &)            = delete;
    Completion &operator=(const Completion &) = delete;

private:
    struct Impl {
        uct_completion_t comp;  // first member: the callback recovers Impl from it
        Completion *owner;
    };
    static void on_done(uct_completion_t *self);
    Impl impl_;
    int callbacks_ = 0;
};

/// Starts uct_ep_flush(ep, flags) counted by `comp` (retrying while NO_RESOURCE); returns what
/// the flush call finally returned (UCS_OK: already flushed, INPROGRESS: comp will tell).
ucs_status_t start_flush(uct_ep_h ep, unsigned flags, Completion &comp,
                         std::initializer_list<Entity *> entities);

/// Flushes `ep` (or the whole iface when ep is null) and waits; returns the flush status.
ucs_status_t flush_and_wait(Entity &self, uct_ep_h ep, std::initializer_list<Entity *> entities,
                            unsigned flags = 0, Seconds deadline = kDefaultDeadline);

/// "UCS_ERR_..." name, for messages.
std::string status_name(ucs_status_t status);

/// Reads exactly n bytes (giving up after kDefaultDeadline of silence) / writes them; false on
/// EOF, error or timeout. For the two-process tests.
/// Applies the first accepted name of each override to a config from uct_*_config_read.
/// Each name is tried as given, then after each of `prefixes` (the table prefixes UCX 1.17+
/// wants: the component's and the transport's, upper case, e.g. "GDR_").
std::vector<std::string> apply_overrides(void *config, const std::vector<ConfigOverride> &overrides,
                                         const std::vector<std::string> &prefixes = {});

bool read_full(int fd, void *buf, size_t n);
bool write_full(int fd, const void *buf, size_t n);
bool write_blob(int fd, const Bytes &b);
bool read_blob(int fd, Bytes *b);

}  // namespace uctest
