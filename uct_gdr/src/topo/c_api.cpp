// The C interface (gdr_topo.h) over the C++ implementation.  Every entry point that can throw runs
// in gdr::guard (gdr_status.hpp): no exception leaves here.
#include "gdr_topo.hpp"
#include "gdr_status.hpp"

#include <cstring>

using namespace gdr::topo;

namespace {

SysRoot make_root(const char *root)
{
    return SysRoot(root ? root : "/");
}

gdr_pci_addr_t to_c(const PciAddress &addr)
{
    return gdr_pci_addr_t{addr.domain, addr.bus, addr.device, addr.function};
}

ucs_status_t fill_selection(const std::vector<GidEntry> &gids, bool is_ethernet, int override_index,
                            gdr_gid_selection_t *out, gdr_reason_t *reason)
{
    GidChoice choice = select_gid(gids, is_ethernet, override_index);
    std::memset(out, 0, sizeof(*out));
    out->index = choice.index;
    out->type  = GDR_GID_TYPE_UNKNOWN;
    gdr::set_reason(reason, choice.reason.c_str());
    for (const auto &gid : gids) {
        if (static_cast<int>(gid.index) == choice.index) {
            out->type = static_cast<gdr_gid_type_t>(gid.type);
            std::memcpy(out->raw, gid.raw.data(), sizeof(out->raw));
        }
    }
    if (choice.index >= 0) {
        return UCS_OK;
    }
    return override_index >= 0 ? UCS_ERR_INVALID_PARAM : UCS_ERR_NO_ELEM;
}

}  // namespace

extern "C" {

const char *gdr_topo_link_name(gdr_topo_link_t link) GDR_NOEXCEPT
{
    static const char *const names[] = {"X", "PIX", "PXB", "PHB", "NODE", "SYS", "?"};
    return (link >= GDR_TOPO_SELF && link <= GDR_TOPO_UNKNOWN) ? names[link] : "?";
}

ucs_status_t gdr_topo_parse_pci_address(const char *bdf, gdr_pci_addr_t *pci, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        auto addr = bdf != nullptr ? PciAddress::parse(bdf) : std::nullopt;
        if (!addr || pci == nullptr) {
            return gdr_reason_set(reason, UCS_ERR_INVALID_PARAM, "not a PCI address: \"%s\"",
                                  bdf != nullptr ? bdf : "(null)");
        }
        *pci = to_c(*addr);
        return UCS_OK;
    });
}

ucs_status_t gdr_topo_rdma_device_pci(const char *root, const char *rdma_dev, gdr_pci_addr_t *pci,
                                      int *numa_node, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        if (rdma_dev == nullptr || pci == nullptr) {
            return gdr_reason_set(reason, UCS_ERR_INVALID_PARAM,
                                  "gdr_topo_rdma_device_pci: NULL device or result");
        }
        auto dev = read_rdma_device(make_root(root), rdma_dev);
        if (!dev) {
            return gdr_reason_set(reason, UCS_ERR_NO_DEVICE, "no RDMA device %s", rdma_dev);
        }
        auto addr = dev->pci ? PciAddress::parse(dev->pci->bdf) : std::nullopt;
        if (!addr) {
            return gdr_reason_set(reason, UCS_ERR_NO_ELEM, "%s has no PCI function behind it",
                                  rdma_dev);
        }
        *pci = to_c(*addr);
        if (numa_node) {
            *numa_node = dev->pci->numa_node;
        }
        return UCS_OK;
    });
}

ucs_status_t gdr_topo_classify(const char *root, const char *bdf_a, const char *bdf_b,
                               gdr_topo_link_t *link, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        if (bdf_a == nullptr || bdf_b == nullptr || link == nullptr) {
            return gdr_reason_set(reason, UCS_ERR_INVALID_PARAM,
                                  "gdr_topo_classify: NULL device or result");
        }
        SysRoot sys = make_root(root);
        std::string error;
        auto a = read_pci_device(sys, bdf_a, &error);
        auto b = a ? read_pci_device(sys, bdf_b, &error) : std::nullopt;
        if (!a || !b) {
            return gdr_reason_set(reason, UCS_ERR_NO_DEVICE, "%s", error.c_str());
        }
        *link = static_cast<gdr_topo_link_t>(classify(sys, *a, *b).link);
        return UCS_OK;
    });
}

ucs_status_t gdr_select_gid_from_table(const gdr_gid_entry_t *entries, size_t count,
                                       int is_ethernet, int override_index,
                                       gdr_gid_selection_t *out, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        if (out == nullptr || (entries == nullptr && count > 0)) {
            return gdr_reason_set(reason, UCS_ERR_INVALID_PARAM,
                                  "gdr_select_gid_from_table: NULL table or result");
        }
        std::vector<GidEntry> gids;
        for (size_t i = 0; i < count; ++i) {
            GidEntry gid;
            gid.index = entries[i].index;
            std::memcpy(gid.raw.data(), entries[i].raw, sizeof(entries[i].raw));
            gid.type   = static_cast<GidType>(entries[i].type);
            bool empty = true;
            for (uint8_t byte : gid.raw) {
                empty = empty && byte == 0;
            }
            if (!empty) {
                gids.push_back(gid);
            }
        }
        return fill_selection(gids, is_ethernet != 0, override_index, out, reason);
    });
}

ucs_status_t gdr_select_gid(const char *root, const char *rdma_dev, unsigned port,
                            int override_index, gdr_gid_selection_t *out, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        if (rdma_dev == nullptr || out == nullptr) {
            return gdr_reason_set(reason, UCS_ERR_INVALID_PARAM,
                                  "gdr_select_gid: NULL device or result");
        }
        SysRoot sys = make_root(root);
        if (!read_rdma_device(sys, rdma_dev)) {
            std::memset(out, 0, sizeof(*out));
            out->index = -1;
            return gdr_reason_set(reason, UCS_ERR_NO_DEVICE, "no RDMA device %s", rdma_dev);
        }
        RdmaPort p = read_port(sys, rdma_dev, port);
        return fill_selection(p.gids, p.is_ethernet(), override_index, out, reason);
    });
}

}  // extern "C"
