/**
 * gdr_ep_flush.c - what orders and checks the work an endpoint posted: flush (also of the
 * whole iface), fence (likewise), the keepalive check of the peer, and the stall check
 * that ends an endpoint whose peer stopped answering (UCX_GDR_STALL_TIMEOUT).
 */
#include "gdr_ep.inl"

#include <ucs/time/time.h>
#include <stdlib.h>
#include <unistd.h>


/* @a op finishes when the last WR posted so far completes */
static void gdr_ep_op_behind_last_wr(gdr_ep_t *ep, gdr_tx_op_t *op)
{
    op->sn = ep->tx.posted_sn;
    ucs_queue_push(&ep->tx.outstanding, &op->queue);
}

/* A flush is done when every WR before it completed and no CAS loop will post
 * more: a loop still running moves the flush behind its next WR */
static void gdr_op_flush(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    if ((status == UCS_OK) && (ep->tx.cas_loops > 0) &&
        (ep->tx.posted_sn != ep->tx.completed_sn)) {
        gdr_ep_op_behind_last_wr(ep, op);
        return;
    }
    gdr_op_complete(op, ep, status);
}

/* Moves the QP to the error state: every outstanding WR completes flushed.
 * Not inline: the reason buffer stays off the frame of flush. */
static UCS_F_NOINLINE ucs_status_t gdr_ep_qp_to_error(gdr_ep_t *ep)
{
    ucs_status_t status;
    gdr_reason_t why;

    status = gdr_verbs_qp_to_error(ep->qp, &why);
    if (status != UCS_OK) {
        ucs_error("gdr_rc: cannot move qpn 0x%x to the error state: %s",
                  ep->qp->qp_num, why.text);
    }
    return status;
}

/* A zero-length RDMA write: no rkey check, completes after all before it */
static ucs_status_t gdr_ep_post_nop(gdr_iface_t *iface, gdr_ep_t *ep)
{
    gdr_verbs_wr_t wr;

    gdr_wr_rdma(&wr, IBV_WR_RDMA_WRITE, 0, 0, 0);
    wr.sge.addr   = 0;
    wr.sge.length = 0;
    wr.sge.lkey   = 0;
    return gdr_ep_post(iface, ep, &wr, 1, NULL);
}

ucs_status_t
gdr_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    ucs_status_t status;
    gdr_tx_op_t *op;

    /* No send resources: requests may be waiting for them on the pending
     * queue, which the HCA has not seen yet and which this flush must not
     * overtake (UCP's nbi puts and gets are such requests once the send queue
     * is full): UCP then queues the flush behind them.  As rc_verbs, whatever
     * is in flight; checking only where a NOP is to be posted let a flush
     * whose last WR was signaled (every get) complete before the pending ones
     * were even posted (MPICH's rma/test5 under Open MPI's osc ucx: 2000
     * gets, one fence, 1700 of them landing after it). */
    if (ucs_unlikely(
                ((ep->flags & (GDR_EP_FLAG_FAILED | GDR_EP_FLAG_CONNECTED)) ==
                 GDR_EP_FLAG_CONNECTED) &&
                !gdr_ep_has_tx_resources(iface, ep))) {
        return UCS_ERR_NO_RESOURCE;
    }

    if (ep->tx.posted_sn == ep->tx.completed_sn) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return UCS_OK;
    }

    if (!(ep->flags & (GDR_EP_FLAG_FAILED | GDR_EP_FLAG_FLUSH_CANCEL))) {
        /* The last WR is unsignaled: add one that will produce a completion,
         * also before a cancel.  An unsignaled WR that the HCA already
         * executed leaves no trace in the send queue, so moving the QP to the
         * error state would flush nothing for it, and only a later CQE (this
         * NOP's, successful or flushed) can tell that it is done.  A failed
         * QP needs none: every WR after the failed one completes flushed.
         * Its resources were checked above: an ep with WRs in flight is
         * connected (the flag is never cleared). */
        if (ep->tx.signaled_sn != ep->tx.posted_sn) {
            status = gdr_ep_post_nop(iface, ep);
            if (status != UCS_OK) {
                return status;
            }
        }
        if (flags & UCT_FLUSH_FLAG_CANCEL) {
            /* every outstanding WR completes flushed, ops get CANCELED */
            ep->flags |= GDR_EP_FLAG_FLUSH_CANCEL;
            status = gdr_ep_qp_to_error(ep);
            if (status != UCS_OK) {
                return status;
            }
        }
    }

    if (comp != NULL) {
        op = gdr_ep_op_get(iface, 0, gdr_op_flush, comp);
        if (op == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        gdr_ep_op_behind_last_wr(ep, op);
    }
    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    return UCS_INPROGRESS;
}

