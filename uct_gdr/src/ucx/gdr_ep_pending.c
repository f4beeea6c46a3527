/**
 * gdr_ep_pending.c - the pending queue: requests that found no send resources wait in a
 * ucs_arbiter group per endpoint, dispatched by the iface's progress as credits come back.
 */
#include "gdr_ep.inl"


ucs_status_t
gdr_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);

    if (gdr_ep_has_tx_resources(iface, ep) ||
        (ep->flags & GDR_EP_FLAG_FAILED)) {
        return UCS_ERR_BUSY;
    }
    UCS_STATIC_ASSERT(sizeof(ucs_arbiter_elem_t) <= UCT_PENDING_REQ_PRIV_LEN);
    ucs_arbiter_elem_init((ucs_arbiter_elem_t *)req->priv);
    ucs_arbiter_group_push_elem(&ep->arb_group,
                                (ucs_arbiter_elem_t *)req->priv);
    UCT_TL_EP_STAT_PEND(&ep->super);
    if (gdr_ep_may_post(ep) && (ep->tx.available > 0)) {
        /* only the iface is short: let the next completion dispatch us */
        ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
    }
    return UCS_OK;
}

ucs_arbiter_cb_result_t
gdr_ep_arbiter_dispatch_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                           ucs_arbiter_elem_t *elem, void *arg)
{
    uct_pending_req_t *req = ucs_container_of(elem, uct_pending_req_t, priv);
    gdr_ep_t *ep           = ucs_container_of(group, gdr_ep_t, arb_group);
    gdr_iface_t *iface     = gdr_ep_iface(ep);
    ucs_status_t status;

    if (!gdr_ep_may_post(ep) || (ep->tx.available <= 0)) {
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }
    if (iface->tx.cq_available <= 0) {
        return UCS_ARBITER_CB_RESULT_STOP;
    }
    status = req->func(req);
    if (status == UCS_OK) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    }
    return (ep->tx.available <= 0) ? UCS_ARBITER_CB_RESULT_DESCHED_GROUP :
                                     UCS_ARBITER_CB_RESULT_STOP;
}

typedef struct {
    uct_pending_purge_callback_t cb;
    void *arg;
} gdr_ep_purge_args_t;

static ucs_arbiter_cb_result_t
gdr_ep_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                ucs_arbiter_elem_t *elem, void *arg)
{
    gdr_ep_purge_args_t *args = arg;
    uct_pending_req_t *req    = ucs_container_of(elem, uct_pending_req_t, priv);

    if (args->cb != NULL) {
        args->cb(req, args->arg);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void gdr_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                          void *arg)
{
    gdr_ep_t *ep             = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_ep_purge_args_t args = {cb, arg};

    ucs_arbiter_group_purge(&gdr_ep_iface(ep)->tx.arbiter, &ep->arb_group,
                            gdr_ep_purge_cb, &args);
}
