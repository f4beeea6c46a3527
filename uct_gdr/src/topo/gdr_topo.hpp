// gdr_topo.hpp - C++ API of the topology library: PCI topology (GPU <-> HCA distance), ACS
// state of bridges, RDMA ports and GID tables, all read from sysfs below a root prefix.
//
// Lifetime/threading: every type is a plain value; functions keep no global state and may be
// called from any thread.  Nothing here writes to the system.
#pragma once

#include "gdr_topo.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gdr::topo {

/// Read-only view of a sysfs/procfs tree below a root prefix ("/" on a live system).
class SysRoot {
public:
    explicit SysRoot(std::string root = "/");

    const std::string &root() const { return root_; }
    bool is_live() const { return root_ == "/"; }
    /// The host path of an absolute path of the tree ("/sys/..." -> "<root>/sys/...").
    std::string path(std::string_view abs) const;

    bool exists(std::string_view abs) const;
    /// Whole file with trailing whitespace removed; nullopt when it cannot be read.
    std::optional<std::string> read_text(std::string_view abs) const;
    /// First token of the file as an integer (base prefix "0x" honoured).
    std::optional<long long> read_int(std::string_view abs) const;
    /// Up to `max_bytes` bytes of a binary file (a short read is returned as is).
    std::optional<std::vector<uint8_t>> read_binary(std::string_view abs, size_t max_bytes) const;
    /// Sorted entry names of a directory, without "." and ".."; empty when missing.
    std::vector<std::string> list_dir(std::string_view abs) const;
    /// realpath() inside the tree, returned as an absolute path of the tree ("/sys/devices/...").
    std::optional<std::string> resolve(std::string_view abs) const;

private:
    std::string root_;  // as given, without trailing '/' (except "/")
    std::string real_root_;  // realpath(root_), to strip from resolved paths
};

// ---- PCI -------------------------------------------------------------------------------

struct PciAddress {
    uint16_t domain = 0;
    uint8_t bus = 0, device = 0, function = 0;

    static std::optional<PciAddress> parse(std::string_view bdf);  ///< "DDDD:BB:DD.F"
    std::string str() const;
};

struct PciDevice {
    std::string bdf;  ///< "0000:17:00.0"
    /// The device's sysfs path from its host bridge down: {"pci0000:00", "0000:00:01.0",
    /// ..., bdf}.  Element 0 identifies the root complex (with any non-PCI prefix joined in).
    std::vector<std::string> path;
    uint16_t vendor = 0, device = 0;
    uint32_t class_code = 0;  ///< 24 bits: class, subclass, prog-if
    int numa_node       = -1;  ///< -1: unknown (also what a single-node box reports)

    bool is_nvidia_gpu() const;
    /// Bridges above the device (path without the host bridge and the device itself).
    std::vector<std::string> bridges() const;
};

/// Reads /sys/bus/pci/devices/<bdf>; nullopt (and *error) when it is missing or not PCI.
std::optional<PciDevice> read_pci_device(const SysRoot &sys, std::string_view bdf,
                                         std::string *error = nullptr);

enum class Link {
    Self    = GDR_TOPO_SELF,
    PIX     = GDR_TOPO_PIX,
    PXB     = GDR_TOPO_PXB,
    PHB     = GDR_TOPO_PHB,
    NODE    = GDR_TOPO_NODE,
    SYS     = GDR_TOPO_SYS,
    Unknown = GDR_TOPO_UNKNOWN
};
const char *link_name(Link link);

/// How two PCI functions reach each other.
struct PciPath {
    Link link = Link::Unknown;
    /// The lowest common bridge, or the host bridge ("pci0000:00"), or "" when the
    /// devices are under different host bridges.
    std::string common_ancestor;
    /// Every bridge a peer-to-peer transfer crosses (both sides, common ancestor included).
    std::vector<std::string> bridges;
    int switches = 0;  ///< PCIe switches among those bridges
    std::string explanation;  ///< one sentence for humans
};

/// Classifies a <-> b.  PCIe switches are told apart by the PCIe port type in config space
/// when it is readable (root), otherwise by the usual layout (root port, then upstream and
/// downstream port pairs).  NUMA nodes decide NODE versus SYS.
PciPath classify(const SysRoot &sys, const PciDevice &a, const PciDevice &b);

// ---- ACS (PCIe Access Control Services) ------------------------------------------------

struct BridgeAcs {
    enum class State {
        Redirecting,
        Harmless,
        Disabled,
        NotCapable,
        Unreadable
    };
    std::string bdf;
    State state         = State::Unreadable;
    uint16_t capability = 0, control = 0;
    std::string detail;  ///< e.g. "ACSCtl: SrcValid+ TransBlk- ReqRedir+ ..."

