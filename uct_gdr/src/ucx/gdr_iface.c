/**
 * gdr_iface.c - transport "gdr_rc": an interface on one port of one device.
 *
 * One send CQ and one receive CQ (both on a completion channel, for UCP's
 * worker wakeup), one SRQ of active-message receive buffers, and an RC QP per
 * endpoint (gdr_ep.c).  Bounce buffers come from registered ucs_mpools; the
 * pending queue is a ucs_arbiter, as in UCX's own rc transports.
 */
#include "gdr_uct.h"
#include "gdr_topo.h" /* the PCI address parser */

#include <ucs/arch/bitops.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucs/sys/sys.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>

#define GDR_IFACE_MAX_SGE  4   /* am_zcopy: header + 3 iov entries */

ucs_config_field_t gdr_iface_config_table[] = {
    {"", "ALLOC=huge,thp,mmap,heap", NULL,
     ucs_offsetof(gdr_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"TX_QUEUE_LEN", "256",
     "Send queue length of each RC QP (work requests in flight per endpoint).",
     ucs_offsetof(gdr_iface_config_t, tx_queue_len), UCS_CONFIG_TYPE_UINT},

    {"RX_QUEUE_LEN", "1024",
     "Shared receive queue length (active-message receive buffers per interface).",
     ucs_offsetof(gdr_iface_config_t, rx_queue_len), UCS_CONFIG_TYPE_UINT},

    {"RX_MAX_BUFS", "inf",
     "Most active-message receive buffers an interface allocates, posted ones and\n"
     "those held by the user (UCT_CB_PARAM_FLAG_DESC) together. When all are held,\n"
     "senders are slowed by receiver-not-ready NAKs until some are released.",
     ucs_offsetof(gdr_iface_config_t, rx_max_bufs), UCS_CONFIG_TYPE_ULUNITS},

    {"TX_CQ_LEN", "4096",
     "Send completion queue length, shared by all endpoints of an interface.",
     ucs_offsetof(gdr_iface_config_t, tx_cq_len), UCS_CONFIG_TYPE_UINT},

    {"SEG_SIZE", "8256",
     "Size of bounce buffers: the largest bcopy put/get and active message.",
     ucs_offsetof(gdr_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"MAX_INLINE", "128",
     "Largest message sent inline in the work request (put/am short); the\n"
     "device may give less.",
     ucs_offsetof(gdr_iface_config_t, max_inline), UCS_CONFIG_TYPE_MEMUNITS},

    {"TX_MODERATION", "32",
     "Request a completion at least every this many unsignaled sends (at most\n"
     "a quarter of TX_QUEUE_LEN is used).",
     ucs_offsetof(gdr_iface_config_t, tx_moderation), UCS_CONFIG_TYPE_UINT},

    {"TX_MAX_POLL", "16", "Send completions polled per progress call.",
     ucs_offsetof(gdr_iface_config_t, tx_max_poll), UCS_CONFIG_TYPE_UINT},

    {"RX_MAX_POLL", "16", "Receive completions polled per progress call.",
     ucs_offsetof(gdr_iface_config_t, rx_max_poll), UCS_CONFIG_TYPE_UINT},

    {"TIMEOUT", "1s",
     "Transport retransmission timeout (rounded to 4.096us * 2^n, n in 1..31).",
     ucs_offsetof(gdr_iface_config_t, timeout), UCS_CONFIG_TYPE_TIME},

    {"RETRY_COUNT", "7",
     "Transport retries before an endpoint fails with a timeout (0..7).",
     ucs_offsetof(gdr_iface_config_t, retry_count), UCS_CONFIG_TYPE_UINT},

    {"RNR_TIMEOUT", "1ms",
     "Delay before resending to a peer that had no receive buffer.",
     ucs_offsetof(gdr_iface_config_t, rnr_timeout), UCS_CONFIG_TYPE_TIME},

    {"RNR_RETRY_COUNT", "7",
     "Receiver-not-ready retries (0..7; 7 means retry forever).",
     ucs_offsetof(gdr_iface_config_t, rnr_retry_count), UCS_CONFIG_TYPE_UINT},

    {"GID_INDEX", "auto",
     "GID index for RoCE/GRH. 'auto': RoCE v2 IPv4-mapped, then v2 IPv6 global,\n"
     "then v2 link-local, then RoCE v1.",
     ucs_offsetof(gdr_iface_config_t, gid_index), UCS_CONFIG_TYPE_ULUNITS},

    {"MTU", "auto",
     "Path MTU limit: 256, 512, 1024, 2048 or 4096; 'auto' = port's active MTU.",
     ucs_offsetof(gdr_iface_config_t, mtu), UCS_CONFIG_TYPE_MEMUNITS},

    {"SL", "auto", "InfiniBand service level (0..15); 'auto' = the SM's SL.",
     ucs_offsetof(gdr_iface_config_t, sl), UCS_CONFIG_TYPE_ULUNITS},

    {"TRAFFIC_CLASS", "0", "GRH traffic class / RoCE DSCP<<2|ECN (0..255).",
     ucs_offsetof(gdr_iface_config_t, traffic_class), UCS_CONFIG_TYPE_UINT},

    {"HOP_LIMIT", "255", "GRH hop limit / IP TTL (0..255).",
     ucs_offsetof(gdr_iface_config_t, hop_limit), UCS_CONFIG_TYPE_UINT},

    {"MAX_RD_ATOMIC", "4",
     "Outstanding RDMA reads and atomics per QP, as initiator and target.",
     ucs_offsetof(gdr_iface_config_t, max_rd_atomic), UCS_CONFIG_TYPE_UINT},

    {NULL}
};

/* --------------------------------------------------------- devices ------ */

static ucs_sys_device_t gdr_iface_sys_device(const gdr_device_t *dev)
{
    ucs_sys_device_t sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    gdr_pci_addr_t pci;
    ucs_sys_bus_id_t bus_id;

    if (gdr_topo_parse_pci_address(dev->pci_bdf, &pci) != 0) {
        return sys_dev; /* virtual device (rxe, siw): no PCI location */
    }
    bus_id.domain   = pci.domain;
    bus_id.bus      = pci.bus;
    bus_id.slot     = pci.device;
    bus_id.function = pci.function;
    if (ucs_topo_find_device_by_bus_id(&bus_id, &sys_dev) != UCS_OK) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    return sys_dev;
}

ucs_status_t gdr_iface_query_devices(uct_md_h uct_md,
                                     uct_tl_device_resource_t **devices_p,
                                     unsigned *num_devices_p)
{
    gdr_md_t *md = ucs_derived_of(uct_md, gdr_md_t);
    uct_tl_device_resource_t *devices;
    unsigned i, p, count = 0;

    *devices_p     = NULL;
    *num_devices_p = 0;
    for (i = 0; i < md->num_devices; ++i) {
        count += md->devices[i].num_ports;
    }
    if (count == 0) {
        return UCS_OK; /* no verbs device: the md exists, no transport resources */
    }

    devices = ucs_calloc(count, sizeof(*devices), "gdr_tl_devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    count = 0;
    for (i = 0; i < md->num_devices; ++i) {
        for (p = 0; p < md->devices[i].num_ports; ++p) {
            ucs_snprintf_zero(devices[count].name, sizeof(devices[count].name),
                              "%s:%u", md->devices[i].name,
                              md->devices[i].ports[p].port_num);
            devices[count].type       = UCT_DEVICE_TYPE_NET;
            devices[count].sys_device = gdr_iface_sys_device(&md->devices[i]);
            ++count;
        }
    }
    *devices_p     = devices;
    *num_devices_p = count;
    return UCS_OK;
}

/* "mlx5_0:1" -> device index and port */
static ucs_status_t gdr_iface_find_port(gdr_md_t *md, const char *dev_name,
                                        unsigned *dev_index, uint8_t *port_num)
{
    unsigned i, p;
    char name[UCT_DEVICE_NAME_MAX];

    for (i = 0; i < md->num_devices; ++i) {
        for (p = 0; p < md->devices[i].num_ports; ++p) {
            ucs_snprintf_zero(name, sizeof(name), "%s:%u", md->devices[i].name,
                              md->devices[i].ports[p].port_num);
            if (!strcmp(name, dev_name)) {
                *dev_index = i;
                *port_num  = md->devices[i].ports[p].port_num;
                return UCS_OK;
            }
        }
    }
    ucs_error("gdr_rc: no active port '%s'", dev_name);
    return UCS_ERR_NO_DEVICE;
}

/* ---------------------------------------------------- configuration ----- */

/* Local ACK timeout exponent: 4.096us * 2^exp >= timeout */
static uint8_t gdr_iface_ack_timeout_exp(double timeout)
{
    double exp = ceil(log2(timeout / 4.096e-6));
    return (uint8_t)ucs_max(1, ucs_min(31, (int)exp));
}

/* IBTA min RNR NAK timer encoding (milliseconds), code 0 = 655.36 ms */
static uint8_t gdr_iface_rnr_timer_code(double timeout)
{
    static const double ms[32] = {
        655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32,
        0.48, 0.64, 0.96, 1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36,
        20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};
    double want = timeout * 1e3;
    uint8_t code;

    for (code = 1; code < 32; ++code) {
        if (ms[code] >= want) {
            return code;
        }
    }
    return 0;
}

#define GDR_CHECK_RANGE(_name, _value, _min, _max) \
    if (((_value) < (_min)) || ((_value) > (_max))) { \
        ucs_error("gdr_rc: UCX_" GDR_CONFIG_PREFIX _name "=%lu is out of range " \
                  "[%lu..%lu]", (unsigned long)(_value), (unsigned long)(_min), \
                  (unsigned long)(_max)); \
        return UCS_ERR_INVALID_PARAM; \
    }

static ucs_status_t gdr_iface_check_config(const gdr_iface_config_t *config,
                                           const gdr_device_t *dev)
{
    GDR_CHECK_RANGE("TX_QUEUE_LEN", config->tx_queue_len, 1,
                    (unsigned)dev->attr.max_qp_wr);
    GDR_CHECK_RANGE("RX_QUEUE_LEN", config->rx_queue_len, 1,
                    (unsigned)dev->attr.max_srq_wr);
    if (config->rx_max_bufs != UCS_ULUNITS_INF) {
        GDR_CHECK_RANGE("RX_MAX_BUFS", config->rx_max_bufs, 1, UINT_MAX - 1);
    }
    GDR_CHECK_RANGE("TX_CQ_LEN", config->tx_cq_len, config->tx_queue_len,
                    (unsigned)dev->attr.max_cqe);
    GDR_CHECK_RANGE("SEG_SIZE", config->seg_size, 64, 1ul << 30);
    GDR_CHECK_RANGE("MAX_INLINE", config->max_inline, 0, 4096);
    GDR_CHECK_RANGE("TX_MODERATION", config->tx_moderation, 1, UINT_MAX);
    GDR_CHECK_RANGE("TX_MAX_POLL", config->tx_max_poll, 1, 16);
    GDR_CHECK_RANGE("RX_MAX_POLL", config->rx_max_poll, 1, 16);
    GDR_CHECK_RANGE("RETRY_COUNT", config->retry_count, 0, 7);
    GDR_CHECK_RANGE("RNR_RETRY_COUNT", config->rnr_retry_count, 0, 7);
    GDR_CHECK_RANGE("TRAFFIC_CLASS", config->traffic_class, 0, 255);
    GDR_CHECK_RANGE("HOP_LIMIT", config->hop_limit, 0, 255);
    GDR_CHECK_RANGE("MAX_RD_ATOMIC", config->max_rd_atomic, 1,
                    (unsigned)ucs_min(dev->attr.max_qp_rd_atom,
                                      dev->attr.max_qp_init_rd_atom));
    if (config->sl != UCS_ULUNITS_AUTO) {
        GDR_CHECK_RANGE("SL", config->sl, 0, 15);
    }
    if ((config->timeout <= 0) || (config->timeout > 8800)) {
        ucs_error("gdr_rc: UCX_" GDR_CONFIG_PREFIX "TIMEOUT=%gs is out of range "
                  "(0..8800s]", config->timeout);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->mtu != UCS_MEMUNITS_AUTO) &&
        (gdr_verbs_mtu_bytes(gdr_verbs_mtu_from_bytes(config->mtu)) != config->mtu)) {
        ucs_error("gdr_rc: UCX_" GDR_CONFIG_PREFIX "MTU=%zu is not one of 256, 512, "
                  "1024, 2048, 4096 or auto", config->mtu);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* -------------------------------------------------------- mpools -------- */

typedef struct gdr_mpool_chunk {
    struct ibv_mr *mr;
} UCS_V_ALIGNED(UCS_SYS_CACHE_LINE_SIZE) gdr_mpool_chunk_t;

static gdr_iface_t *gdr_iface_of_mpool(ucs_mpool_t *mp)
{
    return *(gdr_iface_t**)ucs_mpool_priv(mp);
}

static ucs_status_t gdr_mpool_chunk_alloc(ucs_mpool_t *mp, size_t *size_p,
                                          void **chunk_p)
{
    gdr_iface_t *iface = gdr_iface_of_mpool(mp);
    size_t size        = ucs_align_up(*size_p + sizeof(gdr_mpool_chunk_t),
                                      ucs_get_page_size());
    gdr_mpool_chunk_t *chunk;

    if (posix_memalign((void**)&chunk, ucs_get_page_size(), size) != 0) {
        return UCS_ERR_NO_MEMORY;
    }
    chunk->mr = ibv_reg_mr(iface->dev->pd, chunk, size, IBV_ACCESS_LOCAL_WRITE);
    if (chunk->mr == NULL) {
        ucs_error("gdr_rc: ibv_reg_mr(%s, %zu bytes) for bounce buffers failed: %m",
                  iface->dev->name, size);
        free(chunk);
        return UCS_ERR_IO_ERROR;
    }
    *size_p  = size - sizeof(*chunk);
    *chunk_p = chunk + 1;
    return UCS_OK;
}

static void gdr_mpool_chunk_release(ucs_mpool_t *mp, void *ptr)
{
    gdr_mpool_chunk_t *chunk = (gdr_mpool_chunk_t*)ptr - 1;

    ibv_dereg_mr(chunk->mr);
    free(chunk);
}

static void gdr_tx_desc_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    ((gdr_tx_op_t*)obj)->lkey = ((gdr_mpool_chunk_t*)chunk - 1)->mr->lkey;
}

static void gdr_rx_desc_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    gdr_iface_t *iface  = gdr_iface_of_mpool(mp);
    gdr_rx_desc_t *desc = obj;

    desc->lkey    = ((gdr_mpool_chunk_t*)chunk - 1)->mr->lkey;
    desc->release = &iface->rx.release_desc;
}

static ucs_mpool_ops_t gdr_tx_desc_mpool_ops = {
    .chunk_alloc   = gdr_mpool_chunk_alloc,
    .chunk_release = gdr_mpool_chunk_release,
    .obj_init      = gdr_tx_desc_init,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

static ucs_mpool_ops_t gdr_rx_desc_mpool_ops = {
    .chunk_alloc   = gdr_mpool_chunk_alloc,
    .chunk_release = gdr_mpool_chunk_release,
    .obj_init      = gdr_rx_desc_init,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

static ucs_mpool_ops_t gdr_op_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

static ucs_status_t gdr_iface_mpool_init(gdr_iface_t *iface, ucs_mpool_t *mp,
                                         size_t elem_size, size_t align_offset,
                                         size_t alignment, unsigned max_elems,
                                         ucs_mpool_ops_t *ops, const char *name)
{
    ucs_status_t status;

    status = gdr_compat_mpool_init(mp, sizeof(gdr_iface_t*), elem_size, align_offset,
                                   alignment, ucs_min(128, max_elems), max_elems,
                                   ops, name);
    if (status == UCS_OK) {
        *(gdr_iface_t**)ucs_mpool_priv(mp) = iface;
    }
    return status;
}

/* ------------------------------------------------------------ rx -------- */

static void gdr_iface_release_desc(uct_recv_desc_t *self, void *desc)
{
    ucs_mpool_put_inline((gdr_rx_desc_t*)desc - 1);
}

static UCS_F_ALWAYS_INLINE void *gdr_rx_desc_payload(gdr_iface_t *iface,
                                                     gdr_rx_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(desc + 1, iface->rx.headroom);
}

/* Refill the SRQ; batched so that one ibv_post_srq_recv covers many buffers */
static void gdr_iface_post_recv(gdr_iface_t *iface)
{
    struct ibv_recv_wr wrs[32], *bad_wr;
    struct ibv_sge sges[32];
    gdr_rx_desc_t *desc;
    unsigned count;
    int ret;

    iface->rx.starved = 0;
    while (iface->rx.available > 0) {
        for (count = 0; (count < ucs_static_array_size(wrs)) &&
                        (count < iface->rx.available); ++count) {
            desc = ucs_mpool_get_inline(&iface->rx.mp);
            if (desc == NULL) {
                /* every buffer is posted or held by the user (RX_MAX_BUFS):
                 * progress retries until the user releases some */
                iface->rx.starved = 1;
                break;
            }
            sges[count].addr   = (uintptr_t)gdr_rx_desc_payload(iface, desc);
            sges[count].length = iface->seg_size;
            sges[count].lkey   = desc->lkey;
            wrs[count].wr_id   = (uintptr_t)desc;
            wrs[count].sg_list = &sges[count];
            wrs[count].num_sge = 1;
            wrs[count].next    = &wrs[count + 1];
        }
        if (count == 0) {
            return;
        }
        wrs[count - 1].next = NULL;
        ret = ibv_post_srq_recv(iface->srq, wrs, &bad_wr);
        if (ret != 0) {
            ucs_error("gdr_rc: ibv_post_srq_recv failed: %s", strerror(ret));
            for (; bad_wr != NULL; bad_wr = bad_wr->next) {
                ucs_mpool_put_inline((void*)bad_wr->wr_id);
                --count;
            }
            iface->rx.available -= count;
            return;
        }
        iface->rx.available -= count;
    }
}

/* Take CQEs polled by event_arm first, then the CQ itself */
static UCS_F_ALWAYS_INLINE int gdr_iface_poll(struct ibv_cq *cq, struct ibv_wc *wc,
                                              unsigned max, struct ibv_wc *stash,
                                              unsigned *stash_count)
{
    int count;

    if (ucs_unlikely(*stash_count > 0)) {
        count = *stash_count;
        memcpy(wc, stash, count * sizeof(*wc));
        *stash_count = 0;
        return count;
    }
    count = ibv_poll_cq(cq, max, wc);
    if (ucs_unlikely(count < 0)) {
        ucs_error("gdr_rc: ibv_poll_cq failed: %d", count);
        return 0;
    }
    return count;
}

static unsigned gdr_iface_progress_rx(gdr_iface_t *iface)
{
    struct ibv_wc wc[16];
    gdr_rx_desc_t *desc;
    ucs_status_t status;
    uint32_t am_id;
    int i, count;

    count = gdr_iface_poll(iface->recv_cq, wc, iface->rx.max_poll,
                           iface->stash_rx.wc, &iface->stash_rx.count);
    for (i = 0; i < count; ++i) {
        desc = (gdr_rx_desc_t*)wc[i].wr_id;
        ++iface->rx.available;
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS)) {
            if (wc[i].status != IBV_WC_WR_FLUSH_ERR) {
                ucs_debug("gdr_rc: receive completion with error: %s (qpn 0x%x)",
                          ibv_wc_status_str(wc[i].status), wc[i].qp_num);
            }
            ucs_mpool_put_inline(desc);
            continue;
        }
        am_id = ntohl(wc[i].imm_data);
        if (ucs_unlikely(!(wc[i].wc_flags & IBV_WC_WITH_IMM) ||
                         (am_id >= UCT_AM_ID_MAX))) {
            ucs_error("gdr_rc: dropping a message without a valid AM id "
                      "(imm %u, %u bytes, qpn 0x%x)", am_id, wc[i].byte_len,
                      wc[i].qp_num);
            ucs_mpool_put_inline(desc);
            continue;
        }
        status = uct_iface_invoke_am(&iface->super, am_id,
                                     gdr_rx_desc_payload(iface, desc),
                                     wc[i].byte_len, UCT_CB_PARAM_FLAG_DESC);
        if (status == UCS_OK) {
            ucs_mpool_put_inline(desc);
        } /* else UCS_INPROGRESS: the user releases it with uct_iface_release_desc */
    }
    if ((count > 0) || ucs_unlikely(iface->rx.starved)) {
        gdr_iface_post_recv(iface);
    }
    return count;
}

ucs_status_t gdr_wc_status(enum ibv_wc_status status)
{
    switch (status) {
    case IBV_WC_SUCCESS:
        return UCS_OK;
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
        return UCS_ERR_CONNECTION_RESET;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_REM_ABORT_ERR:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case IBV_WC_WR_FLUSH_ERR:
        return UCS_ERR_CANCELED;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

static unsigned gdr_iface_progress_tx(gdr_iface_t *iface)
{
    struct ibv_wc wc[16];
    khiter_t it;
    int i, count;

    count = gdr_iface_poll(iface->send_cq, wc, iface->tx.max_poll,
                           iface->stash_tx.wc, &iface->stash_tx.count);
    for (i = 0; i < count; ++i) {
        it = kh_get(gdr_qp_ep, &iface->eps, wc[i].qp_num);
        if (ucs_unlikely(it == kh_end(&iface->eps))) {
            continue; /* endpoint already destroyed */
        }
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS) &&
            (wc[i].status != IBV_WC_WR_FLUSH_ERR)) {
            ucs_debug("gdr_rc: send completion with error: %s (qpn 0x%x wr sn %u "
                      "vendor_err 0x%x)", ibv_wc_status_str(wc[i].status),
                      wc[i].qp_num, (unsigned)wc[i].wr_id, wc[i].vendor_err);
        }
        gdr_ep_tx_completed(kh_value(&iface->eps, it), (uint16_t)wc[i].wr_id,
                            gdr_wc_status(wc[i].status));
        /* pending requests go before sends of the next CQE's callbacks */
        ucs_arbiter_dispatch(&iface->tx.arbiter, 1, gdr_ep_arbiter_dispatch_cb, NULL);
    }
    if (count == 0) {
        /* after connect_to_ep, before anything completed */
        ucs_arbiter_dispatch(&iface->tx.arbiter, 1, gdr_ep_arbiter_dispatch_cb, NULL);
    }
    return count;
}

static unsigned gdr_iface_progress(uct_iface_h tl_iface)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);

    return gdr_iface_progress_rx(iface) + gdr_iface_progress_tx(iface);
}

