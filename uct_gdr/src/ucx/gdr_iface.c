/**
 * gdr_iface.c - transport "gdr_rc": opening an interface on one port (its CQs, completion
 * channel and SRQ, the QP settings every endpoint connects with) with the ops tables the
 * component hands it, refilling its SRQ, and closing it.  The other concerns of the iface
 * are in their own files (gdr_iface.h).
 */
#include "gdr_iface.h"
#include "gdr_iface_mpool.h"
#include "gdr_device.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <fcntl.h>
#include <math.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>

#define GDR_IFACE_MAX_SGE 4 /* am_zcopy: header + 3 iov entries */

/* Soft-RoCE (rdma_rxe), whose retry count, fence and atomics gdr_rc treats
 * apart: docs/atomics.md, docs/reliability.md */
static int gdr_iface_is_soft_roce(const gdr_iface_t *iface)
{
    return iface->dev->attr.vendor_id == GDR_SOFT_ROCE_VENDOR_ID;
}

/* Local ACK timeout exponent: 4.096us * 2^exp >= timeout */
static uint8_t gdr_iface_ack_timeout_exp(double timeout)
{
    double exp = ceil(log2(timeout / 4.096e-6));
    return (uint8_t)ucs_max(1, ucs_min(31, (int)exp));
}

/* IBTA min RNR NAK timer encoding (milliseconds), code 0 = 655.36 ms */
static uint8_t gdr_iface_rnr_timer_code(double timeout)
{
    static const double ms[32] = {655.36, 0.01,  0.02,  0.03,   0.04,   0.06,
                                  0.08,   0.12,  0.16,  0.24,   0.32,   0.48,
                                  0.64,   0.96,  1.28,  1.92,   2.56,   3.84,
                                  5.12,   7.68,  10.24, 15.36,  20.48,  30.72,
                                  40.96,  61.44, 81.92, 122.88, 163.84, 245.76,
                                  327.68, 491.52};
    double want                = timeout * 1e3;
    uint8_t code;

    for (code = 1; code < 32; ++code) {
        if (ms[code] >= want) {
            return code;
        }
    }
    return 0;
}

static ucs_status_t
gdr_iface_setup_port(gdr_iface_t *iface, const gdr_iface_config_t *config)
{
    int forced_gid = (config->gid_index == UCS_ULUNITS_AUTO) ?
                             -1 :
                             (int)config->gid_index;
    ucs_status_t status;
    gdr_reason_t why;
    enum ibv_mtu mtu;

    status = gdr_verbs_port_gid(iface->dev, iface->port->port_num, forced_gid,
                                &iface->gid, &iface->qp_local.gid_index, &why);
    if (status != UCS_OK) {
        if ((forced_gid >= 0) ||
            (iface->port->link_layer == IBV_LINK_LAYER_ETHERNET)) {
            ucs_error("gdr_rc: %s%s", why.text,
                      (forced_gid >= 0) ? " (UCX_" GDR_CONFIG_PREFIX
                                          "GID_INDEX)" :
                                          "");
            return status;
        }
        iface->qp_local.gid_index = 0; /* IB without a GID: LID routing only */
    }
    ucs_debug("gdr_rc: %s:%u GID index %d (%s)", iface->dev->name,
              iface->port->port_num, iface->qp_local.gid_index,
              (forced_gid >= 0) ? "UCX_GDR_GID_INDEX" :
                                  iface->port->gid_reason);

    mtu = iface->port->active_mtu;
    if (config->mtu != UCS_MEMUNITS_AUTO) {
        mtu = ucs_min(mtu, gdr_verbs_mtu_from_bytes(config->mtu));
    }

    iface->qp_local.port_num = iface->port->port_num;
    iface->qp_local.mtu      = mtu;
    iface->qp_local.sl = (config->sl == UCS_ULUNITS_AUTO) ? iface->port->sm_sl :
                                                            config->sl;
    iface->qp_local.traffic_class = config->traffic_class;
    iface->qp_local.hop_limit     = config->hop_limit;
    iface->qp_local.timeout       = gdr_iface_ack_timeout_exp(config->timeout);
    iface->qp_local.retry_count   = config->retry_count;
    iface->qp_local.rnr_retry     = config->rnr_retry_count;
    iface->qp_local.min_rnr_timer = gdr_iface_rnr_timer_code(
            config->rnr_timeout);
    iface->qp_local.max_rd_atomic = config->max_rd_atomic;
    return UCS_OK;
}