    /// ReqRedir, CmpltRedir or EgressCtrl set: peer-to-peer TLPs are sent up to the root
    /// complex instead of across the switch.
    bool blocks_p2p() const { return state == State::Redirecting; }
};
const char *acs_state_name(BridgeAcs::State state);
/// lspci-style decoding of the ACS control register.
std::string decode_acs_control(uint16_t control);
/// Reads the ACS extended capability (ID 0x000D) from /sys/bus/pci/devices/<bdf>/config.
/// Without root only the first 64 bytes are readable: State::Unreadable, never a guess.
BridgeAcs read_acs(const SysRoot &sys, std::string_view bdf);

// ---- RDMA devices, ports, GIDs ---------------------------------------------------------

enum class GidType {
    IB      = GDR_GID_TYPE_IB,
    RoCEv1  = GDR_GID_TYPE_ROCE_V1,
    RoCEv2  = GDR_GID_TYPE_ROCE_V2,
    Unknown = GDR_GID_TYPE_UNKNOWN
};
const char *gid_type_name(GidType type);

struct GidEntry {
    unsigned index = 0;
    std::array<uint8_t, 16> raw{};
    GidType type = GidType::Unknown;
    std::string netdev;  ///< gid_attrs/ndevs/N (RoCE), "" for IB

    bool is_ipv4_mapped() const;  ///< ::ffff:a.b.c.d
    bool is_link_local() const;  ///< fe80::/10
    std::string address() const;  ///< compact text: "::ffff:192.0.2.1", "fe80::1"
};

struct GidChoice {
    int index = -1;  ///< -1: no usable GID
    std::string reason;
};

/// The GID rule of gdr_rc (see gdr_select_gid_from_table in gdr_topo.h); `gids` holds the
/// non-empty entries only.
GidChoice select_gid(const std::vector<GidEntry> &gids, bool is_ethernet, int override_index);

struct RdmaPort {
    std::string device;
    unsigned port  = 0;
    int state_code = 0;  ///< 4 = ACTIVE
    std::string state;  ///< "ACTIVE", "DOWN", ...
    std::string phys_state;  ///< "LinkUp", "Disabled", ...
    std::string rate;  ///< "200 Gb/sec (4X HDR)"
    std::string link_layer;  ///< "InfiniBand" or "Ethernet"
    std::string netdev;  ///< RoCE: the netdev of the port's GIDs
    int netdev_mtu = 0;  ///< RoCE: that netdev's MTU, 0 when unknown
    std::vector<GidEntry> gids;  ///< non-empty entries

    bool is_ethernet() const { return link_layer == "Ethernet"; }
    bool is_active() const { return state_code == 4; }
    /// RoCE active MTU as the kernel derives it from the netdev MTU (iboe_get_mtu), 0 if
    /// unknown.  InfiniBand ports publish no MTU in sysfs: ask ibv_query_port.
    int derived_active_mtu() const;
};

std::vector<unsigned> list_ports(const SysRoot &sys, std::string_view rdma_dev);
RdmaPort read_port(const SysRoot &sys, std::string_view rdma_dev, unsigned port);

struct RdmaDevice {
    std::string name;  ///< "mlx5_0"
    std::optional<PciDevice> pci;  ///< the PCI function (for rxe: that of its netdev), if any
    std::string parent_netdev;  ///< software devices (rxe, siw): /sys/class/infiniband/X/parent
};

/// /sys/class/infiniband/<name>; nullopt if it does not exist.
std::optional<RdmaDevice> read_rdma_device(const SysRoot &sys, std::string_view name);

// ---- GPU peer memory (nvidia_peermem / nv_peer_mem) -------------------------------------

/// A loaded peer-memory kernel module: what lets ibv_reg_mr() pin GPU memory.
struct PeerMemoryModule {
    std::string module;  ///< "nvidia_peermem" or "nv_peer_mem"
    std::string evidence;  ///< the file of the tree that shows it, e.g. "/sys/module/X/version"
};

/// Which peer-memory module is loaded: the one answer of the transport (its registration order)
/// and gdr-doctor.  The evidence is UCX's own (uct_ib_md's check): a module's `version` file,
/// which a loaded module has and a directory left behind (parameters of an unloaded or
/// built-in-but-disabled module) does not.  nullopt when none is loaded.
std::optional<PeerMemoryModule> find_peer_memory_module(const SysRoot &sys);

// ---- Whole box -------------------------------------------------------------------------

struct Topology {
    std::vector<PciDevice> gpus;  ///< NVIDIA 3D/VGA controllers, in PCI order
    std::vector<RdmaDevice> rdma_devices;
    std::map<int, int> numa_socket;  ///< NUMA node -> CPU package id (when readable)

    static Topology discover(const SysRoot &sys);
};

/// The RDMA device closest to `gpu` (ties: the first by name), among those with a PCI
/// function.  nullopt when there is none.
struct NearestRdma {
    const RdmaDevice *device = nullptr;
    PciPath path;
};
std::optional<NearestRdma> nearest_rdma_device(const SysRoot &sys, const Topology &topo,
                                               const PciDevice &gpu);

}  // namespace gdr::topo
