#include "uct_harness.h"

#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace uctest {

namespace {

std::string env_or(const char *name, const std::string &fallback)
{
    const char *v = std::getenv(name);
    return (v && *v) ? std::string(v) : fallback;
}

[[noreturn]] void fail(const std::string &what, ucs_status_t status)
{
    throw std::runtime_error(what + ": " + status_name(status));
}

void check(ucs_status_t status, const std::string &what)
{
    if (status != UCS_OK) {
        fail(what, status);
    }
}

size_t page_size()
{
    static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

size_t round_up(size_t n, size_t align)
{
    return (n + align - 1) / align * align;
}

}  // namespace

std::string status_name(ucs_status_t status)
{
    return std::string(ucs_status_string(status)) + " (" +
           std::to_string(static_cast<int>(status)) + ")";
}

std::string first_verbs_device_port()
{
    int count         = 0;
    ibv_device **list = ibv_get_device_list(&count);
    if (list == nullptr) {
        return {};  // ENOSYS on kernels without RDMA: no device, not an error
    }
    std::string name = count > 0 ? std::string(ibv_get_device_name(list[0])) + ":1" : std::string();
    ibv_free_device_list(list);
    return name;
}

const Target &target()
{
    static const Target t{env_or("GDR_TEST_TL", "gdr_rc"),
                          env_or("GDR_TEST_DEV", first_verbs_device_port())};
    return t;
}

std::optional<TlResource> find_tl(const std::string &tl, const std::string &dev, std::string *why)
{
    uct_component_h *components = nullptr;
    unsigned num_components     = 0;
    check(uct_query_components(&components, &num_components), "uct_query_components");
    std::ostringstream seen;
    std::optional<TlResource> found;
    for (unsigned c = 0; c < num_components && !found; ++c) {
        uct_component_attr_t cattr{};
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                           UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        check(uct_component_query(components[c], &cattr), "uct_component_query");
        std::vector<uct_md_resource_desc_t> mds(cattr.md_resource_count);
        cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        cattr.md_resources = mds.data();
        check(uct_component_query(components[c], &cattr), "uct_component_query");
        for (const auto &mdres : mds) {
            uct_md_config_t *cfg = nullptr;
            if (uct_md_config_read(components[c], nullptr, nullptr, &cfg) != UCS_OK) {
                continue;
            }
            uct_md_h md     = nullptr;
            ucs_status_t st = uct_md_open(components[c], mdres.md_name, cfg, &md);
            uct_config_release(cfg);
            if (st != UCS_OK) {
                seen << " " << cattr.name << "/" << mdres.md_name
                     << "[open failed: " << status_name(st) << "]";
                continue;
            }
            uct_tl_resource_desc_t *tls = nullptr;
            unsigned num_tls            = 0;
            if (uct_md_query_tl_resources(md, &tls, &num_tls) == UCS_OK) {
                seen << " " << cattr.name << "/" << mdres.md_name << "[";
                for (unsigned t = 0; t < num_tls; ++t) {
                    seen << (t ? " " : "") << tls[t].tl_name << "@" << tls[t].dev_name;
                    if (!found && tl == tls[t].tl_name && dev == tls[t].dev_name) {
                        found = TlResource{components[c], cattr.name, mdres.md_name, tls[t].tl_name,
                                           tls[t].dev_name};
                    }
                }
                seen << "]";
                uct_release_tl_resource_list(tls);
            }
            uct_md_close(md);
        }
    }
    uct_release_component_list(components);
    if (!found && why) {
        *why = seen.str();
    }
    return found;
}

std::pair<std::optional<TlResource>, std::string> target_resource()
{
    // Looked up once: opening every md of every component is slow in the emulated VM.
    static const std::pair<std::optional<TlResource>, std::string> cached = [] {
        const Target &t = target();
        if (t.dev.empty()) {
            return std::make_pair(std::optional<TlResource>{},
                                  std::string("no verbs device (ibv_get_device_list found none); "
                                              "rdma tests need one, e.g. the Soft-RoCE VM"));
        }
        std::string available;
        auto res = find_tl(t.tl, t.dev, &available);
        if (!res) {
            const char *plugin = std::getenv("GDR_PLUGIN");
            return std::make_pair(res, "transport '" + t.tl + "' on device '" + t.dev +
                                           "' is not offered by any UCT md" +
                                           " (GDR_TEST_TL/GDR_TEST_DEV; GDR_PLUGIN=" +
                                           (plugin ? plugin : "<unset>") +
                                           "); available:" + available);
        }
        return std::make_pair(res, std::string());
    }();
    return cached;
}

std::vector<ConfigOverride> default_iface_overrides()
{
    // RC defaults (1 s timeout, 7 retries, grown exponentially by rxe) make a dead peer take
    // tens of seconds to detect under emulation; 100 ms x 3 keeps it to about a second while
    // staying far above the round-trip time of a busy TCG guest.
    // A 256-entry receive queue (default 4095 x 8 KiB on rc_verbs) makes every iface open
    // register and touch 2 MiB instead of 32 MiB: seconds per test under TCG. Flow control and
    // RNR paths get exercised a little more, which is no harm.
    return {
        {{"RC_TIMEOUT", "TIMEOUT"}, "100ms"},
        {{"RC_RETRY_COUNT", "RETRY_COUNT"}, "3"},
        {{"IB_RX_QUEUE_LEN", "RX_QUEUE_LEN"}, "256"},
    };
}

std::vector<std::string> apply_overrides(void *config, const std::vector<ConfigOverride> &overrides,
                                         const std::vector<std::string> &prefixes)
{
    // UCX up to 1.16 matches a name against the table's fields alone; 1.17+ against the
    // table's own prefix followed by the field ("GDR_RCACHE" for md gdr's "RCACHE")
    std::vector<std::string> applied;
    for (const auto &o : overrides) {
        bool done = false;
        for (const auto &name : o.names) {
            for (const std::string &prefix : [&] {
                     std::vector<std::string> p{""};
                     p.insert(p.end(), prefixes.begin(), prefixes.end());
                     return p;
                 }()) {
                const std::string full = prefix + name;
                if (uct_config_modify(config, full.c_str(), o.value.c_str()) == UCS_OK) {
                    applied.push_back(full + "=" + o.value);
                    done = true;
                    break;
                }
            }
            if (done) {
                break;
            }
        }
    }
    return applied;
}

namespace {
std::string config_prefix(const std::string &name)
{
    std::string upper;
    for (char c : name) {
        upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return upper + "_";
}
}  // namespace

// ---------------------------------------------------------------------------------------------

MemoryDomain::MemoryDomain(const TlResource &res, const std::vector<ConfigOverride> &md_overrides)
    : res_(res)
{
    uct_md_config_t *cfg = nullptr;
    check(uct_md_config_read(res.component, nullptr, nullptr, &cfg), "uct_md_config_read");
    applied_        = apply_overrides(cfg, md_overrides, {config_prefix(res.component_name)});
    ucs_status_t st = uct_md_open(res.component, res.md_name.c_str(), cfg, &md_);
    uct_config_release(cfg);
    check(st, "uct_md_open(" + res.md_name + ")");
    check(uct_md_query(md_, &attr_), "uct_md_query");
}

MemoryDomain::~MemoryDomain()
{
    uct_md_close(md_);
}

Registration::Registration(const MemoryDomain &md, void *address, size_t length, unsigned access)
    : md_(md)
{
    check(uct_md_mem_reg(md.md(), address, length, access, &memh_), "uct_md_mem_reg");
}

Bytes Registration::packed_rkey() const
{
    Bytes packed(md_.attr().rkey_packed_size);
    check(uct_md_mkey_pack(md_.md(), memh_, packed.data()), "uct_md_mkey_pack");
    return packed;
}

void Registration::release()
{
    if (memh_ != nullptr) {
        uct_md_mem_dereg(md_.md(), memh_);
        memh_ = nullptr;
    }
}

RegisteredBuffer::RegisteredBuffer(const MemoryDomain &md, size_t size, size_t pad)
    : pad_(round_up(pad, page_size())), size_(size)
{
    map_len_ = pad_ + round_up(size + kGuard, page_size()) + pad_;
    void *p  = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        throw std::runtime_error("mmap(" + std::to_string(map_len_) + "): " + std::strerror(errno));
    }
    map_  = static_cast<uint8_t *>(p);
    data_ = map_ + pad_;
    fill(0);
    reg_.emplace(md, data_, std::max<size_t>(size, 1));  // a zero-length registration is invalid
}

RegisteredBuffer::~RegisteredBuffer()
{
    reg_.reset();
    munmap(map_, map_len_);
}

namespace {
/// The pattern is a hash of (seed, word index), 8 bytes at a time: neighbouring words, offsets
/// and seeds differ, so a shifted, truncated or stale copy shows up at its first wrong byte, and
/// filling/checking 16 MiB stays cheap under emulation (a per-byte hash took seconds there).
uint64_t pattern_word(uint32_t seed, size_t word)
{
    uint64_t x = (static_cast<uint64_t>(word) + 1) * 0x9E3779B97F4A7C15ull ^
                 (uint64_t(seed) << 32 | seed);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}
}  // namespace

uint8_t RegisteredBuffer::pattern_byte(uint32_t seed, size_t i)
{
    return static_cast<uint8_t>(pattern_word(seed, i / 8) >> (8 * (i % 8)));
}

void RegisteredBuffer::fill_pattern(uint32_t seed)
{
    size_t i = 0;
    for (; i + 8 <= size_; i += 8) {
        uint64_t w = pattern_word(seed, i / 8);
        std::memcpy(data_ + i, &w, 8);  // little endian: byte k of the word is pattern_byte(i + k)
    }
    for (; i < size_; ++i) {
        data_[i] = pattern_byte(seed, i);
    }
    std::memset(data_ + size_, kGuardByte, kGuard);
}

void RegisteredBuffer::fill(uint8_t byte)
{
    std::memset(data_, byte, size_);
    std::memset(data_ + size_, kGuardByte, kGuard);
}

::testing::AssertionResult RegisteredBuffer::check_pattern(uint32_t seed, size_t n,
                                                           uint8_t rest) const
{
    size_t i = 0;
    for (; i + 8 <= std::min(n, size_); i += 8) {  // fast path, word by word
        uint64_t w;
        std::memcpy(&w, data_ + i, 8);
        if (w != pattern_word(seed, i / 8)) {
            break;  // the byte loop below finds the exact offset
        }
    }
    for (; i < size_ + kGuard; ++i) {
        uint8_t expected = i < n ? pattern_byte(seed, i) : i < size_ ? rest : kGuardByte;
        if (data_[i] != expected) {
            return ::testing::AssertionFailure()
                   << "byte " << i << " of " << n << " transferred (buffer " << size_ << ", guard "
                   << kGuard << ") is 0x" << std::hex << int(data_[i]) << ", expected 0x"
                   << int(expected) << std::dec
                   << (i < n       ? " (payload)"
                       : i < size_ ? " (beyond the transfer)"
                                   : " (guard: overrun)");
        }
    }
    return ::testing::AssertionSuccess();
}

RemoteKey::RemoteKey(uct_component_h component, const Bytes &packed) : component_(component)
{
    check(uct_rkey_unpack(component, packed.data(), &bundle_), "uct_rkey_unpack");
}

RemoteKey::~RemoteKey()
{
    uct_rkey_release(component_, &bundle_);
}

// ---------------------------------------------------------------------------------------------

Entity::Entity(const TlResource &res, const std::vector<ConfigOverride> &iface_overrides,
               const std::vector<ConfigOverride> &md_overrides, const ParamsHook &params_hook)
    : md_(res, md_overrides)
{
    check(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async_),
          "ucs_async_context_create");
    check(uct_worker_create(async_, UCS_THREAD_MODE_SINGLE, &worker_), "uct_worker_create");

