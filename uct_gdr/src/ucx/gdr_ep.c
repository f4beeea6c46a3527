/**
 * gdr_ep.c - a gdr_rc endpoint's life: its RC QP created, connected to the peer's
 * (wireup), asked whom it is connected to, and destroyed.
 */
#include "gdr_ep.inl"

#include <ucs/sys/math.h>
#include <ucs/time/time.h>


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
    gdr_ep_t *ep           = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface     = gdr_ep_iface(ep);
    gdr_ep_addr_t *ep_addr = (gdr_ep_addr_t *)addr;

    gdr_u24_pack(ep_addr->qp_num, ep->qp->qp_num);
    gdr_u24_pack(ep_addr->psn, ep->psn);
    ep_addr->mtu = iface->qp_local.mtu;
    return UCS_OK;
}

ucs_status_t gdr_ep_connect_to_ep(uct_ep_h tl_ep,
                                  const uct_device_addr_t *dev_addr,
                                  const uct_ep_addr_t *addr)
{
    gdr_ep_t *ep                 = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface           = gdr_ep_iface(ep);
    const gdr_ep_addr_t *peer_ep = (const gdr_ep_addr_t *)addr;
    gdr_qp_local_t local         = iface->qp_local;
    gdr_ib_address_info_t peer;
    gdr_qp_remote_t remote;
    ucs_status_t status;
    gdr_reason_t why;

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
    remote.qp_num = gdr_u24_unpack(peer_ep->qp_num);
    remote.psn    = gdr_u24_unpack(peer_ep->psn);
    remote.lid    = peer.lid;
    remote.mtu    = peer_ep->mtu;
    if ((peer.path_mtu != 0) && (peer.path_mtu < remote.mtu)) {
        remote.mtu = peer.path_mtu; /* the connection manager's path MTU */
    }
    remote.is_global = peer.is_eth || peer.grh || iface->port->grh_required ||
                       memcmp(peer.gid.raw, iface->gid.raw,
                              8); /* other subnet */
    remote.gid = peer.gid;
    local.psn  = ep->psn;

    status = gdr_verbs_qp_connect(ep->qp, &local, &remote, &why);
    if (status != UCS_OK) {
        ucs_error("gdr_rc: connecting qpn 0x%x on %s:%u: %s", ep->qp->qp_num,
                  iface->dev->name, iface->port->port_num, why.text);
        return status;
    }
    ep->flags |= GDR_EP_FLAG_CONNECTED;
    if (peer.is_eth || peer.has_if_id) {
        ep->peer_gid = peer.gid;
        ep->flags |= GDR_EP_FLAG_PEER_GID;
    }
    ucs_debug("gdr_rc: ep %p qpn 0x%x connected to qpn 0x%x", ep,
              ep->qp->qp_num, remote.qp_num);
    ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
    return UCS_OK;
}

/* Asks the QP whom it is connected to (ibv_query_qp: a system call, but this
 * is a wireup question, never the data path), as uct_rc_verbs_ep_is_connected
 * does.  Unlike UCX's rc transports, whose IB addresses carry the interface id
 * only when their QPs use a GRH, ours always carry it: so where the QP has no
 * GRH, the GID the peer's address named at connect time stands in for the one
 * the QP cannot tell. */
int gdr_ep_is_connected_to(uct_ep_h tl_ep, const uct_device_addr_t *dev_addr,
                           const uct_ep_addr_t *ep_addr)
{
    gdr_ep_t *ep = ucs_derived_of(tl_ep, gdr_ep_t);
    struct ibv_qp_init_attr init_attr;
    const union ibv_gid *peer_gid;
    gdr_ib_address_info_t peer;
    struct ibv_qp_attr attr;

    if (!(ep->flags & GDR_EP_FLAG_CONNECTED) ||
        (gdr_ib_address_unpack(dev_addr, &peer) != 0) ||
        ibv_query_qp(ep->qp, &attr, IBV_QP_AV | IBV_QP_DEST_QPN, &init_attr)) {
        return 0;
    }
    if ((ep_addr != NULL) &&
        (gdr_u24_unpack(((const gdr_ep_addr_t *)ep_addr)->qp_num) !=
         attr.dest_qp_num)) {
        return 0;
    }
    if (attr.ah_attr.is_global) {
        peer_gid = &attr.ah_attr.grh.dgid;
    } else if (ep->flags & GDR_EP_FLAG_PEER_GID) {
        peer_gid = &ep->peer_gid;
    } else {
        peer_gid = NULL;
    }
    return gdr_ib_address_names_port(&peer, attr.ah_attr.dlid, peer_gid);
}

