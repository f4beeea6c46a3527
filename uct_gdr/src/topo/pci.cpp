// PCI devices, GPU <-> HCA path classification (nvidia-smi `topo -m` classes) and ACS.
#include "gdr_topo.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace gdr::topo {
namespace {

constexpr size_t kConfigHeaderBytes    = 64;  // what an unprivileged read of config returns
constexpr size_t kConfigBytes          = 256;  // conventional config space
constexpr size_t kExtConfigBytes       = 4096;  // PCIe extended config space
constexpr unsigned kCapPciExpress      = 0x10;
constexpr unsigned kExtCapAcs          = 0x000D;
constexpr uint16_t kAcsRequestRedirect = 1u << 2, kAcsCompletionRedirect = 1u << 3,
                   kAcsEgressControl = 1u << 5;

enum PciePortType : int {
    kRootPort       = 0x4,
    kUpstreamPort   = 0x5,
    kDownstreamPort = 0x6,
};

uint16_t le16(const std::vector<uint8_t> &b, size_t off)
{
    return static_cast<uint16_t>(b[off] | (b[off + 1] << 8));
}

uint32_t le32(const std::vector<uint8_t> &b, size_t off)
{
    return static_cast<uint32_t>(le16(b, off)) | (static_cast<uint32_t>(le16(b, off + 2)) << 16);
}

std::string config_path(std::string_view bdf)
{
    return "/sys/bus/pci/devices/" + std::string(bdf) + "/config";
}

/// PCIe device/port type from the PCI Express capability, when the config space is readable
/// that far (it usually sits above the 64 bytes an unprivileged reader gets).
std::optional<int> pcie_port_type(const SysRoot &sys, std::string_view bdf)
{
    auto cfg = sys.read_binary(config_path(bdf), kConfigBytes);
    if (!cfg || cfg->size() < kConfigHeaderBytes || !(le16(*cfg, 0x06) & (1u << 4))) {
        return std::nullopt;  // no capability list
    }
    size_t offset = (*cfg)[0x34] & ~3u;
    for (int hops = 0; offset >= 0x40 && offset + 4 <= cfg->size() && hops < 48; ++hops) {
        if ((*cfg)[offset] == kCapPciExpress) {
            return ((*cfg)[offset + 2] >> 4) & 0xf;
        }
        offset = (*cfg)[offset + 1] & ~3u;
    }
    return std::nullopt;
}

/// The PCIe switch (or root port) a bridge belongs to, named by its upstream-most bridge.
std::string switch_of(const SysRoot &sys, const std::vector<std::string> &path, size_t index)
{
    // path[0] is the host bridge, path[1] the root port; below it bridges come as switch
    // upstream port / downstream port pairs.
    auto type       = pcie_port_type(sys, path[index]);
    bool downstream = type ? *type == kDownstreamPort : (index >= 3 && index % 2 == 1);
    return downstream && index >= 2 ? path[index - 1] : path[index];
}

bool is_bdf(std::string_view s)
{
    return PciAddress::parse(s).has_value();
}

}  // namespace

std::optional<PciAddress> PciAddress::parse(std::string_view bdf)
{
    unsigned domain, bus, device, function;
    char tail;
    std::string s(bdf);
    if (s.size() != 12 ||
        std::sscanf(s.c_str(), "%4x:%2x:%2x.%1x%c", &domain, &bus, &device, &function, &tail) !=
            4 ||
        device > 31 || function > 7) {
        return std::nullopt;
    }
    return PciAddress{static_cast<uint16_t>(domain), static_cast<uint8_t>(bus),
                      static_cast<uint8_t>(device), static_cast<uint8_t>(function)};
}

std::string PciAddress::str() const
{
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", domain, bus, device, function);
    return buf;
}

bool PciDevice::is_nvidia_gpu() const
{
    uint32_t cls = class_code >> 8;
    return vendor == 0x10de && (cls == 0x0302 || cls == 0x0300);
}

std::vector<std::string> PciDevice::bridges() const
{
    if (path.size() < 2) {
        return {};
    }
    return {path.begin() + 1, path.end() - 1};
}

