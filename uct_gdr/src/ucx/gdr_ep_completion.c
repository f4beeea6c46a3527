/**
 * gdr_ep_completion.c - send completions of an endpoint: the ops they finish, and the
 * endpoint's failure when one reports an error.
 */
#include "gdr_ep.inl"


void gdr_op_release(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    ucs_mpool_put_inline(op);
}

void gdr_op_complete(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    ucs_mpool_put_inline(op);
}

static void gdr_ep_complete_ops(gdr_ep_t *ep, uint16_t sn, int inclusive,
                                ucs_status_t status)
{
    gdr_tx_op_t *op;

    while (!ucs_queue_is_empty(&ep->tx.outstanding)) {
        op = ucs_queue_head_elem_non_empty(&ep->tx.outstanding, gdr_tx_op_t,
                                           queue);
        if (inclusive ? UCS_CIRCULAR_COMPARE16(op->sn, >, sn) :
                        UCS_CIRCULAR_COMPARE16(op->sn, >=, sn)) {
            break;
        }
        ucs_queue_pull_non_empty(&ep->tx.outstanding);
        op->handler(op, ep, status);
    }
}

void gdr_ep_purge_ops(gdr_ep_t *ep, ucs_status_t status)
{
    gdr_tx_op_t *op;

    while (!ucs_queue_is_empty(&ep->tx.outstanding)) {
        op = ucs_queue_pull_elem_non_empty(&ep->tx.outstanding, gdr_tx_op_t,
                                           queue);
        op->handler(op, ep, status);
    }
}

/*
 * The QP is in the error state: fail everything, tell UCP once.  Logged as
 * UCX's rc transports log it (uct_base_iface_failure_log_level): where nobody
 * handles the error -- no error handler, or UCP's endpoint without peer error
 * handling, which declines it -- at FATAL, so the process aborts as over
 * rc_verbs.  An error only logged would leave such a caller running on: its
 * operations complete at once with the error, and a UCP stream "completes"
 * them for ever (a killed peer's survivor never ended).
 */
static void gdr_ep_fail(gdr_iface_t *iface, gdr_ep_t *ep, ucs_status_t status)
{
    ucs_status_t handled;

    if (ep->flags & GDR_EP_FLAG_FLUSH_CANCEL) {
        status = UCS_ERR_CANCELED;
    } else if (ep->flags & GDR_EP_FLAG_STALLED) {
        /* its WRs were flushed because the peer stopped answering */
        status = UCS_ERR_ENDPOINT_TIMEOUT;
    }
    ep->flags |= GDR_EP_FLAG_FAILED;
    ep->error = status;
    gdr_ep_purge_ops(ep, status);
    if (ep->flags & GDR_EP_FLAG_FLUSH_CANCEL) {
        return; /* the user asked for it: no error to report */
    }
    handled = uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                      status);
    ucs_log(uct_base_iface_failure_log_level(&iface->super, handled, status),
            "gdr_rc: endpoint %p (qpn 0x%x) failed: %s%s", ep, ep->qp->qp_num,
            ucs_status_string(status),
            (handled == UCS_OK) ? "" : " (not handled)");
}

/*
 * The ops that a completion of gdr_ep_tx_completed() finishes, or its error:
 * a successful one finishes every op up to and including its WR; a failed one
 * those before its WR, then fails the endpoint; on an endpoint that failed
 * already every op finishes with its error.
 */
void gdr_ep_tx_finish_ops(gdr_ep_t *ep, uint16_t sn, ucs_status_t status)
{
    if ((status == UCS_OK) || (ep->flags & GDR_EP_FLAG_FAILED)) {
        gdr_ep_complete_ops(ep, sn, 1,
                            (ep->flags & GDR_EP_FLAG_FAILED) ? ep->error :
                                                               UCS_OK);
    } else {
        gdr_ep_complete_ops(ep, sn, 0, UCS_OK); /* WRs before it succeeded */
        gdr_ep_fail(gdr_ep_iface(ep), ep, status);
    }
}