/* The next WR fences: its beat differs from the iface's (gdr_ep_post) */
static void gdr_ep_fence_next_wr(gdr_ep_t *ep)
{
    ep->fence_beat = gdr_ep_iface(ep)->tx.fence_beat - 1;
}

/*
 * A fence orders every operation before it before every operation after it.
 * The weak fence (UCX_GDR_FENCE=weak, the default but on Soft-RoCE, whose
 * strong one is below): the next WR carries IBV_SEND_FENCE (it waits for the
 * reads and atomics in flight; RC orders the rest), which is all UCX's rc
 * transports do.  An emulated atomic is more than its WRs in flight: a
 * compare-and-swap loop whose CAS misses posts its next one when that
 * completes, after any WR the fence let through meanwhile, so its effect
 * would land behind operations posted after the fence (a get after
 * `atomic32_post; fence` read the word without the add).  While loops run, a
 * fence therefore holds the endpoint: its operations answer
 * UCS_ERR_NO_RESOURCE (UCP queues them as pending) until the last loop is done
 * (gdr_ep_fence_loops_done).  The test costs the data path nothing: the flag
 * is in the mask gdr_ep_check_tx() tests anyway.
 */
static void gdr_ep_fence_hold_for_loops(gdr_ep_t *ep)
{
    if (ep->tx.cas_loops > 0) {
        ep->flags |= GDR_EP_FLAG_FENCE_LOOPS;
    }
}

void gdr_ep_fence_loops_done(gdr_ep_t *ep)
{
    ep->flags &= ~GDR_EP_FLAG_FENCE_LOOPS;
    /* still the next WR fences: gets and verbs atomics posted before the
     * fence may be in flight.  The pending requests go on once this loop's
     * completion returns its credits (gdr_ep_tx_completed schedules them). */
    gdr_ep_fence_next_wr(ep);
}

/*
 * A strong fence (UCX_GDR_FENCE=strong, and auto on Soft-RoCE) holds the
 * endpoint until everything posted before it completed and no
 * compare-and-swap loop runs, and puts no IBV_SEND_FENCE on any WR.  Soft-RoCE
 * needs it: its requester holds a WR with IBV_SEND_FENCE until every read and
 * atomic credit of the QP is back, the credits of the reads and atomics posted
 * *after* it and its own included, so that once a retransmission rewinds the
 * send queue to (or before) a fenced read or atomic, that WR waits for itself
 * and the QP stops for good (docs/atomics.md).  Held (GDR_EP_FLAG_FENCE_DRAIN,
 * in the masks the data path tests anyway), the endpoint answers
 * UCS_ERR_NO_RESOURCE and UCP queues its requests as pending.  The iface's
 * progress callback below, registered while an endpoint is held, ends the
 * hold once the endpoint is drained and makes sure that a completion comes
 * meanwhile: a signaled NOP behind an unsignaled last WR, as soon as there is
 * room for it.  Nothing of it is on the data path.
 */

/* 1: drained, the hold ended; 0: not yet */
static int gdr_ep_fence_drain_progress(gdr_iface_t *iface, gdr_ep_t *ep)
{
    if (((ep->tx.posted_sn == ep->tx.completed_sn) &&
         (ep->tx.cas_loops == 0)) ||
        (ep->flags & GDR_EP_FLAG_FAILED)) {
        ep->flags &= ~GDR_EP_FLAG_FENCE_DRAIN;
        /* requests queued behind the fence: the next dispatch sends them */
        ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
        return 1;
    }
    if ((ep->tx.signaled_sn != ep->tx.posted_sn) && /* last WR unsignaled */
        (ep->tx.available > 0) && (iface->tx.cq_available > 0)) {
        gdr_ep_post_nop(iface, ep); /* its completion reports them all */
    }
    return 0;
}

