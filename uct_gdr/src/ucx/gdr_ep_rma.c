/**
 * gdr_ep_rma.c - put and get: RDMA writes and reads to the peer's memory.
 */
#include "gdr_ep.inl"


static void gdr_op_get_bcopy(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    if (status == UCS_OK) {
        GDR_HCA_WROTE(gdr_tx_op_data(op), op->length);
        op->unpack_cb(op->result, gdr_tx_op_data(op), op->length);
    }
    gdr_op_complete(op, ep, status);
}

ucs_status_t gdr_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                              unsigned length, uint64_t remote_addr,
                              uct_rkey_t uct_rkey)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    gdr_verbs_wr_t wr;
    ucs_status_t status;
    uint32_t rkey;

    UCT_CHECK_LENGTH(length, 0, iface->tx.max_inline, "gdr_rc put_short");
    status = gdr_ep_rma_begin(iface, ep, uct_rkey, length, &rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    gdr_wr_rdma(&wr, IBV_WR_RDMA_WRITE, remote_addr, rkey, IBV_SEND_INLINE);
    wr.sge.addr   = (uintptr_t)buffer;
    wr.sge.length = length;
    wr.sge.lkey   = 0;
    UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    return gdr_ep_post(iface, ep, &wr, 0, NULL);
}

ssize_t gdr_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                         uint64_t remote_addr, uct_rkey_t uct_rkey)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    gdr_verbs_wr_t wr;
    ucs_status_t status;
    gdr_tx_op_t *op;
    uint32_t rkey;

    status = gdr_ep_bcopy_begin(iface, ep, pack_cb, arg, &wr.sge, &op);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = gdr_ep_rkey(ep, uct_rkey, wr.sge.length, &rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(op);
        return status;
    }
    gdr_wr_rdma(&wr, IBV_WR_RDMA_WRITE, remote_addr, rkey, 0);
    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, wr.sge.length);
    return gdr_ep_bcopy_post(iface, ep, &wr, op);
}

/* put_zcopy and get_zcopy differ only in the opcode */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_rdma_zcopy(uct_ep_h tl_ep, enum ibv_wr_opcode opcode,
                  const uct_iov_t *iov, size_t iovcnt, uint64_t remote_addr,
                  uct_rkey_t uct_rkey, uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_sge sge[iface->tx.max_sge];
    gdr_verbs_wr_t wr;
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
    gdr_wr_rdma(&wr, opcode, remote_addr, rkey, 0);
    if (opcode == IBV_WR_RDMA_WRITE) {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, ZCOPY,
                          uct_iov_total_length(iov, iovcnt));
    } else {
        UCT_TL_EP_STAT_OP(&ep->super, GET, ZCOPY,
                          uct_iov_total_length(iov, iovcnt));
    }
    if (comp == NULL) {
        status = gdr_ep_post_sges(iface, ep, &wr, sge, num_sge, 0, NULL);
        return (status == UCS_OK) ? UCS_INPROGRESS : status;
    }
    op = gdr_ep_op_get(iface, 0, gdr_op_complete, comp);
    if (ucs_unlikely(op == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return gdr_ep_op_posted(gdr_ep_post_sges(iface, ep, &wr, sge, num_sge, 1,
                                             op),
                            op, UCS_INPROGRESS);
}

ucs_status_t gdr_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                              size_t iovcnt, uint64_t remote_addr,
                              uct_rkey_t rkey, uct_completion_t *comp)
{
    return gdr_ep_rdma_zcopy(tl_ep, IBV_WR_RDMA_WRITE, iov, iovcnt, remote_addr,
                             rkey, comp);
}

ucs_status_t gdr_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                              size_t iovcnt, uint64_t remote_addr,
                              uct_rkey_t rkey, uct_completion_t *comp)
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
    gdr_verbs_wr_t wr;
    ucs_status_t status;
    gdr_tx_op_t *op;
    uint32_t rkey;

    UCT_CHECK_LENGTH(length, 0, iface->seg_size, "gdr_rc get_bcopy");
    status = gdr_ep_rma_desc_begin(iface, ep, uct_rkey, length,
                                   gdr_op_get_bcopy, comp, &rkey, &op);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    op->unpack_cb = unpack_cb;
    op->result    = arg;
    op->length    = length;
    gdr_op_sge(op, length, &wr.sge);
    gdr_wr_rdma(&wr, IBV_WR_RDMA_READ, remote_addr, rkey, 0);
    UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    /* signaled: the data is only there once this WR completes */
    return gdr_ep_op_posted(gdr_ep_post(iface, ep, &wr, 1, op), op,
                            UCS_INPROGRESS);
}
