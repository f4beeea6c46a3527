// gdr_verbs.cpp - device discovery, GID selection and the RC QP state machine.
//
// Plain libibverbs only (no provider direct-verbs), so it works on rxe, mlx5,
// irdma, bnxt_re alike.  Called at md/iface/ep creation time, never on the
// data path.  Every entry point that can throw runs in gdr::guard.
#include "gdr_verbs.h"
#include "gdr_status.hpp"
#include "gdr_topo.hpp"  // the GID rule and the PCI address parser, shared with gdr-doctor

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <unistd.h>

namespace {

// Bandwidth on the wire and latency of a port, as UCX's uct_ib_iface_query estimates them for
// rc_verbs (the same table in UCX 1.13 to 1.22): UCP picks its thresholds from these figures, so
// that gdr_rc and rc_verbs on one port get the same ones (docs/perf-compare.md).
// Bandwidth: width x signalling rate x line encoding, in bytes/s; latency: by active_speed, +200 ns
// on Ethernet (RoCE).  An unknown speed (rxe reports 1) counts as SDR, as in UCX.
void port_speed(const ibv_port_attr &pa, bool ethernet, double &bandwidth, double &latency)
{
    int width = 0;
    switch (pa.active_width) {
    case 1:
        width = 1;
        break;
    case 2:
        width = 4;
        break;
    case 4:
        width = 8;
        break;
    case 8:
        width = 12;
        break;
    case 16:
        width = 2;
        break;
    default:
        width = 1;
        break;
    }
    double signal_rate = 2.5e9;  // per lane
    double encoding    = 8.0 / 10.0;
    switch (pa.active_speed) {
    case 2:  // DDR
        latency     = 2500e-9;
        signal_rate = 5.0e9;
        break;
    case 4:  // QDR; on Ethernet 10/40 GbE
        latency     = 1300e-9;
        signal_rate = ethernet ? 10.3125e9 : 10.0e9;
        encoding    = ethernet ? 64.0 / 66.0 : 8.0 / 10.0;
        break;
    case 8:  // FDR10
        latency     = 700e-9;
        signal_rate = 10.3125e9;
        encoding    = 64.0 / 66.0;
        break;
    case 16:  // FDR
        latency     = 700e-9;
        signal_rate = 14.0625e9;
        encoding    = 64.0 / 66.0;
        break;
    case 32:  // EDR
        latency     = 600e-9;
        signal_rate = 25.78125e9;
        encoding    = 64.0 / 66.0;
        break;
    case 64:  // HDR
        latency     = 600e-9;
        signal_rate = 25.78125e9 * 2;
        encoding    = 64.0 / 66.0;
        break;
    case 128:  // NDR
        latency     = 600e-9;
        signal_rate = 100e9;
        encoding    = 64.0 / 66.0;
        break;
    default:  // SDR, or unknown (rxe)
        latency = 5000e-9;
        break;
    }
    if (ethernet) {
        latency += 200e-9;
    }
    bandwidth = width * signal_rate * encoding / 8.0;
}

bool gid_is_zero(const ibv_gid &g)
{
    static const ibv_gid zero{};
    return std::memcmp(&g, &zero, sizeof(g)) == 0;
}

std::string gid_to_string(const ibv_gid &g)
{
    char buf[INET6_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET6, g.raw, buf, sizeof(buf));
    return buf;
}

std::string read_sysfs_link_basename(const std::string &path)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
    if (n <= 0) {
        return {};
    }
    buf[n] = '\0';
    std::string s(buf);
    auto slash = s.rfind('/');
    return slash == std::string::npos ? s : s.substr(slash + 1);
}

// PCI address of an ibdev: /sys/class/infiniband/<dev>/device -> ../../0000:3b:00.0
// rxe/siw have no PCI parent: "".
std::string pci_bdf_of(const char *ibdev_name)
{
    std::string bdf = read_sysfs_link_basename(std::string("/sys/class/infiniband/") + ibdev_name +
                                               "/device");
    return gdr::topo::PciAddress::parse(bdf) ? bdf : std::string();
}

