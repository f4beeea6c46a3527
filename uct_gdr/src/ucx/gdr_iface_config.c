/**
 * gdr_iface_config.c - the transport's settings (UCX_GDR_*, in `ucx_info -c`): the table, and
 * their ranges against what the device can do, checked when an iface opens.
 */
#include "gdr_iface.h"

#include <ucs/debug/log.h>

static const char *gdr_fence_mode_names[] = {[GDR_FENCE_AUTO]   = "auto",
                                             [GDR_FENCE_WEAK]   = "weak",
                                             [GDR_FENCE_STRONG] = "strong",
                                             [GDR_FENCE_LAST]   = NULL};

ucs_config_field_t gdr_iface_config_table[] = {
        {"", "ALLOC=huge,thp,mmap,heap", NULL,
         ucs_offsetof(gdr_iface_config_t, super),
         UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

        {"TX_QUEUE_LEN", "256",
         "Send queue length of each RC QP (work requests in flight per "
         "endpoint).",
         ucs_offsetof(gdr_iface_config_t, tx_queue_len), UCS_CONFIG_TYPE_UINT},

        {"RX_QUEUE_LEN", "1024",
         "Shared receive queue length (active-message receive buffers per "
         "interface).",
         ucs_offsetof(gdr_iface_config_t, rx_queue_len), UCS_CONFIG_TYPE_UINT},

        {"RX_MAX_BUFS", "inf",
         "Most active-message receive buffers an interface allocates, posted "
         "ones and\n"
         "those held by the user (UCT_CB_PARAM_FLAG_DESC) together. When all "
         "are held,\n"
         "senders are slowed by receiver-not-ready NAKs until some are "
         "released.",
         ucs_offsetof(gdr_iface_config_t, rx_max_bufs),
         UCS_CONFIG_TYPE_ULUNITS},

        {"TX_CQ_LEN", "4096",
         "Send completion queue length, shared by all endpoints of an "
         "interface.",
         ucs_offsetof(gdr_iface_config_t, tx_cq_len), UCS_CONFIG_TYPE_UINT},

        {"SEG_SIZE", "8256",
         "Size of bounce buffers: the largest bcopy put/get and active "
         "message.",
         ucs_offsetof(gdr_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

        {"MAX_INLINE", "128",
         "Largest message sent inline in the work request (put/am short); the\n"
         "device may give less.",
         ucs_offsetof(gdr_iface_config_t, max_inline),
         UCS_CONFIG_TYPE_MEMUNITS},

        {"TX_MODERATION", "32",
         "Request a completion at least every this many unsignaled sends (at "
         "most\n"
         "a quarter of TX_QUEUE_LEN is used).",
         ucs_offsetof(gdr_iface_config_t, tx_moderation), UCS_CONFIG_TYPE_UINT},

        {"TX_MAX_POLL", "16", "Send completions polled per progress call.",
         ucs_offsetof(gdr_iface_config_t, tx_max_poll), UCS_CONFIG_TYPE_UINT},

        {"RX_MAX_POLL", "16", "Receive completions polled per progress call.",
         ucs_offsetof(gdr_iface_config_t, rx_max_poll), UCS_CONFIG_TYPE_UINT},

        {"TIMEOUT", "1s",
         "Transport retransmission timeout (rounded to 4.096us * 2^n, n in "
         "1..31).",
         ucs_offsetof(gdr_iface_config_t, timeout), UCS_CONFIG_TYPE_TIME},

        {"RETRY_COUNT", "7",
         "Transport retries before an endpoint fails with a timeout (0..7).",
         ucs_offsetof(gdr_iface_config_t, retry_count), UCS_CONFIG_TYPE_UINT},

        {"STALL_TIMEOUT", "auto",
         "An endpoint whose signaled send has not completed for this\n"
         "long fails with \"Endpoint timeout\", as one whose retries ran\n"
         "out.  'auto': where the device would otherwise retry for ever\n"
         "(Soft-RoCE at RETRY_COUNT=7), TIMEOUT * (RETRY_COUNT + 1), the\n"
         "bound an HCA keeps (TIMEOUT taken as at least 10 ms, rxe's\n"
         "coarsest retransmission tick), counted while the device receives\n"
         "no packet either; elsewhere off.  'inf': off.",
         ucs_offsetof(gdr_iface_config_t, stall_timeout),
         UCS_CONFIG_TYPE_TIME_UNITS},

        {"RNR_TIMEOUT", "1ms",
         "Delay before resending to a peer that had no receive buffer.",
         ucs_offsetof(gdr_iface_config_t, rnr_timeout), UCS_CONFIG_TYPE_TIME},

        {"RNR_RETRY_COUNT", "7",
         "Receiver-not-ready retries (0..7; 7 means retry forever).",
         ucs_offsetof(gdr_iface_config_t, rnr_retry_count),
         UCS_CONFIG_TYPE_UINT},

        {"GID_INDEX", "auto",
         "GID index for RoCE/GRH. 'auto': RoCE v2 IPv4-mapped, then v2 IPv6 "
         "global,\n"
         "then v2 link-local, then RoCE v1.",
         ucs_offsetof(gdr_iface_config_t, gid_index), UCS_CONFIG_TYPE_ULUNITS},

        {"MTU", "auto",
         "Path MTU limit: 256, 512, 1024, 2048 or 4096; 'auto' = port's active "
         "MTU.",
         ucs_offsetof(gdr_iface_config_t, mtu), UCS_CONFIG_TYPE_MEMUNITS},

        {"SL", "auto",
         "InfiniBand service level (0..15); 'auto' = the SM's SL.",
         ucs_offsetof(gdr_iface_config_t, sl), UCS_CONFIG_TYPE_ULUNITS},

        {"TRAFFIC_CLASS", "0", "GRH traffic class / RoCE DSCP<<2|ECN (0..255).",
         ucs_offsetof(gdr_iface_config_t, traffic_class), UCS_CONFIG_TYPE_UINT},

        {"HOP_LIMIT", "255", "GRH hop limit / IP TTL (0..255).",
         ucs_offsetof(gdr_iface_config_t, hop_limit), UCS_CONFIG_TYPE_UINT},

        {"MAX_RD_ATOMIC", "4",
         "Outstanding RDMA reads and atomics per QP, as initiator and target.",
         ucs_offsetof(gdr_iface_config_t, max_rd_atomic), UCS_CONFIG_TYPE_UINT},

        {"WR_API", "try",
         "Post send work requests with the verbs ibv_wr_* builders "
         "(ibv_wr_post(3))\n"
         "instead of ibv_post_send: fewer instructions per operation where "
         "the\n"
         "provider has them. 'try': where it has them; 'yes': fail the iface "
         "where\n"
         "it does not; 'no': ibv_post_send only.",
         ucs_offsetof(gdr_iface_config_t, wr_api), UCS_CONFIG_TYPE_TERNARY},

        {"FENCE", "auto",
         "How a fence (uct_ep_fence, uct_iface_fence; UCP's ucp_worker_fence) "
         "orders\n"
         "an endpoint's operations. 'weak': IBV_SEND_FENCE on the next work "
         "request,\n"
         "as UCX's rc_verbs; 'strong': the next operation waits until "
         "everything\n"
         "posted before it completed; 'auto': strong on Soft-RoCE (rxe), whose "
         "fenced\n"
         "reads and atomics never complete once retransmitted, weak elsewhere.",
         ucs_offsetof(gdr_iface_config_t, fence),
         UCS_CONFIG_TYPE_ENUM(gdr_fence_mode_names)},

        {"DEVICE_ATOMICS", "auto",
         "Advertise the device's atomics (UCP then runs its atomics on gdr_rc "
         "instead\n"
         "of emulating them over active messages). 'auto': where the device "
         "has\n"
         "atomics, except Soft-RoCE (rxe) over a network device other than lo "
         "or a\n"
         "dummy one: it can complete a fetching atomic whose response was "
         "lost\n"
         "without its value. 'yes': fail the iface where the device has no "
         "atomics;\n"
         "'no': never.",
         ucs_offsetof(gdr_iface_config_t, device_atomics),
         UCS_CONFIG_TYPE_TERNARY_AUTO},

        {NULL}};

#define GDR_CHECK_RANGE(_name, _value, _min, _max)                \
    if (((_value) < (_min)) || ((_value) > (_max))) {             \
        ucs_error("gdr_rc: UCX_" GDR_CONFIG_PREFIX _name          \
                  "=%lu is out of range "                         \
                  "[%lu..%lu]",                                   \
                  (unsigned long)(_value), (unsigned long)(_min), \
                  (unsigned long)(_max));                         \
        return UCS_ERR_INVALID_PARAM;                             \
    }

ucs_status_t gdr_iface_config_check(const gdr_iface_config_t *config,
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
    if (config->stall_timeout == 0) {
        ucs_error("gdr_rc: UCX_" GDR_CONFIG_PREFIX "STALL_TIMEOUT=0 would fail "
                  "every endpoint with a send in flight; 'inf' turns the "
                  "check off");
        return UCS_ERR_INVALID_PARAM;
    }
    GDR_CHECK_RANGE("TRAFFIC_CLASS", config->traffic_class, 0, 255);
    GDR_CHECK_RANGE("HOP_LIMIT", config->hop_limit, 0, 255);
    GDR_CHECK_RANGE("MAX_RD_ATOMIC", config->max_rd_atomic, 1,
                    (unsigned)ucs_min(dev->attr.max_qp_rd_atom,
                                      dev->attr.max_qp_init_rd_atom));
    if (config->sl != UCS_ULUNITS_AUTO) {
        GDR_CHECK_RANGE("SL", config->sl, 0, 15);
    }
    /* an int cast would read "inf" as auto and 2^32 as index 0 */
    if (config->gid_index != UCS_ULUNITS_AUTO) {
        GDR_CHECK_RANGE("GID_INDEX", config->gid_index, 0, UINT8_MAX);
    }
    /* the IBTA RNR NAK timer's range: beyond it the code would be clamped */
    if ((config->rnr_timeout <= 0) || (config->rnr_timeout > 655.36e-3)) {
        ucs_error("gdr_rc: UCX_" GDR_CONFIG_PREFIX
                  "RNR_TIMEOUT=%gs is out of range "
                  "(0..655.36ms]",
                  config->rnr_timeout);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->timeout <= 0) || (config->timeout > 8800)) {
        ucs_error("gdr_rc: UCX_" GDR_CONFIG_PREFIX
                  "TIMEOUT=%gs is out of range "
                  "(0..8800s]",
                  config->timeout);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->mtu != UCS_MEMUNITS_AUTO) &&
        (gdr_verbs_mtu_bytes(gdr_verbs_mtu_from_bytes(config->mtu)) !=
         config->mtu)) {
        ucs_error("gdr_rc: UCX_" GDR_CONFIG_PREFIX
                  "MTU=%zu is not one of 256, 512, "
                  "1024, 2048, 4096 or auto",
                  config->mtu);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}
