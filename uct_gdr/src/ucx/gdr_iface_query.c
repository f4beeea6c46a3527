/**
 * gdr_iface_query.c - uct_iface_query of gdr_rc: what the transport can do and its limits
 * on this port, and the performance UCP's lane selection estimates with.
 */
#include "gdr_ep.h"

/* Bytes each packet carries besides its payload, as UCX's uct_ib_iface_query
 * counts them for rc_verbs: BTH, the RC transport header (the larger of RETH
 * and rc's 1-byte AM header), ICRC, VCRC and the delimiter; on Ethernet the
 * GRH and the Ethernet header, on InfiniBand the LRH */
#define GDR_PKT_EXTRA_LEN (12 + 16 + 4 + 2 + 2)
#define GDR_PKT_EXTRA_ETH (40 + 14)
#define GDR_PKT_EXTRA_IB  8

/* Payload bandwidth of the port: the wire's, times payload per packet over
 * packet length (an MTU, at most a bounce buffer), at most what the PCIe link
 * carries: rc_verbs' figure on the same port, so that UCP's thresholds over the
 * two transports are the same (docs/perf-compare.md) */
static double gdr_iface_bandwidth(gdr_iface_t *iface)
{
    int ethernet = iface->port->link_layer == IBV_LINK_LAYER_ETHERNET;
    double mtu   = ucs_min(gdr_verbs_mtu_bytes(iface->port->active_mtu),
                           iface->seg_size);
    double extra = GDR_PKT_EXTRA_LEN +
                   (ethernet ? GDR_PKT_EXTRA_ETH : GDR_PKT_EXTRA_IB);

    if (iface->dev->pci_bw == 0) { /* read once per device: sysfs */
        iface->dev->pci_bw = gdr_compat_pci_bw(iface->dev->name,
                                               iface->dev->pci_bdf);
    }
    return ucs_min(iface->port->bandwidth * mtu / (mtu + extra),
                   iface->dev->pci_bw);
}

ucs_status_t gdr_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    /* One RDMA read or write carries at most the port's max_msg_sz (8 MiB on
     * rxe, 1 GiB on mlx5; a longer one completes in error), as UCX's rc
     * transports advertise; an MR larger than max_mr_size cannot exist */
    size_t max_msg = (iface->dev->attr.max_mr_size != 0) ?
                             ucs_min(iface->port->max_msg_sz,
                                     iface->dev->attr.max_mr_size) :
                             iface->port->max_msg_sz;
    unsigned mtu   = gdr_verbs_mtu_bytes(iface->qp_local.mtu);

    uct_base_iface_query(&iface->super, attr);

    attr->device_addr_len = gdr_iface_device_addr_len(iface);
    attr->iface_addr_len  = 0;
    attr->ep_addr_len     = sizeof(gdr_ep_addr_t);
    attr->max_conn_priv   = 0;
    attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_EP | UCT_IFACE_FLAG_PUT_BCOPY |
                      UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_BCOPY |
                      UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_PENDING |
                      UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_EP_CHECK |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      GDR_COMPAT_IFACE_FLAG_INTER_NODE;
    if (iface->tx.max_inline > 0) {
        attr->cap.flags |= UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_AM_SHORT;
    }
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                            UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;

    attr->cap.put.max_short       = iface->tx.max_inline;
    attr->cap.put.max_bcopy       = iface->seg_size;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = max_msg;
    attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.put.align_mtu       = mtu;
    attr->cap.put.max_iov         = iface->tx.max_sge;

    attr->cap.get.max_short       = 0;
    attr->cap.get.max_bcopy       = iface->seg_size;
    attr->cap.get.min_zcopy       = 0;
    attr->cap.get.max_zcopy       = max_msg;
    attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.get.align_mtu       = mtu;
    attr->cap.get.max_iov         = iface->tx.max_sge;

    attr->cap.am.max_short       = iface->tx.max_inline;
    attr->cap.am.max_bcopy       = iface->seg_size;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = iface->seg_size;
    attr->cap.am.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.am.align_mtu       = mtu;
    /* the header goes through a bounce buffer, in the first SGE */
    attr->cap.am.max_hdr = gdr_iface_am_max_hdr(iface);
    attr->cap.am.max_iov = iface->tx.max_sge - 1;

    if (iface->atomic_hca) {
        /* 64-bit add and cswap are verbs atomics; the rest, and every 32-bit
         * op, are compare-and-swap loops (gdr_ep_atomic.c).  All of them at
         * both widths let UCP put its atomics on gdr_rc whether it asks for
         * UCP_FEATURE_AMO32, AMO64 or both (docs/atomics.md). */
        attr->cap.atomic32.op_flags  = GDR_ATOMIC_OPS;
        attr->cap.atomic32.fop_flags = GDR_ATOMIC_FETCH_OPS;
        attr->cap.atomic64.op_flags  = GDR_ATOMIC_OPS;
        attr->cap.atomic64.fop_flags = GDR_ATOMIC_FETCH_OPS;
        attr->cap.flags |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
    }

    /* rc_verbs': by the port's speed (+200 ns on Ethernet), 1 ns per QP */
    attr->latency = ucs_linear_func_make(iface->port->latency, 1e-9);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = gdr_iface_bandwidth(iface);
    attr->overhead            = 75e-9;
    attr->priority            = 0;
    return UCS_OK;
}
