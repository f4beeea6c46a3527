// gdr_ep_scale: what one more connected endpoint costs a process (many endpoints: QPs, RSS, registered bytes),
// and how many QPs a UCP job opens when each rank talks to a few peers only.
//
//   gdr_ep_scale [-t TL,...] [-n N,...] [-d DEV] [-p PLUGIN] [-c TOLERANCE_BYTES]
//   gdr_ep_scale -u RANKS [-r ring|all] [-p PLUGIN] [-c 0]
//
// UCT mode (default): for each transport TL (gdr_rc,rc_verbs) and each N (1,16,64,256), a fresh
// child process opens two interfaces of TL on DEV (default: port 1 of the first verbs device),
// creates N endpoints on the first and N on the second and connects them pairwise (2N QPs, all
// in this process; connect-to-ep, as UCP's wireup does). It reports, per endpoint, the growth of
//   qp     QPs of this process in the kernel's resource tracker (`rdma -j res show qp`, by pid),
//   rss    VmRSS (/proc/self/statm; on rxe the QP's send queue is kernel memory mapped into the
//          process, so it is counted there, as a provider's user-space queue is on mlx5),
//   mr     registered bytes (`rdma -j res show mr`, by pid: the transport's own registrations),
// measured after a warm-up (two pairs created and destroyed first, so that allocator arenas and
// the pools' first chunks are not charged to the endpoints), and the same for the two interfaces
// themselves (iface_*: what a process pays once per device, not per peer).
// A fresh process for each point, so that no transport inherits another's freed heap.
// -c B: fail (exit 1) unless, at every N, the first TL's 2N endpoints hold at most as many QPs as
// the second's, and at most B bytes more RSS and registered memory (B absorbs page-granular
// allocator noise: 28 KiB at N = 1, measured).
//
// UCP mode (-u): RANKS processes, each a UCP worker (UCX_TLS from the environment), connect
// either to their two ring neighbours (-r ring, the default) or to every other rank (-r all),
// exchange one tagged message with each, and report the RC and UD QPs and RSS each holds.
// UCP creates a peer's transport endpoints when the application creates the ucp_ep (or when a
// peer's wireup request arrives): a rank that talks to k peers holds k RC QPs, not RANKS-1.
// -c 0: fail unless every rank holds at least 1 and at most as many RC QPs as it has peers.
//
// Needs a verbs device and the `rdma` tool (iproute2): run it in the Soft-RoCE VM
// (tests/rxe-vm/run). Output: one `key=value` line per point (UCT) or rank (UCP), then the
// checks. Exit status: 0 ok, 1 a check failed, 2 an error (said on stderr).
#include "bench_util.hpp"
#include "rdma_resources.hpp"

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <dlfcn.h>
#include <getopt.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void die(const std::string &what, ucs_status_t status = UCS_OK)
{
    gdr_bench::die("gdr_ep_scale", 2, what, status);
}

void check(ucs_status_t status, const std::string &what)
{
    if (status != UCS_OK) {
        die(what, status);
    }
}

std::vector<std::string> split(const std::string &list)
{
    std::vector<std::string> out;
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

/// What this process holds, from the kernel's point of view.
struct Footprint {
    long rss_bytes = 0;
    long rc_qps = 0, ud_qps = 0;  ///< QPs of this pid by type
    long mrs = 0, mr_bytes = 0;  ///< MRs of this pid and their total length
};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool address_sanitized = true;
#else
constexpr bool address_sanitized = false;
#endif

long rss_bytes()
{
    long pages = 0, resident = 0;
    std::ifstream statm("/proc/self/statm");
    if (!(statm >> pages >> resident)) {
        die("cannot read /proc/self/statm");
    }
    return resident * sysconf(_SC_PAGESIZE);
}

/// rdma_resources.hpp's, exiting with an error where the tool fails.
std::vector<std::string> rdma_resources(const char *what)
{
    try {
        return gdr_bench::rdma_resources(what);
    } catch (const std::runtime_error &e) {
        die(e.what());
    }
}

long json_number(const std::string &object, const char *key)
{
    const std::regex field(std::string("\"") + key + "\":([0-9]+)");
    std::smatch m;
    return std::regex_search(object, m, field) ? std::stol(m[1]) : 0;
}

Footprint footprint()
{
    Footprint f;
    for (const auto &qp : rdma_resources("qp")) {
        f.rc_qps += qp.find("\"type\":\"RC\"") != std::string::npos;
        f.ud_qps += qp.find("\"type\":\"UD\"") != std::string::npos;
    }
    for (const auto &mr : rdma_resources("mr")) {
        ++f.mrs;
        f.mr_bytes += json_number(mr, "mrlen");
    }
    f.rss_bytes = rss_bytes();
    return f;
}

Footprint operator-(const Footprint &a, const Footprint &b)
{
    return {a.rss_bytes - b.rss_bytes, a.rc_qps - b.rc_qps, a.ud_qps - b.ud_qps, a.mrs - b.mrs,
            a.mr_bytes - b.mr_bytes};
}

void load_plugin(const std::string &path)
{
    // Before any UCX call: the component registers from the plugin's constructor.
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
        die("cannot load the gdr plugin " + path + ": " + dlerror());
    }
}