/* A network device that carries nothing off the host: the loopback device, or
 * a dummy one (it drops whatever is not for one of its own addresses) */
static int gdr_netdev_is_host_local(const char *name)
{
    struct ethtool_drvinfo info = {.cmd = ETHTOOL_GDRVINFO};
    struct ifreq ifr            = {};
    int fd, local;

    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return 0;
    }
    ucs_strncpy_zero(ifr.ifr_name, name, sizeof(ifr.ifr_name));
    if ((ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) &&
        (ifr.ifr_flags & IFF_LOOPBACK)) {
        local = 1;
    } else {
        ifr.ifr_data = (void *)&info;
        local        = (ioctl(fd, SIOCETHTOOL, &ifr) == 0) &&
                !strcmp(info.driver, "dummy");
    }
    close(fd);
    return local;
}

/* Soft-RoCE whose packets may cross a wire, where they can be lost: the
 * network device of the iface's GID is neither lo nor a dummy one.  (Its
 * completer can then finish a fetching atomic without the value: an RDMA
 * write's ACK lost with the atomic's response behind it, the write's resent
 * duplicate is answered with an ACK of the atomic's PSN, which completes it;
 * docs/atomics.md.)  @a netdev: its name, for the log. */
static int gdr_iface_soft_roce_on_a_wire(gdr_iface_t *iface, char *netdev)
{
    struct ibv_gid_entry entry;

    ucs_strncpy_zero(netdev, "?", IF_NAMESIZE);
    if (!gdr_iface_is_soft_roce(iface)) {
        return 0;
    }
    if ((ibv_query_gid_ex(iface->dev->ctx, iface->port->port_num,
                          iface->qp_local.gid_index, &entry, 0) != 0) ||
        (if_indextoname(entry.ndev_ifindex, netdev) == NULL)) {
        return 1; /* cannot tell: as if it could */
    }
    return !gdr_netdev_is_host_local(netdev);
}

/*
 * The stall check (UCX_GDR_STALL_TIMEOUT).  Soft-RoCE retries for ever at
 * RETRY_COUNT=7, which the IBTA defines as seven retries (7 means "for ever"
 * only for the RNR retry count): a peer that stopped answering -- its process
 * killed, its host gone -- would hold the endpoint, and a caller without
 * error handling, for good.  A lower retry count is no cure there: rxe spends
 * a retry on every sequence-error NAK as well as on every ack timeout, so 6
 * ends a stream under a 3 s cut that an HCA at 7 (and rxe at 7) survives.
 * The check keeps 7 on the wire and gives the endpoint the bound an HCA keeps,
 * TIMEOUT * (RETRY_COUNT + 1), counted while a signaled WR waits.  Where
 * retries end by themselves, 'auto' leaves it off.  rxe's retransmission
 * timer counts in jiffies, at least one (10 ms at HZ=100, the coarsest), so
 * the ack timeout counts as no less than that: with UCX_GDR_TIMEOUT=10us a
 * bound of 8 x 8.192 us would fail endpoints that merely wait for rxe's first
 * retransmission.
 */
static void
gdr_iface_init_stall_check(gdr_iface_t *iface, const gdr_iface_config_t *config)
{
    static const double rxe_timer_tick = 10e-3; /* one jiffy at HZ=100 */
    ucs_time_t timeout                 = config->stall_timeout;
    double ack_timeout =
            ucs_max(4.096e-6 * (double)(1ul << iface->qp_local.timeout),
                    rxe_timer_tick);

    if (timeout == UCS_TIME_AUTO) {
        timeout = ((config->retry_count == 7) &&
                   gdr_iface_is_soft_roce(iface)) ?
                          ucs_time_from_sec(ack_timeout *
                                            (config->retry_count + 1)) :
                          UCS_TIME_INFINITY;
    }
    if (timeout == UCS_TIME_INFINITY) {
        iface->stall.timeout = 0;
        iface->stall.every   = UINT_MAX;
    } else {
        iface->stall.timeout = timeout;
        /* checks every 1/8 of the bound: a stalled endpoint is first seen
         * waiting within 1/8 and fails within 1/8 past its bound; the clock is
         * read once per 64 empty polls, not on every one */
        iface->stall.every = 64;
    }
    iface->stall.interval     = ucs_max(iface->stall.timeout / 8, 1);
    iface->stall.next_check   = 0;
    iface->stall.countdown    = iface->stall.every;
    iface->stall.rcvd_pkts_fd = -1;
    iface->stall.rcvd_pkts    = 0;
}

