/**
 * gdr_ep.c - gdr_rc endpoints: one RC QP each, and the UCT data path.
 *
 * Every work request gets a 16-bit sequence number (wr_id = sn).  Things to
 * finish later (a bounce buffer to release, a get to unpack, a user
 * completion) are gdr_tx_op_t's queued on the endpoint with the sn of their
 * WR; a completion for sn N finishes every op with sn <= N (RC completes in
 * order), so most WRs need not be signaled: only those with a user
 * completion, and every TX_MODERATION-th one so that credits come back.
 * Every op goes through gdr_ep_post(): one place for fencing, signalling,
 * sequence numbers and credits.
 */
#include "gdr_uct.h"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <arpa/inet.h>

/* ------------------------------------------------------------ helpers --- */

static UCS_F_ALWAYS_INLINE gdr_iface_t *gdr_ep_iface(gdr_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, gdr_iface_t);
}

static UCS_F_ALWAYS_INLINE int gdr_ep_has_tx_resources(gdr_iface_t *iface,
                                                       gdr_ep_t *ep)
{
    return (ep->flags & GDR_EP_FLAG_CONNECTED) && (ep->tx.available > 0) &&
           (iface->tx.cq_available > 0);
}

/* Failed endpoints fail fast; full ones ask to be retried (pending) */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_check_tx(gdr_iface_t *iface,
                                                        gdr_ep_t *ep)
{
    if (ucs_unlikely(ep->flags & GDR_EP_FLAG_FAILED)) {
        return ep->error;
    }
    if (ucs_unlikely(!gdr_ep_has_tx_resources(iface, ep))) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

/* Slow path of gdr_ep_rkey(): a key we cannot use.  A zero-length RDMA
 * operation touches no remote memory and the HCA checks no key for it, so
 * UCX's convention of passing UCT_INVALID_RKEY (or 0) with length 0 is legal;
 * anything else gets an error here rather than a dereference of the value. */
static ucs_status_t gdr_ep_rkey_unusable(const gdr_ep_t *ep, uct_rkey_t uct_rkey,
                                         size_t length, uint32_t *rkey_p)
{
    if ((uct_rkey == UCT_INVALID_RKEY) || (uct_rkey == 0)) {
        if (length == 0) {
            *rkey_p = 0;
            return UCS_OK;
        }
        ucs_error("gdr_rc: %zu-byte remote access with %s remote key", length,
                  (uct_rkey == 0) ? "a NULL" : "UCT_INVALID_RKEY as");
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_error("gdr_rc: remote key %p has no key for peer device %u",
              (void*)uct_rkey, ep->remote_dev_index);
    return UCS_ERR_INVALID_PARAM;
}

/* The rkey of the peer's device our QP talks to, for @a length bytes */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_rkey(const gdr_ep_t *ep,
                                                    uct_rkey_t uct_rkey,
                                                    size_t length,
                                                    uint32_t *rkey_p)
{
    const gdr_rkey_t *rkey = (const gdr_rkey_t*)uct_rkey;

    /* 0 and UCT_INVALID_RKEY (all ones) both wrap to <= 1: one comparison */
    UCS_STATIC_ASSERT(UCT_INVALID_RKEY == (uct_rkey_t)-1);
    if (ucs_unlikely(((uct_rkey_t)(uct_rkey + 1) <= 1) ||
                     (ep->remote_dev_index >= rkey->count))) {
        return gdr_ep_rkey_unusable(ep, uct_rkey, length, rkey_p);
    }
    *rkey_p = rkey->rkeys[ep->remote_dev_index];
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
static UCS_F_ALWAYS_INLINE void gdr_op_sge(gdr_tx_op_t *op, size_t length,
                                           struct ibv_sge *sge)
{
    sge->addr   = (uintptr_t)gdr_tx_op_data(op);
    sge->length = length;
    sge->lkey   = op->lkey;
}

/* Post one WR; queue @a op (may be NULL) to finish when it completes */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_post(gdr_iface_t *iface, gdr_ep_t *ep, struct ibv_send_wr *wr, int signal,
            gdr_tx_op_t *op)
{
    uint16_t sn = ep->tx.posted_sn + 1;
    struct ibv_send_wr *bad_wr;
    int ret;

    wr->wr_id = sn;
    wr->next  = NULL;
    if (ucs_unlikely((ep->flags & GDR_EP_FLAG_FENCE) ||
                     (ep->fence_beat != iface->tx.fence_beat))) {
        wr->send_flags |= IBV_SEND_FENCE;
        ep->flags      &= ~GDR_EP_FLAG_FENCE;
        ep->fence_beat  = iface->tx.fence_beat;
    }
    if (signal || (++ep->tx.unsignaled >= iface->tx.moderation)) {
        wr->send_flags    |= IBV_SEND_SIGNALED;
        ep->tx.unsignaled  = 0;
        ep->tx.signaled_sn = sn;
    }

    ret = ibv_post_send(ep->qp, wr, &bad_wr);
    if (ucs_unlikely(ret != 0)) {
        ucs_error("gdr_rc: ibv_post_send(qpn 0x%x, opcode %d) failed: %s",
                  ep->qp->qp_num, wr->opcode, strerror(ret));
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

/* Post and, on failure, give the op back (nobody else will) */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_post_op(gdr_iface_t *iface, gdr_ep_t *ep, struct ibv_send_wr *wr,
               gdr_tx_op_t *op, ucs_status_t success)
{
    ucs_status_t status = gdr_ep_post(iface, ep, wr, op->comp != NULL, op);

    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(op);
        return status;
    }
    return success;
}

/* uct_iov_t[] -> ibv_sge[]; zero-length entries are skipped */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_iov_to_sge(gdr_iface_t *iface, const uct_iov_t *iov, size_t iovcnt,
                  struct ibv_sge *sge, int *num_sge_p)
{
    int num_sge = 0;
    size_t i, length;

    for (i = 0; i < iovcnt; ++i) {
        length = uct_iov_get_length(&iov[i]);
        if (length == 0) {
            continue;
        }
        if (ucs_unlikely(iov[i].memh == UCT_MEM_HANDLE_NULL)) {
            ucs_error("gdr_rc: zcopy iov[%zu] (%p, %zu bytes) is not registered",
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
    }
    return op;
}

/* ------------------------------------------------------ op handlers ----- */

static void gdr_op_release(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    ucs_mpool_put_inline(op);
}

static void gdr_op_complete(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    ucs_mpool_put_inline(op);
}

/* A flush is done when every WR before it completed and no CAS loop will post
 * more: a loop still running moves the flush behind its next WR */
static void gdr_op_flush(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    if ((status == UCS_OK) && (ep->tx.cas_loops > 0) &&
        (ep->tx.posted_sn != ep->tx.completed_sn)) {
        op->sn = ep->tx.posted_sn;
        ucs_queue_push(&ep->tx.outstanding, &op->queue);
        return;
    }
    gdr_op_complete(op, ep, status);
}

static void gdr_op_get_bcopy(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    if (status == UCS_OK) {
        op->unpack_cb(op->result, gdr_tx_op_data(op), op->length);
    }
    gdr_op_complete(op, ep, status);
}

static void gdr_op_atomic_fetch(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    if (status == UCS_OK) {
        *(uint64_t*)op->result = *(uint64_t*)gdr_tx_op_data(op);
    }
    gdr_op_complete(op, ep, status);
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

/* ------------------------------------------------------------- RMA ------ */

static UCS_F_ALWAYS_INLINE void gdr_wr_rdma(struct ibv_send_wr *wr,
                                            enum ibv_wr_opcode opcode,
                                            struct ibv_sge *sge, int num_sge,
                                            uint64_t remote_addr, uint32_t rkey,
                                            int send_flags)
{
    wr->opcode              = opcode;
    wr->sg_list             = sge;
    wr->num_sge             = num_sge;
    wr->send_flags          = send_flags;
    wr->wr.rdma.remote_addr = remote_addr;
    wr->wr.rdma.rkey        = rkey;
}

ucs_status_t gdr_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                              uint64_t remote_addr, uct_rkey_t uct_rkey)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_sge sge = {(uintptr_t)buffer, length, 0};
    struct ibv_send_wr wr;
    ucs_status_t status;
    uint32_t rkey;

    UCT_CHECK_LENGTH(length, 0, iface->tx.max_inline, "gdr_rc put_short");
    status = gdr_ep_rma_begin(iface, ep, uct_rkey, length, &rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    gdr_wr_rdma(&wr, IBV_WR_RDMA_WRITE, &sge, length > 0, remote_addr, rkey,
                IBV_SEND_INLINE);
    return gdr_ep_post(iface, ep, &wr, 0, NULL);
}

ssize_t gdr_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                         uint64_t remote_addr, uct_rkey_t uct_rkey)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;
    gdr_tx_op_t *op;
    uint32_t rkey;

    status = gdr_ep_check_tx(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    op = gdr_ep_bcopy_op(iface, pack_cb, arg, &sge);
    if (ucs_unlikely(op == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    status = gdr_ep_rkey(ep, uct_rkey, sge.length, &rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(op);
        return status;
    }
    gdr_wr_rdma(&wr, IBV_WR_RDMA_WRITE, &sge, sge.length > 0, remote_addr, rkey, 0);
    status = gdr_ep_post_op(iface, ep, &wr, op, UCS_OK);
    return (status == UCS_OK) ? (ssize_t)sge.length : status;
}

/* put_zcopy and get_zcopy differ only in the opcode */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_rdma_zcopy(uct_ep_h tl_ep, enum ibv_wr_opcode opcode, const uct_iov_t *iov,
                  size_t iovcnt, uint64_t remote_addr, uct_rkey_t uct_rkey,
                  uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_sge sge[iface->tx.max_sge];
    struct ibv_send_wr wr;
    ucs_status_t status;
    gdr_tx_op_t *op;
    uint32_t rkey;
    int num_sge;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->tx.max_sge, "gdr_rc rdma zcopy");
    status = gdr_ep_check_tx(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = gdr_ep_iov_to_sge(iface, iov, iovcnt, sge, &num_sge);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = gdr_ep_rkey(ep, uct_rkey, num_sge, &rkey); /* 0 SGEs: 0 bytes */
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    gdr_wr_rdma(&wr, opcode, sge, num_sge, remote_addr, rkey, 0);
    if (comp == NULL) {
        status = gdr_ep_post(iface, ep, &wr, 0, NULL);
        return (status == UCS_OK) ? UCS_INPROGRESS : status;
    }
    op = gdr_ep_op_get(iface, 0, gdr_op_complete, comp);
    if (ucs_unlikely(op == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return gdr_ep_post_op(iface, ep, &wr, op, UCS_INPROGRESS);
}

ucs_status_t gdr_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                              uint64_t remote_addr, uct_rkey_t rkey,
                              uct_completion_t *comp)
{
    return gdr_ep_rdma_zcopy(tl_ep, IBV_WR_RDMA_WRITE, iov, iovcnt, remote_addr,
                             rkey, comp);
}

ucs_status_t gdr_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                              uint64_t remote_addr, uct_rkey_t rkey,
                              uct_completion_t *comp)
{
    return gdr_ep_rdma_zcopy(tl_ep, IBV_WR_RDMA_READ, iov, iovcnt, remote_addr,
                             rkey, comp);
}

ucs_status_t gdr_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                              void *arg, size_t length, uint64_t remote_addr,
                              uct_rkey_t uct_rkey, uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;
    gdr_tx_op_t *op;
    uint32_t rkey;

    UCT_CHECK_LENGTH(length, 0, iface->seg_size, "gdr_rc get_bcopy");
    status = gdr_ep_rma_begin(iface, ep, uct_rkey, length, &rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    op = gdr_ep_op_get(iface, 1, gdr_op_get_bcopy, comp);
    if (ucs_unlikely(op == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    op->unpack_cb = unpack_cb;
    op->result    = arg;
    op->length    = length;
    gdr_op_sge(op, length, &sge);
    gdr_wr_rdma(&wr, IBV_WR_RDMA_READ, &sge, length > 0, remote_addr, rkey, 0);
    /* signaled: the data is only there once this WR completes */
    status = gdr_ep_post(iface, ep, &wr, 1, op);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(op);
        return status;
    }
    return UCS_INPROGRESS;
}

/* ------------------------------------------------------ active messages --- */

/* AM id travels as immediate data: the payload arrives exactly as sent */
static UCS_F_ALWAYS_INLINE void gdr_wr_am(struct ibv_send_wr *wr, uint8_t id,
                                          struct ibv_sge *sge, int num_sge,
                                          int send_flags)
{
    wr->opcode     = IBV_WR_SEND_WITH_IMM;
    wr->imm_data   = htonl(id);
    wr->sg_list    = sge;
    wr->num_sge    = num_sge;
    wr->send_flags = send_flags;
}

ucs_status_t gdr_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                             const void *payload, unsigned length)
{
    gdr_ep_t *ep          = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface    = gdr_ep_iface(ep);
    struct ibv_sge sge[2] = {{(uintptr_t)&header, sizeof(header), 0},
                             {(uintptr_t)payload, length, 0}};
    struct ibv_send_wr wr;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(sizeof(header) + length, 0, iface->tx.max_inline,
                     "gdr_rc am_short");
    status = gdr_ep_check_tx(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    gdr_wr_am(&wr, id, sge, (length > 0) ? 2 : 1, IBV_SEND_INLINE);
    return gdr_ep_post(iface, ep, &wr, 0, NULL);
}

ucs_status_t gdr_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id, const uct_iov_t *iov,
                                 size_t iovcnt)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    size_t length      = uct_iov_total_length(iov, iovcnt);
    char buffer[iface->tx.max_inline + 1];
    ucs_iov_iter_t iov_iter;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(length, 0, iface->tx.max_inline, "gdr_rc am_short_iov");
    status = gdr_ep_check_tx(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    /* inline data is copied at post time: gather into the stack first */
    ucs_iov_iter_init(&iov_iter);
    sge.addr   = (uintptr_t)buffer;
    sge.length = uct_iov_to_buffer(iov, iovcnt, &iov_iter, buffer, SIZE_MAX);
    sge.lkey   = 0;
    gdr_wr_am(&wr, id, &sge, sge.length > 0, IBV_SEND_INLINE);
    return gdr_ep_post(iface, ep, &wr, 0, NULL);
}

ssize_t gdr_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                        void *arg, unsigned flags)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;
    gdr_tx_op_t *op;

    UCT_CHECK_AM_ID(id);
    status = gdr_ep_check_tx(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    op = gdr_ep_bcopy_op(iface, pack_cb, arg, &sge);
    if (ucs_unlikely(op == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    gdr_wr_am(&wr, id, &sge, sge.length > 0, 0);
    status = gdr_ep_post_op(iface, ep, &wr, op, UCS_OK);
    return (status == UCS_OK) ? (ssize_t)sge.length : status;
}

ucs_status_t gdr_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                             unsigned header_length, const uct_iov_t *iov,
                             size_t iovcnt, unsigned flags, uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_sge sge[iface->tx.max_sge];
    struct ibv_send_wr wr;
    ucs_status_t status;
    gdr_tx_op_t *op;
    int num_sge;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->tx.max_sge - 1, "gdr_rc am_zcopy");
    UCT_CHECK_LENGTH(header_length, 0, gdr_iface_am_max_hdr(iface),
                     "gdr_rc am_zcopy header");
    UCT_CHECK_LENGTH(header_length + uct_iov_total_length(iov, iovcnt), 0,
                     iface->seg_size, "gdr_rc am_zcopy");
    status = gdr_ep_check_tx(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = gdr_ep_iov_to_sge(iface, iov, iovcnt, sge + 1, &num_sge);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    /* the header lives in a bounce buffer until the send completes */
    op = gdr_ep_op_get(iface, 1, gdr_op_complete, comp);
    if (ucs_unlikely(op == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    memcpy(gdr_tx_op_data(op), header, header_length);
    gdr_op_sge(op, header_length, &sge[0]);
    gdr_wr_am(&wr, id, sge, num_sge + 1, 0);
    return gdr_ep_post_op(iface, ep, &wr, op, UCS_INPROGRESS);
}

/* ------------------------------------------------------------ atomics --- */

/* 64-bit fetch-and-add / compare-and-swap; the result lands in a bounce buffer */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_atomic(uct_ep_h tl_ep, enum ibv_wr_opcode opcode, uint64_t compare_add,
              uint64_t swap, uint64_t remote_addr, uct_rkey_t uct_rkey,
              uint64_t *result, gdr_tx_op_handler_t handler,
              uct_completion_t *comp, ucs_status_t success, gdr_tx_op_t **op_p)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;
    gdr_tx_op_t *op;
    uint32_t rkey;

    if (ucs_unlikely(remote_addr % sizeof(uint64_t))) {
        ucs_error("gdr_rc: atomic remote address 0x%" PRIx64 " is not 8-byte "
                  "aligned", remote_addr);
        return UCS_ERR_INVALID_PARAM;
    }
    status = gdr_ep_rma_begin(iface, ep, uct_rkey, sizeof(uint64_t), &rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    op = gdr_ep_op_get(iface, 1, handler, comp);
    if (ucs_unlikely(op == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    op->result                = result;
    gdr_op_sge(op, sizeof(uint64_t), &sge);
    wr.opcode                 = opcode;
    wr.sg_list                = &sge;
    wr.num_sge                = 1;
    wr.send_flags             = 0;
    wr.wr.atomic.remote_addr  = remote_addr;
    wr.wr.atomic.compare_add  = compare_add;
    wr.wr.atomic.swap         = swap;
    wr.wr.atomic.rkey         = rkey;
    /* signaled when someone waits for the value (a fetch, or a CAS loop) */
    status = gdr_ep_post(iface, ep, &wr, (result != NULL) || (op_p != NULL), op);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(op);
        return status;
    }
    if (op_p != NULL) {
        *op_p = op;
    }
    return success;
}

/*
 * swap/and/or/xor are not in the verbs standard: read the word (fetch-add 0),
 * then compare-and-swap it with op(value, operand) until the CAS finds the
 * value it compared with.  Linearizable with every other atomic the HCAs
 * execute on that word (not with CPU atomics on it, like all device atomics).
 */
static uint64_t gdr_amo_apply(uint8_t op, uint64_t value, uint64_t operand)
{
    switch (op) {
    case UCT_ATOMIC_OP_AND:  return value & operand;
    case UCT_ATOMIC_OP_OR:   return value | operand;
    case UCT_ATOMIC_OP_XOR:  return value ^ operand;
    case UCT_ATOMIC_OP_SWAP: return operand;
    default:                 return value + operand;
    }
}

static void gdr_op_cas_loop(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    gdr_iface_t *iface = gdr_ep_iface(ep);
    uint64_t observed  = *(uint64_t*)gdr_tx_op_data(op);
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    /* No credit check: this runs from gdr_ep_tx_completed() before the
     * completed WRs' credits are returned, and the send queue and CQ do have
     * room for at least the one WR whose completion brought us here. */
    if ((status == UCS_OK) && (!op->amo.swapping || (observed != op->amo.expected))) {
        op->amo.expected         = observed;
        op->amo.swapping         = 1;
        gdr_op_sge(op, sizeof(uint64_t), &sge);
        wr.opcode                = IBV_WR_ATOMIC_CMP_AND_SWP;
        wr.sg_list               = &sge;
        wr.num_sge               = 1;
        wr.send_flags            = 0;
        wr.wr.atomic.remote_addr = op->amo.remote_addr;
        wr.wr.atomic.compare_add = observed;
        wr.wr.atomic.swap        = gdr_amo_apply(op->amo.op, observed,
                                                 op->amo.operand);
        wr.wr.atomic.rkey        = op->amo.rkey;
        status = gdr_ep_post(iface, ep, &wr, 1, op);
        if (status == UCS_OK) {
            return; /* back here when the CAS completes */
        }
    }

    --ep->tx.cas_loops;
    if ((status == UCS_OK) && (op->result != NULL)) {
        *(uint64_t*)op->result = observed;
    }
    gdr_op_complete(op, ep, status);
}

static ucs_status_t gdr_ep_atomic_cas_loop(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                           uint64_t value, uint64_t *result,
                                           uint64_t remote_addr, uct_rkey_t uct_rkey,
                                           uct_completion_t *comp,
                                           ucs_status_t success)
{
    gdr_ep_t *ep    = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_tx_op_t *op = NULL;
    ucs_status_t status;
    uint32_t rkey;

    status = gdr_ep_rkey(ep, uct_rkey, sizeof(uint64_t), &rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    /* step 1 is a fetch-add of 0: an atomic read */
    status = gdr_ep_atomic(tl_ep, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, remote_addr,
                           uct_rkey, result, gdr_op_cas_loop, comp, success, &op);
    if (status != success) {
        return status;
    }
    op->amo.remote_addr = remote_addr;
    op->amo.operand     = value;
    op->amo.rkey        = rkey;
    op->amo.op          = opcode;
    op->amo.swapping    = 0;
    ++ep->tx.cas_loops;
    return success;
}

ucs_status_t gdr_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode, uint64_t value,
                                  uint64_t remote_addr, uct_rkey_t rkey)
{
    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:
        return gdr_ep_atomic(tl_ep, IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0,
                             remote_addr, rkey, NULL, gdr_op_release, NULL, UCS_OK,
                             NULL);
    case UCT_ATOMIC_OP_AND:
    case UCT_ATOMIC_OP_OR:
    case UCT_ATOMIC_OP_XOR:
        return gdr_ep_atomic_cas_loop(tl_ep, opcode, value, NULL, remote_addr, rkey,
                                      NULL, UCS_OK);
    default:
        return UCS_ERR_UNSUPPORTED;
    }
}

ucs_status_t gdr_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                   uint64_t value, uint64_t *result,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp)
{
    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:
        return gdr_ep_atomic(tl_ep, IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0,
                             remote_addr, rkey, result, gdr_op_atomic_fetch, comp,
                             UCS_INPROGRESS, NULL);
    case UCT_ATOMIC_OP_AND:
    case UCT_ATOMIC_OP_OR:
    case UCT_ATOMIC_OP_XOR:
    case UCT_ATOMIC_OP_SWAP:
        return gdr_ep_atomic_cas_loop(tl_ep, opcode, value, result, remote_addr, rkey,
                                      comp, UCS_INPROGRESS);
    default:
        return UCS_ERR_UNSUPPORTED;
    }
}

ucs_status_t gdr_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare, uint64_t swap,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uint64_t *result, uct_completion_t *comp)
{
    return gdr_ep_atomic(tl_ep, IBV_WR_ATOMIC_CMP_AND_SWP, compare, swap,
                         remote_addr, rkey, result, gdr_op_atomic_fetch, comp,
                         UCS_INPROGRESS, NULL);
}

/* ------------------------------------------------------- completions --- */

static void gdr_ep_complete_ops(gdr_ep_t *ep, uint16_t sn, int inclusive,
                                ucs_status_t status)
{
    gdr_tx_op_t *op;

    while (!ucs_queue_is_empty(&ep->tx.outstanding)) {
        op = ucs_queue_head_elem_non_empty(&ep->tx.outstanding, gdr_tx_op_t, queue);
        if (inclusive ? UCS_CIRCULAR_COMPARE16(op->sn, >, sn) :
                        UCS_CIRCULAR_COMPARE16(op->sn, >=, sn)) {
            break;
        }
        ucs_queue_pull_non_empty(&ep->tx.outstanding);
        op->handler(op, ep, status);
    }
}

static void gdr_ep_purge_ops(gdr_ep_t *ep, ucs_status_t status)
{
    gdr_tx_op_t *op;

    while (!ucs_queue_is_empty(&ep->tx.outstanding)) {
        op = ucs_queue_pull_elem_non_empty(&ep->tx.outstanding, gdr_tx_op_t, queue);
        op->handler(op, ep, status);
    }
}

/* The QP is in the error state: fail everything, tell UCP once */
static void gdr_ep_fail(gdr_iface_t *iface, gdr_ep_t *ep, ucs_status_t status)
{
    ucs_status_t handled;

    if (ep->flags & GDR_EP_FLAG_FLUSH_CANCEL) {
        status = UCS_ERR_CANCELED;
    }
    ep->flags |= GDR_EP_FLAG_FAILED;
    ep->error  = status;
    gdr_ep_purge_ops(ep, status);
    if (ep->flags & GDR_EP_FLAG_FLUSH_CANCEL) {
        return; /* the user asked for it: no error to report */
    }
    handled = uct_iface_handle_ep_err(&iface->super.super, &ep->super.super, status);
    if (handled != UCS_OK) {
        ucs_error("gdr_rc: endpoint %p (qpn 0x%x) failed: %s", ep, ep->qp->qp_num,
                  ucs_status_string(status));
    }
}

/*
 * One CQE covers every WR since the previous one (unsignaled included).
 * The user's completions run *before* the credits come back, as in UCX's rc
 * transports: a send issued from a completion callback then finds no room
 * while requests wait on the pending queue, and cannot overtake them; the
 * caller dispatches the pending queue right after this.
 */
void gdr_ep_tx_completed(gdr_ep_t *ep, uint16_t sn, ucs_status_t status)
{
    gdr_iface_t *iface = gdr_ep_iface(ep);
    uint16_t count     = sn - ep->tx.completed_sn;

    ep->tx.completed_sn = sn;
    if (ucs_likely(status == UCS_OK) || (ep->flags & GDR_EP_FLAG_FAILED)) {
        gdr_ep_complete_ops(ep, sn, 1, (ep->flags & GDR_EP_FLAG_FAILED) ?
                                       ep->error : UCS_OK);
    } else {
        gdr_ep_complete_ops(ep, sn, 0, UCS_OK); /* WRs before it succeeded */
        gdr_ep_fail(iface, ep, status);
    }
    ep->tx.available       += count;
    iface->tx.cq_available += count;
    ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
}

/* ----------------------------------------------------- flush / fence --- */

/* A zero-length RDMA write: no rkey check, completes after all before it */
static ucs_status_t gdr_ep_post_nop(gdr_iface_t *iface, gdr_ep_t *ep)
{
    struct ibv_send_wr wr;

    gdr_wr_rdma(&wr, IBV_WR_RDMA_WRITE, NULL, 0, 0, 0, 0);
    return gdr_ep_post(iface, ep, &wr, 1, NULL);
}

ucs_status_t gdr_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    ucs_status_t status;
    gdr_tx_op_t *op;

    if (ep->tx.posted_sn == ep->tx.completed_sn) {
        return UCS_OK;
    }

    if (!(ep->flags & (GDR_EP_FLAG_FAILED | GDR_EP_FLAG_FLUSH_CANCEL))) {
        /* The last WR is unsignaled: add one that will produce a completion,
         * also before a cancel.  An unsignaled WR that the HCA already
         * executed leaves no trace in the send queue, so moving the QP to the
         * error state would flush nothing for it, and only a later CQE (this
         * NOP's, successful or flushed) can tell that it is done.  A failed
         * QP needs none: every WR after the failed one completes flushed. */
        if (ep->tx.signaled_sn != ep->tx.posted_sn) {
            if (!gdr_ep_has_tx_resources(iface, ep)) {
                return UCS_ERR_NO_RESOURCE;
            }
            status = gdr_ep_post_nop(iface, ep);
            if (status != UCS_OK) {
                return status;
            }
        }
        if (flags & UCT_FLUSH_FLAG_CANCEL) {
            /* every outstanding WR completes flushed, ops get CANCELED */
            ep->flags |= GDR_EP_FLAG_FLUSH_CANCEL;
            if (gdr_verbs_qp_to_error(ep->qp) != 0) {
                ucs_error("gdr_rc: cannot move qpn 0x%x to the error state: %m",
                          ep->qp->qp_num);
                return UCS_ERR_IO_ERROR;
            }
        }
    }

    if (comp != NULL) {
        op = gdr_ep_op_get(iface, 0, gdr_op_flush, comp);
        if (op == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        op->sn = ep->tx.posted_sn;
        ucs_queue_push(&ep->tx.outstanding, &op->queue);
    }
    return UCS_INPROGRESS;
}

ucs_status_t gdr_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    gdr_ep_t *ep = ucs_derived_of(tl_ep, gdr_ep_t);

    ep->flags |= GDR_EP_FLAG_FENCE;
    return UCS_OK;
}

/* A check whose answer is a completion (UCX >= 1.20 passes one; earlier ones
 * require NULL): known now when the ep failed or is not connected yet,
 * otherwise when a signaled NOP completes, successfully or not */
static ucs_status_t gdr_ep_check_with_completion(gdr_iface_t *iface, gdr_ep_t *ep,
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
    op->sn = ep->tx.posted_sn;
    ucs_queue_push(&ep->tx.outstanding, &op->queue);
    return UCS_INPROGRESS;
}

/* Keepalive: a signaled NOP to a dead peer ends in a retry-exceeded error,
 * which reaches UCP through the error handler.  Skipped only while a
 * *signaled* WR is in flight (its completion tells the same): unsignaled WRs
 * produce no completion, so "something posted, nothing completed" alone
 * (e.g. a rendezvous RTS sent unsignaled, then silence) would never be
 * checked. */
ucs_status_t gdr_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);

    UCT_CHECK_PARAM(flags == 0, "Unsupported flags: %x", flags);
    if (comp != NULL) {
        return gdr_ep_check_with_completion(iface, ep, comp);
    }
    if ((ep->flags & GDR_EP_FLAG_FAILED) || !(ep->flags & GDR_EP_FLAG_CONNECTED) ||
        UCS_CIRCULAR_COMPARE16(ep->tx.signaled_sn, >, ep->tx.completed_sn)) {
        return UCS_OK;
    }
    if (!gdr_ep_has_tx_resources(iface, ep)) {
        return UCS_ERR_NO_RESOURCE; /* UCP's keepalive retries it */
    }
    return gdr_ep_post_nop(iface, ep);
}

/* ----------------------------------------------------------- pending --- */

ucs_status_t gdr_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                unsigned flags)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);

    if (gdr_ep_has_tx_resources(iface, ep) || (ep->flags & GDR_EP_FLAG_FAILED)) {
        return UCS_ERR_BUSY;
    }
    UCS_STATIC_ASSERT(sizeof(ucs_arbiter_elem_t) <= UCT_PENDING_REQ_PRIV_LEN);
    ucs_arbiter_elem_init((ucs_arbiter_elem_t*)req->priv);
    ucs_arbiter_group_push_elem(&ep->arb_group, (ucs_arbiter_elem_t*)req->priv);
    if ((ep->flags & GDR_EP_FLAG_CONNECTED) && (ep->tx.available > 0)) {
        /* only the iface is short: let the next completion dispatch us */
        ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
    }
    return UCS_OK;
}

