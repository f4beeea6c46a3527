#include "diagnose.hpp"

#include "gdr_topo.hpp"
#include "probes.hpp"

#include <sys/utsname.h>
#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace gdr::doctor {
namespace {

using namespace gdr::topo;

constexpr const char *kNotProbed = "not probed: --root describes another system";

std::string or_dash(const std::string &s)
{
    return s.empty() ? "-" : s;
}

std::string numa_text(int node)
{
    return node < 0 ? "-" : std::to_string(node);
}

Json numa_json(int node)
{
    return node < 0 ? Json() : Json(node);
}

std::string human_bytes(unsigned long long bytes)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u              = 0;
    while (bytes >= 1024 && bytes % 1024 == 0 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    return std::to_string(bytes) + " " + unit[u];
}

/// Shared state of one run: the facts every check looks at.
class Doctor {
public:
    explicit Doctor(const Options &options)
        : options_(options), sys_(options.root), topo_(Topology::discover(sys_))
    {
        if (sys_.is_live()) {
            verbs_ = probe_verbs(&verbs_error_);
            cuda_  = probe_cuda();
        }
    }

    Report run()
    {
        header();
        rdma();
        gpus();
        topology();
        system();
        ucx();
        return std::move(report_);
    }

private:
    void add(const std::string &section, const std::string &check, const std::string &subject,
             Status status, std::string message, std::string fix = "")
    {
        report_.add(Finding{section, check, subject, status, std::move(message), std::move(fix)});
    }

    const VerbsDevice *verbs_device(const std::string &name) const
    {
        for (const auto &dev : verbs_) {
            if (dev.name == name) {
                return &dev;
            }
        }
        return nullptr;
    }

    const CudaGpu *cuda_gpu(const std::string &bdf) const
    {
        for (const auto &gpu : cuda_.gpus) {
            if (gpu.bdf == bdf) {
                return &gpu;
            }
        }
        return nullptr;
    }

    void header();
    void rdma();
    /// Checks one port; returns its active MTU in bytes (0 when unknown).
    int rdma_port(const RdmaDevice &dev, const RdmaPort &port, bool any_port_active, Json &jport);
    void gid_table(const RdmaPort &port, Json &jport);
    void gpus();
    void topology();
    void system();
    void iommu();
    void peermem();
    void memlock();
    void ucx();