/* Soft-RoCE counts every packet that reached a live QP of the device
 * (rcvd_pkts, after the QP lookup and the ICRC check): while it grows, a long
 * RDMA read or write is still moving although no WR completed.  Opened last,
 * once nothing in the constructor can fail. */
static void gdr_iface_open_stall_counter(gdr_iface_t *iface)
{
    char path[PATH_MAX];

    if (iface->stall.timeout == 0) {
        return;
    }
    ucs_snprintf_safe(path, sizeof(path),
                      "/sys/class/infiniband/%s/ports/%u/hw_counters/rcvd_pkts",
                      iface->dev->name, iface->port->port_num);
    iface->stall.rcvd_pkts_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (iface->stall.rcvd_pkts_fd < 0) {
        ucs_debug("gdr_rc: %s: no received-packet counter (%m): the stall "
                  "check goes by completions alone",
                  path);
    }
}

/* UCX_GDR_DEVICE_ATOMICS: whether the iface advertises the device's atomics */
static ucs_status_t gdr_iface_setup_atomics(gdr_iface_t *iface, int mode)
{
    int hca = (iface->dev->attr.atomic_cap != IBV_ATOMIC_NONE);
    char netdev[IF_NAMESIZE];

    if ((mode == UCS_YES) && !hca) {
        ucs_error("gdr_rc: UCX_" GDR_CONFIG_PREFIX "DEVICE_ATOMICS=yes, but "
                  "%s has no atomics",
                  iface->dev->name);
        return UCS_ERR_UNSUPPORTED;
    }
    iface->atomic_hca = hca && (mode != UCS_NO);
    if (iface->atomic_hca && (mode != UCS_YES) &&
        gdr_iface_soft_roce_on_a_wire(iface, netdev)) {
        iface->atomic_hca = 0;
        ucs_debug("gdr_rc: %s:%u (Soft-RoCE on %s): device atomics not "
                  "advertised (UCX_" GDR_CONFIG_PREFIX "DEVICE_ATOMICS=auto)",
                  iface->dev->name, iface->port->port_num, netdev);
    }
    return UCS_OK;
}

/* Probe what an RC QP of this device really gives: how much inline data, and
 * whether it has the ibv_wr_* builders that UCX_GDR_WR_API asks for */
static ucs_status_t
gdr_iface_probe_qp_caps(gdr_iface_t *iface, size_t max_inline, int wr_api)
{
    uint32_t inline_size = max_inline;
    ucs_status_t status;
    struct ibv_qp_ex *qpx;
    struct ibv_qp *qp;
    gdr_reason_t why;

    iface->tx.max_sge = ucs_min(GDR_IFACE_MAX_SGE, iface->dev->attr.max_sge);
    iface->tx.send_ops_flags = (wr_api == UCS_NO) ? 0 :
                                                    GDR_VERBS_WR_API_SEND_OPS;
    status = gdr_verbs_qp_create(iface->dev->pd, iface->send_cq, iface->recv_cq,
                                 iface->srq, iface->tx.queue_len,
                                 iface->tx.max_sge, iface->tx.send_ops_flags,
                                 &inline_size, &qp, &qpx, &why);
    if (status != UCS_OK) {
        ucs_error("gdr_rc: %s: %s", iface->dev->name, why.text);
        return status;
    }
    ibv_destroy_qp(qp);
    if ((qpx == NULL) && (iface->tx.send_ops_flags != 0)) {
        if (wr_api == UCS_YES) {
            ucs_error("gdr_rc: %s: UCX_" GDR_CONFIG_PREFIX
                      "WR_API=yes, but the "
                      "provider has no ibv_wr_* builders for RC QPs",
                      iface->dev->name);
            return UCS_ERR_UNSUPPORTED;
        }
        /* not asked again of every endpoint's QP */
        iface->tx.send_ops_flags = 0;
    }
    iface->tx.max_inline = ucs_min(inline_size, max_inline);
    return UCS_OK;
}