std::optional<PciDevice> read_pci_device(const SysRoot &sys, std::string_view bdf,
                                         std::string *error)
{
    auto fail = [&](std::string why) -> std::optional<PciDevice> {
        if (error) {
            *error = std::move(why);
        }
        return std::nullopt;
    };
    if (!is_bdf(bdf)) {
        return fail("'" + std::string(bdf) + "' is not a PCI address (DDDD:BB:DD.F)");
    }
    const std::string link = "/sys/bus/pci/devices/" + std::string(bdf);
    auto real              = sys.resolve(link);
    if (!real) {
        return fail(sys.path(link) + ": no such PCI device");
    }
    // "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0", possibly with a non-PCI prefix
    // (e.g. Hyper-V's VMBus) before the host bridge: keep that prefix in the host bridge name.
    std::vector<std::string> parts;
    for (size_t pos = 0; pos < real->size();) {
        size_t next = real->find('/', pos);
        if (next == std::string::npos) {
            next = real->size();
        }
        if (next > pos) {
            parts.emplace_back(real->substr(pos, next - pos));
        }
        pos = next + 1;
    }
    size_t first_bdf = parts.size();
    while (first_bdf > 0 && is_bdf(parts[first_bdf - 1])) {
        --first_bdf;
    }
    if (first_bdf == parts.size() || first_bdf == 0 || parts.back() != bdf) {
        return fail(*real + ": not a PCI device path");
    }
    PciDevice dev;
    dev.bdf = std::string(bdf);
    std::string host_bridge;
    for (size_t i = 0; i < first_bdf; ++i) {
        host_bridge += "/" + parts[i];
    }
    // "/sys/devices/pci0000:00" -> "pci0000:00"; a longer prefix stays as it is.
    const std::string devices_prefix = "/sys/devices/";
    if (host_bridge.compare(0, devices_prefix.size(), devices_prefix) == 0 &&
        host_bridge.find('/', devices_prefix.size()) == std::string::npos) {
        host_bridge.erase(0, devices_prefix.size());
    }
    dev.path.push_back(host_bridge);
    dev.path.insert(dev.path.end(), parts.begin() + static_cast<long>(first_bdf), parts.end());
    dev.vendor     = static_cast<uint16_t>(sys.read_int(link + "/vendor").value_or(0));
    dev.device     = static_cast<uint16_t>(sys.read_int(link + "/device").value_or(0));
    dev.class_code = static_cast<uint32_t>(sys.read_int(link + "/class").value_or(0));
    dev.numa_node  = static_cast<int>(sys.read_int(link + "/numa_node").value_or(-1));
    return dev;
}

const char *link_name(Link link)
{
    return gdr_topo_link_name(static_cast<gdr_topo_link_t>(link));
}

PciPath classify(const SysRoot &sys, const PciDevice &a, const PciDevice &b)
{
    PciPath result;
    if (a.bdf == b.bdf) {
        result.link        = Link::Self;
        result.explanation = "the same device";
        return result;
    }
    if (a.path.empty() || b.path.empty()) {
        result.explanation = "a device has no PCI path";
        return result;
    }
    if (a.path.front() != b.path.front()) {
        for (const auto *dev : {&a, &b}) {
            auto br = dev->bridges();
            result.bridges.insert(result.bridges.end(), br.begin(), br.end());
        }
        bool numa_known = a.numa_node >= 0 && b.numa_node >= 0;
        if (numa_known && a.numa_node != b.numa_node) {
            result.link        = Link::SYS;
            result.explanation = "different NUMA nodes (" + std::to_string(a.numa_node) + " and " +
                                 std::to_string(b.numa_node) + "): across the SMP interconnect";
        } else {
            result.link        = Link::NODE;
            result.explanation = "different host bridges (" + a.path.front() + ", " +
                                 b.path.front() + ") of one NUMA node" +
                                 (numa_known ? "" : " (NUMA node not reported: assumed one)");
        }
        return result;
    }
    size_t common = 0;
    while (common < a.path.size() && common < b.path.size() && a.path[common] == b.path[common]) {
        ++common;
    }
    result.common_ancestor = a.path[common - 1];
    // Bridges crossed: from each device up to the common ancestor, which is included.
    std::set<std::string> switch_names;
    auto add_side = [&](const PciDevice &dev) {
        for (size_t i = std::max<size_t>(common - 1, 1); i + 1 < dev.path.size(); ++i) {
            if (std::find(result.bridges.begin(), result.bridges.end(), dev.path[i]) ==
                result.bridges.end()) {
                result.bridges.push_back(dev.path[i]);
            }
            switch_names.insert(switch_of(sys, dev.path, i));
        }
    };
    add_side(a);
    add_side(b);
    if (common == 1) {
        result.link        = Link::PHB;
        result.explanation = "through the host bridge " + result.common_ancestor;
        result.switches    = 0;
        return result;
    }
    result.switches = static_cast<int>(switch_names.size());
    if (switch_names.size() <= 1) {
        result.link        = Link::PIX;
        result.explanation = "one PCIe switch (common bridge " + result.common_ancestor + ")";
    } else {
        result.link        = Link::PXB;
        result.explanation = std::to_string(switch_names.size()) +
                             " PCIe switches, not through the host bridge (common bridge " +
                             result.common_ancestor + ")";
    }
    return result;
}

