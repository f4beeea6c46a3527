// RDMA devices, ports and GID tables from /sys/class/infiniband, the GID rule of gdr_rc,
// and whole-box discovery.
#include "gdr_topo.hpp"

#include <arpa/inet.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace gdr::topo {
namespace {

std::string port_dir(std::string_view dev, unsigned port)
{
    return "/sys/class/infiniband/" + std::string(dev) + "/ports/" + std::to_string(port);
}

/// "4: ACTIVE" -> {4, "ACTIVE"}
std::pair<int, std::string> split_state(const std::optional<std::string> &text)
{
    if (!text) {
        return {0, ""};
    }
    size_t colon = text->find(':');
    if (colon == std::string::npos) {
        return {0, *text};
    }
    std::string name = text->substr(colon + 1);
    name.erase(0, name.find_first_not_of(' '));
    return {std::atoi(text->c_str()), name};
}

/// "fe80:0000:0000:0000:5054:00ff:fe12:3456" -> 16 bytes
std::optional<std::array<uint8_t, 16>> parse_sysfs_gid(const std::string &text)
{
    unsigned group[8];
    char tail;
    if (std::sscanf(text.c_str(), "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x%c", &group[0], &group[1],
                    &group[2], &group[3], &group[4], &group[5], &group[6], &group[7], &tail) != 8) {
        return std::nullopt;
    }
    std::array<uint8_t, 16> raw{};
    for (int i = 0; i < 8; ++i) {
        raw[2 * i]     = static_cast<uint8_t>(group[i] >> 8);
        raw[2 * i + 1] = static_cast<uint8_t>(group[i] & 0xff);
    }
    return raw;
}

GidType parse_gid_type(const std::optional<std::string> &text)
{
    if (!text) {
        return GidType::Unknown;
    }
    if (*text == "RoCE v2") {
        return GidType::RoCEv2;
    }
    if (*text == "IB/RoCE v1" || *text == "RoCE v1") {
        return GidType::RoCEv1;
    }
    return GidType::Unknown;
}

/// The PCI function a sysfs link leads to: the deepest PCI address on its resolved path
/// (a netdev of a virtio NIC resolves to ".../0000:00:03.0/virtio0").
std::optional<PciDevice> pci_device_behind(const SysRoot &sys, const std::string &link)
{
    auto real = sys.resolve(link);
    if (!real) {
        return std::nullopt;
    }
    std::string path = *real;
    while (!path.empty()) {
        size_t slash     = path.rfind('/');
        std::string leaf = path.substr(slash + 1);
        if (PciAddress::parse(leaf)) {
            return read_pci_device(sys, leaf);
        }
        if (slash == std::string::npos || slash == 0) {
            break;
        }
        path.erase(slash);
    }
    return std::nullopt;
}

/// Preference class of a GID under gdr_rc's rule (lower is better) and its description.
std::pair<int, const char *> gid_class(const GidEntry &gid)
{
    if (gid.type == GidType::RoCEv2) {
        if (gid.is_ipv4_mapped()) {
            return {0, "RoCE v2, IPv4-mapped"};
        }
        if (!gid.is_link_local()) {
            return {1, "RoCE v2, IPv6 global"};
        }
        return {2, "RoCE v2, IPv6 link-local"};
    }
    if (gid.type == GidType::RoCEv1) {
        return {3, "RoCE v1"};
    }
    return {4, "of unknown type"};
}

}  // namespace

const char *gid_type_name(GidType type)
{
    switch (type) {
    case GidType::IB:
        return "IB";
    case GidType::RoCEv1:
        return "RoCE v1";
    case GidType::RoCEv2:
        return "RoCE v2";
    default:
        return "unknown";
    }
}

bool GidEntry::is_ipv4_mapped() const
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::equal(prefix, prefix + 12, raw.begin());
}