// Read a port's GID table through verbs (works in containers without sysfs).
std::vector<gdr_gid_entry_t> read_gid_table(ibv_context *ctx, uint8_t port, int table_len)
{
    std::vector<gdr_gid_entry_t> table;
    for (int i = 0; i < table_len; ++i) {
        ibv_gid_entry entry{};
        if (ibv_query_gid_ex(ctx, port, i, &entry, 0) != 0) {
            continue;  // empty entries return ENODATA
        }
        gdr_gid_entry_t e{};
        e.index = i;
        std::memcpy(e.raw, entry.gid.raw, sizeof(e.raw));
        e.type = entry.gid_type == IBV_GID_TYPE_ROCE_V2   ? GDR_GID_TYPE_ROCE_V2
                 : entry.gid_type == IBV_GID_TYPE_ROCE_V1 ? GDR_GID_TYPE_ROCE_V1
                                                          : GDR_GID_TYPE_IB;
        table.push_back(e);
    }
    return table;
}

void fill_port(gdr_device_t &dev, uint8_t port_num, const ibv_port_attr &pa)
{
    gdr_port_info_t &p = dev.ports[dev.num_ports++];
    std::memset(&p, 0, sizeof(p));
    p.port_num     = port_num;
    p.link_layer   = (pa.link_layer == IBV_LINK_LAYER_UNSPECIFIED)
                         ? uint8_t(IBV_LINK_LAYER_INFINIBAND)
                         : pa.link_layer;
    p.lid          = pa.lid;
    p.sm_sl        = pa.sm_sl;
    p.grh_required = (pa.flags & IBV_QPF_GRH_REQUIRED) ? 1 : 0;
    p.active_mtu   = pa.active_mtu;
    p.max_msg_sz   = pa.max_msg_sz;
    port_speed(pa, p.link_layer == IBV_LINK_LAYER_ETHERNET, p.bandwidth, p.latency);
    auto table = read_gid_table(dev.ctx, port_num, pa.gid_tbl_len);
    gdr_gid_selection_t sel{};
    gdr_reason_t why;
    ucs_status_t status = gdr_select_gid_from_table(table.data(), table.size(),
                                                    p.link_layer == IBV_LINK_LAYER_ETHERNET, -1,
                                                    &sel, &why);
    // no usable GID is a fact of the port (index -1, and why); any other failure (out of
    // memory) is the caller's: gdr_verbs_open_all's guard returns it
    if (status != UCS_OK && status != UCS_ERR_NO_ELEM) {
        throw gdr::error(status, why.text);
    }
    p.gid_index = sel.index;
    std::memcpy(p.gid.raw, sel.raw, sizeof(p.gid.raw));
    std::snprintf(p.gid_reason, sizeof(p.gid_reason), "%.*s", int(sizeof(p.gid_reason) - 1),
                  why.text);
}

// An opened device context until it is handed over (an exception closes it)
using context_ptr = std::unique_ptr<ibv_context, int (*)(ibv_context *)>;

// RESET -> INIT -> RTR -> RTS (gdr_verbs_qp_connect)
ucs_status_t connect_qp(ibv_qp *qp, const gdr_qp_local_t *local, const gdr_qp_remote_t *remote,
                        gdr_reason_t *reason)
{
    ibv_qp_attr attr{};
    attr.qp_state        = IBV_QPS_INIT;
    attr.pkey_index      = 0;
    attr.port_num        = local->port_num;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
        return gdr_reason_set(reason, UCS_ERR_IO_ERROR, "modify_qp(INIT): %s",
                              std::strerror(errno));
    }

    std::memset(&attr, 0, sizeof(attr));
    attr.qp_state           = IBV_QPS_RTR;
    attr.path_mtu           = std::min(local->mtu, remote->mtu);
    attr.dest_qp_num        = remote->qp_num;
    attr.rq_psn             = remote->psn;
    attr.max_dest_rd_atomic = local->max_rd_atomic;
    attr.min_rnr_timer      = local->min_rnr_timer;
    attr.ah_attr.dlid       = remote->lid;
    attr.ah_attr.sl         = local->sl;
    attr.ah_attr.port_num   = local->port_num;
    if (remote->is_global) {
        attr.ah_attr.is_global         = 1;
        attr.ah_attr.grh.dgid          = remote->gid;
        attr.ah_attr.grh.sgid_index    = static_cast<uint8_t>(local->gid_index);
        attr.ah_attr.grh.hop_limit     = local->hop_limit;
        attr.ah_attr.grh.traffic_class = local->traffic_class;
    }
    if (ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        int error = errno;
        return gdr_reason_set(reason, UCS_ERR_UNREACHABLE,
                              "modify_qp(RTR, dest_qpn=0x%x, mtu=%u, %s): %s", remote->qp_num,
                              gdr_verbs_mtu_bytes(attr.path_mtu),
                              remote->is_global ? gid_to_string(remote->gid).c_str() : "LID-routed",
                              std::strerror(error));
    }

    std::memset(&attr, 0, sizeof(attr));
    attr.qp_state      = IBV_QPS_RTS;
    attr.sq_psn        = local->psn;
    attr.timeout       = local->timeout;
    attr.retry_cnt     = local->retry_count;
    attr.rnr_retry     = local->rnr_retry;
    attr.max_rd_atomic = local->max_rd_atomic;
    if (ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                          IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        return gdr_reason_set(reason, UCS_ERR_IO_ERROR, "modify_qp(RTS): %s", std::strerror(errno));
    }
    return UCS_OK;
}