ucs_arbiter_cb_result_t gdr_ep_arbiter_dispatch_cb(ucs_arbiter_t *arbiter,
                                                   ucs_arbiter_group_t *group,
                                                   ucs_arbiter_elem_t *elem,
                                                   void *arg)
{
    uct_pending_req_t *req = ucs_container_of(elem, uct_pending_req_t, priv);
    gdr_ep_t *ep           = ucs_container_of(group, gdr_ep_t, arb_group);
    gdr_iface_t *iface     = gdr_ep_iface(ep);
    ucs_status_t status;

    if (!(ep->flags & GDR_EP_FLAG_CONNECTED) || (ep->tx.available <= 0)) {
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
    void                         *arg;
} gdr_ep_purge_args_t;

static ucs_arbiter_cb_result_t gdr_ep_purge_cb(ucs_arbiter_t *arbiter,
                                               ucs_arbiter_group_t *group,
                                               ucs_arbiter_elem_t *elem, void *arg)
{
    gdr_ep_purge_args_t *args = arg;
    uct_pending_req_t *req    = ucs_container_of(elem, uct_pending_req_t, priv);

    if (args->cb != NULL) {
        args->cb(req, args->arg);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void gdr_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg)
{
    gdr_ep_t *ep             = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_ep_purge_args_t args = {cb, arg};

    ucs_arbiter_group_purge(&gdr_ep_iface(ep)->tx.arbiter, &ep->arb_group,
                            gdr_ep_purge_cb, &args);
}

/* ------------------------------------------------------- connection --- */

static void gdr_u24_pack(uint8_t *dst, uint32_t value)
{
    dst[0] = value & 0xff;
    dst[1] = (value >> 8) & 0xff;
    dst[2] = (value >> 16) & 0xff;
}

static uint32_t gdr_u24_unpack(const uint8_t *src)
{
    return src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16);
}

ucs_status_t gdr_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr)
{
    gdr_ep_t *ep         = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface   = gdr_ep_iface(ep);
    gdr_ep_addr_t *ep_addr = (gdr_ep_addr_t*)addr;

    gdr_u24_pack(ep_addr->qp_num, ep->qp->qp_num);
    gdr_u24_pack(ep_addr->psn, ep->psn);
    ep_addr->mtu       = iface->qp_local.mtu;
    ep_addr->dev_index = iface->dev_index;
    return UCS_OK;
}