/* ----------------------------------------------------------- events ----- */

static ucs_status_t gdr_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);

    *fd_p = iface->comp_channel->fd;
    return UCS_OK;
}

/* Arm for the next completion.  CQEs that are already there are moved to the
 * stash, so the caller sees UCS_ERR_BUSY and progresses them: nothing is lost
 * between "no work" and "sleep". */
static ucs_status_t gdr_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    struct ibv_cq *cq;
    void *cq_context;
    int count;

    while (ibv_get_cq_event(iface->comp_channel, &cq, &cq_context) == 0) {
        ibv_ack_cq_events(cq, 1);
    }

    if ((iface->stash_tx.count > 0) || (iface->stash_rx.count > 0)) {
        return UCS_ERR_BUSY;
    }

    if ((ibv_req_notify_cq(iface->send_cq, 0) != 0) ||
        (ibv_req_notify_cq(iface->recv_cq, 0) != 0)) {
        ucs_error("gdr_rc: ibv_req_notify_cq failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    count = ibv_poll_cq(iface->send_cq, ucs_static_array_size(iface->stash_tx.wc),
                        iface->stash_tx.wc);
    iface->stash_tx.count = ucs_max(count, 0);
    count = ibv_poll_cq(iface->recv_cq, ucs_static_array_size(iface->stash_rx.wc),
                        iface->stash_rx.wc);
    iface->stash_rx.count = ucs_max(count, 0);
    return ((iface->stash_tx.count > 0) || (iface->stash_rx.count > 0)) ?
           UCS_ERR_BUSY : UCS_OK;
}