// ---------------------------------------------------------------------------------------------
// UCT mode

struct TlResource {
    uct_component_h component = nullptr;
    std::string md_name;
};

/// The component and md that offer transport `tl` on device `dev` ("" = port 1 of any device).
TlResource find_tl(const std::string &tl, std::string *dev)
{
    uct_component_h *components;
    unsigned count;
    check(uct_query_components(&components, &count), "uct_query_components");
    TlResource found;
    for (unsigned c = 0; c < count && found.component == nullptr; ++c) {
        uct_component_attr_t attr{};
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        check(uct_component_query(components[c], &attr), "uct_component_query");
        std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = mds.data();
        check(uct_component_query(components[c], &attr), "uct_component_query");
        for (const auto &md_rsc : mds) {
            uct_md_config_t *config;
            uct_md_h md;
            check(uct_md_config_read(components[c], nullptr, nullptr, &config), "md config");
            ucs_status_t status = uct_md_open(components[c], md_rsc.md_name, config, &md);
            uct_config_release(config);
            if (status != UCS_OK) {
                continue;
            }
            uct_tl_resource_desc_t *tls;
            unsigned num_tls;
            if (uct_md_query_tl_resources(md, &tls, &num_tls) == UCS_OK) {
                for (unsigned t = 0; t < num_tls && found.component == nullptr; ++t) {
                    const std::string name = tls[t].dev_name;
                    if (tl == tls[t].tl_name &&
                        (dev->empty() ? name.size() > 2 && name.substr(name.size() - 2) == ":1"
                                      : *dev == name)) {
                        found = {components[c], md_rsc.md_name};
                        *dev  = name;
                    }
                }
                uct_release_tl_resource_list(tls);
            }
            uct_md_close(md);
        }
    }
    uct_release_component_list(components);
    if (found.component == nullptr) {
        die("no transport " + tl + " on " + (dev->empty() ? "any device" : *dev) +
            (tl.rfind("gdr", 0) == 0 ? " (is the plugin loaded into this UCX?)" : ""));
    }
    return found;
}

ucs_status_t ignore_ep_error(void *, uct_ep_h, ucs_status_t)
{
    return UCS_OK;  // none is expected: the endpoints only connect
}

/// One measured point of UCT mode: what the child reports to the parent through a pipe.
struct UctPoint {
    Footprint iface;  ///< both interfaces opened (half of it is one device's cost)
    Footprint eps;  ///< 2N endpoints created and connected
};

