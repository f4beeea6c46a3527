/**
 * gdr_iface_event.c - UCP's worker wakeup: the event fd (the completion channel both CQs
 * report to) and arming it without losing a completion.
 */
#include "gdr_iface.h"

#include <ucs/debug/log.h>

ucs_status_t gdr_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);

    *fd_p = iface->comp_channel->fd;
    return UCS_OK;
}

/* Arm for the next completion.  CQEs that are already there are moved to the
 * stash, so the caller sees UCS_ERR_BUSY and progresses them: nothing is lost
 * between "no work" and "sleep". */
ucs_status_t gdr_iface_event_arm(uct_iface_h tl_iface, unsigned events)
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

    count                 = ibv_poll_cq(iface->send_cq,
                                        ucs_static_array_size(iface->stash_tx.wc),
                                        iface->stash_tx.wc);
    iface->stash_tx.count = ucs_max(count, 0);
    count                 = ibv_poll_cq(iface->recv_cq,
                                        ucs_static_array_size(iface->stash_rx.wc),
                                        iface->stash_rx.wc);
    iface->stash_rx.count = ucs_max(count, 0);
    return ((iface->stash_tx.count > 0) || (iface->stash_rx.count > 0)) ?
                   UCS_ERR_BUSY :
                   UCS_OK;
}