    Options options_;
    SysRoot sys_;
    Topology topo_;
    std::vector<VerbsDevice> verbs_;
    std::string verbs_error_;
    CudaProbe cuda_;
    Report report_;
    bool dmabuf_nic_ok_      = false;  // some RDMA device takes dma-buf registrations
    int gpus_without_dmabuf_ = 0;  // CUDA said DMA_BUF_SUPPORTED = 0
};

void Doctor::header()
{
    Json &d           = report_.data;
    d["schema"]       = "gdr-doctor/1";
    d["tool_version"] = GDR_DOCTOR_VERSION;
    d["root"]         = sys_.root();
    d["live"]         = sys_.is_live();
    std::string host  = "fixture " + sys_.root();
    if (sys_.is_live()) {
        struct utsname uts;
        if (::uname(&uts) == 0) {
            host        = std::string(uts.nodename) + ", Linux " + uts.release + " " + uts.machine;
            d["host"]   = uts.nodename;
            d["kernel"] = uts.release;
        }
    }
    auto &s = report_.section("header", "gdr-doctor " GDR_DOCTOR_VERSION " - " + host);
    if (!sys_.is_live()) {
        s.lines.push_back(
            "  (--root: sysfs/procfs read from the tree; verbs, CUDA and UCX probes skipped)");
    }
}

void Doctor::rdma()
{
    auto &s      = report_.section("rdma", "RDMA devices and ports");
    Json devices = Json::array();
    if (topo_.rdma_devices.empty()) {
        std::string detail = sys_.is_live() && !verbs_error_.empty() ? " (" + verbs_error_ + ")"
                                                                     : "";
        add("rdma", "rdma.devices", "", Status::Fail,
            "no RDMA device in " + sys_.path("/sys/class/infiniband") + detail,
            "load the HCA driver (mlx5_core + mlx5_ib, or your vendor's) and check `ibv_devices`; "
            "for a software test setup: `rdma link add rxe0 type rxe netdev <if>`");
        report_.data["rdma_devices"] = std::move(devices);
        return;
    }
    std::vector<std::vector<std::string>> table = {
        {"DEVICE", "PORT", "STATE", "PHYS", "LINK", "RATE", "MTU", "NETDEV", "PCI", "NUMA"}};
    bool any_active = false;
    std::vector<std::pair<const RdmaDevice *, std::vector<RdmaPort>>> all;
    for (const auto &dev : topo_.rdma_devices) {
        std::vector<RdmaPort> ports;
        for (unsigned p : list_ports(sys_, dev.name)) {
            ports.push_back(read_port(sys_, dev.name, p));
            any_active = any_active || ports.back().is_active();
        }
        all.emplace_back(&dev, std::move(ports));
    }
    for (auto &[dev, ports] : all) {
        Json jdev             = Json::object();
        jdev["name"]          = dev->name;
        jdev["pci"]           = dev->pci ? Json(dev->pci->bdf) : Json();
        jdev["numa_node"]     = dev->pci ? numa_json(dev->pci->numa_node) : Json();
        jdev["parent_netdev"] = dev->parent_netdev.empty() ? Json() : Json(dev->parent_netdev);
        Json jports           = Json::array();
        if (ports.empty()) {
            add("rdma", "rdma.port", dev->name, Status::Warn, "no ports listed in sysfs",
                "check `ibv_devinfo -d " + dev->name + "` and the driver's kernel log");
        }
        for (const auto &port : ports) {
            Json jport = Json::object();
            int mtu    = rdma_port(*dev, port, any_active, jport);
            table.push_back({dev->name, std::to_string(port.port), or_dash(port.state),
                             or_dash(port.phys_state), or_dash(port.link_layer), or_dash(port.rate),
                             mtu ? std::to_string(mtu) : "?", or_dash(port.netdev),
                             dev->pci ? dev->pci->bdf : "-",
                             dev->pci ? numa_text(dev->pci->numa_node) : "-"});
            jports.push(std::move(jport));
        }
        jdev["ports"] = std::move(jports);
        if (sys_.is_live()) {
            const VerbsDevice *vdev = verbs_device(dev->name);
            Json probe              = Json::object();
            if (vdev == nullptr || !vdev->error.empty()) {
                std::string why = vdev ? vdev->error
                                       : "libibverbs does not list it (provider missing?)";
                probe["result"] = "error";
                probe["detail"] = why;
                add("rdma", "rdma.verbs", dev->name, Status::Warn,
                    "cannot open with libibverbs: " + why,
                    "install the provider (ibverbs-providers / rdma-core) and check "
                    "/dev/infiniband permissions");
            } else {
                bool ok         = vdev->dmabuf == VerbsDevice::Dmabuf::Supported;
                dmabuf_nic_ok_  = dmabuf_nic_ok_ || ok;
                probe["result"] = ok ? "supported" : "unsupported";
                probe["detail"] = vdev->dmabuf_detail;
                add("rdma", "rdma.dmabuf", dev->name, ok ? Status::Ok : Status::Info,
                    (ok ? "dma-buf registration available: " : "no dma-buf registration: ") +
                        vdev->dmabuf_detail);
            }
            jdev["dmabuf_probe"] = std::move(probe);
        }
        devices.push(std::move(jdev));
    }
    s.lines                      = format_table(table, 2);
    report_.data["rdma_devices"] = std::move(devices);
}

int Doctor::rdma_port(const RdmaDevice &dev, const RdmaPort &port, bool any_port_active,
                      Json &jport)
{
    const std::string subject = dev.name + ":" + std::to_string(port.port);
    jport["port"]             = port.port;
    jport["state"]            = port.state;
    jport["phys_state"]       = port.phys_state;
    jport["link_layer"]       = port.link_layer;
    jport["rate"]             = port.rate;
    jport["netdev"]           = port.netdev.empty() ? Json() : Json(port.netdev);
    jport["netdev_mtu"]       = port.netdev_mtu > 0 ? Json(port.netdev_mtu) : Json();

    // Active MTU: the verbs answer when the device opens, else what the kernel derives
    // from the netdev MTU (RoCE); an InfiniBand port publishes none in sysfs.
    int mtu = 0;
    std::string mtu_source;
    if (const VerbsDevice *vdev = verbs_device(dev.name)) {
        for (const auto &vp : vdev->ports) {
            if (vp.port == port.port && vp.active_mtu > 0) {
                mtu        = vp.active_mtu;
                mtu_source = "ibv_query_port";
            }
        }
    }
    if (mtu == 0 && port.derived_active_mtu() > 0) {
        mtu        = port.derived_active_mtu();
        mtu_source = "netdev MTU " + std::to_string(port.netdev_mtu);
    }
    jport["active_mtu"]        = mtu > 0 ? Json(mtu) : Json();
    jport["active_mtu_source"] = mtu_source.empty() ? Json() : Json(mtu_source);

    std::string link    = port.is_ethernet() ? "Ethernet (RoCE)" : or_dash(port.link_layer);
    std::string summary = port.state + " (" + or_dash(port.phys_state) + "), " + link + ", " +
                          or_dash(port.rate) + (mtu ? ", active MTU " + std::to_string(mtu) : "");
    if (port.is_active()) {
        add("rdma", "rdma.port", subject, Status::Ok, summary);
    } else {
        std::string fix;
        if (port.phys_state == "LinkUp" && !port.is_ethernet()) {
            fix = "the link is up but the port is not ACTIVE: no subnet manager? run opensm "
                  "(or enable the switch's SM), then check `ibstat " +
                  dev.name + "`";
        } else if (port.is_ethernet()) {
            fix = "bring the netdev up (`ip link set dev " + or_dash(port.netdev) +
                  " up`) and check the cable/switch port (`ethtool " + or_dash(port.netdev) + "`)";
        } else {
            fix = "check the cable and the switch port (`ibstat " + dev.name + "`, `iblinkinfo`)";
        }
        add("rdma", "rdma.port", subject, any_port_active ? Status::Warn : Status::Fail,
            "port not usable: " + summary, fix);
    }

    if (port.is_active() && mtu > 0 && mtu < 4096) {
        if (port.is_ethernet()) {
            add("rdma", "rdma.mtu", subject, Status::Warn,
                "active MTU " + std::to_string(mtu) + " (netdev " + or_dash(port.netdev) + " MTU " +
                    (port.netdev_mtu ? std::to_string(port.netdev_mtu) : "?") +
                    "): large transfers pay more per-packet overhead",
                "RoCE's MTU follows the netdev MTU: `ip link set dev " + or_dash(port.netdev) +
                    " mtu 9000` (>= 4096 + 96 bytes of headers gives 4096), with jumbo frames on "
                    "every switch port on the path");
        } else {
            add("rdma", "rdma.mtu", subject, Status::Warn,
                "active MTU " + std::to_string(mtu) + " below the 4096 InfiniBand supports",
                "raise the partition MTU in the subnet manager (opensm partitions.conf: mtu=5 "
                "for 4096) and check the switch's port MTU cap");
        }
    }
    gid_table(port, jport);

    if (port.is_ethernet() && port.is_active()) {
        // PFC lives in the driver's DCB state (netlink), ECN in mlx5's sysfs when present.
        std::string ecn;
        for (const char *role : {"roce_np", "roce_rp"}) {
            std::string dir = "/sys/class/net/" + port.netdev + "/ecn/" + role + "/enable";
            std::string prios;
            for (const auto &prio : sys_.list_dir(dir)) {
                if (sys_.read_int(dir + "/" + prio).value_or(0) == 1) {
                    prios += (prios.empty() ? "" : ",") + prio;
                }
            }
            if (sys_.exists(dir)) {
                ecn += std::string(ecn.empty() ? "" : "; ") + role + " ECN on priorities " +
                       (prios.empty() ? "none" : prios);
            }
        }
        jport["ecn"] = ecn.empty() ? Json() : Json(ecn);
        add("rdma", "rdma.lossless", subject, Status::Info,
            (ecn.empty() ? std::string("ECN state not exposed in sysfs") : ecn) +
                "; PFC is not read (driver DCB state): check `dcb pfc show dev " +
                or_dash(port.netdev) + "` or `mlnx_qos -i " + or_dash(port.netdev) +
                "` - RoCE needs PFC or ECN/DCQCN end to end");
    }
    return mtu;
}

void Doctor::gid_table(const RdmaPort &port, Json &jport)
{
    const std::string subject = port.device + ":" + std::to_string(port.port);
    GidChoice choice          = select_gid(port.gids, port.is_ethernet(), options_.gid_index);
    Json gids                 = Json::array();
    std::vector<std::vector<std::string>> table = {{"", "IDX", "GID", "TYPE", "NETDEV"}};
    for (const auto &gid : port.gids) {
        Json g           = Json::object();
        g["index"]       = gid.index;
        g["gid"]         = gid.address();
        g["type"]        = gid_type_name(gid.type);
        g["ipv4_mapped"] = gid.is_ipv4_mapped();
        g["link_local"]  = gid.is_link_local();
        g["netdev"]      = gid.netdev.empty() ? Json() : Json(gid.netdev);
        gids.push(std::move(g));
        table.push_back({static_cast<int>(gid.index) == choice.index ? "*" : "",
                         std::to_string(gid.index), gid.address(), gid_type_name(gid.type),
                         or_dash(gid.netdev)});
    }
    jport["gids"]          = std::move(gids);
    Json sel               = Json::object();
    sel["index"]           = choice.index >= 0 ? Json(choice.index) : Json();
    sel["reason"]          = choice.reason;
    sel["override"]        = options_.gid_index >= 0 ? Json(options_.gid_index) : Json();
    jport["gid_selection"] = std::move(sel);

    auto &s = report_.section("gid", "GID tables (* = the index gdr_rc would use)");
    s.lines.push_back("  " + subject + " (" + or_dash(port.link_layer) + ")");
    auto lines = format_table(table, 4);
    s.lines.insert(s.lines.end(), lines.begin(), lines.end());

    if (choice.index < 0) {
        add("gid", "rdma.gid", subject, port.is_active() ? Status::Fail : Status::Warn,
            "no usable GID: " + choice.reason,
            port.is_ethernet()
                ? "assign an IP address to " + or_dash(port.netdev) +
                      " (`ip addr add <addr>/<len> dev " + or_dash(port.netdev) + "`)"
                : "check the port state and the subnet manager");
        return;
    }
    const GidEntry *chosen = nullptr;
    for (const auto &gid : port.gids) {
        if (static_cast<int>(gid.index) == choice.index) {
            chosen = &gid;
        }
    }
    bool routable_v2 = chosen && chosen->type == GidType::RoCEv2 && !chosen->is_link_local();
    if (port.is_ethernet() && !routable_v2) {
        add("gid", "rdma.gid", subject, Status::Warn,
            "gdr_rc would use GID " + std::to_string(choice.index) + ": " + choice.reason,
            "give " + or_dash(port.netdev) +
                " an IPv4 (or global IPv6) address so that a routable "
                "RoCE v2 GID appears; check `cat /sys/class/infiniband/" +
                port.device + "/ports/" + std::to_string(port.port) + "/gid_attrs/types/*`");
    } else {
        add("gid", "rdma.gid", subject, Status::Ok,
            "gdr_rc would use GID " + std::to_string(choice.index) + ": " + choice.reason);
    }
    // The seed case: tools that default to GID index 0 silently run RoCE v1 here.
    if (port.is_ethernet() && choice.index != 0 && !port.gids.empty() &&
        port.gids.front().index == 0 && port.gids.front().type != GidType::RoCEv2) {
        std::string n = std::to_string(choice.index);
        add("gid", "rdma.gid_default", subject, Status::Info,
            "GID 0 is " + std::string(gid_type_name(port.gids.front().type)) +
                ": tools left at index 0 run RoCE v1 (not routable, no ECN); give them index " + n +
                " (perftest -x " + n + ", NCCL_IB_GID_INDEX=" + n + ", UCX_IB_GID_INDEX=" + n +
                ")");
    }
}

void Doctor::gpus()
{
    auto &s   = report_.section("gpu", "GPUs");
    Json list = Json::array();
    // sysfs is the list; CUDA adds names and attributes (and any GPU sysfs did not show).
    std::vector<std::pair<std::string, int>> gpus;  // bdf, numa
    for (const auto &gpu : topo_.gpus) {
        gpus.emplace_back(gpu.bdf, gpu.numa_node);
    }
    for (const auto &gpu : cuda_.gpus) {
        if (std::none_of(gpus.begin(), gpus.end(), [&](auto &g) { return g.first == gpu.bdf; })) {
            gpus.emplace_back(gpu.bdf, -1);
        }
    }
    std::vector<std::vector<std::string>> table = {
        {"GPU", "PCI", "NUMA", "NAME", "DMA_BUF", "GPUDIRECT_RDMA"}};
    auto attr_text = [](int v) { return v < 0 ? std::string("?") : std::to_string(v); };
    for (size_t i = 0; i < gpus.size(); ++i) {
        const auto &[bdf, numa]   = gpus[i];
        const CudaGpu *cg         = cuda_gpu(bdf);
        const std::string subject = "GPU" + std::to_string(i);
        Json g                    = Json::object();
        g["name"]                 = subject;
        g["pci"]                  = bdf;
        g["numa_node"]            = numa_json(numa);
        g["cuda_ordinal"]         = cg ? Json(cg->ordinal) : Json();
        g["model"]                = cg ? Json(cg->name) : Json();
        g["dma_buf_supported"] = cg && cg->dma_buf_supported >= 0 ? Json(cg->dma_buf_supported == 1)
                                                                  : Json();
        g["gpudirect_rdma_supported"] = cg && cg->gpudirect_rdma_supported >= 0
                                            ? Json(cg->gpudirect_rdma_supported == 1)
                                            : Json();
        list.push(std::move(g));
        table.push_back({subject, bdf, numa_text(numa), cg ? cg->name : "-",
                         cg ? attr_text(cg->dma_buf_supported) : "?",
                         cg ? attr_text(cg->gpudirect_rdma_supported) : "?"});
        if (!sys_.is_live()) {
            add("gpu", "gpu.dmabuf", subject, Status::Unknown,
                std::string("CUDA attributes ") + kNotProbed);
        } else if (cg == nullptr) {
            add("gpu", "gpu.dmabuf", subject, Status::Unknown,
                "CUDA attributes not read: " +
                    (cuda_.error.empty() ? "CUDA does not list this GPU" : cuda_.error));
        } else if (cg->dma_buf_supported == 1) {
            add("gpu", "gpu.dmabuf", subject, Status::Ok,
                "dma-buf export supported (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 1), GPUDirect "
                "RDMA "
                "attribute = " +
                    attr_text(cg->gpudirect_rdma_supported));
        } else {
            ++gpus_without_dmabuf_;
            add("gpu", "gpu.dmabuf", subject, Status::Info,
                "no dma-buf export (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = " +
                    attr_text(cg->dma_buf_supported) +
                    "): GPU memory registration needs nvidia-peermem");
        }
    }
    if (gpus.empty()) {
        std::string why = sys_.is_live() && !cuda_.error.empty() ? " (" + cuda_.error + ")" : "";
        add("gpu", "gpu.devices", "", Status::Info, "no NVIDIA GPU found: host memory only" + why);
    } else {
        s.lines = format_table(table, 2);
        if (sys_.is_live() && cuda_.available) {
            s.lines.push_back("  CUDA driver " + std::to_string(cuda_.driver_version / 1000) + "." +
                              std::to_string(cuda_.driver_version % 1000 / 10));
        }
    }
    report_.data["gpus"] = std::move(list);
}

void Doctor::topology()
{
    auto &s = report_.section("topology",
                              "Topology (nvidia-smi topo -m style, with the RDMA devices)");
    struct Node {
        std::string name;
        std::optional<PciDevice> pci;
        bool gpu;
    };
    std::vector<Node> nodes;
    for (size_t i = 0; i < topo_.gpus.size(); ++i) {
        nodes.push_back({"GPU" + std::to_string(i), topo_.gpus[i], true});
    }
    for (const auto &dev : topo_.rdma_devices) {
        nodes.push_back({dev.name, dev.pci, false});
    }
    Json jt     = Json::object();
    Json jnodes = Json::array();
    Json matrix = Json::array();
    std::vector<std::vector<std::string>> table;
    std::vector<std::string> head = {""};
    for (const auto &n : nodes) {
        head.push_back(n.name);
    }
    head.push_back("NUMA");
    head.push_back("SOCKET");
    table.push_back(head);
    for (const auto &a : nodes) {
        std::vector<std::string> row = {a.name};
        Json jrow                    = Json::array();
        for (const auto &b : nodes) {
            Link link = a.pci && b.pci ? classify(sys_, *a.pci, *b.pci).link
                                       : (&a == &b ? Link::Self : Link::Unknown);
            row.push_back(link_name(link));
            jrow.push(link_name(link));
        }
        int numa    = a.pci ? a.pci->numa_node : -1;
        auto socket = topo_.numa_socket.find(numa);
        row.push_back(numa_text(numa));
        row.push_back(socket == topo_.numa_socket.end() ? "-" : std::to_string(socket->second));
        table.push_back(row);
        matrix.push(std::move(jrow));
        Json jn         = Json::object();
        jn["name"]      = a.name;
        jn["kind"]      = a.gpu ? "gpu" : "rdma";
        jn["pci"]       = a.pci ? Json(a.pci->bdf) : Json();
        jn["numa_node"] = numa_json(numa);
        jn["socket"]    = socket == topo_.numa_socket.end() ? Json() : Json(socket->second);
        jnodes.push(std::move(jn));
    }
    jt["devices"] = std::move(jnodes);
    jt["matrix"]  = std::move(matrix);
    if (nodes.empty()) {
        s.lines.push_back("  (no NVIDIA GPU and no RDMA device: nothing to place)");
    } else {
        s.lines = format_table(table, 2);
        s.lines.push_back(
            "  Legend: X self, PIX one PCIe switch, PXB several switches, PHB host bridge, "
            "NODE host bridges of one NUMA node, SYS across NUMA nodes, ? not on PCI");
    }

    Json nearest_list = Json::array();
    for (size_t i = 0; i < topo_.gpus.size(); ++i) {
        const auto &gpu           = topo_.gpus[i];
        const std::string subject = "GPU" + std::to_string(i);
        auto nearest              = nearest_rdma_device(sys_, topo_, gpu);
        Json jn                   = Json::object();
        jn["gpu"]                 = subject;
        if (!nearest) {
            add("topology", "topology.nearest", subject,
                topo_.rdma_devices.empty() ? Status::Info : Status::Unknown,
                topo_.rdma_devices.empty()
                    ? "no RDMA device to pair with"
                    : "no RDMA device with a PCI function: distance unknown");
            nearest_list.push(std::move(jn));
            continue;
        }
        const PciPath &path   = nearest->path;
        const RdmaDevice &dev = *nearest->device;
        jn["rdma_device"]     = dev.name;
        jn["link"]            = link_name(path.link);
        jn["explanation"]     = path.explanation;
        std::string what      = "nearest RDMA device " + dev.name + " is " + link_name(path.link) +
                           " (" + path.explanation + ")";
        switch (path.link) {
        case Link::PIX:
        case Link::PXB:
        case Link::Self:
            add("topology", "topology.nearest", subject, Status::Ok, what);
            break;
        case Link::SYS:
            add("topology", "topology.nearest", subject, Status::Warn,
                what + ": GPU on NUMA " + numa_text(gpu.numa_node) + ", " + dev.name + " on NUMA " +
                    numa_text(dev.pci->numa_node) + "; GPUDirect RDMA crosses the CPU interconnect",
                "put an HCA on the GPU's socket (or use the GPU nearest to " + dev.name +
                    "); bind ranks with `numactl --cpunodebind=" + numa_text(gpu.numa_node) +
                    "` and select the device per GPU (UCX_NET_DEVICES=" + dev.name + ":1)");
            break;
        default:
            add("topology", "topology.nearest", subject, Status::Warn,
                what + ": peer-to-peer goes through the CPU's root complex",
                "prefer a GPU/HCA pair under one PCIe switch (PIX/PXB); NCCL likewise disables "
                "GPUDirect RDMA beyond PXB by default (NCCL_NET_GDR_LEVEL)");
        }

        // ACS on the bridges between the GPU and that HCA.
        Json jbridges = Json::array();
        std::vector<std::string> redirecting, unreadable;
        for (const auto &bdf : path.bridges) {
            if (!PciAddress::parse(bdf)) {
                continue;  // a host bridge name, not a PCI function
            }
            BridgeAcs acs = read_acs(sys_, bdf);
            Json jb       = Json::object();
            jb["bridge"]  = bdf;
            jb["state"]   = acs_state_name(acs.state);
            jb["control"] = acs.state == BridgeAcs::State::Unreadable ||
                                    acs.state == BridgeAcs::State::NotCapable
                                ? Json()
                                : Json(static_cast<int>(acs.control));
            jb["detail"]  = acs.detail;
            jbridges.push(std::move(jb));
            if (acs.blocks_p2p()) {
                redirecting.push_back(bdf + " (" + acs.detail + ")");
            } else if (acs.state == BridgeAcs::State::Unreadable) {
                unreadable.push_back(bdf);
            }
        }
        jn["acs"] = std::move(jbridges);
        nearest_list.push(std::move(jn));
        auto join = [](const std::vector<std::string> &v) {
            std::string out;
            for (const auto &x : v) {
                out += (out.empty() ? "" : ", ") + x;
            }
            return out;
        };
        const std::string pair = subject + "<->" + dev.name;
        if (!redirecting.empty()) {
            std::string setpci, kernel_list;
            for (const auto &bdf : path.bridges) {
                if (read_acs(sys_, bdf).blocks_p2p()) {
                    setpci += (setpci.empty() ? "" : "; ") + std::string("setpci -s ") + bdf +
                              " ECAP_ACS+0x6.w=0000";
                    kernel_list += (kernel_list.empty() ? "" : ";") + bdf;
                }
            }
            add("topology", "topology.acs", pair, Status::Warn,
                "ACS redirects peer-to-peer traffic up to the root complex on " +
                    join(redirecting) + ": GPUDirect RDMA runs far below line rate (or fails)",
                "disable ACS in the BIOS (PCIe ACS / \"ACS Control\"); the kernel also enables it "
                "when an "
                "IOMMU is active: boot with `pci=disable_acs_redir=" +
                    kernel_list + "` (Linux >= 4.19), or now, as root: " + setpci +
                    " (keep ACS where devices are passed through to VMs)");
        } else if (!unreadable.empty()) {
            add("topology", "topology.acs", pair, Status::Unknown,
                "could not read ACS of " + join(unreadable) +
                    " (config space beyond 64 bytes needs root): rerun as root to check");
        } else {
            add("topology", "topology.acs", pair, Status::Ok,
                "no bridge on the path redirects peer-to-peer traffic (" +
                    std::to_string(path.bridges.size()) + " bridges checked)");
        }
    }
    jt["nearest"]            = std::move(nearest_list);
    report_.data["topology"] = std::move(jt);
}

void Doctor::system()
{
    report_.section("system", "System");
    iommu();
    peermem();
    memlock();
}

void Doctor::iommu()
{
    Json j              = Json::object();
    auto units          = sys_.list_dir("/sys/class/iommu");
    std::string cmdline = sys_.read_text("/proc/cmdline").value_or("");
    bool pt_cmdline     = (" " + cmdline + " ").find(" iommu=pt ") != std::string::npos;
    Json junits         = Json::array();
    for (const auto &u : units) {
        junits.push(u);
    }
    j["units"]   = std::move(junits);
    j["cmdline"] = cmdline;
    std::vector<std::string> translated;
    int identity = 0;
    Json groups  = Json::array();
    std::vector<std::pair<std::string, std::string>> devices;
    for (size_t i = 0; i < topo_.gpus.size(); ++i) {
        devices.emplace_back("GPU" + std::to_string(i), topo_.gpus[i].bdf);
    }
    for (const auto &dev : topo_.rdma_devices) {
        if (dev.pci) {
            devices.emplace_back(dev.name, dev.pci->bdf);
        }
    }
    for (const auto &[name, bdf] : devices) {
        auto type = sys_.read_text("/sys/bus/pci/devices/" + bdf + "/iommu_group/type");
        if (!type) {
            continue;
        }
        Json g      = Json::object();
        g["device"] = name;
        g["type"]   = *type;
        groups.push(std::move(g));
        if (type->rfind("DMA", 0) == 0) {
            translated.push_back(name + " (" + *type + ")");
        } else if (*type == "identity") {
            ++identity;
        }
    }
    j["groups"] = std::move(groups);
    std::string mode;
    Status status = Status::Ok;
    std::string message;
    if (units.empty()) {
        mode    = "off";
        message = "no IOMMU active: devices use physical addresses";
    } else if (!translated.empty()) {
        mode   = "translated";
        status = Status::Warn;
        std::string list;
        for (const auto &t : translated) {
            list += (list.empty() ? "" : ", ") + t;
        }
        message =
            "IOMMU translates DMA of " + list +
            ": every GPU<->NIC transfer is remapped (and may be routed through the root complex)";
    } else if (identity > 0 || pt_cmdline) {
        mode    = "passthrough";
        message = "IOMMU in passthrough mode" +
                  std::string(identity ? " (identity domains)" : " (iommu=pt)");
    } else {
        mode    = "unknown";
        status  = Status::Unknown;
        message = "IOMMU enabled (" + units.front() + "), translation mode not readable";
    }
    j["mode"]                       = mode;
    report_.data["system"]["iommu"] = std::move(j);
    add("system", "system.iommu", "", status, message,
        status == Status::Warn ? "boot with iommu=pt (Intel: `intel_iommu=on iommu=pt`, AMD: "
                                 "`amd_iommu=on iommu=pt`) so host devices keep 1:1 mappings"
                               : "");
}

void Doctor::peermem()
{
    Json j = Json::object();
    // The transport's own check (gdr_topo): the doctor cannot say "loaded" where gdr_rc disagrees.
    const auto module                 = find_peer_memory_module(sys_);
    j["loaded"]                       = module.has_value();
    j["evidence"]                     = module ? Json(module->evidence) : Json();
    bool have_gpu                     = !topo_.gpus.empty() || !cuda_.gpus.empty();
    bool dmabuf_known                 = sys_.is_live() && cuda_.available && !verbs_.empty();
    bool dmabuf_works                 = dmabuf_known && dmabuf_nic_ok_ && gpus_without_dmabuf_ == 0;
    j["dmabuf_path"]                  = dmabuf_known ? Json(dmabuf_works) : Json();
    report_.data["system"]["peermem"] = std::move(j);
    const std::string fix =
        "`modprobe nvidia-peermem` (ships with the NVIDIA driver; persist it in "
        "/etc/modules-load.d/), or use dma-buf: open GPU kernel modules, kernel >= 5.12, "
        "an RDMA provider with ibv_reg_dmabuf_mr";
    if (module) {
        add("system", "system.peermem", "", Status::Ok,
            "nvidia-peermem loaded (" + module->evidence + ")");
    } else if (!have_gpu) {
        add("system", "system.peermem", "", Status::Info,
            "nvidia-peermem not loaded (no GPU: not needed)");
    } else if (dmabuf_works) {
        add("system", "system.peermem", "", Status::Ok,
            "nvidia-peermem not loaded, not needed: GPU memory registers through dma-buf");
    } else if (sys_.is_live() && verbs_.empty() && !cuda_.gpus.empty() &&
               gpus_without_dmabuf_ == 0) {
        add("system", "system.peermem", "", Status::Info,
            "nvidia-peermem not loaded; the GPUs export dma-buf, the RDMA side of that path is "
            "probed "
            "once an RDMA device exists");
    } else if (dmabuf_known) {
        add("system", "system.peermem", "", Status::Fail,
            "nvidia-peermem not loaded and no dma-buf path (GPU or RDMA provider lacks it): "
            "GPU memory cannot be registered for RDMA",
            fix);
    } else {
        add("system", "system.peermem", "", Status::Warn,
            "nvidia-peermem not loaded; GPU memory registration then relies on dma-buf, which was "
            "not "
            "confirmed here",
            fix);
    }
}

void Doctor::memlock()
{
    Json j      = Json::object();
    auto limits = sys_.read_text("/proc/self/limits");
    std::string soft;
    if (limits) {
        std::istringstream in(*limits);
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("Max locked memory", 0) == 0) {
                std::istringstream fields(line.substr(17));
                fields >> soft;
            }
        }
    }
    if (soft.empty()) {
        j["soft_limit"]                   = Json();
        report_.data["system"]["memlock"] = std::move(j);
        add("system", "system.memlock", "", Status::Unknown,
            "could not read " + sys_.path("/proc/self/limits"));
        return;
    }
    bool unlimited  = soft == "unlimited";
    j["soft_limit"] = unlimited ? Json("unlimited") : Json(std::strtoll(soft.c_str(), nullptr, 10));
    report_.data["system"]["memlock"] = std::move(j);
    if (unlimited) {
        add("system", "system.memlock", "", Status::Ok,
            "locked-memory limit (RLIMIT_MEMLOCK) unlimited");
        return;
    }
    std::string limit = human_bytes(std::strtoull(soft.c_str(), nullptr, 10));
    bool root         = sys_.is_live() && ::geteuid() == 0;
    add("system", "system.memlock", "", Status::Warn,
        "locked-memory limit " + limit + ": registering larger host buffers fails with ENOMEM" +
            (root ? " (this run is root, whose CAP_IPC_LOCK ignores it; other users do not)" : ""),
        "`ulimit -l unlimited`; persistently `* - memlock unlimited` in "
        "/etc/security/limits.d/rdma.conf, "
        "LimitMEMLOCK=infinity for systemd services, `--ulimit memlock=-1` for containers");
}

