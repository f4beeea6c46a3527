/**
 * gdr_ep.inl - the inline helpers every endpoint operation is built from: resources, rkeys,
 * SGEs, ops, and gdr_ep_post(), through which every work request goes.
 *
 * Private to the endpoint's files (gdr_ep*.c).  Everything here is inlined into the
 * operation that uses it, so splitting the operations over files costs the data path no call.
 */
#ifndef GDR_EP_INL_
#define GDR_EP_INL_

#include "gdr_ep.h"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>


/* Connected, and not held by a fence (behind compare-and-swap loops, or a
 * strong one behind everything) */
static UCS_F_ALWAYS_INLINE int gdr_ep_may_post(const gdr_ep_t *ep)
{
    return (ep->flags & (GDR_EP_FLAG_CONNECTED | GDR_EP_FLAG_FENCE_LOOPS |
                         GDR_EP_FLAG_FENCE_DRAIN)) == GDR_EP_FLAG_CONNECTED;
}

static UCS_F_ALWAYS_INLINE int
gdr_ep_has_tx_resources(gdr_iface_t *iface, gdr_ep_t *ep)
{
    return gdr_ep_may_post(ep) && (ep->tx.available > 0) &&
           (iface->tx.cq_available > 0);
}

/* Failed endpoints fail fast; full ones ask to be retried (pending) */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_check_tx(gdr_iface_t *iface,
                                                        gdr_ep_t *ep)
{
    /* connected, not failed, not held by a fence: one test of the flags on
     * the fast path */
    if (ucs_unlikely((ep->flags &
                      (GDR_EP_FLAG_FAILED | GDR_EP_FLAG_CONNECTED |
                       GDR_EP_FLAG_FENCE_LOOPS | GDR_EP_FLAG_FENCE_DRAIN)) !=
                     GDR_EP_FLAG_CONNECTED)) {
        return (ep->flags & GDR_EP_FLAG_FAILED) ? ep->error :
                                                  UCS_ERR_NO_RESOURCE;
    }
    if (ucs_unlikely((ep->tx.available <= 0) ||
                     (iface->tx.cq_available <= 0))) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

/* Slow path of gdr_ep_rkey(): a key we cannot use.  A zero-length RDMA
 * operation touches no remote memory and the HCA checks no key for it, so
 * UCX's convention of passing UCT_INVALID_RKEY (or 0) with length 0 is legal;
 * anything else gets an error here rather than a dereference of the value.
 * Not inline: a call on the slow path keeps the fast path short.  (Each file
 * that uses it has its own copy, so the call stays a local one.) */
static UCS_V_UNUSED ucs_status_t gdr_ep_rkey_unusable(uct_rkey_t uct_rkey,
                                                      size_t length,
                                                      uint32_t *rkey_p)
{
    if (length == 0) {
        *rkey_p = 0;
        return UCS_OK;
    }
    ucs_error("gdr_rc: %zu-byte remote access with %s remote key", length,
              (uct_rkey == 0) ? "a NULL" : "UCT_INVALID_RKEY as");
    return UCS_ERR_INVALID_PARAM;
}

/* The peer md's rkey, for @a length bytes */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_rkey(const gdr_ep_t *ep,
                                                    uct_rkey_t uct_rkey,
                                                    size_t length,
                                                    uint32_t *rkey_p)
{
    /* 0 and UCT_INVALID_RKEY (all ones) both wrap to <= 1: one comparison */
    UCS_STATIC_ASSERT(UCT_INVALID_RKEY == (uct_rkey_t)-1);
    if (ucs_unlikely((uct_rkey_t)(uct_rkey + 1) <= 1)) {
        return gdr_ep_rkey_unusable(uct_rkey, length, rkey_p);
    }
    *rkey_p = gdr_rkey_value(uct_rkey);
    return UCS_OK;
}

/* The common start of every RMA and atomic op: resources, then the rkey */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_rma_begin(gdr_iface_t *iface,
                                                         gdr_ep_t *ep,
                                                         uct_rkey_t uct_rkey,
                                                         size_t length,
                                                         uint32_t *rkey_p)
{
    ucs_status_t status = gdr_ep_check_tx(iface, ep);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    return gdr_ep_rkey(ep, uct_rkey, length, rkey_p);
}

/* The SGE of an op's bounce buffer */
static UCS_F_ALWAYS_INLINE void
gdr_op_sge(gdr_tx_op_t *op, size_t length, struct ibv_sge *sge)
{
    sge->addr   = (uintptr_t)gdr_tx_op_data(op);
    sge->length = length;
    sge->lkey   = op->lkey;
}

/* An RDMA write or read work request; its buffer (wr->sge) is the caller's.
 * (The rkey is passed in, not looked up into wr->rkey: a field whose address
 * goes to a function that is not inlined keeps the whole WR off registers.) */
static UCS_F_ALWAYS_INLINE void
gdr_wr_rdma(gdr_verbs_wr_t *wr, enum ibv_wr_opcode opcode, uint64_t remote_addr,
            uint32_t rkey, unsigned send_flags)
{
    wr->opcode      = opcode;
    wr->send_flags  = send_flags;
    wr->remote_addr = remote_addr;
    wr->rkey        = rkey;
}

/* What every post does before the provider's call: fencing, signalling, the
 * sequence number (returned) */
static UCS_F_ALWAYS_INLINE uint16_t
gdr_ep_post_prepare(gdr_iface_t *iface, gdr_ep_t *ep, int signal,
                    enum ibv_wr_opcode opcode, unsigned *send_flags)
{
    uint16_t sn = ep->tx.posted_sn + 1;

    /* one comparison for both fences: the ep's own moves its beat off the
     * iface's (gdr_ep_fence), the iface's moves the iface's beat */
    if (ucs_unlikely(ep->fence_beat != iface->tx.fence_beat)) {
        *send_flags |= IBV_SEND_FENCE;
        ep->fence_beat = iface->tx.fence_beat;
    }
    /* Signaled: a WR with a completion to report, every moderation-th one
     * (credits), and an RDMA or atomic WR posted to an idle endpoint.  The
     * last: rc_verbs signals every RDMA write, read and atomic, so a flush
     * after request-reply RMA finds the last WR signaled and posts no NOP
     * (docs/perf-compare.md, ep_flush); a stream still gets one completion
     * per moderation window, plus one where it starts.  An active message
     * keeps the moderation, as rc_verbs' sends do: its peer replies anyway,
     * and a completion for every message would cost the replier a send CQE
     * and its poll per message where rc_verbs polls one per 64 sends
     * (perf/cost's recv_am_short row counts it). */
    if (signal ||
        ((opcode != IBV_WR_SEND_WITH_IMM) &&
         (ep->tx.posted_sn == ep->tx.completed_sn)) ||
        (++ep->tx.unsignaled >= iface->tx.moderation)) {
        *send_flags |= IBV_SEND_SIGNALED;
        ep->tx.unsignaled  = 0;
        ep->tx.signaled_sn = sn;
    }
    return sn;
}

/* ... and after it (@a ret: its result): credits, and @a op (may be NULL)
 * queued to finish when the WR completes */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_post_commit(gdr_iface_t *iface, gdr_ep_t *ep, uint16_t sn, int ret,
                   enum ibv_wr_opcode opcode, gdr_tx_op_t *op)
{
    if (ucs_unlikely(ret != 0)) {
        ucs_error("gdr_rc: posting a WR (qpn 0x%x, opcode %d) failed: %s",
                  ep->qp->qp_num, opcode, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    ep->tx.posted_sn = sn;
    --ep->tx.available;
    --iface->tx.cq_available;
    if (op != NULL) {
        op->sn = sn;
        ucs_queue_push(&ep->tx.outstanding, &op->queue);
    }
    return UCS_OK;
}

/* Post a WR of at most one buffer; queue @a op (may be NULL) to finish when it
 * completes.  Every operation but the zcopy gathers posts through here. */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_post(gdr_iface_t *iface,
                                                    gdr_ep_t *ep,
                                                    gdr_verbs_wr_t *wr,
                                                    int signal, gdr_tx_op_t *op)
{
    uint16_t sn = gdr_ep_post_prepare(iface, ep, signal, wr->opcode,
                                      &wr->send_flags);

    wr->wr_id = sn;
    if (gdr_trace_data_on()) {
        gdr_ep_trace_post(ep, wr);
    }
    return gdr_ep_post_commit(iface, ep, sn,
                              gdr_verbs_post(ep->qp, ep->qpx, wr), wr->opcode,
                              op);
}

/* Post @a wr with the @a num_sge buffers at @a sge (a zcopy): a gather list
 * goes as a struct ibv_send_wr (gdr_verbs_post_list), the rest as gdr_ep_post */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_post_sges(gdr_iface_t *iface, gdr_ep_t *ep, gdr_verbs_wr_t *wr,
                 struct ibv_sge *sge, int num_sge, int signal, gdr_tx_op_t *op)
{
    struct ibv_send_wr list;
    uint16_t sn;

    if (ucs_likely(num_sge <= 1)) {
        if (num_sge == 1) {
            wr->sge = sge[0];
        } else {
            wr->sge.length = 0;
        }
        return gdr_ep_post(iface, ep, wr, signal, op);
    }
    sn = gdr_ep_post_prepare(iface, ep, signal, wr->opcode, &wr->send_flags);
    list.wr_id      = sn;
    list.next       = NULL;
    list.sg_list    = sge;
    list.num_sge    = num_sge;
    list.opcode     = wr->opcode;
    list.send_flags = wr->send_flags;
    if (wr->opcode == IBV_WR_SEND_WITH_IMM) {
        list.imm_data = wr->imm_data;
    } else {
        list.wr.rdma.remote_addr = wr->remote_addr;
        list.wr.rdma.rkey        = wr->rkey;
    }
    if (gdr_trace_data_on()) {
        gdr_ep_trace_post_list(ep, &list);
    }
    return gdr_ep_post_commit(iface, ep, sn, gdr_verbs_post_list(ep->qp, &list),
                              list.opcode, op);
}

/* An op's post result: on failure the op goes back (nobody else will);
 * @a success is what the operation returns once posted */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_op_posted(ucs_status_t status,
                                                         gdr_tx_op_t *op,
                                                         ucs_status_t success)
{
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(op);
        return status;
    }
    return success;
}

/* uct_iov_t[] -> ibv_sge[]; zero-length entries are skipped */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_iov_to_sge(gdr_iface_t *iface,
                                                          const uct_iov_t *iov,
                                                          size_t iovcnt,
                                                          struct ibv_sge *sge,
                                                          int *num_sge_p)
{
    int num_sge = 0;
    size_t i, length;

    for (i = 0; i < iovcnt; ++i) {
        length = uct_iov_get_length(&iov[i]);
        if (length == 0) {
            continue;
        }
        if (ucs_unlikely(iov[i].memh == UCT_MEM_HANDLE_NULL)) {
            ucs_error(
                    "gdr_rc: zcopy iov[%zu] (%p, %zu bytes) is not registered",
                    i, iov[i].buffer, length);
            return UCS_ERR_INVALID_PARAM;
        }
        sge[num_sge].addr   = (uintptr_t)iov[i].buffer;
        sge[num_sge].length = length;
        sge[num_sge].lkey   = gdr_memh_lkey(iface, iov[i].memh);
        ++num_sge;
    }
    *num_sge_p = num_sge;
    return UCS_OK;
}

/* An op to finish later; with a bounce buffer when @a desc */
static UCS_F_ALWAYS_INLINE gdr_tx_op_t *
gdr_ep_op_get(gdr_iface_t *iface, int desc, gdr_tx_op_handler_t handler,
              uct_completion_t *comp)
{
    gdr_tx_op_t *op = ucs_mpool_get_inline(desc ? &iface->tx.desc_mp :
                                                  &iface->tx.op_mp);

    if (ucs_likely(op != NULL)) {
        op->handler = handler;
        op->comp    = comp;
    } else {
        UCT_TL_IFACE_STAT_TX_NO_DESC(&iface->super);
    }
    return op;
}

/* The start of an RMA or atomic op that finishes later: resources, the rkey,
 * and an op with a bounce buffer (for the data it reads) */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_rma_desc_begin(
        gdr_iface_t *iface, gdr_ep_t *ep, uct_rkey_t uct_rkey, size_t length,
        gdr_tx_op_handler_t handler, uct_completion_t *comp, uint32_t *rkey_p,
        gdr_tx_op_t **op_p)
{
    ucs_status_t status = gdr_ep_rma_begin(iface, ep, uct_rkey, length, rkey_p);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    *op_p = gdr_ep_op_get(iface, 1, handler, comp);
    return ucs_likely(*op_p != NULL) ? UCS_OK : UCS_ERR_NO_RESOURCE;
}

/* A bounce buffer filled by @a pack_cb (put/am bcopy), released once sent */
static UCS_F_ALWAYS_INLINE gdr_tx_op_t *
gdr_ep_bcopy_op(gdr_iface_t *iface, uct_pack_callback_t pack_cb, void *arg,
                struct ibv_sge *sge)
{
    gdr_tx_op_t *op = gdr_ep_op_get(iface, 1, gdr_op_release, NULL);
    size_t length;

    if (ucs_likely(op != NULL)) {
        length = pack_cb(gdr_tx_op_data(op), arg);
        ucs_assertv(length <= iface->seg_size, "length=%zu", length);
        gdr_op_sge(op, length, sge);
    }
    return op;
}

/* The start of a bcopy (put or AM): resources, then the bounce buffer; @a sge
 * describes it */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_bcopy_begin(
        gdr_iface_t *iface, gdr_ep_t *ep, uct_pack_callback_t pack_cb,
        void *arg, struct ibv_sge *sge, gdr_tx_op_t **op_p)
{
    ucs_status_t status = gdr_ep_check_tx(iface, ep);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    *op_p = gdr_ep_bcopy_op(iface, pack_cb, arg, sge);
    if (ucs_unlikely(*op_p == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

/* Post a bcopy's bounce buffer (in @a wr): the bytes it carries, or the error */
static UCS_F_ALWAYS_INLINE ssize_t gdr_ep_bcopy_post(gdr_iface_t *iface,
                                                     gdr_ep_t *ep,
                                                     gdr_verbs_wr_t *wr,
                                                     gdr_tx_op_t *op)
{
    ucs_status_t status = gdr_ep_op_posted(gdr_ep_post(iface, ep, wr,
                                                       op->comp != NULL, op),
                                           op, UCS_OK);

    return (status == UCS_OK) ? (ssize_t)wr->sge.length : status;
}

#endif