UCS_CLASS_INIT_FUNC(gdr_ep_t, const uct_ep_params_t *params)
{
    gdr_iface_t *iface   = ucs_derived_of(params->iface, gdr_iface_t);
    uint32_t inline_size = iface->tx.max_inline;
    ucs_status_t status;
    gdr_reason_t why;

    /* gdr_ep_iface() finds the iface through the base ep at the start */
    UCS_STATIC_ASSERT(ucs_offsetof(gdr_ep_t, super) == 0);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    if (params->field_mask &
        (UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR |
         UCT_EP_PARAM_FIELD_SOCKADDR)) {
        ucs_error("gdr_rc: only connect-to-ep endpoints are supported");
        return UCS_ERR_UNSUPPORTED;
    }

    status = gdr_verbs_qp_create(iface->dev->pd, iface->send_cq, iface->recv_cq,
                                 iface->srq, iface->tx.queue_len,
                                 iface->tx.max_sge, iface->tx.send_ops_flags,
                                 &inline_size, &self->qp, &self->qpx, &why);
    if (status != UCS_OK) {
        ucs_error("gdr_rc: %s: %s", iface->dev->name, why.text);
        return status;
    }

    status = gdr_iface_ep_add(iface, self, self->qp->qp_num);
    if (status != UCS_OK) {
        ibv_destroy_qp(self->qp);
        return status;
    }

    self->psn                = ucs_generate_uuid((uintptr_t)self) & 0xffffff;
    self->flags              = 0;
    self->error              = UCS_OK;
    self->fence_beat         = iface->tx.fence_beat;
    self->tx.posted_sn       = 0;
    self->tx.completed_sn    = 0;
    self->tx.signaled_sn     = 0;
    self->tx.unsignaled      = 0;
    self->tx.available       = iface->tx.queue_len;
    self->tx.cas_loops       = 0;
    self->stall.completed_sn = 0;
    self->stall.since        = 0;
    self->amo.valid          = 0;
    self->amo.retrier        = NULL;
    ucs_queue_head_init(&self->amo.parked);
    ucs_queue_head_init(&self->tx.outstanding);
    ucs_arbiter_group_init(&self->arb_group);
    ucs_list_add_tail(&iface->ep_list, &self->list);
    return UCS_OK;
}

UCS_CLASS_CLEANUP_FUNC(gdr_ep_t)
{
    gdr_iface_t *iface = gdr_ep_iface(self);

    ucs_arbiter_group_desched(&iface->tx.arbiter, &self->arb_group);
    ucs_arbiter_group_cleanup(&self->arb_group);
    gdr_iface_ep_remove(iface, self->qp->qp_num);
    ucs_list_del(&self->list);
    /* no DMA into our bounce buffers after this: then release them */
    if (ibv_destroy_qp(self->qp) != 0) {
        ucs_warn("gdr_rc: ibv_destroy_qp failed: %m");
    }
    iface->tx.cq_available += (uint16_t)(self->tx.posted_sn -
                                         self->tx.completed_sn);
    gdr_ep_purge_ops(self, UCS_ERR_CANCELED);
}

UCS_CLASS_DEFINE(gdr_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(gdr_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DEFINE_DELETE_FUNC(gdr_ep_t, uct_ep_t);