void Doctor::ucx()
{
    report_.section("ucx", "UCX");
    Json j = Json::object();
    if (!sys_.is_live()) {
        add("ucx", "ucx.version", "", Status::Unknown, std::string("UCX ") + kNotProbed);
        add("ucx", "ucx.plugin", "", Status::Unknown, std::string("plugin ") + kNotProbed);
        report_.data["ucx"] = std::move(j);
        return;
    }
    UcxProbe probe = probe_ucx(options_.plugin, options_.plugin_defaults);
    j["version"]   = probe.version;
    Json comps     = Json::array();
    for (const auto &c : probe.components) {
        comps.push(c);
    }
    j["components"]  = std::move(comps);
    j["plugin_path"] = probe.plugin_path.empty() ? Json() : Json(probe.plugin_path);
    static const char *const plugin_state[] = {"preloaded", "loaded", "not-found", "load-failed",
                                               "not-registered"};
    j["plugin"]                             = plugin_state[static_cast<int>(probe.plugin)];
    j["plugin_detail"]                      = probe.plugin_detail;
    report_.data["ucx"]                     = std::move(j);
    std::string comp_list;
    for (const auto &c : probe.components) {
        comp_list += (comp_list.empty() ? "" : " ") + c;
    }
    add("ucx", "ucx.version", "", Status::Ok,
        "UCX " + probe.version + " (UCT components: " + comp_list + ")");
    switch (probe.plugin) {
    case UcxProbe::Plugin::Preloaded:
    case UcxProbe::Plugin::Loaded:
        add("ucx", "ucx.plugin", "", Status::Ok, probe.plugin_detail);
        break;
    case UcxProbe::Plugin::NotFound:
        add("ucx", "ucx.plugin", "", Status::Fail, probe.plugin_detail,
            "build ucx-gdr (`./configure && make`) or pass --plugin /path/to/libuct_gdr.so");
        break;
    case UcxProbe::Plugin::LoadFailed:
        add("ucx", "ucx.plugin", "", Status::Fail, probe.plugin_detail,
            "check the path and that the library's dependencies resolve (`ldd " +
                probe.plugin_path + "`)");
        break;
    case UcxProbe::Plugin::NotRegistered:
        add("ucx", "ucx.plugin", "", Status::Fail, probe.plugin_detail,
            "rebuild ucx-gdr against this UCX (" + probe.version +
                "): the plugin is built for one exact UCX version");
    }
}

}  // namespace

Report diagnose(const Options &options)
{
    return Doctor(options).run();
}

}  // namespace gdr::doctor