bool GidEntry::is_link_local() const
{
    return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

std::string GidEntry::address() const
{
    char buf[INET6_ADDRSTRLEN];
    return ::inet_ntop(AF_INET6, raw.data(), buf, sizeof(buf)) ? buf : "?";
}

GidChoice select_gid(const std::vector<GidEntry> &gids, bool is_ethernet, int override_index)
{
    GidChoice choice;
    if (override_index >= 0) {
        auto it = std::find_if(gids.begin(), gids.end(), [&](const GidEntry &g) {
            return g.index == static_cast<unsigned>(override_index);
        });
        if (it == gids.end()) {
            choice.reason = "requested GID index " + std::to_string(override_index) +
                            " is empty or out of range";
            return choice;
        }
        choice.index  = override_index;
        choice.reason = "GID index " + std::to_string(override_index) + " requested explicitly (" +
                        (is_ethernet ? gid_class(*it).second : "InfiniBand") + ", " +
                        it->address() + ")";
        return choice;
    }
    if (gids.empty()) {
        choice.reason = is_ethernet ? "the GID table is empty: the port's netdev has no IP "
                                      "address (RoCE GIDs are derived from them)"
                                    : "the GID table is empty";
        return choice;
    }
    if (!is_ethernet) {
        auto it = std::find_if(gids.begin(), gids.end(),
                               [](const GidEntry &g) { return g.index == 0; });
        if (it == gids.end()) {
            choice.reason = "InfiniBand port without GID 0";
            return choice;
        }
        choice.index  = 0;
        choice.reason = "InfiniBand port: GID index 0 (subnet prefix + port GUID)";
        return choice;
    }
    const GidEntry *best = nullptr;
    for (const auto &gid : gids) {
        if (best == nullptr || gid_class(gid).first < gid_class(*best).first ||
            (gid_class(gid).first == gid_class(*best).first && gid.index < best->index)) {
            best = &gid;
        }
    }
    choice.index                   = static_cast<int>(best->index);
    static const char *const why[] = {
        "first choice: routable over IPv4 fabrics, what RDMA-CM and most RoCE setups use",
        "no RoCE v2 IPv4 GID; an IPv6 global address is routable",
        "no routable RoCE v2 GID; link-local only reaches the same L2 segment",
        "no RoCE v2 GID at all: RoCE v1 is not routable and gets no ECN/DCQCN",
        "no GID of a known type"};
    int cls       = gid_class(*best).first;
    choice.reason = std::string(gid_class(*best).second) + " " + best->address() +
                    (best->netdev.empty() ? "" : " on " + best->netdev) + ": " + why[cls];
    return choice;
}

int RdmaPort::derived_active_mtu() const
{
    if (!is_ethernet() || netdev_mtu <= 0) {
        return 0;
    }
    // iboe_get_mtu(): GRH + UDP + BTH + XRC + AtomicETH + ICRC headers = 96 bytes
    int payload = netdev_mtu - (40 + 8 + 12 + 4 + 28 + 4);
    for (int mtu : {4096, 2048, 1024, 512, 256}) {
        if (payload >= mtu) {
            return mtu;
        }
    }
    return 0;
}

std::vector<unsigned> list_ports(const SysRoot &sys, std::string_view rdma_dev)
{
    std::vector<unsigned> ports;
    const std::string dir = "/sys/class/infiniband/" + std::string(rdma_dev) + "/ports";
    for (const auto &name : sys.list_dir(dir)) {
        char *end       = nullptr;
        unsigned long n = std::strtoul(name.c_str(), &end, 10);
        if (end != name.c_str() && *end == '\0' && n > 0 && n < 256) {
            ports.push_back(static_cast<unsigned>(n));
        }
    }
    std::sort(ports.begin(), ports.end());
    return ports;
}

RdmaPort read_port(const SysRoot &sys, std::string_view rdma_dev, unsigned port)
{
    RdmaPort p;
    p.device                        = std::string(rdma_dev);
    p.port                          = port;
    const std::string dir           = port_dir(rdma_dev, port);
    std::tie(p.state_code, p.state) = split_state(sys.read_text(dir + "/state"));
    p.phys_state                    = split_state(sys.read_text(dir + "/phys_state")).second;
    p.rate                          = sys.read_text(dir + "/rate").value_or("");
    p.link_layer                    = sys.read_text(dir + "/link_layer").value_or("");
    std::vector<std::pair<unsigned, std::string>> slots;
    for (const auto &name : sys.list_dir(dir + "/gids")) {
        char *end       = nullptr;
        unsigned long n = std::strtoul(name.c_str(), &end, 10);
        if (end != name.c_str() && *end == '\0') {
            slots.emplace_back(static_cast<unsigned>(n), name);
        }
    }
    std::sort(slots.begin(), slots.end());
    for (const auto &[index, name] : slots) {
        auto text = sys.read_text(dir + "/gids/" + name);
        auto raw  = text ? parse_sysfs_gid(*text) : std::nullopt;
        if (!raw || std::all_of(raw->begin(), raw->end(), [](uint8_t b) { return b == 0; })) {
            continue;  // empty slot
        }
        GidEntry gid;
        gid.index = index;
        gid.raw   = *raw;
        gid.type = p.is_ethernet() ? parse_gid_type(sys.read_text(dir + "/gid_attrs/types/" + name))
                                   : GidType::IB;
        gid.netdev = sys.read_text(dir + "/gid_attrs/ndevs/" + name).value_or("");
        if (p.netdev.empty()) {
            p.netdev = gid.netdev;
        }
        p.gids.push_back(std::move(gid));
    }
    if (!p.netdev.empty()) {
        auto mtu     = sys.read_int("/sys/class/net/" + p.netdev + "/mtu");
        p.netdev_mtu = static_cast<int>(mtu.value_or(0));
    }
    return p;
}

std::optional<RdmaDevice> read_rdma_device(const SysRoot &sys, std::string_view name)
{
    const std::string dir = "/sys/class/infiniband/" + std::string(name);
    if (name.empty() || name.find('/') != std::string_view::npos || !sys.exists(dir)) {
        return std::nullopt;
    }
    RdmaDevice dev;
    dev.name          = std::string(name);
    dev.parent_netdev = sys.read_text(dir + "/parent").value_or("");
    dev.pci           = pci_device_behind(sys, dir + "/device");
    if (!dev.pci && !dev.parent_netdev.empty()) {
        dev.pci = pci_device_behind(sys, "/sys/class/net/" + dev.parent_netdev + "/device");
    }
    return dev;
}

Topology Topology::discover(const SysRoot &sys)
{
    Topology topo;
    for (const auto &bdf : sys.list_dir("/sys/bus/pci/devices")) {
        auto dev = read_pci_device(sys, bdf);
        if (dev && dev->is_nvidia_gpu()) {
            topo.gpus.push_back(std::move(*dev));
        }
    }
    for (const auto &name : sys.list_dir("/sys/class/infiniband")) {
        if (auto dev = read_rdma_device(sys, name)) {
            topo.rdma_devices.push_back(std::move(*dev));
        }
    }
    for (const auto &node : sys.list_dir("/sys/devices/system/node")) {
        int id = -1;
        if (std::sscanf(node.c_str(), "node%d", &id) != 1) {
            continue;
        }
        auto cpulist = sys.read_text("/sys/devices/system/node/" + node + "/cpulist");
        if (!cpulist || cpulist->empty()) {
            continue;  // memory-only node
        }
        int first_cpu = std::atoi(cpulist->c_str());
        auto package  = sys.read_int("/sys/devices/system/cpu/cpu" + std::to_string(first_cpu) +
                                     "/topology/physical_package_id");
        if (package) {
            topo.numa_socket[id] = static_cast<int>(*package);
        }
    }
    return topo;
}

std::optional<NearestRdma> nearest_rdma_device(const SysRoot &sys, const Topology &topo,
                                               const PciDevice &gpu)
{
    std::optional<NearestRdma> best;
    for (const auto &dev : topo.rdma_devices) {
        if (!dev.pci) {
            continue;
        }
        PciPath path = classify(sys, gpu, *dev.pci);
        if (!best || path.link < best->path.link) {
            best = NearestRdma{&dev, std::move(path)};
        }
    }
    return best;
}

}  // namespace gdr::topo