// Opens `device`'s context and reads its attributes into `attr`; on failure nothing is open, and
// `skipped` says why.
context_ptr open_context(ibv_device *device, ibv_device_attr &attr, std::string &skipped)
{
    const char *name = ibv_get_device_name(device);
    context_ptr ctx(ibv_open_device(device), ibv_close_device);
    if (ctx == nullptr) {
        skipped += std::string(name) + ": ibv_open_device: " + std::strerror(errno) + "; ";
    } else if (ibv_query_device(ctx.get(), &attr) != 0) {
        skipped += std::string(name) + ": ibv_query_device failed; ";
        ctx.reset();
    }
    return ctx;
}

// An ACTIVE InfiniBand or Ethernet port, what makes a device one of ours; `pa` gets its attributes.
bool port_is_usable(ibv_context *ctx, uint8_t port_num, ibv_port_attr &pa)
{
    pa = {};
    if (ibv_query_port(ctx, port_num, &pa) != 0 || pa.state != IBV_PORT_ACTIVE) {
        return false;
    }
    return pa.link_layer == IBV_LINK_LAYER_INFINIBAND || pa.link_layer == IBV_LINK_LAYER_ETHERNET ||
           pa.link_layer == IBV_LINK_LAYER_UNSPECIFIED;
}

// Opens `device` into `dev` when it has an ACTIVE InfiniBand or Ethernet port; otherwise leaves
// nothing open, and says why in `skipped` unless the device simply has no active port (not a
// resource, not an error).  Throws on out of memory (the caller's guard returns it).
bool open_device(ibv_device *device, gdr_device_t &dev, std::string &skipped)
{
    ibv_device_attr attr{};
    context_ptr ctx = open_context(device, attr, skipped);
    if (ctx == nullptr) {
        return false;
    }
    const char *name = ibv_get_device_name(device);
    std::memset(&dev, 0, sizeof(dev));
    dev.ctx  = ctx.get();
    dev.attr = attr;
    std::snprintf(dev.name, sizeof(dev.name), "%s", name);
    std::snprintf(dev.pci_bdf, sizeof(dev.pci_bdf), "%s", pci_bdf_of(name).c_str());
    for (uint8_t p = 1; p <= dev.attr.phys_port_cnt && dev.num_ports < GDR_VERBS_MAX_PORTS; ++p) {
        ibv_port_attr pa;
        if (port_is_usable(dev.ctx, p, pa)) {
            fill_port(dev, p, pa);
        }
    }
    if (dev.num_ports == 0) {
        return false;  // no ACTIVE port: not a resource, not an error
    }
    dev.pd = ibv_alloc_pd(dev.ctx);
    if (dev.pd == nullptr) {
        skipped += std::string(name) + ": ibv_alloc_pd: " + std::strerror(errno) + "; ";
        return false;
    }
    ctx.release();  // the device's now: gdr_verbs_close() closes it
    return true;
}

// Whether `device` would be opened by open_device(), finding out no more than that: its context
// and port attributes, no protection domain and no GID table.
bool has_usable_port(ibv_device *device, std::string &skipped)
{
    ibv_device_attr attr{};
    context_ptr ctx = open_context(device, attr, skipped);
    for (uint8_t p = 1; ctx != nullptr && p <= attr.phys_port_cnt; ++p) {
        ibv_port_attr pa;
        if (port_is_usable(ctx.get(), p, pa)) {
            return true;
        }
    }
    return false;
}

using device_list_ptr = std::unique_ptr<ibv_device *, void (*)(ibv_device **)>;