ucs_status_t gdr_ep_connect_to_ep(uct_ep_h tl_ep, const uct_device_addr_t *dev_addr,
                                  const uct_ep_addr_t *addr)
{
    gdr_ep_t *ep                     = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface               = gdr_ep_iface(ep);
    const gdr_ep_addr_t *peer_ep     = (const gdr_ep_addr_t*)addr;
    gdr_qp_local_t local             = iface->qp_local;
    char err[GDR_VERBS_REASON_MAX];
    gdr_ib_address_info_t peer;
    gdr_qp_remote_t remote;

    /* In client-server wireup this is rdmacm's address, not ours: see
     * gdr_ib_address.h */
    if (gdr_ib_address_unpack(dev_addr, &peer) != 0) {
        ucs_error("gdr_rc: no valid device address to connect qpn 0x%x to",
                  ep->qp->qp_num);
        return UCS_ERR_INVALID_ADDR;
    }
    if (gdr_verbs_mtu_bytes(peer_ep->mtu) == 0) {
        ucs_error("gdr_rc: peer endpoint address has an invalid MTU (%u)",
                  peer_ep->mtu);
        return UCS_ERR_INVALID_ADDR;
    }
    remote.qp_num    = gdr_u24_unpack(peer_ep->qp_num);
    remote.psn       = gdr_u24_unpack(peer_ep->psn);
    remote.lid       = peer.lid;
    remote.mtu       = peer_ep->mtu;
    if ((peer.path_mtu != 0) && (peer.path_mtu < remote.mtu)) {
        remote.mtu = peer.path_mtu; /* the connection manager's path MTU */
    }
    remote.is_global = peer.is_eth || peer.grh ||
                       iface->port->grh_required ||
                       memcmp(peer.gid.raw, iface->gid.raw, 8); /* other subnet */
    remote.gid       = peer.gid;
    local.psn        = ep->psn;

    if (gdr_verbs_qp_connect(ep->qp, &local, &remote, err, sizeof(err)) != 0) {
        ucs_error("gdr_rc: connecting qpn 0x%x on %s:%u: %s", ep->qp->qp_num,
                  iface->dev->name, iface->port->port_num, err);
        return UCS_ERR_UNREACHABLE;
    }
    ep->remote_dev_index = peer_ep->dev_index;
    ep->flags           |= GDR_EP_FLAG_CONNECTED;
    ucs_debug("gdr_rc: ep %p qpn 0x%x connected to qpn 0x%x", ep, ep->qp->qp_num,
              remote.qp_num);
    ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
    return UCS_OK;
}