ucs_status_t gdr_iface_ep_add(gdr_iface_t *iface, gdr_ep_t *ep, uint32_t qp_num)
{
    gdr_ep_t ***block = &iface->eps[(qp_num >> GDR_QP_TABLE_ORDER) &
                                    (UCS_BIT(24 - GDR_QP_TABLE_ORDER) - 1)];

    if (*block == NULL) {
        *block = ucs_calloc(UCS_BIT(GDR_QP_TABLE_ORDER), sizeof(**block),
                            "gdr_rc qp table");
        if (*block == NULL) {
            ucs_error("gdr_rc: no memory for the endpoint table");
            return UCS_ERR_NO_MEMORY;
        }
    }
    if ((*block)[qp_num & GDR_QP_TABLE_MASK] != NULL) {
        ucs_error("gdr_rc: qpn 0x%x is already in use", qp_num);
        return UCS_ERR_ALREADY_EXISTS;
    }
    (*block)[qp_num & GDR_QP_TABLE_MASK] = ep;
    return UCS_OK;
}

void gdr_iface_ep_remove(gdr_iface_t *iface, uint32_t qp_num)
{
    gdr_ep_t **block = iface->eps[qp_num >> GDR_QP_TABLE_ORDER];

    if (block != NULL) {
        block[qp_num & GDR_QP_TABLE_MASK] = NULL;
    }
}

static void gdr_iface_eps_cleanup(gdr_iface_t *iface)
{
    size_t i;

    for (i = 0; i < ucs_static_array_size(iface->eps); ++i) {
        ucs_free(iface->eps[i]);
    }
}