UctPoint measure_uct(const std::string &tl, std::string dev, unsigned n)
{
    const TlResource rsc = find_tl(tl, &dev);
    uct_md_config_t *md_config;
    uct_md_h md;
    check(uct_md_config_read(rsc.component, nullptr, nullptr, &md_config), "md config");
    check(uct_md_open(rsc.component, rsc.md_name.c_str(), md_config, &md), "uct_md_open");
    uct_config_release(md_config);
    ucs_async_context_t *async;
    uct_worker_h worker;
    check(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async), "async context");
    check(uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker), "uct_worker_create");

    uct_iface_config_t *config;
    check(uct_md_iface_config_read(md, tl.c_str(), nullptr, nullptr, &config), "iface config");
    uct_iface_params_t params{};
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl.c_str();
    params.mode.device.dev_name = dev.c_str();
    params.err_handler          = ignore_ep_error;

    const Footprint before_ifaces = footprint();
    uct_iface_h iface[2];
    for (auto &i : iface) {
        check(uct_iface_open(md, worker, &params, config, &i), "uct_iface_open(" + tl + ")");
        uct_iface_progress_enable(i, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    }
    uct_config_release(config);
    uct_iface_attr_t attr;
    check(uct_iface_query(iface[0], &attr), "uct_iface_query");
    if (!(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP)) {
        die(tl + " does not connect endpoint to endpoint");
    }
    std::vector<char> dev_addr[2];
    for (int i = 0; i < 2; ++i) {
        dev_addr[i].resize(attr.device_addr_len);
        check(uct_iface_get_device_address(iface[i], (uct_device_addr_t *)dev_addr[i].data()),
              "device address");
    }

    // eps[2k] on iface 0 connected to eps[2k+1] on iface 1
    auto connect_pairs = [&](unsigned pairs) {
        std::vector<uct_ep_h> eps;
        std::vector<char> addr[2];
        for (unsigned k = 0; k < pairs; ++k) {
            uct_ep_h ep[2];
            for (int i = 0; i < 2; ++i) {
                uct_ep_params_t ep_params{};
                ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
                ep_params.iface      = iface[i];
                check(uct_ep_create(&ep_params, &ep[i]), "uct_ep_create");
                addr[i].resize(attr.ep_addr_len);
                check(uct_ep_get_address(ep[i], (uct_ep_addr_t *)addr[i].data()), "ep address");
            }
            for (int i = 0; i < 2; ++i) {
                check(uct_ep_connect_to_ep(ep[i], (uct_device_addr_t *)dev_addr[1 - i].data(),
                                           (uct_ep_addr_t *)addr[1 - i].data()),
                      "uct_ep_connect_to_ep");
                eps.push_back(ep[i]);
            }
        }
        uct_worker_progress(worker);
        return eps;
    };
    for (uct_ep_h ep : connect_pairs(2)) {  // warm-up
        uct_ep_destroy(ep);
    }

    UctPoint point;
    const Footprint before_eps = footprint();
    point.iface                = before_eps - before_ifaces;
    std::vector<uct_ep_h> eps  = connect_pairs(n);
    point.eps                  = footprint() - before_eps;

    for (uct_ep_h ep : eps) {
        uct_ep_destroy(ep);
    }
    for (auto &i : iface) {
        uct_iface_close(i);
    }
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_md_close(md);
    return point;
}

/// Runs `body` in a child process and returns the bytes it wrote to the pipe it was given.
template <typename T, typename Body> T in_child(Body body)
{
    int fds[2];
    if (pipe(fds) != 0) {
        die("pipe");
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        const T result = body();
        if (write(fds[1], &result, sizeof(result)) != ssize_t(sizeof(result))) {
            _exit(2);
        }
        _exit(0);
    }
    close(fds[1]);
    T result{};
    const ssize_t got = read(fds[0], &result, sizeof(result));
    close(fds[0]);
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    if (got != ssize_t(sizeof(result)) || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        std::exit(2);  // the child said why on stderr
    }
    return result;
}

double per_ep(long total, unsigned eps)
{
    return double(total) / eps;
}