/* Asks the QP whom it is connected to (ibv_query_qp: a system call, but this
 * is a wireup question, never the data path) */
int gdr_ep_is_connected_to(uct_ep_h tl_ep, const uct_device_addr_t *dev_addr,
                           const uct_ep_addr_t *ep_addr)
{
    gdr_ep_t *ep = ucs_derived_of(tl_ep, gdr_ep_t);
    struct ibv_qp_init_attr init_attr;
    gdr_ib_address_info_t peer;
    struct ibv_qp_attr attr;

    if (!(ep->flags & GDR_EP_FLAG_CONNECTED) ||
        (gdr_ib_address_unpack(dev_addr, &peer) != 0) ||
        ibv_query_qp(ep->qp, &attr, IBV_QP_AV | IBV_QP_DEST_QPN, &init_attr)) {
        return 0;
    }
    if ((ep_addr != NULL) &&
        (gdr_u24_unpack(((const gdr_ep_addr_t*)ep_addr)->qp_num) !=
         attr.dest_qp_num)) {
        return 0;
    }
    if (!peer.is_eth && (peer.lid != attr.ah_attr.dlid)) {
        return 0;
    }
    return !(peer.is_eth || peer.has_if_id) || !attr.ah_attr.is_global ||
           !memcmp(peer.gid.raw, attr.ah_attr.grh.dgid.raw, sizeof(peer.gid.raw));
}