/* ------------------------------------------------------ flush/fence ----- */

static ucs_status_t gdr_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                    uct_completion_t *comp)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    ucs_status_t status, result = UCS_OK;
    gdr_ep_t *ep;

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_list_for_each(ep, &iface->ep_list, list) {
        status = gdr_ep_flush(&ep->super.super, flags, NULL);
        if ((status == UCS_INPROGRESS) || (status == UCS_ERR_NO_RESOURCE)) {
            result = UCS_INPROGRESS;
        }
    }
    return result;
}

static ucs_status_t gdr_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);

    ++iface->tx.fence_beat; /* every ep fences its next WR */
    return UCS_OK;
}

/* ---------------------------------------------------------- query ------- */

static size_t gdr_iface_device_addr_len(const gdr_iface_t *iface);

static ucs_status_t gdr_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    size_t max_msg     = iface->dev->attr.max_mr_size ?
                         ucs_min(iface->dev->attr.max_mr_size, 1ul << 31) : 1ul << 31;
    unsigned mtu       = gdr_verbs_mtu_bytes(iface->qp_local.mtu);

    uct_base_iface_query(&iface->super, attr);

    attr->device_addr_len = gdr_iface_device_addr_len(iface);
    attr->iface_addr_len  = 0;
    attr->ep_addr_len     = sizeof(gdr_ep_addr_t);
    attr->max_conn_priv   = 0;
    attr->cap.flags       = UCT_IFACE_FLAG_CONNECT_TO_EP |
                            UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
                            UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                            UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_AM_ZCOPY |
                            UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC |
                            UCT_IFACE_FLAG_EP_CHECK | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
    if (iface->tx.max_inline > 0) {
        attr->cap.flags |= UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_AM_SHORT;
    }
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                            UCT_IFACE_FLAG_EVENT_RECV |
                            UCT_IFACE_FLAG_EVENT_FD;

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

    attr->cap.am.max_short        = iface->tx.max_inline;
    attr->cap.am.max_bcopy        = iface->seg_size;
    attr->cap.am.min_zcopy        = 0;
    attr->cap.am.max_zcopy        = iface->seg_size;
    attr->cap.am.opt_zcopy_align  = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.am.align_mtu        = mtu;
    /* the header goes through a bounce buffer, in the first SGE */
    attr->cap.am.max_hdr          = gdr_iface_am_max_hdr(iface);
    attr->cap.am.max_iov          = iface->tx.max_sge - 1;

    if (iface->atomic_hca) {
        /* add and cswap are verbs atomics; and/or/xor/swap are compare-and-swap
         * loops (gdr_ep.c), which also lets UCP put its atomics on gdr_rc */
        attr->cap.atomic64.op_flags  = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                                       UCS_BIT(UCT_ATOMIC_OP_AND) |
                                       UCS_BIT(UCT_ATOMIC_OP_OR) |
                                       UCS_BIT(UCT_ATOMIC_OP_XOR);
        attr->cap.atomic64.fop_flags = attr->cap.atomic64.op_flags |
                                       UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                                       UCS_BIT(UCT_ATOMIC_OP_CSWAP);
        attr->cap.flags             |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
    }

    attr->latency            = ucs_linear_func_make(
                                   (iface->port->link_layer == IBV_LINK_LAYER_ETHERNET) ?
                                   900e-9 : 700e-9, 1e-9);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = iface->port->bandwidth;
    attr->overhead            = 75e-9;
    attr->priority            = 0;
    return UCS_OK;
}