const char *acs_state_name(BridgeAcs::State state)
{
    switch (state) {
    case BridgeAcs::State::Redirecting:
        return "redirecting";
    case BridgeAcs::State::Harmless:
        return "enabled-no-redirect";
    case BridgeAcs::State::Disabled:
        return "disabled";
    case BridgeAcs::State::NotCapable:
        return "not-capable";
    case BridgeAcs::State::Unreadable:
        return "unreadable";
    }
    return "unreadable";
}

std::string decode_acs_control(uint16_t control)
{
    static const char *const names[] = {"SrcValid",    "TransBlk",   "ReqRedir",   "CmpltRedir",
                                        "UpstreamFwd", "EgressCtrl", "DirectTrans"};
    std::string text                 = "ACSCtl:";
    for (unsigned bit = 0; bit < 7; ++bit) {
        text += std::string(" ") + names[bit] + ((control >> bit) & 1 ? "+" : "-");
    }
    return text;
}

BridgeAcs read_acs(const SysRoot &sys, std::string_view bdf)
{
    BridgeAcs acs;
    acs.bdf  = std::string(bdf);
    auto cfg = sys.read_binary(config_path(bdf), kExtConfigBytes);
    if (!cfg) {
        acs.detail = "could not open " + sys.path(config_path(bdf));
        return acs;
    }
    if (cfg->size() <= kConfigHeaderBytes) {
        acs.detail = "could not read: only " + std::to_string(cfg->size()) +
                     " bytes of config space are readable (needs root)";
        return acs;
    }
    if (cfg->size() < 0x100 + 8) {
        acs.state  = BridgeAcs::State::NotCapable;
        acs.detail = "no PCIe extended config space";
        return acs;
    }
    size_t offset = 0x100;
    for (int hops = 0; hops < 1024 && offset >= 0x100 && offset + 8 <= cfg->size(); ++hops) {
        uint32_t header = le32(*cfg, offset);
        if (header == 0 || header == 0xffffffffu) {
            break;
        }
        if ((header & 0xffff) == kExtCapAcs) {
            acs.capability = le16(*cfg, offset + 4);
            acs.control    = le16(*cfg, offset + 6);
            acs.detail     = decode_acs_control(acs.control);
            if (acs.control & (kAcsRequestRedirect | kAcsCompletionRedirect | kAcsEgressControl)) {
                acs.state = BridgeAcs::State::Redirecting;
            } else if (acs.control != 0) {
                acs.state = BridgeAcs::State::Harmless;
            } else {
                acs.state = BridgeAcs::State::Disabled;
            }
            return acs;
        }
        size_t next = header >> 20;
        if (next <= offset) {
            break;  // the list only goes up; anything else is a loop
        }
        offset = next & ~size_t{3};
    }
    acs.state  = BridgeAcs::State::NotCapable;
    acs.detail = "no ACS capability";
    return acs;
}

}  // namespace gdr::topo