UCS_CLASS_INIT_FUNC(gdr_ep_t, const uct_ep_params_t *params)
{
    gdr_iface_t *iface   = ucs_derived_of(params->iface, gdr_iface_t);
    uint32_t inline_size = iface->tx.max_inline;
    char err[GDR_VERBS_REASON_MAX];
    khiter_t it;
    int ret;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    if (params->field_mask & (UCT_EP_PARAM_FIELD_DEV_ADDR |
                              UCT_EP_PARAM_FIELD_IFACE_ADDR |
                              UCT_EP_PARAM_FIELD_SOCKADDR)) {
        ucs_error("gdr_rc: only connect-to-ep endpoints are supported");
        return UCS_ERR_UNSUPPORTED;
    }

    if (gdr_verbs_qp_create(iface->dev->pd, iface->send_cq, iface->recv_cq,
                            iface->srq, iface->tx.queue_len, iface->tx.max_sge,
                            &inline_size, &self->qp, err, sizeof(err)) != 0) {
        ucs_error("gdr_rc: %s: %s", iface->dev->name, err);
        return UCS_ERR_IO_ERROR;
    }

    it = kh_put(gdr_qp_ep, &iface->eps, self->qp->qp_num, &ret);
    if (ret <= 0) {
        ucs_error("gdr_rc: qpn 0x%x is already in use", self->qp->qp_num);
        ibv_destroy_qp(self->qp);
        return UCS_ERR_ALREADY_EXISTS;
    }
    kh_value(&iface->eps, it) = self;

    self->psn              = ucs_generate_uuid((uintptr_t)self) & 0xffffff;
    self->flags            = 0;
    self->remote_dev_index = 0;
    self->error            = UCS_OK;
    self->fence_beat       = iface->tx.fence_beat;
    self->tx.posted_sn     = 0;
    self->tx.completed_sn  = 0;
    self->tx.signaled_sn   = 0;
    self->tx.unsignaled    = 0;
    self->tx.available     = iface->tx.queue_len;
    self->tx.cas_loops     = 0;
    ucs_queue_head_init(&self->tx.outstanding);
    ucs_arbiter_group_init(&self->arb_group);
    ucs_list_add_tail(&iface->ep_list, &self->list);
    return UCS_OK;
}

UCS_CLASS_CLEANUP_FUNC(gdr_ep_t)
{
    gdr_iface_t *iface = gdr_ep_iface(self);
    khiter_t it;

    ucs_arbiter_group_desched(&iface->tx.arbiter, &self->arb_group);
    ucs_arbiter_group_cleanup(&self->arb_group);
    it = kh_get(gdr_qp_ep, &iface->eps, self->qp->qp_num);
    if (it != kh_end(&iface->eps)) {
        kh_del(gdr_qp_ep, &iface->eps, it);
    }
    ucs_list_del(&self->list);
    /* no DMA into our bounce buffers after this: then release them */
    if (ibv_destroy_qp(self->qp) != 0) {
        ucs_warn("gdr_rc: ibv_destroy_qp failed: %m");
    }
    iface->tx.cq_available += (uint16_t)(self->tx.posted_sn - self->tx.completed_sn);
    gdr_ep_purge_ops(self, UCS_ERR_CANCELED);
}

UCS_CLASS_DEFINE(gdr_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(gdr_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(gdr_ep_t, uct_ep_t);