/* ------------------------------------------------- device address ------ */

/* Our port as gdr_ib_address.c packs it (the GID may be a forced one) */
static void gdr_iface_ib_port(const gdr_iface_t *iface,
                              gdr_ib_address_port_t *port)
{
    port->link_layer   = iface->port->link_layer;
    port->grh_required = iface->port->grh_required;
    port->lid          = iface->port->lid;
    port->gid          = iface->gid;
}

static size_t gdr_iface_device_addr_len(const gdr_iface_t *iface)
{
    gdr_ib_address_port_t port;

    gdr_iface_ib_port(iface, &port);
    return gdr_ib_address_size(&port);
}

static ucs_status_t gdr_iface_get_device_address(uct_iface_h tl_iface,
                                                 uct_device_addr_t *addr)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    gdr_ib_address_port_t port;

    gdr_iface_ib_port(iface, &port);
    gdr_ib_address_pack(&port, addr);
    return UCS_OK;
}

int gdr_iface_is_reachable(const uct_iface_h tl_iface, const uct_device_addr_t *addr,
                           const uct_iface_addr_t *iface_addr)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    gdr_ib_address_port_t port;
    gdr_ib_address_info_t peer;

    /* ours, or rdmacm's in client-server wireup (gdr_ib_address.h) */
    if (gdr_ib_address_unpack(addr, &peer) != 0) {
        return 0;
    }
    gdr_iface_ib_port(iface, &port);
    return gdr_ib_address_reachable(&port, &peer);
}

