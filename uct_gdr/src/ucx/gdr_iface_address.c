/**
 * gdr_iface_address.c - gdr_rc's device address (UCX's IB address format, gdr_ib_address.h)
 * and what an address says of a peer: reachable from this port, or this very port.
 */
#include "gdr_iface.h"

/* Our port as gdr_ib_address.c packs it (the GID may be a forced one) */
static void
gdr_iface_ib_port(const gdr_iface_t *iface, gdr_ib_address_port_t *port)
{
    port->link_layer   = iface->port->link_layer;
    port->grh_required = iface->port->grh_required;
    port->lid          = iface->port->lid;
    port->gid          = iface->gid;
}

size_t gdr_iface_device_addr_len(const gdr_iface_t *iface)
{
    gdr_ib_address_port_t port;

    gdr_iface_ib_port(iface, &port);
    return gdr_ib_address_size(&port);
}

ucs_status_t
gdr_iface_get_device_address(uct_iface_h tl_iface, uct_device_addr_t *addr)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    gdr_ib_address_port_t port;

    gdr_iface_ib_port(iface, &port);
    gdr_ib_address_pack(&port, addr);
    return UCS_OK;
}

int gdr_iface_is_reachable(const uct_iface_h tl_iface,
                           const uct_device_addr_t *addr,
                           const uct_iface_addr_t *iface_addr)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    gdr_ib_address_port_t port;
    gdr_ib_address_info_t peer;

    /* ours, or rdmacm's in client-server wireup (gdr_ib_address.h) */
    if (gdr_ib_address_unpack(addr, &peer) != 0) {
        return 0;
    }
    gdr_iface_ib_port(iface, &port);
    return gdr_ib_address_reachable(&port, &peer);
}

/* This very port (gdr_ib_address_names_port: UCX's rule) */
int gdr_iface_is_same_device(const uct_iface_h tl_iface,
                             const uct_device_addr_t *addr)
{
    gdr_iface_t *iface = ucs_derived_of(tl_iface, gdr_iface_t);
    gdr_ib_address_info_t peer;

    return (gdr_ib_address_unpack(addr, &peer) == 0) &&
           gdr_ib_address_names_port(&peer, iface->port->lid, &iface->gid);
}