    uct_iface_config_t *cfg = nullptr;
    check(uct_md_iface_config_read(md_.md(), res.tl_name.c_str(), nullptr, nullptr, &cfg),
          "uct_md_iface_config_read(" + res.tl_name + ")");
    applied_ = apply_overrides(cfg, iface_overrides,
                               {config_prefix(res.component_name), config_prefix(res.tl_name)});

    uct_iface_params_t params{};
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_STATS_ROOT | UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS | UCT_IFACE_PARAM_FIELD_CPU_MASK;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = res.tl_name.c_str();
    params.mode.device.dev_name = res.dev_name.c_str();
    params.stats_root           = nullptr;
    params.rx_headroom          = 0;
    params.err_handler          = &Entity::on_error;
    params.err_handler_arg      = this;
    params.err_handler_flags    = 0;  // called from progress, on this thread
    UCS_CPU_ZERO(&params.cpu_mask);
    if (params_hook) {
        params_hook(params);
    }
    ucs_status_t st = uct_iface_open(md_.md(), worker_, &params, cfg, &iface_);
    uct_config_release(cfg);
    if (st != UCS_OK) {
        uct_worker_destroy(worker_);  // the destructor does not run for a throwing constructor
        ucs_async_context_destroy(async_);
    }
    check(st, "uct_iface_open(" + res.tl_name + "/" + res.dev_name + ")");
    check(uct_iface_query(iface_, &attr_), "uct_iface_query");
    uct_iface_progress_enable(iface_, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

Entity::~Entity()
{
    for (uct_ep_h ep : eps_) {
        uct_ep_destroy(ep);
    }
    uct_iface_close(iface_);
    uct_worker_destroy(worker_);
    ucs_async_context_destroy(async_);
}

ucs_status_t Entity::on_error(void *arg, uct_ep_h ep, ucs_status_t status)
{
    static_cast<Entity *>(arg)->errors.push_back({ep, status});
    return UCS_OK;  // handled: the test destroys the ep
}

bool Entity::failed(uct_ep_h ep) const
{
    return std::any_of(errors.begin(), errors.end(), [ep](const EpError &e) { return e.ep == ep; });
}

Entity::Address Entity::address() const
{
    Address a;
    a.device.resize(attr_.device_addr_len);
    check(uct_iface_get_device_address(iface_,
                                       reinterpret_cast<uct_device_addr_t *>(a.device.data())),
          "uct_iface_get_device_address");
    if (attr_.iface_addr_len > 0) {
        a.iface.resize(attr_.iface_addr_len);
        check(uct_iface_get_address(iface_, reinterpret_cast<uct_iface_addr_t *>(a.iface.data())),
              "uct_iface_get_address");
    }
    return a;
}

uct_ep_h Entity::create_ep(Address *local)
{
    uct_ep_params_t params{};
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = iface_;
    uct_ep_h ep       = nullptr;
    check(uct_ep_create(&params, &ep), "uct_ep_create");
    eps_.push_back(ep);
    if (local) {
        *local = address();
        local->ep.resize(attr_.ep_addr_len);
        check(uct_ep_get_address(ep, reinterpret_cast<uct_ep_addr_t *>(local->ep.data())),
              "uct_ep_get_address");
    }
    return ep;
}

uct_ep_h Entity::create_ep_to_iface(const Address &peer)
{
    uct_ep_params_t params{};
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = iface_;
    params.dev_addr   = reinterpret_cast<const uct_device_addr_t *>(peer.device.data());
    params.iface_addr = reinterpret_cast<const uct_iface_addr_t *>(peer.iface.data());
    uct_ep_h ep       = nullptr;
    check(uct_ep_create(&params, &ep), "uct_ep_create(to iface)");
    eps_.push_back(ep);
    return ep;
}

void Entity::connect(uct_ep_h ep, const Address &peer)
{
    check(uct_ep_connect_to_ep(ep, reinterpret_cast<const uct_device_addr_t *>(peer.device.data()),
                               reinterpret_cast<const uct_ep_addr_t *>(peer.ep.data())),
          "uct_ep_connect_to_ep");
}

void Entity::destroy_ep(uct_ep_h ep)
{
    auto it = std::find(eps_.begin(), eps_.end(), ep);
    if (it != eps_.end()) {
        eps_.erase(it);
        uct_ep_destroy(ep);
        // the next endpoint may get the same address: forget this one's errors
        errors.erase(std::remove_if(errors.begin(), errors.end(),
                                    [ep](const EpError &e) { return e.ep == ep; }),
                     errors.end());
    }
}

EpPair connect_pair(Entity &a, Entity &b)
{
    EpPair pair;
    if (a.has_flag(UCT_IFACE_FLAG_CONNECT_TO_EP)) {
        Entity::Address a_addr, b_addr;
        pair.ab = a.create_ep(&a_addr);
        pair.ba = b.create_ep(&b_addr);
        a.connect(pair.ab, b_addr);
        b.connect(pair.ba, a_addr);
    } else if (a.has_flag(UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        pair.ab = a.create_ep_to_iface(b.address());
        pair.ba = b.create_ep_to_iface(a.address());
    } else {
        throw std::runtime_error(a.resource().tl_name +
                                 " advertises neither CONNECT_TO_EP nor CONNECT_TO_IFACE");
    }
    return pair;
}

::testing::AssertionResult progress_until(const std::function<bool()> &done,
                                          std::initializer_list<Entity *> entities,
                                          const std::string &what, Seconds deadline)
{
    const auto start = std::chrono::steady_clock::now();
    while (!done()) {
        for (Entity *e : entities) {
            e->progress();
        }
        if (std::chrono::steady_clock::now() - start > deadline) {
            return ::testing::AssertionFailure()
                   << "timed out after " << deadline.count() << " s waiting for " << what;
        }
    }
    return ::testing::AssertionSuccess();
}

ucs_status_t post_with_retry(const std::function<ucs_status_t()> &post,
                             std::initializer_list<Entity *> entities, Seconds deadline)
{
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        ucs_status_t st = post();
        if (st != UCS_ERR_NO_RESOURCE) {
            return st;
        }
        for (Entity *e : entities) {
            e->progress();
        }
        if (std::chrono::steady_clock::now() - start > deadline) {
            return UCS_ERR_TIMED_OUT;
        }
    }
}

PendingPut::PendingPut(uct_ep_h ep_, const uint64_t *value_, uint64_t addr_, uct_rkey_t rkey_)
    : req{}, ep(ep_), value(value_), addr(addr_), rkey(rkey_)
{
    req.func = [](uct_pending_req_t *self) -> ucs_status_t {
        auto *p = reinterpret_cast<PendingPut *>(self);
        ++p->runs;
        p->sent = uct_ep_put_short(p->ep, p->value, sizeof(*p->value), p->addr, p->rkey) == UCS_OK;
        return p->sent ? UCS_OK : UCS_ERR_NO_RESOURCE;  // anything else keeps it queued
    };
}

void PendingPut::purge_cb(uct_pending_req_t *self, void *)
{
    ++reinterpret_cast<PendingPut *>(self)->purged;
}

Completion::Completion()
{
    impl_.comp.func   = &Completion::on_done;
    impl_.comp.count  = 0;
    impl_.comp.status = UCS_OK;
    impl_.owner       = this;
}

uct_completion_t *Completion::arm()
{
    ++impl_.comp.count;
    return &impl_.comp;
}

void Completion::posted(ucs_status_t status)
{
    if (status == UCS_INPROGRESS) {
        return;  // the transport owns the count now
    }
    --impl_.comp.count;  // completed, rejected, or not started (NO_RESOURCE): never called back
    if (UCS_STATUS_IS_ERR(status) && status != UCS_ERR_NO_RESOURCE && impl_.comp.status == UCS_OK) {
        impl_.comp.status = status;
    }
}

void Completion::on_done(uct_completion_t *self)
{
    ++reinterpret_cast<Impl *>(self)->owner->callbacks_;
}

ucs_status_t start_flush(uct_ep_h ep, unsigned flags, Completion &comp,
                         std::initializer_list<Entity *> entities)
{
    return post_with_retry(
        [&] {
            ucs_status_t s = uct_ep_flush(ep, flags, comp.arm());
            comp.posted(s);
            return s;
        },
        entities);
}

ucs_status_t flush_and_wait(Entity &self, uct_ep_h ep, std::initializer_list<Entity *> entities,
                            unsigned flags, Seconds deadline)
{
    if (ep == nullptr) {
        // uct_iface_flush takes no completion in UCX 1.13: poll it.
        ucs_status_t st = UCS_INPROGRESS;
        auto done       = [&] {
            st = uct_iface_flush(self.iface(), flags, nullptr);
            return st != UCS_INPROGRESS && st != UCS_ERR_NO_RESOURCE;
        };
        return progress_until(done, entities, "uct_iface_flush", deadline) ? st : UCS_ERR_TIMED_OUT;
    }
    Completion comp;
    ucs_status_t st = start_flush(ep, flags, comp, entities);
    if (st != UCS_INPROGRESS) {
        return st;
    }
    if (!progress_until([&] { return comp.done(); }, entities, "uct_ep_flush completion",
                        deadline)) {
        return UCS_ERR_TIMED_OUT;
    }
    return comp.status();
}

namespace {
/// Moves exactly n bytes through `io` (read or write), retrying short transfers and EINTR.
template <typename Io> bool transfer_full(uint8_t *p, size_t n, Io io)
{
    while (n > 0) {
        ssize_t r = io(p, n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        p += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}
}  // namespace

bool read_full(int fd, void *buf, size_t n)
{
    return transfer_full(static_cast<uint8_t *>(buf), n, [fd](uint8_t *p, size_t left) -> ssize_t {
        pollfd pfd{fd, POLLIN, 0};
        int ready = poll(&pfd, 1, static_cast<int>(kDefaultDeadline.count() * 1000));
        if (ready <= 0) {
            // 0: the other side went silent, never block forever; <0 with EINTR is retried
            return ready == 0 ? 0 : -1;
        }
        return ::read(fd, p, left);
    });
}

bool write_full(int fd, const void *buf, size_t n)
{
    return transfer_full(const_cast<uint8_t *>(static_cast<const uint8_t *>(buf)), n,
                         [fd](uint8_t *p, size_t left) { return ::write(fd, p, left); });
}

bool write_blob(int fd, const Bytes &b)
{
    uint64_t n = b.size();
    return write_full(fd, &n, sizeof(n)) && write_full(fd, b.data(), b.size());
}

bool read_blob(int fd, Bytes *b)
{
    uint64_t n = 0;
    if (!read_full(fd, &n, sizeof(n)) || n > (1u << 20)) {
        return false;
    }
    b->resize(n);
    return read_full(fd, b->data(), n);
}

}  // namespace uctest