int run_uct(const std::vector<std::string> &tls, const std::vector<unsigned> &ns,
            const std::string &plugin, const std::string &dev, long tolerance)
{
    // results[tl][n]
    std::vector<std::vector<UctPoint>> results(tls.size());
    for (size_t t = 0; t < tls.size(); ++t) {
        for (unsigned n : ns) {
            const UctPoint p = in_child<UctPoint>([&] {
                load_plugin(plugin);
                return measure_uct(tls[t], dev, n);
            });
            results[t].push_back(p);
            const unsigned eps = 2 * n;
            std::printf("tl=%s eps=%u qp_per_ep=%.2f rss_per_ep=%.0f mr_per_ep=%.0f "
                        "iface_rss=%ld iface_mrs=%ld iface_mr_bytes=%ld iface_qps=%ld\n",
                        tls[t].c_str(), n, per_ep(p.eps.rc_qps + p.eps.ud_qps, eps),
                        per_ep(p.eps.rss_bytes, eps), per_ep(p.eps.mr_bytes, eps),
                        p.iface.rss_bytes / 2, p.iface.mrs / 2, p.iface.mr_bytes / 2,
                        (p.iface.rc_qps + p.iface.ud_qps) / 2);
            std::fflush(stdout);
        }
    }
    if (tolerance < 0 || tls.size() < 2) {
        return 0;
    }
    int failures = 0;
    for (size_t i = 0; i < ns.size(); ++i) {
        const Footprint &a = results[0][i].eps, &b = results[1][i].eps;
        const unsigned eps = 2 * ns[i];
        // Totals over the 2N endpoints, with one absolute slack: the noise is a few pages of
        // allocator growth per run, not a per-endpoint amount (at N = 1 it is 7 pages).
        auto compare = [&](const char *what, long x, long y, long slack) {
            const bool ok = x <= y + slack;
            std::printf("check eps=%u %s: %s %ld (%.0f per ep) <= %s %ld (%.0f per ep) + %ld: %s\n",
                        ns[i], what, tls[0].c_str(), x, per_ep(x, eps), tls[1].c_str(), y,
                        per_ep(y, eps), slack, ok ? "ok" : "FAILED");
            failures += !ok;
        };
        compare("qps", a.rc_qps + a.ud_qps, b.rc_qps + b.ud_qps, 0);
        if (address_sanitized) {
            // ASan's allocator puts redzones around, and quarantines, every allocation: the
            // two transports' RSS then differs by how many allocations they make, not by what
            // they keep (at 64 pairs, 3 KiB an endpoint more for gdr_rc sanitized)
            std::printf("check eps=%u rss_bytes: not compared under AddressSanitizer\n", ns[i]);
        } else {
            compare("rss_bytes", a.rss_bytes, b.rss_bytes, tolerance);
        }
        compare("mr_bytes", a.mr_bytes, b.mr_bytes, tolerance);
    }
    return failures != 0;
}

// ---------------------------------------------------------------------------------------------
// UCP mode

struct UcpRank {
    int peers = 0;
    Footprint held;  ///< after the messages, relative to before ucp_init
};

bool file_exists(const std::string &path)
{
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}