/* This very port: RoCE by GID; IB by LID, and by GID where the address has
 * the interface id (as uct_ib_iface_is_same_device) */
int gdr_iface_is_same_device(const uct_iface_h tl_iface, const uct_device_addr_t *addr)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    gdr_ib_address_info_t peer;

    if (gdr_ib_address_unpack(addr, &peer) != 0) {
        return 0;
    }
    if (peer.is_eth) {
        return !memcmp(peer.gid.raw, iface->gid.raw, sizeof(peer.gid.raw));
    }
    return (peer.lid == iface->port->lid) &&
           (!peer.has_if_id ||
            !memcmp(peer.gid.raw, iface->gid.raw, sizeof(peer.gid.raw)));
}

/* ----------------------------------------------------- lifecycle -------- */

static ucs_status_t gdr_iface_setup_port(gdr_iface_t *iface,
                                         const gdr_iface_config_t *config)
{
    char err[GDR_VERBS_REASON_MAX];
    int forced_gid = (config->gid_index == UCS_ULUNITS_AUTO) ? -1 :
                     (int)config->gid_index;
    enum ibv_mtu mtu;

    if (gdr_verbs_port_gid(iface->dev, iface->port->port_num, forced_gid,
                           &iface->gid, &iface->qp_local.gid_index, err,
                           sizeof(err)) != 0) {
        if ((forced_gid >= 0) ||
            (iface->port->link_layer == IBV_LINK_LAYER_ETHERNET)) {
            ucs_error("gdr_rc: %s%s", err, (forced_gid >= 0) ?
                      " (UCX_" GDR_CONFIG_PREFIX "GID_INDEX)" : "");
            return UCS_ERR_INVALID_PARAM;
        }
        iface->qp_local.gid_index = 0; /* IB without a GID: LID routing only */
    }
    ucs_debug("gdr_rc: %s:%u GID index %d (%s)", iface->dev->name,
              iface->port->port_num, iface->qp_local.gid_index,
              (forced_gid >= 0) ? "UCX_GDR_GID_INDEX" : iface->port->gid_reason);

    mtu = iface->port->active_mtu;
    if (config->mtu != UCS_MEMUNITS_AUTO) {
        mtu = ucs_min(mtu, gdr_verbs_mtu_from_bytes(config->mtu));
    }

    iface->qp_local.port_num      = iface->port->port_num;
    iface->qp_local.mtu           = mtu;
    iface->qp_local.sl            = (config->sl == UCS_ULUNITS_AUTO) ?
                                    iface->port->sm_sl : config->sl;
    iface->qp_local.traffic_class = config->traffic_class;
    iface->qp_local.hop_limit     = config->hop_limit;
    iface->qp_local.timeout       = gdr_iface_ack_timeout_exp(config->timeout);
    iface->qp_local.retry_count   = config->retry_count;
    iface->qp_local.rnr_retry     = config->rnr_retry_count;
    iface->qp_local.min_rnr_timer = gdr_iface_rnr_timer_code(config->rnr_timeout);
    iface->qp_local.max_rd_atomic = config->max_rd_atomic;
    return UCS_OK;
}