/* While endpoints are held by a strong fence: at every progress of the worker */
static unsigned gdr_iface_fence_progress(void *arg)
{
    gdr_iface_t *iface = arg;
    unsigned held      = 0;
    gdr_ep_t *ep;

    ucs_list_for_each(ep, &iface->ep_list, list) {
        if ((ep->flags & GDR_EP_FLAG_FENCE_DRAIN) &&
            !gdr_ep_fence_drain_progress(iface, ep)) {
            ++held;
        }
    }
    if (held == 0) {
        uct_worker_progress_unregister_safe(&iface->super.worker->super,
                                            &iface->fence_prog_id);
    }
    return 0;
}

static void gdr_ep_fence_drain(gdr_iface_t *iface, gdr_ep_t *ep)
{
    if ((ep->flags & (GDR_EP_FLAG_FAILED | GDR_EP_FLAG_CONNECTED)) !=
        GDR_EP_FLAG_CONNECTED) {
        return; /* nothing in flight to order, or nothing will be posted */
    }
    ep->flags |= GDR_EP_FLAG_FENCE_DRAIN;
    if (!gdr_ep_fence_drain_progress(iface, ep)) {
        uct_worker_progress_register_safe(&iface->super.worker->super,
                                          gdr_iface_fence_progress, iface, 0,
                                          &iface->fence_prog_id);
    }
}

ucs_status_t gdr_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);

    if (iface->fence_strong) {
        gdr_ep_fence_drain(iface, ep);
    } else {
        gdr_ep_fence_next_wr(ep);
        gdr_ep_fence_hold_for_loops(ep);
    }
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}

/* A check whose answer is a completion (UCX >= 1.20 passes one; earlier ones
 * require NULL): known now when the ep failed or is not connected yet,
 * otherwise when a signaled NOP completes, successfully or not */
static ucs_status_t gdr_ep_check_with_completion(gdr_iface_t *iface,
                                                 gdr_ep_t *ep,
                                                 uct_completion_t *comp)
{
    ucs_status_t status;
    gdr_tx_op_t *op;

    if (ep->flags & GDR_EP_FLAG_FAILED) {
        return ep->error;
    }
    if (!(ep->flags & GDR_EP_FLAG_CONNECTED)) {
        return UCS_OK;
    }
    if (!gdr_ep_has_tx_resources(iface, ep)) {
        return UCS_ERR_NO_RESOURCE;
    }
    op = gdr_ep_op_get(iface, 0, gdr_op_flush, comp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    status = gdr_ep_post_nop(iface, ep);
    if (status != UCS_OK) {
        ucs_mpool_put(op);
        return status;
    }
    gdr_ep_op_behind_last_wr(ep, op);
    return UCS_INPROGRESS;
}

/* Keepalive: a signaled NOP to a dead peer ends in a retry-exceeded error,
 * which reaches UCP through the error handler.  Skipped only while a
 * *signaled* WR is in flight (its completion tells the same): unsignaled WRs
 * produce no completion, so "something posted, nothing completed" alone
 * (e.g. a rendezvous RTS sent unsignaled, then silence) would never be
 * checked. */
ucs_status_t
gdr_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);

    UCT_CHECK_PARAM(flags == 0, "Unsupported flags: %x", flags);
    if (comp != NULL) {
        return gdr_ep_check_with_completion(iface, ep, comp);
    }
    if ((ep->flags & GDR_EP_FLAG_FAILED) ||
        !(ep->flags & GDR_EP_FLAG_CONNECTED) ||
        UCS_CIRCULAR_COMPARE16(ep->tx.signaled_sn, >, ep->tx.completed_sn)) {
        return UCS_OK;
    }
    if (!gdr_ep_has_tx_resources(iface, ep)) {
        return UCS_ERR_NO_RESOURCE; /* UCP's keepalive retries it */
    }
    return gdr_ep_post_nop(iface, ep);
}

