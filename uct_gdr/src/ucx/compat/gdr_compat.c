/**
 * gdr_compat.c - the seam's shims too long to inline (see gdr_compat.h): the
 * PCI bandwidth of a device, and the iface's performance estimate.  They know
 * UCX, and nothing of gdr's objects.
 */
#include "gdr_compat_ops.h"

#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#ifdef GDR_UCX_HAVE_TOPO_GET_PCI_BW
#include <ucs/sys/topo/base/topo.h>
#endif

#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>


/* ------------------------------------------------------------ iface ---- */

#ifndef GDR_UCX_HAVE_TOPO_GET_PCI_BW
/* UCX 1.13's uct_ib_device_set_pci_bw(): the PCIe generations it knows, their
 * transfer rate, TLP payload and overheads and line encoding; a faster link
 * (gen5) is "undetected" there and caps nothing (DBL_MAX), so also here */
static double gdr_compat_pci_bw_of_link(const char *sysfs_path)
{
    static const struct {
        double gt_s;
        unsigned payload, tlp_overhead, ctrl_ratio, ctrl_overhead;
        unsigned encoding, decoding;
    } gens[] = {
            {2.5, 256, 24, 4, 16, 8, 10},
            {5, 256, 24, 4, 16, 8, 10},
            {8, 256, 26, 4, 16, 128, 130},
            {16, 256, 26, 4, 16, 128, 130},
    };
    char width_str[16], speed_str[16], gts[16];
    double gt_s, utilization;
    unsigned width;
    size_t i;

    if ((ucs_read_file_str(width_str, sizeof(width_str), 1, "%s/%s", sysfs_path,
                           "current_link_width") < 0) ||
        (ucs_read_file_str(speed_str, sizeof(speed_str), 1, "%s/%s", sysfs_path,
                           "current_link_speed") < 0) ||
        (sscanf(width_str, "%u", &width) < 1) ||
        (sscanf(speed_str, "%lf%15s", &gt_s, gts) < 2) ||
        strcasecmp("GT/s", gts)) {
        return DBL_MAX;
    }
    for (i = 0; i < ucs_static_array_size(gens); i++) {
        if ((gt_s / gens[i].gt_s) > 1.01) {
            continue;
        }
        utilization = (double)(gens[i].payload * gens[i].ctrl_ratio) /
                      (((gens[i].payload + gens[i].tlp_overhead) *
                        gens[i].ctrl_ratio) +
                       gens[i].ctrl_overhead);
        return (gens[i].gt_s * 1e9 / 8.0) * width *
               ((double)gens[i].encoding / gens[i].decoding) * utilization;
    }
    return DBL_MAX;
}
#endif

double gdr_compat_pci_bw(const char *dev_name, const char *pci_bdf)
{
    char sysfs_path[PATH_MAX];

    if (pci_bdf[0] == '\0') {
        return DBL_MAX; /* rxe, siw: as UCX's "pci bandwidth undetected" */
    }
    ucs_snprintf_safe(sysfs_path, sizeof(sysfs_path), "/sys/bus/pci/devices/%s",
                      pci_bdf);
#ifdef GDR_UCX_HAVE_TOPO_GET_PCI_BW
    return ucs_topo_get_pci_bw(dev_name, sysfs_path);
#else
    return gdr_compat_pci_bw_of_link(sysfs_path);
#endif
}

/*
 * What UCP's protocol selection reads per operation (protocol v2: send pre/post
 * overheads, latency; v1: max_inflight_eps for keepalive's lane).  UCX's ib
 * transports (1.17 and later) add their UCX_<TL>_SEND_OVERHEAD to UCT's base
 * estimate; gdr_rc posts through the same verbs calls, so it reports what
 * rc_verbs does with that setting's defaults (UCT_IB_SEND_OVERHEAD_VALUE with
 * wqe_post = rc_verbs' iface overhead): with the base estimate, eager short
 * and copy crossed at other sizes and the rendezvous threshold moved.  Earlier
 * UCX (1.13, 1.16) estimate ib sends as the base does.
 */
#ifdef GDR_UCX_HAVE_IB_SEND_OVERHEAD
#define GDR_SEND_OVERHEAD_BCOPY     5e-9 /* allocating a tx buffer */
#define GDR_SEND_OVERHEAD_CQE       20e-9 /* processing a completion */
#define GDR_SEND_OVERHEAD_DB        40e-9 /* the doorbell write */
#define GDR_SEND_OVERHEAD_WQE_FETCH 350e-9 /* the HCA fetching the wqe */
#endif

ucs_status_t
gdr_compat_iface_estimate_perf(uct_iface_h tl_iface, uct_perf_attr_t *perf_attr)
{
    ucs_status_t status = uct_base_iface_estimate_perf(tl_iface, perf_attr);
#ifdef GDR_UCX_HAVE_IB_SEND_OVERHEAD
    uct_ep_operation_t op = UCT_ATTR_VALUE(PERF, perf_attr, operation,
                                           OPERATION, UCT_EP_OP_LAST);
    int copies            = uct_ep_op_is_bcopy(op);
    int zero_copy         = uct_ep_op_is_zcopy(op);

    if (status != UCS_OK) {
        return status;
    }
    /* the base gave send_pre_overhead = the iface overhead (rc_verbs' wqe_post
     * default) and send_post_overhead = 0 */
    if ((perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD) &&
        copies) {
        perf_attr->send_pre_overhead += GDR_SEND_OVERHEAD_BCOPY;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD) {
        perf_attr->send_post_overhead = GDR_SEND_OVERHEAD_DB +
                                        (zero_copy ? GDR_SEND_OVERHEAD_CQE : 0);
    }
    if ((perf_attr->field_mask & UCT_PERF_ATTR_FIELD_LATENCY) &&
        (copies || zero_copy)) {
        perf_attr->latency.c += GDR_SEND_OVERHEAD_WQE_FETCH;
    }
#endif
    return status;
}