/* Probe how much inline data an RC QP of this device really takes */
static ucs_status_t gdr_iface_probe_qp_caps(gdr_iface_t *iface, size_t max_inline)
{
    char err[GDR_VERBS_REASON_MAX];
    uint32_t inline_size = max_inline;
    struct ibv_qp *qp;

    iface->tx.max_sge = ucs_min(GDR_IFACE_MAX_SGE, iface->dev->attr.max_sge);
    if (gdr_verbs_qp_create(iface->dev->pd, iface->send_cq, iface->recv_cq,
                            iface->srq, iface->tx.queue_len, iface->tx.max_sge,
                            &inline_size, &qp, err, sizeof(err)) != 0) {
        ucs_error("gdr_rc: %s: %s", iface->dev->name, err);
        return UCS_ERR_IO_ERROR;
    }
    ibv_destroy_qp(qp);
    iface->tx.max_inline = ucs_min(inline_size, max_inline);
    return UCS_OK;
}

static uct_iface_ops_t gdr_iface_ops;

static UCS_CLASS_INIT_FUNC(gdr_iface_t, uct_md_h uct_md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    gdr_iface_config_t *config = ucs_derived_of(tl_config, gdr_iface_config_t);
    gdr_md_t *md               = ucs_derived_of(uct_md, gdr_md_t);
    struct ibv_srq_init_attr srq_attr = {};
    size_t rx_align, rx_align_offset;
    unsigned dev_index;
    uint8_t port_num;
    ucs_status_t status;
    int flags;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("gdr_rc: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &gdr_iface_ops,
                              &gdr_iface_internal_ops, uct_md, worker, params,
                              tl_config UCS_STATS_ARG(NULL) UCS_STATS_ARG(GDR_TL_NAME));

    status = gdr_iface_find_port(md, params->mode.device.dev_name, &dev_index,
                                 &port_num);
    if (status != UCS_OK) {
        return status;
    }
    self->dev       = &md->devices[dev_index];
    self->dev_index = dev_index;
    self->port      = gdr_verbs_port(self->dev, port_num);

    status = gdr_iface_check_config(config, self->dev);
    if (status != UCS_OK) {
        return status;
    }
    status = gdr_iface_setup_port(self, config);
    if (status != UCS_OK) {
        return status;
    }

    self->seg_size         = config->seg_size;
    self->tx.queue_len     = config->tx_queue_len;
    /* at most a quarter of the queue between completions (as UCX's rc does),
     * so that a short TX_QUEUE_LEN alone still gets its credits back early */
    self->tx.moderation    = ucs_max(1, ucs_min(config->tx_moderation,
                                                config->tx_queue_len / 4));
    self->tx.max_poll      = config->tx_max_poll;
    self->tx.cq_available  = config->tx_cq_len;
    self->tx.fence_beat    = 0;
    /* no point posting more than there may be buffers */
    self->rx.queue_len     = ucs_min(config->rx_queue_len, config->rx_max_bufs);
    self->rx.max_poll      = config->rx_max_poll;
    self->rx.headroom      = UCT_IFACE_PARAM_VALUE(params, rx_headroom, RX_HEADROOM, 0);
    self->rx.release_desc.cb = gdr_iface_release_desc;
    self->atomic_hca       = (self->dev->attr.atomic_cap != IBV_ATOMIC_NONE);
    self->stash_tx.count   = 0;
    self->stash_rx.count   = 0;
    self->rx.starved       = 0;
    ucs_list_head_init(&self->ep_list);
    kh_init_inplace(gdr_qp_ep, &self->eps);
    ucs_arbiter_init(&self->tx.arbiter);

    self->comp_channel = ibv_create_comp_channel(self->dev->ctx);
    if (self->comp_channel == NULL) {
        ucs_error("gdr_rc: ibv_create_comp_channel(%s) failed: %m", self->dev->name);
        status = UCS_ERR_IO_ERROR;
        goto err;
    }
    flags = fcntl(self->comp_channel->fd, F_GETFL);
    if (fcntl(self->comp_channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        ucs_error("gdr_rc: cannot make the completion channel non-blocking: %m");
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_channel;
    }

    self->send_cq = ibv_create_cq(self->dev->ctx, config->tx_cq_len, NULL,
                                  self->comp_channel, 0);
    if (self->send_cq == NULL) {
        ucs_error("gdr_rc: ibv_create_cq(%s, %u) failed: %m", self->dev->name,
                  config->tx_cq_len);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_channel;
    }
    self->recv_cq = ibv_create_cq(self->dev->ctx, config->rx_queue_len, NULL,
                                  self->comp_channel, 0);
    if (self->recv_cq == NULL) {
        ucs_error("gdr_rc: ibv_create_cq(%s, %u) failed: %m", self->dev->name,
                  config->rx_queue_len);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_send_cq;
    }

    srq_attr.attr.max_wr  = config->rx_queue_len;
    srq_attr.attr.max_sge = 1;
    self->srq = ibv_create_srq(self->dev->pd, &srq_attr);
    if (self->srq == NULL) {
        ucs_error("gdr_rc: ibv_create_srq(%s, %u) failed: %m", self->dev->name,
                  config->rx_queue_len);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_recv_cq;
    }

    status = gdr_iface_probe_qp_caps(self, config->max_inline);
    if (status != UCS_OK) {
        goto err_destroy_srq;
    }

    status = gdr_iface_mpool_init(self, &self->tx.desc_mp,
                                  sizeof(gdr_tx_op_t) + self->seg_size, 0,
                                  UCS_SYS_CACHE_LINE_SIZE, UINT_MAX,
                                  &gdr_tx_desc_mpool_ops, "gdr_tx_desc");
    if (status != UCS_OK) {
        goto err_destroy_srq;
    }
    status = gdr_iface_mpool_init(self, &self->tx.op_mp, sizeof(gdr_tx_op_t), 0,
                                  UCS_SYS_CACHE_LINE_SIZE, UINT_MAX,
                                  &gdr_op_mpool_ops, "gdr_tx_op");
    if (status != UCS_OK) {
        goto err_cleanup_desc_mp;
    }
    /* The payload (after our header and the user's headroom) lands where
     * iface params am_alignment/am_align_offset ask; by default the
     * descriptor starts on a cache line.  Invalid values are refused here
     * (by UCX's helper and ucs_mpool_init) with UCS_ERR_INVALID_PARAM. */
    status = uct_iface_param_am_alignment(params, self->seg_size, 0,
                                          sizeof(gdr_rx_desc_t) + self->rx.headroom,
                                          &rx_align, &rx_align_offset);
    if (status != UCS_OK) {
        goto err_cleanup_op_mp;
    }
    status = gdr_iface_mpool_init(self, &self->rx.mp,
                                  sizeof(gdr_rx_desc_t) + self->rx.headroom +
                                  self->seg_size, rx_align_offset, rx_align,
                                  (config->rx_max_bufs == UCS_ULUNITS_INF) ? UINT_MAX :
                                  config->rx_max_bufs,
                                  &gdr_rx_desc_mpool_ops, "gdr_rx_desc");
    if (status != UCS_OK) {
        goto err_cleanup_op_mp;
    }

    self->rx.available = self->rx.queue_len;
    gdr_iface_post_recv(self);
    if (self->rx.available == self->rx.queue_len) {
        ucs_error("gdr_rc: could not post any receive buffer on %s", self->dev->name);
        status = UCS_ERR_NO_MEMORY;
        goto err_cleanup_rx_mp;
    }

    ucs_debug("gdr_rc: iface %p on %s:%u mtu %u gid_index %d inline %u",
              self, self->dev->name, self->port->port_num,
              gdr_verbs_mtu_bytes(self->qp_local.mtu), self->qp_local.gid_index,
              self->tx.max_inline);
    return UCS_OK;

err_cleanup_rx_mp:
    ucs_mpool_cleanup(&self->rx.mp, 0);
err_cleanup_op_mp:
    ucs_mpool_cleanup(&self->tx.op_mp, 0);
err_cleanup_desc_mp:
    ucs_mpool_cleanup(&self->tx.desc_mp, 0);
err_destroy_srq:
    ibv_destroy_srq(self->srq);
err_destroy_recv_cq:
    ibv_destroy_cq(self->recv_cq);
err_destroy_send_cq:
    ibv_destroy_cq(self->send_cq);
err_destroy_channel:
    ibv_destroy_comp_channel(self->comp_channel);
err:
    kh_destroy_inplace(gdr_qp_ep, &self->eps);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(gdr_iface_t)
{
    if (!ucs_list_is_empty(&self->ep_list)) {
        ucs_warn("gdr_rc: iface %p closed with endpoints still open", self);
    }
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ibv_destroy_srq(self->srq); /* posted receive buffers die with it */
    ibv_destroy_cq(self->recv_cq);
    ibv_destroy_cq(self->send_cq);
    ibv_destroy_comp_channel(self->comp_channel);
    ucs_mpool_cleanup(&self->rx.mp, 0);
    ucs_mpool_cleanup(&self->tx.op_mp, 1);
    ucs_mpool_cleanup(&self->tx.desc_mp, 1);
    kh_destroy_inplace(gdr_qp_ep, &self->eps);
}

UCS_CLASS_DEFINE(gdr_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_DELETE_FUNC(gdr_iface_t, uct_iface_t);
UCS_CLASS_DEFINE_NEW_FUNC(gdr_iface_t, uct_iface_t, uct_md_h, uct_worker_h,
                          const uct_iface_params_t*, const uct_iface_config_t*);

static uct_iface_ops_t gdr_iface_ops = {
    .ep_put_short             = gdr_ep_put_short,
    .ep_put_bcopy             = gdr_ep_put_bcopy,
    .ep_put_zcopy             = gdr_ep_put_zcopy,
    .ep_get_bcopy             = gdr_ep_get_bcopy,
    .ep_get_zcopy             = gdr_ep_get_zcopy,
    .ep_am_short              = gdr_ep_am_short,
    .ep_am_short_iov          = gdr_ep_am_short_iov,
    .ep_am_bcopy              = gdr_ep_am_bcopy,
    .ep_am_zcopy              = gdr_ep_am_zcopy,
    .ep_atomic_cswap64        = gdr_ep_atomic_cswap64,
    .ep_atomic64_post         = gdr_ep_atomic64_post,
    .ep_atomic64_fetch        = gdr_ep_atomic64_fetch,
    .ep_pending_add           = gdr_ep_pending_add,
    .ep_pending_purge         = gdr_ep_pending_purge,
    .ep_flush                 = gdr_ep_flush,
    .ep_fence                 = gdr_ep_fence,
    .ep_check                 = gdr_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(gdr_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(gdr_ep_t),
    .ep_get_address           = gdr_ep_get_address,
    .ep_connect_to_ep         = gdr_ep_connect_to_ep,
    .iface_flush              = gdr_iface_flush,
    .iface_fence              = gdr_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = gdr_iface_progress,
    .iface_event_fd_get       = gdr_iface_event_fd_get,
    .iface_event_arm          = gdr_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(gdr_iface_t),
    .iface_query              = gdr_iface_query,
    .iface_get_device_address = gdr_iface_get_device_address,
    .iface_get_address        = (uct_iface_get_address_func_t)ucs_empty_function_return_success,
    .iface_is_reachable       = gdr_iface_is_reachable
};