static UCS_CLASS_INIT_FUNC(gdr_iface_t, uct_iface_ops_t *ops,
                           uct_iface_internal_ops_t *internal_ops,
                           uct_md_h uct_md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    gdr_iface_config_t *config = ucs_derived_of(tl_config, gdr_iface_config_t);
    gdr_md_t *md               = ucs_derived_of(uct_md, gdr_md_t);
    struct ibv_srq_init_attr srq_attr = {};
    char md_name[UCT_MD_NAME_MAX];
    uint8_t port_num;
    ucs_status_t status;
    int flags;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("gdr_rc: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, ops, internal_ops, uct_md,
                              worker, params,
                              tl_config UCS_STATS_ARG(NULL)
                                      UCS_STATS_ARG(GDR_TL_NAME));

    status = gdr_device_find_port(&md->dev, params->mode.device.dev_name,
                                  &port_num);
    if (status != UCS_OK) {
        gdr_md_name_of(md->dev.name, md_name, sizeof(md_name));
        ucs_error("gdr_rc: no active port '%s' on md %s",
                  params->mode.device.dev_name, md_name);
        return status;
    }
    self->dev  = &md->dev;
    self->port = gdr_verbs_port(self->dev, port_num);

    status = gdr_iface_config_check(config, self->dev);
    if (status != UCS_OK) {
        return status;
    }
    status = gdr_iface_setup_port(self, config);
    if (status != UCS_OK) {
        return status;
    }
    status = gdr_iface_setup_atomics(self, config->device_atomics);
    if (status != UCS_OK) {
        return status;
    }

    self->seg_size     = config->seg_size;
    self->tx.queue_len = config->tx_queue_len;
    /* at most a quarter of the queue between completions (as UCX's rc does),
     * so that a short TX_QUEUE_LEN alone still gets its credits back early */
    self->tx.moderation   = ucs_max(1, ucs_min(config->tx_moderation,
                                               config->tx_queue_len / 4));
    self->tx.max_poll     = config->tx_max_poll;
    self->tx.cq_available = config->tx_cq_len;
    self->tx.cq_len       = config->tx_cq_len;
    self->tx.fence_beat   = 0;
    self->tx.cas_loops    = 0;
    /* Soft-RoCE's requester holds a fenced WR until every read and atomic
     * credit is back, its own included: once retransmitted, a fenced read or
     * atomic waits for itself (docs/atomics.md, "On Soft-RoCE") */
    self->fence_strong = (config->fence == GDR_FENCE_STRONG) ||
                         ((config->fence == GDR_FENCE_AUTO) &&
                          gdr_iface_is_soft_roce(self));
    self->fence_prog_id = UCS_CALLBACKQ_ID_NULL;
    gdr_iface_init_stall_check(self, config);
    /* no point posting more than there may be buffers */
    self->rx.queue_len = ucs_min(config->rx_queue_len, config->rx_max_bufs);
    self->rx.max_poll  = config->rx_max_poll;
    /* one ibv_post_srq_recv per 16 messages, not per message (UCX's ib
     * transports batch as much: RX_MAX_BATCH), never more than a quarter of
     * the queue in wait */
    self->rx.post_batch = ucs_max(1, ucs_min(16, self->rx.queue_len / 4));
    self->rx.headroom = UCT_IFACE_PARAM_VALUE(params, rx_headroom, RX_HEADROOM,
                                              0);
    self->stash_tx.count = 0;
    self->stash_rx.count = 0;
    self->rx.starved     = 0;
    ucs_list_head_init(&self->ep_list);
    memset(self->eps, 0, sizeof(self->eps));
    ucs_arbiter_init(&self->tx.arbiter);

    self->comp_channel = ibv_create_comp_channel(self->dev->ctx);
    if (self->comp_channel == NULL) {
        ucs_error("gdr_rc: ibv_create_comp_channel(%s) failed: %m",
                  self->dev->name);
        status = UCS_ERR_IO_ERROR;
        goto err;
    }
    flags = fcntl(self->comp_channel->fd, F_GETFL);
    if (fcntl(self->comp_channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        ucs_error(
                "gdr_rc: cannot make the completion channel non-blocking: %m");
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
    self->srq             = ibv_create_srq(self->dev->pd, &srq_attr);
    if (self->srq == NULL) {
        ucs_error("gdr_rc: ibv_create_srq(%s, %u) failed: %m", self->dev->name,
                  config->rx_queue_len);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_recv_cq;
    }

    status = gdr_iface_probe_qp_caps(self, config->max_inline, config->wr_api);
    if (status != UCS_OK) {
        goto err_destroy_srq;
    }

    status = gdr_iface_mpools_init(self, params, config);
    if (status != UCS_OK) {
        goto err_destroy_srq;
    }

    self->rx.available = self->rx.queue_len;
    gdr_iface_post_recv(self);
    if (self->rx.available == self->rx.queue_len) {
        ucs_error("gdr_rc: could not post any receive buffer on %s",
                  self->dev->name);
        status = UCS_ERR_NO_MEMORY;
        goto err_cleanup_mpools;
    }

    gdr_iface_open_stall_counter(self);
    ucs_debug("gdr_rc: iface %p on %s:%u mtu %u gid_index %d inline %u "
              "posting with %s, %s fence, stall check %.3g s",
              self, self->dev->name, self->port->port_num,
              gdr_verbs_mtu_bytes(self->qp_local.mtu), self->qp_local.gid_index,
              self->tx.max_inline,
              self->tx.send_ops_flags ? "ibv_wr_*" : "ibv_post_send",
              self->fence_strong ? "strong" : "weak",
              ucs_time_to_sec(self->stall.timeout));
    return UCS_OK;

err_cleanup_mpools:
    gdr_iface_mpools_cleanup(self, 0);
err_destroy_srq:
    ibv_destroy_srq(self->srq);
err_destroy_recv_cq:
    ibv_destroy_cq(self->recv_cq);
err_destroy_send_cq:
    ibv_destroy_cq(self->send_cq);
err_destroy_channel:
    ibv_destroy_comp_channel(self->comp_channel);
err:
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(gdr_iface_t)
{
    if (!ucs_list_is_empty(&self->ep_list)) {
        ucs_warn("gdr_rc: iface %p closed with endpoints still open", self);
    }
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    /* the strong fence's progress callback, if registered (gdr_ep_flush.c) */
    uct_worker_progress_unregister_safe(&self->super.worker->super,
                                        &self->fence_prog_id);
    if (self->stall.rcvd_pkts_fd >= 0) {
        close(self->stall.rcvd_pkts_fd);
    }
    ibv_destroy_srq(self->srq); /* posted receive buffers die with it */
    ibv_destroy_cq(self->recv_cq);
    ibv_destroy_cq(self->send_cq);
    ibv_destroy_comp_channel(self->comp_channel);
    gdr_iface_mpools_cleanup(self, 1);
    gdr_iface_eps_cleanup(self);
}

UCS_CLASS_DEFINE(gdr_iface_t, uct_base_iface_t);
UCS_CLASS_DEFINE_NEW_FUNC(gdr_iface_t, uct_iface_t, uct_iface_ops_t *,
                          uct_iface_internal_ops_t *, uct_md_h, uct_worker_h,
                          const uct_iface_params_t *,
                          const uct_iface_config_t *);
UCS_CLASS_DEFINE_DELETE_FUNC(gdr_iface_t, uct_iface_t);
