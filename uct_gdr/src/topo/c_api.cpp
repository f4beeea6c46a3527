// The C interface (gdr_topo.h) over the C++ implementation.  No exception leaves here.
#include "gdr_topo.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

using namespace gdr::topo;

namespace {

SysRoot make_root(const char *root)
{
    return SysRoot(root ? root : "/");
}

void set_reason(gdr_gid_selection_t *out, const std::string &reason)
{
    std::snprintf(out->reason, sizeof(out->reason), "%s", reason.c_str());
}

template <typename F> int guarded(F &&body)
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

int fill_selection(const std::vector<GidEntry> &gids, bool is_ethernet, int override_index,
                   gdr_gid_selection_t *out)
{
    GidChoice choice = select_gid(gids, is_ethernet, override_index);
    std::memset(out, 0, sizeof(*out));
    out->index = choice.index;
    out->type = GDR_GID_TYPE_UNKNOWN;
    set_reason(out, choice.reason);
    for (const auto &gid : gids) {
        if (static_cast<int>(gid.index) == choice.index) {
            out->type = static_cast<gdr_gid_type_t>(gid.type);
            std::memcpy(out->raw, gid.raw.data(), sizeof(out->raw));
        }
    }
    if (choice.index >= 0) {
        return 0;
    }
    return override_index >= 0 ? -EINVAL : -ENOENT;
}

} // namespace

extern "C" {

const char *gdr_topo_link_name(gdr_topo_link_t link)
{
    static const char *const names[] = {"X", "PIX", "PXB", "PHB", "NODE", "SYS", "?"};
    return (link >= GDR_TOPO_SELF && link <= GDR_TOPO_UNKNOWN) ? names[link] : "?";
}

int gdr_topo_parse_pci_address(const char *bdf, gdr_pci_addr_t *pci)
{
    if (bdf == nullptr || pci == nullptr) {
        return -EINVAL;
    }
    return guarded([&] {
        auto addr = PciAddress::parse(bdf);
        if (!addr) {
            return -EINVAL;
        }
        *pci = gdr_pci_addr_t{addr->domain, addr->bus, addr->device, addr->function};
        return 0;
    });
}

int gdr_topo_rdma_device_pci(const char *root, const char *rdma_dev, gdr_pci_addr_t *pci,
                             int *numa_node)
{
    if (rdma_dev == nullptr || pci == nullptr) {
        return -EINVAL;
    }
    return guarded([&] {
        auto dev = read_rdma_device(make_root(root), rdma_dev);
        if (!dev) {
            return -ENOENT;
        }
        if (!dev->pci) {
            return -ENODEV;
        }
        auto addr = PciAddress::parse(dev->pci->bdf);
        if (!addr) {
            return -ENODEV;
        }
        *pci = gdr_pci_addr_t{addr->domain, addr->bus, addr->device, addr->function};
        if (numa_node) {
            *numa_node = dev->pci->numa_node;
        }
        return 0;
    });
}

int gdr_topo_classify(const char *root, const char *bdf_a, const char *bdf_b,
                      gdr_topo_link_t *link)
{
    if (bdf_a == nullptr || bdf_b == nullptr || link == nullptr) {
        return -EINVAL;
    }
    return guarded([&] {
        SysRoot sys = make_root(root);
        auto a = read_pci_device(sys, bdf_a);
        auto b = read_pci_device(sys, bdf_b);
        if (!a || !b) {
            return -ENOENT;
        }
        *link = static_cast<gdr_topo_link_t>(classify(sys, *a, *b).link);
        return 0;
    });
}

int gdr_select_gid_from_table(const gdr_gid_entry_t *entries, size_t count, int is_ethernet,
                              int override_index, gdr_gid_selection_t *out)
{
    if (out == nullptr || (entries == nullptr && count > 0)) {
        return -EINVAL;
    }
    return guarded([&] {
        std::vector<GidEntry> gids;
        for (size_t i = 0; i < count; ++i) {
            GidEntry gid;
            gid.index = entries[i].index;
            std::memcpy(gid.raw.data(), entries[i].raw, sizeof(entries[i].raw));
            gid.type = static_cast<GidType>(entries[i].type);
            bool empty = true;
            for (uint8_t byte : gid.raw) {
                empty = empty && byte == 0;
            }
            if (!empty) {
                gids.push_back(gid);
            }
        }
        return fill_selection(gids, is_ethernet != 0, override_index, out);
    });
}

int gdr_select_gid(const char *root, const char *rdma_dev, unsigned port, int override_index,
                   gdr_gid_selection_t *out)
{
    if (rdma_dev == nullptr || out == nullptr) {
        return -EINVAL;
    }
    return guarded([&] {
        SysRoot sys = make_root(root);
        if (!read_rdma_device(sys, rdma_dev)) {
            std::memset(out, 0, sizeof(*out));
            out->index = -1;
            set_reason(out, std::string("no RDMA device ") + rdma_dev);
            return -ENOENT;
        }
        RdmaPort p = read_port(sys, rdma_dev, port);
        return fill_selection(p.gids, p.is_ethernet(), override_index, out);
    });
}

} // extern "C"
