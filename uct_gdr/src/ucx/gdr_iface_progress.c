/**
 * gdr_iface_progress.c - the iface's progress: receives (active messages into the user's
 * callbacks, the SRQ refilled), send completions (handed to their endpoints), and the
 * pending queue, dispatched as credits come back.
 */
#include "gdr_ep.h"
#include "gdr_am_rx.h"
#include "gdr_iface_mpool.h"

#include <ucs/debug/log.h>
#include <arpa/inet.h>

/* Take CQEs polled by event_arm first, then the CQ itself */
static UCS_F_ALWAYS_INLINE int
gdr_iface_poll(struct ibv_cq *cq, struct ibv_wc *wc, unsigned max,
               struct ibv_wc *stash, unsigned *stash_count)
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

static UCS_F_ALWAYS_INLINE unsigned gdr_iface_progress_rx(gdr_iface_t *iface)
{
    struct ibv_wc wc[16];
    gdr_am_rx_verdict_t verdict;
    gdr_rx_desc_t *desc;
    ucs_status_t status;
    uint32_t am_id;
    int i, count;

    count = gdr_iface_poll(iface->recv_cq, wc, iface->rx.max_poll,
                           iface->stash_rx.wc, &iface->stash_rx.count);
    for (i = 0; i < count; ++i) {
        desc = (gdr_rx_desc_t *)wc[i].wr_id;
        ++iface->rx.available;
        verdict = gdr_am_rx_parse(&wc[i], &am_id);
        if (ucs_unlikely(verdict != GDR_AM_RX_DELIVER)) {
            if (verdict == GDR_AM_RX_BAD_ID) {
                ucs_error("gdr_rc: dropping a message without a valid AM id "
                          "(imm %u, %u bytes, qpn 0x%x)",
                          am_id, wc[i].byte_len, wc[i].qp_num);
            } else if (wc[i].status != IBV_WC_WR_FLUSH_ERR) {
                ucs_debug(
                        "gdr_rc: receive completion with error: %s (qpn 0x%x)",
                        ibv_wc_status_str(wc[i].status), wc[i].qp_num);
            }
            ucs_mpool_put_inline(desc);
            continue;
        }
        GDR_HCA_WROTE(gdr_rx_desc_payload(iface, desc), wc[i].byte_len);
        uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, am_id,
                           gdr_rx_desc_payload(iface, desc), wc[i].byte_len,
                           "gdr_rc: QP 0x%x RX", wc[i].qp_num);
        status = uct_iface_invoke_am(&iface->super, am_id,
                                     gdr_rx_desc_payload(iface, desc),
                                     wc[i].byte_len, UCT_CB_PARAM_FLAG_DESC);
        if (status == UCS_OK) {
            ucs_mpool_put_inline(desc);
        } /* else UCS_INPROGRESS: the user releases it with uct_iface_release_desc */
    }
    /* only a completion makes buffers available (an idle call skips the test);
     * a starved refill is retried on every call until the user releases some */
    if (((count > 0) && (iface->rx.available >= iface->rx.post_batch)) ||
        ucs_unlikely(iface->rx.starved)) {
        gdr_iface_post_recv(iface);
    }
    return count;
}

static ucs_status_t gdr_wc_status(enum ibv_wc_status status)
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

static UCS_F_ALWAYS_INLINE unsigned gdr_iface_progress_tx(gdr_iface_t *iface)
{
    struct ibv_wc wc[16];
    int i, count;
    gdr_ep_t *ep;

    if ((iface->tx.cq_available == iface->tx.cq_len) &&
        (iface->stash_tx.count == 0)) {
        /* no WR in flight: no CQE can come, and the poll (a lock and an
         * indirect call into the provider) is all an idle progress would do */
        count = 0;
    } else {
        count = gdr_iface_poll(iface->send_cq, wc, iface->tx.max_poll,
                               iface->stash_tx.wc, &iface->stash_tx.count);
        /* WRs in flight and none completed: now and then, is one stuck? */
        if (ucs_unlikely((count == 0) && (--iface->stall.countdown == 0))) {
            gdr_iface_check_stalls(iface);
        }
    }
    for (i = 0; i < count; ++i) {
        if (gdr_trace_data_on()) {
            gdr_iface_trace_send_completion(&wc[i]);
        }
        ep = gdr_iface_ep_lookup(iface, wc[i].qp_num);
        if (ucs_unlikely(ep == NULL)) {
            continue; /* endpoint already destroyed */
        }
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS) &&
            (wc[i].status != IBV_WC_WR_FLUSH_ERR)) {
            ucs_debug(
                    "gdr_rc: send completion with error: %s (qpn 0x%x wr sn %u "
                    "vendor_err 0x%x)",
                    ibv_wc_status_str(wc[i].status), wc[i].qp_num,
                    (unsigned)wc[i].wr_id, wc[i].vendor_err);
        }
        gdr_ep_tx_completed(ep, (uint16_t)wc[i].wr_id,
                            gdr_wc_status(wc[i].status));
        /* pending requests go before sends of the next CQE's callbacks */
        ucs_arbiter_dispatch(&iface->tx.arbiter, 1, gdr_ep_arbiter_dispatch_cb,
                             NULL);
    }
    if (count == 0) {
        /* after connect_to_ep, before anything completed */
        ucs_arbiter_dispatch(&iface->tx.arbiter, 1, gdr_ep_arbiter_dispatch_cb,
                             NULL);
    }
    return count;
}

unsigned gdr_iface_progress(uct_iface_h tl_iface)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    unsigned count     = gdr_iface_progress_rx(iface);

    /* Send completions only when nothing was received, as UCX's rc transports
     * do (rc_iface's tx_poll_always=n): a message received is what the caller
     * is waiting for (a reply, a request), and the send CQ keeps until the
     * next call, which finds the receive CQ empty.  Polling both would make
     * every received message dearer than over rc_verbs (perf/cost's
     * recv_am_short row). */
    if (count > 0) {
        return count;
    }
    return gdr_iface_progress_tx(iface);
}