// visit(device, skipped) for every verbs device until it returns false; `reason` gets the devices
// skipped and why ("" when none was).  No verbs at all (no kernel support) is "no devices".
template <typename Visit> ucs_status_t for_each_device(gdr_reason_t *reason, Visit visit)
{
    return gdr::guard(reason, [&] {
        std::string skipped;
        int num           = 0;
        ibv_device **list = ibv_get_device_list(&num);
        if (list == nullptr) {
            return gdr_reason_set(reason, UCS_OK, "ibv_get_device_list: %s", std::strerror(errno));
        }
        device_list_ptr list_guard(list, ibv_free_device_list);

        for (int i = 0; i < num; ++i) {
            if (!visit(list[i], skipped)) {
                break;
            }
        }
        return gdr_reason_set(reason, UCS_OK, "%s", skipped.c_str());
    });
}

}  // namespace

extern "C" {

ucs_status_t gdr_verbs_open_all(gdr_device_t *devs, unsigned max_devs, unsigned *count_p,
                                gdr_reason_t *reason)
{
    *count_p = 0;
    return for_each_device(reason, [&](ibv_device *device, std::string &skipped) {
        if (*count_p == max_devs) {
            return false;
        }
        if (open_device(device, devs[*count_p], skipped)) {
            ++*count_p;
        }
        return true;
    });
}

ucs_status_t gdr_verbs_list(gdr_device_name_t *names, unsigned max_names, unsigned *count_p,
                            gdr_reason_t *reason)
{
    *count_p = 0;
    return for_each_device(reason, [&](ibv_device *device, std::string &skipped) {
        if (*count_p == max_names) {
            return false;
        }
        if (has_usable_port(device, skipped)) {
            std::snprintf(names[*count_p].name, sizeof(names[*count_p].name), "%s",
                          ibv_get_device_name(device));
            ++*count_p;
        }
        return true;
    });
}

ucs_status_t gdr_verbs_open(const char *name, gdr_device_t *dev, gdr_reason_t *reason)
{
    ucs_status_t status = gdr::guard(reason, [&] {
        std::string skipped;
        int num           = 0;
        ibv_device **list = ibv_get_device_list(&num);
        if (list == nullptr) {
            return gdr_reason_set(reason, UCS_ERR_NO_DEVICE, "ibv_get_device_list: %s",
                                  std::strerror(errno));
        }
        device_list_ptr list_guard(list, ibv_free_device_list);

        for (int i = 0; i < num; ++i) {
            if (std::strcmp(ibv_get_device_name(list[i]), name) != 0) {
                continue;
            }
            if (open_device(list[i], *dev, skipped)) {
                return UCS_OK;
            }
            return gdr_reason_set(reason, UCS_ERR_NO_DEVICE, "%s",
                                  skipped.empty() ? "it has no ACTIVE InfiniBand or Ethernet port"
                                                  : skipped.c_str());
        }
        return gdr_reason_set(reason, UCS_ERR_NO_DEVICE, "no verbs device of that name");
    });
    if (status != UCS_OK) {
        std::memset(dev, 0, sizeof(*dev));  // open_device closed what it had opened
    }
    return status;
}

void gdr_verbs_close(gdr_device_t *dev) GDR_NOEXCEPT
{
    if (dev->pd != nullptr) {
        ibv_dealloc_pd(dev->pd);
        dev->pd = nullptr;
    }
    if (dev->ctx != nullptr) {
        ibv_close_device(dev->ctx);
        dev->ctx = nullptr;
    }
}

const gdr_port_info_t *gdr_verbs_port(const gdr_device_t *dev, uint8_t port_num) GDR_NOEXCEPT
{
    for (unsigned i = 0; i < dev->num_ports; ++i) {
        if (dev->ports[i].port_num == port_num) {
            return &dev->ports[i];
        }
    }
    return nullptr;
}

ucs_status_t gdr_verbs_port_gid(const gdr_device_t *dev, uint8_t port_num, int forced_index,
                                union ibv_gid *gid, int *index_p, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        const gdr_port_info_t *port = gdr_verbs_port(dev, port_num);
        if (port == nullptr) {
            return gdr_reason_set(reason, UCS_ERR_NO_DEVICE, "%s: port %u is not active", dev->name,
                                  port_num);
        }
        if (forced_index < 0) {
            if (port->gid_index < 0) {
                return gdr_reason_set(reason, UCS_ERR_NO_ELEM, "%s:%u: %s", dev->name, port_num,
                                      port->gid_reason);
            }
            *gid     = port->gid;
            *index_p = port->gid_index;
            return UCS_OK;
        }
        ibv_gid_entry entry{};
        if (ibv_query_gid_ex(dev->ctx, port_num, forced_index, &entry, 0) != 0 ||
            gid_is_zero(entry.gid)) {
            return gdr_reason_set(reason, UCS_ERR_INVALID_PARAM,
                                  "%s:%u: GID index %d is empty or invalid", dev->name, port_num,
                                  forced_index);
        }
        *gid     = entry.gid;
        *index_p = forced_index;
        return UCS_OK;
    });
}

