/**
 * gdr_ep_am.c - active messages: SEND_WITH_IMM with the AM id in the immediate data, so
 * the payload lands in the peer's receive buffer exactly as sent.
 */
#include "gdr_ep.inl"

#include <arpa/inet.h>


static UCS_F_ALWAYS_INLINE void
gdr_wr_am(gdr_verbs_wr_t *wr, uint8_t id, unsigned send_flags)
{
    wr->opcode     = IBV_WR_SEND_WITH_IMM;
    wr->imm_data   = htonl(id);
    wr->send_flags = send_flags;
}

/* An inline send of @a length bytes at @a buffer (0 bytes: no buffer) */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_am_short_post(gdr_iface_t *iface,
                                                             gdr_ep_t *ep,
                                                             uint8_t id,
                                                             const void *buffer,
                                                             size_t length)
{
    gdr_verbs_wr_t wr;

    gdr_wr_am(&wr, id, IBV_SEND_INLINE);
    wr.sge.addr   = (uintptr_t)buffer;
    wr.sge.length = length;
    wr.sge.lkey   = 0;
    return gdr_ep_post(iface, ep, &wr, 0, NULL);
}

/* The header and the payload go as one inline buffer: one SGE is what the
 * verbs builders take (gdr_verbs_post.h), and the provider copies the data at
 * post time anyway; with no payload, the header is that buffer */
ucs_status_t gdr_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                             const void *payload, unsigned length)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(sizeof(header) + length, 0, iface->tx.max_inline,
                     "gdr_rc am_short");
    status = gdr_ep_check_tx(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(header) + length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, &header,
                       sizeof(header) + length, "gdr_rc: TX AM_SHORT");
    if (length == 0) {
        return gdr_ep_am_short_post(iface, ep, id, &header, sizeof(header));
    } else {
        char buffer[sizeof(header) + length]; /* at most max_inline: checked */

        memcpy(buffer, &header, sizeof(header));
        memcpy(buffer + sizeof(header), payload, length);
        return gdr_ep_am_short_post(iface, ep, id, buffer, sizeof(buffer));
    }
}

ucs_status_t gdr_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                 const uct_iov_t *iov, size_t iovcnt)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    size_t length      = uct_iov_total_length(iov, iovcnt);
    char buffer[iface->tx.max_inline + 1];
    ucs_status_t status;
    size_t i, iov_length;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(length, 0, iface->tx.max_inline, "gdr_rc am_short_iov");
    status = gdr_ep_check_tx(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    /* inline data is copied at post time: gather into the stack first. Not with
     * UCX's uct_iov_to_buffer(): UCP passes empty entries with a NULL buffer (an
     * AM without payload), which it hands to memcpy -- undefined even for 0
     * bytes (UBSan, ucp_cpp's rdma.*ActiveMessagesEagerAndRendezvous) */
    for (i = 0, length = 0; i < iovcnt; ++i) {
        /* count x length, as the total checked above: an entry whose count is
         * 0 must not copy its length past the checked buffer */
        iov_length = uct_iov_get_length(&iov[i]);
        if (iov_length != 0) {
            memcpy(buffer + length, iov[i].buffer, iov_length);
            length += iov_length;
        }
    }
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, buffer,
                       length, "gdr_rc: TX AM_SHORT_IOV");
    return gdr_ep_am_short_post(iface, ep, id, buffer, length);
}

ssize_t gdr_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                        void *arg, unsigned flags)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    gdr_verbs_wr_t wr;
    ucs_status_t status;
    gdr_tx_op_t *op;

    UCT_CHECK_AM_ID(id);
    status = gdr_ep_bcopy_begin(iface, ep, pack_cb, arg, &wr.sge, &op);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    gdr_wr_am(&wr, id, 0);
    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, wr.sge.length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id,
                       gdr_tx_op_data(op), wr.sge.length,
                       "gdr_rc: TX AM_BCOPY");
    return gdr_ep_bcopy_post(iface, ep, &wr, op);
}

ucs_status_t gdr_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                             unsigned header_length, const uct_iov_t *iov,
                             size_t iovcnt, unsigned flags,
                             uct_completion_t *comp)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    struct ibv_sge sge[iface->tx.max_sge];
    gdr_verbs_wr_t wr;
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
    gdr_wr_am(&wr, id, 0);
    UCT_TL_EP_STAT_OP(&ep->super, AM, ZCOPY,
                      header_length + uct_iov_total_length(iov, iovcnt));
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, header,
                       header_length, "gdr_rc: TX AM_ZCOPY");
    return gdr_ep_op_posted(gdr_ep_post_sges(iface, ep, &wr, sge, num_sge + 1,
                                             op->comp != NULL, op),
                            op, UCS_INPROGRESS);
}