/// Waits until `dir`/`prefix`.0 .. .ranks-1 all exist (the ranks' rendezvous: a shared directory,
/// since they are children of one process on one host).
void wait_for_all(const std::string &dir, const char *prefix, int ranks)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (int r = 0; r < ranks; ++r) {
        while (!file_exists(dir + "/" + prefix + "." + std::to_string(r))) {
            if (std::chrono::steady_clock::now() > deadline) {
                die(std::string("rank ") + std::to_string(r) + " never wrote its " + prefix);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
}

void write_file(const std::string &path, const void *data, size_t size)
{
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(static_cast<const char *>(data), long(size));
    if (rename(tmp.c_str(), path.c_str()) != 0) {  // whole or absent to the readers
        die("rename " + tmp);
    }
}

void wait_request(ucp_worker_h worker, void *request, const char *what)
{
    if (request == nullptr) {
        return;
    }
    if (UCS_PTR_IS_ERR(request)) {
        die(what, UCS_PTR_STATUS(request));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    ucs_status_t status;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
        if (std::chrono::steady_clock::now() > deadline) {
            die(std::string(what) + " did not complete in 120 s");
        }
    }
    ucp_request_free(request);
    check(status, what);
}

UcpRank ucp_rank(int rank, int ranks, bool ring, const std::string &dir)
{
    const Footprint start = footprint();
    ucp_config_t *config;
    check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    ucp_context_h context;
    check(ucp_init(&params, config, &context), "ucp_init");
    ucp_config_release(config);
    ucp_worker_params_t wparams{};
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    ucp_worker_h worker;
    check(ucp_worker_create(context, &wparams, &worker), "ucp_worker_create");

    ucp_address_t *address;
    size_t address_len;
    check(ucp_worker_get_address(worker, &address, &address_len), "worker address");
    write_file(dir + "/addr." + std::to_string(rank), address, address_len);
    ucp_worker_release_address(worker, address);
    wait_for_all(dir, "addr", ranks);

    std::vector<int> peers;
    for (int p = 0; p < ranks; ++p) {
        const bool neighbour = p == (rank + 1) % ranks || p == (rank + ranks - 1) % ranks;
        if (p != rank && (!ring || neighbour)) {
            peers.push_back(p);
        }
    }
    std::vector<ucp_ep_h> eps;
    for (int p : peers) {
        std::ifstream in(dir + "/addr." + std::to_string(p), std::ios::binary);
        const std::string peer_address((std::istreambuf_iterator<char>(in)), {});
        ucp_ep_params_t ep_params{};
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = reinterpret_cast<const ucp_address_t *>(peer_address.data());
        ucp_ep_h ep;
        check(ucp_ep_create(worker, &ep_params, &ep), "ucp_ep_create");
        eps.push_back(ep);
    }
    // One message each way with every peer: wireup completes on both sides.
    std::vector<int> inbox(peers.size()), outbox(peers.size(), rank);
    std::vector<void *> requests;
    ucp_request_param_t rparam{};
    for (size_t i = 0; i < peers.size(); ++i) {
        requests.push_back(ucp_tag_recv_nbx(worker, &inbox[i], sizeof(int), ucp_tag_t(peers[i]),
                                            ~ucp_tag_t(0), &rparam));
        requests.push_back(
            ucp_tag_send_nbx(eps[i], &outbox[i], sizeof(int), ucp_tag_t(rank), &rparam));
    }
    for (void *request : requests) {
        wait_request(worker, request, "tag message");
    }
    wait_request(worker, ucp_worker_flush_nbx(worker, &rparam), "ucp_worker_flush");
    for (size_t i = 0; i < peers.size(); ++i) {
        if (inbox[i] != peers[i]) {
            die("rank " + std::to_string(rank) + " got a wrong message");
        }
    }

    UcpRank result;
    result.peers = int(peers.size());
    // UCP may still be building a lane when the messages are through (they can travel over the
    // aux lane meanwhile): give the count up to 10 s to reach the peer count.
    const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    do {
        result.held = footprint() - start;
        for (int i = 0; i < 100; ++i) {
            ucp_worker_progress(worker);
        }
    } while (result.held.rc_qps < result.peers && std::chrono::steady_clock::now() < settle);

    // Close only after every rank has counted: a closing peer's QPs would leave the count.
    const int one = 1;
    write_file(dir + "/done." + std::to_string(rank), &one, sizeof(one));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (int r = 0; r < ranks; ++r) {
        while (!file_exists(dir + "/done." + std::to_string(r)) &&
               std::chrono::steady_clock::now() < deadline) {
            ucp_worker_progress(worker);  // a peer may still need our side of its wireup
        }
    }
    ucp_request_param_t close_param{};
    close_param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    close_param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    for (ucp_ep_h ep : eps) {
        void *request = ucp_ep_close_nbx(ep, &close_param);
        if (request != nullptr && !UCS_PTR_IS_ERR(request)) {
            while (ucp_request_check_status(request) == UCS_INPROGRESS) {
                ucp_worker_progress(worker);
            }
            ucp_request_free(request);
        }
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return result;
}

int run_ucp(int ranks, bool ring, const std::string &plugin, bool check_qps)
{
    char dir_template[] = "/tmp/gdr_ep_scale.XXXXXX";
    if (mkdtemp(dir_template) == nullptr) {
        die("mkdtemp");
    }
    const std::string dir = dir_template;
    std::vector<int> pipes;
    std::vector<pid_t> pids;
    std::fflush(nullptr);
    for (int r = 0; r < ranks; ++r) {
        int fds[2];
        if (pipe(fds) != 0) {
            die("pipe");
        }
        const pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            load_plugin(plugin);
            const UcpRank result = ucp_rank(r, ranks, ring, dir);
            _exit(write(fds[1], &result, sizeof(result)) == ssize_t(sizeof(result)) ? 0 : 2);
        }
        close(fds[1]);
        pipes.push_back(fds[0]);
        pids.push_back(pid);
    }
    int failures = 0;
    bool errors  = false;
    for (int r = 0; r < ranks; ++r) {
        UcpRank result{};
        const bool got = read(pipes[size_t(r)], &result, sizeof(result)) == ssize_t(sizeof(result));
        close(pipes[size_t(r)]);
        int wstatus = 0;
        waitpid(pids[size_t(r)], &wstatus, 0);
        if (!got || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
            std::fprintf(stderr, "gdr_ep_scale: rank %d failed\n", r);
            errors = true;
            continue;
        }
        const Footprint &f = result.held;
        // At most one RC QP a peer, and none to the ranks it never addresses. Not "exactly":
        // UCP 1.13 sometimes leaves a full-mesh peer's RC lane unbuilt and serves it over the aux
        // lane (seen with gdr_rc and rc_verbs alike), which costs no QP.
        const bool ok = !check_qps || (f.rc_qps >= 1 && f.rc_qps <= result.peers);
        std::printf("rank=%d ranks=%d peers=%d rc_qps=%ld ud_qps=%ld mrs=%ld mr_bytes=%ld "
                    "rss=%ld%s\n",
                    r, ranks, result.peers, f.rc_qps, f.ud_qps, f.mrs, f.mr_bytes, f.rss_bytes,
                    check_qps ? (ok ? " check=ok" : " check=FAILED") : "");
        failures += !ok;
    }
    for (const char *prefix : {"addr", "done"}) {
        for (int r = 0; r < ranks; ++r) {
            unlink((dir + "/" + prefix + "." + std::to_string(r)).c_str());
        }
    }
    rmdir(dir.c_str());
    return errors ? 2 : failures != 0;  // as UCT mode: 2 an error, 1 a failed check
}

/// The whole of @p text as a number in [min, max], or an error naming the option.
long number(const char *option, const std::string &text, long min, long max)
{
    char *end        = nullptr;
    errno            = 0;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || value < min || value > max) {
        die(std::string(option) + ": a number " + std::to_string(min) + ".." + std::to_string(max) +
            " is expected, not '" + text + "'");
    }
    return value;
}

void usage()
{
    std::fprintf(stderr,
                 "usage: gdr_ep_scale [-t TL,...] [-n N,...] [-d DEV] [-p PLUGIN] [-c BYTES]\n"
                 "       gdr_ep_scale -u RANKS [-r ring|all] [-p PLUGIN] [-c 0]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char **argv)
{
    std::vector<std::string> tls = {"gdr_rc", "rc_verbs"};
    std::vector<unsigned> ns     = {1, 16, 64, 256};
    std::string dev, plugin = GDR_PLUGIN_DEFAULT;
    long tolerance = -1;
    int ranks      = 0;
    bool ring      = true;
    for (int opt; (opt = getopt(argc, argv, "t:n:d:p:c:u:r:h")) != -1;) {
        switch (opt) {
        case 't':
            tls = split(optarg);
            break;
        case 'n':
            ns.clear();
            for (const auto &n : split(optarg)) {
                ns.push_back(unsigned(number("-n", n, 1, 65536)));
            }
            break;
        case 'd':
            dev = optarg;
            break;
        case 'p':
            plugin = optarg;
            break;
        case 'c':
            tolerance = number("-c", optarg, 0, 1L << 40);
            break;
        case 'u':
            // fewer than 3 ranks have no ring distinct from the full mesh
            ranks = int(number("-u", optarg, 3, 64));
            break;
        case 'r':
            if (std::strcmp(optarg, "ring") != 0 && std::strcmp(optarg, "all") != 0) {
                die("-r: ring or all, not '" + std::string(optarg) + "'");
            }
            ring = std::strcmp(optarg, "ring") == 0;
            break;
        default:
            usage();
        }
    }
    if (optind != argc || tls.empty() || ns.empty()) {
        usage();
    }
    if (ranks == 0 && tolerance >= 0 && tls.size() != 2) {
        die("-c compares two transports: give -t A,B");
    }
    return ranks != 0 ? run_ucp(ranks, ring, plugin, tolerance >= 0)
                      : run_uct(tls, ns, plugin, dev, tolerance);
}