ucs_status_t gdr_verbs_qp_create(struct ibv_pd *pd, struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
                                 struct ibv_srq *srq, uint32_t max_send_wr, uint32_t max_send_sge,
                                 uint64_t send_ops_flags, uint32_t *max_inline,
                                 struct ibv_qp **qp_p, struct ibv_qp_ex **qpx_p,
                                 gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        auto create = [&](uint64_t ops, uint32_t inline_size, ibv_qp_init_attr_ex *attr) {
            *attr                     = {};
            attr->send_cq             = send_cq;
            attr->recv_cq             = recv_cq;
            attr->srq                 = srq;
            attr->qp_type             = IBV_QPT_RC;
            attr->sq_sig_all          = 0;  // selective signalling
            attr->cap.max_send_wr     = max_send_wr;
            attr->cap.max_recv_wr     = srq ? 0 : 1;
            attr->cap.max_send_sge    = max_send_sge;
            attr->cap.max_recv_sge    = 1;
            attr->cap.max_inline_data = inline_size;
            attr->comp_mask           = IBV_QP_INIT_ATTR_PD;
            attr->pd                  = pd;
            if (ops != 0) {
                attr->comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
                attr->send_ops_flags = ops;
            }
            return ibv_create_qp_ex(pd->context, attr);
        };
        // The ibv_wr_* interface where the provider has it (ibv_create_qp_ex
        // fails with EOPNOTSUPP, or EINVAL, where it does not), and some
        // providers refuse large inline sizes instead of clamping: so up to
        // four tries, the preferred first.
        ibv_qp_init_attr_ex attr;
        ibv_qp *qp = nullptr;
        for (uint64_t ops : {send_ops_flags, uint64_t{0}}) {
            for (uint32_t inline_size : {*max_inline, uint32_t{0}}) {
                qp = create(ops, inline_size, &attr);
                if (qp != nullptr || inline_size == 0) {
                    break;
                }
            }
            if (qp != nullptr || ops == 0) {
                break;
            }
        }
        if (qp == nullptr) {
            return gdr_reason_set(reason, UCS_ERR_IO_ERROR,
                                  "ibv_create_qp(RC, send_wr=%u, sge=%u, inline=%u): %s",
                                  max_send_wr, max_send_sge, *max_inline, std::strerror(errno));
        }
        *max_inline = attr.cap.max_inline_data;
        *qp_p       = qp;
        if (qpx_p != nullptr) {
            *qpx_p = (attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ? ibv_qp_to_qp_ex(qp)
                                                                        : nullptr;
        }
        return UCS_OK;
    });
}

unsigned gdr_verbs_mtu_bytes(enum ibv_mtu mtu) GDR_NOEXCEPT
{
    switch (mtu) {
    case IBV_MTU_256:
        return 256;
    case IBV_MTU_512:
        return 512;
    case IBV_MTU_1024:
        return 1024;
    case IBV_MTU_2048:
        return 2048;
    case IBV_MTU_4096:
        return 4096;
    default:
        return 0;
    }
}

enum ibv_mtu gdr_verbs_mtu_from_bytes(unsigned bytes) GDR_NOEXCEPT
{
    if (bytes >= 4096)
        return IBV_MTU_4096;
    if (bytes >= 2048)
        return IBV_MTU_2048;
    if (bytes >= 1024)
        return IBV_MTU_1024;
    if (bytes >= 512)
        return IBV_MTU_512;
    if (bytes >= 256)
        return IBV_MTU_256;
    return static_cast<enum ibv_mtu>(0);
}

ucs_status_t gdr_verbs_qp_connect(struct ibv_qp *qp, const gdr_qp_local_t *local,
                                  const gdr_qp_remote_t *remote, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] { return connect_qp(qp, local, remote, reason); });
}

ucs_status_t gdr_verbs_qp_to_error(struct ibv_qp *qp, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_ERR;
        if (ibv_modify_qp(qp, &attr, IBV_QP_STATE) != 0) {
            return gdr_reason_set(reason, UCS_ERR_IO_ERROR, "modify_qp(qpn 0x%x, ERR): %s",
                                  qp->qp_num, std::strerror(errno));
        }
        return UCS_OK;
    });
}

}  // extern "C"
