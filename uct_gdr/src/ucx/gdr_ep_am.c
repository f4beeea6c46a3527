/**
 * gdr_ep_am.c - active messages: SEND_WITH_IMM with the AM id in the immediate data, so
 * the payload lands in the peer's receive buffer exactly as sent.
 */
#include "gdr_ep.inl"

#include <arpa/inet.h>


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

ucs_status_t gdr_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                 const uct_iov_t *iov, size_t iovcnt)
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
    status = gdr_ep_bcopy_begin(iface, ep, pack_cb, arg, &sge, &op);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    gdr_wr_am(&wr, id, &sge, sge.length > 0, 0);
    return gdr_ep_bcopy_post(iface, ep, &wr, op, &sge);
}

ucs_status_t gdr_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                             unsigned header_length, const uct_iov_t *iov,
                             size_t iovcnt, unsigned flags,
                             uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_sge sge[iface->tx.max_sge];
    struct ibv_send_wr wr;
    ucs_status_t status;
    gdr_tx_op_t *op;
    int num_sge;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->tx.max_sge - 1,
                       "gdr_rc am_zcopy");
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
    return gdr_ep_post_op(iface, ep, &wr, op->comp != NULL, op, UCS_INPROGRESS);
}