/*
 * The stall check (UCX_GDR_STALL_TIMEOUT, gdr_iface_init_stall_check): an
 * endpoint with a signaled WR in flight whose completions have not moved for
 * the timeout goes to the error state; its WRs complete flushed and fail it
 * with "Endpoint timeout", the way a retry-exceeded completion would.  Packets
 * the device received meanwhile count as progress for every endpoint: a WR as
 * long as an 8 MiB RDMA read takes seconds on a slow wire, and a dead peer
 * sends nothing (where other peers still do, its endpoint waits as rc_verbs'
 * does on Soft-RoCE).  Only a
 * signaled WR is waited on: an unsignaled one after the last completion
 * never completes by itself on a healthy connection, and UCP's keepalive
 * (gdr_ep_check) and every flush put a signaled one behind it.
 */
/* Whether the device received packets since the last call (a long transfer
 * still moving); 0 where there is no counter to read */
static int gdr_iface_received_packets(gdr_iface_t *iface)
{
    char buf[32];
    ssize_t len;
    uint64_t value;

    if (iface->stall.rcvd_pkts_fd < 0) {
        return 0;
    }
    len = pread(iface->stall.rcvd_pkts_fd, buf, sizeof(buf) - 1, 0);
    if (len <= 0) {
        return 0;
    }
    buf[len] = '\0';
    value    = strtoull(buf, NULL, 10);
    if (value == iface->stall.rcvd_pkts) {
        return 0;
    }
    iface->stall.rcvd_pkts = value;
    return 1;
}

UCS_F_NOINLINE void gdr_iface_check_stalls(gdr_iface_t *iface)
{
    ucs_time_t now;
    int moving;
    gdr_ep_t *ep;

    iface->stall.countdown = iface->stall.every;
    if (iface->stall.timeout == 0) {
        return;
    }
    now = ucs_get_time();
    if (now < iface->stall.next_check) {
        return;
    }
    iface->stall.next_check = now + iface->stall.interval;
    moving                  = gdr_iface_received_packets(iface);
    ucs_list_for_each(ep, &iface->ep_list, list) {
        if ((ep->flags & (GDR_EP_FLAG_FAILED | GDR_EP_FLAG_STALLED)) ||
            !UCS_CIRCULAR_COMPARE16(ep->tx.signaled_sn, >,
                                    ep->tx.completed_sn)) {
            ep->stall.since = 0; /* nothing waited on */
            continue;
        }
        if (moving || (ep->stall.since == 0) ||
            (ep->stall.completed_sn != ep->tx.completed_sn)) {
            /* the wait starts now, or something moved since last time: the
             * window starts at a check that saw the endpoint waiting, never
             * at one that saw it idle, however long ago that was */
            ep->stall.completed_sn = ep->tx.completed_sn;
            ep->stall.since        = now;
            continue;
        }
        if ((now - ep->stall.since) < iface->stall.timeout) {
            continue;
        }
        ucs_diag("gdr_rc: endpoint %p (qpn 0x%x) to a peer that has not "
                 "answered for %.1f s (UCX_GDR_STALL_TIMEOUT): failing it",
                 ep, ep->qp->qp_num, ucs_time_to_sec(now - ep->stall.since));
        ep->flags |= GDR_EP_FLAG_STALLED;
        if (gdr_ep_qp_to_error(ep) != UCS_OK) {
            ep->flags &= ~GDR_EP_FLAG_STALLED; /* logged; try again later */
        }
    }
}

ucs_status_t
gdr_iface_flush(uct_iface_h tl_iface, unsigned flags, uct_completion_t *comp)
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

ucs_status_t gdr_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    gdr_ep_t *ep;

    if (iface->fence_strong) {
        ucs_list_for_each(ep, &iface->ep_list, list) {
            gdr_ep_fence_drain(iface, ep);
        }
        return UCS_OK;
    }
    ++iface->tx.fence_beat; /* every ep fences its next WR */
    if (iface->tx.cas_loops > 0) {
        /* and those with compare-and-swap loops running wait for them */
        ucs_list_for_each(ep, &iface->ep_list, list) {
            gdr_ep_fence_hold_for_loops(ep);
        }
    }
    return UCS_OK;
}
