/*
 * gdr_ib_address: gdr_rc's device address in UCX's IB address format.
 * The format and why: gdr_ib_address.h.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1 /* be64toh */
#endif
#include "gdr_ib_address.h"

#include <endian.h>
#include <string.h>

/* IBTA 4.1.1 12a/12b, as UCX's UCT_IB_{LINK,SITE}_LOCAL_PREFIX/_MASK: the
 * subnet prefix as it lies in union ibv_gid, read as a host uint64_t */
#define GDR_IB_LINK_LOCAL_PREFIX be64toh(0xfe80000000000000ul)
#define GDR_IB_SITE_LOCAL_PREFIX be64toh(0xfec0000000000000ul)
#define GDR_IB_SITE_LOCAL_MASK   be64toh(0xffffffffffff0000ul)

int gdr_ib_gid_is_v4_mapped(const union ibv_gid *gid)
{
    static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return !memcmp(gid->raw, v4, sizeof(v4));
}

static int gdr_ib_port_is_eth(const gdr_ib_address_port_t *port)
{
    return port->link_layer == IBV_LINK_LAYER_ETHERNET;
}

static uint64_t gdr_ib_gid_subnet(const union ibv_gid *gid)
{
    uint64_t subnet;

    memcpy(&subnet, gid->raw, sizeof(subnet));
    return subnet;
}

/* IB: bytes the subnet prefix takes (UCX packs it the same way) */
static size_t gdr_ib_subnet_len(uint64_t subnet_prefix)
{
    if ((subnet_prefix & GDR_IB_SITE_LOCAL_MASK) == GDR_IB_SITE_LOCAL_PREFIX) {
        return sizeof(uint16_t);
    }
    return (subnet_prefix == GDR_IB_LINK_LOCAL_PREFIX) ? 0 : sizeof(uint64_t);
}

size_t gdr_ib_address_size(const gdr_ib_address_port_t *port)
{
    if (gdr_ib_port_is_eth(port)) {
        return 1 + sizeof(port->gid.raw);
    }
    return 1 + sizeof(uint16_t) + sizeof(uint64_t) +
           gdr_ib_subnet_len(gdr_ib_gid_subnet(&port->gid));
}

size_t gdr_ib_address_pack(const gdr_ib_address_port_t *port, void *buf)
{
    uint8_t *flags = (uint8_t *)buf;
    uint8_t *p     = flags + 1;
    uint64_t subnet;
    uint16_t u16;

    if (gdr_ib_port_is_eth(port)) {
        *flags = GDR_IB_ADDR_FLAG_ETH |
                 (GDR_IB_ADDR_ROCE_ANY << GDR_IB_ADDR_ROCE_VER_SHIFT);
        if (!gdr_ib_gid_is_v4_mapped(&port->gid)) {
            *flags |= GDR_IB_ADDR_FLAG_ROCE_IPV6;
        }
        memcpy(p, port->gid.raw, sizeof(port->gid.raw));
        p += sizeof(port->gid.raw);
        return (size_t)(p - flags);
    }

    /* IB: LID, the full GID (interface id + subnet prefix), GRH need */
    *flags = GDR_IB_ADDR_FLAG_IF_ID;
    if (port->grh_required) {
        *flags |= GDR_IB_ADDR_FLAG_GRH;
    }
    u16 = port->lid;
    memcpy(p, &u16, sizeof(u16));
    p += sizeof(u16);
    memcpy(p, port->gid.raw + 8, sizeof(uint64_t));
    p += sizeof(uint64_t);
    subnet = gdr_ib_gid_subnet(&port->gid);
    switch (gdr_ib_subnet_len(subnet)) {
    case sizeof(uint16_t):
        *flags |= GDR_IB_ADDR_FLAG_SUBNET16;
        u16 = (uint16_t)(subnet >> 48);
        memcpy(p, &u16, sizeof(u16));
        p += sizeof(u16);
        break;
    case sizeof(uint64_t):
        *flags |= GDR_IB_ADDR_FLAG_SUBNET64;
        memcpy(p, &subnet, sizeof(subnet));
        p += sizeof(subnet);
        break;
    default:
        break; /* link-local: implied */
    }
    return (size_t)(p - flags);
}

int gdr_ib_address_unpack(const void *buf, gdr_ib_address_info_t *info)
{
    const uint8_t *start = (const uint8_t *)buf;
    const uint8_t *p     = start;
    uint8_t flags;
    uint64_t u64;
    uint16_t u16;

    if (buf == NULL) {
        return -1;
    }
    memset(info, 0, sizeof(*info));
    info->pkey = 0xffff; /* UCT_IB_ADDRESS_DEFAULT_PKEY */
    flags      = *p++;
    if (flags & GDR_IB_ADDR_FLAG_ETH) {
        info->is_eth    = 1;
        info->roce_ver  = flags >> GDR_IB_ADDR_ROCE_VER_SHIFT;
        info->roce_ipv6 = !!(flags & GDR_IB_ADDR_FLAG_ROCE_IPV6);
        if (info->roce_ver > GDR_IB_ADDR_ROCE_ANY) {
            return -1; /* bit 7: no UCX version defines it for RoCE */
        }
        memcpy(info->gid.raw, p, sizeof(info->gid.raw));
        p += sizeof(info->gid.raw);
    } else {
        if ((flags & GDR_IB_ADDR_FLAG_SUBNET16) &&
            (flags & GDR_IB_ADDR_FLAG_SUBNET64)) {
            return -1; /* as UCX 1.22 (earlier ones assert) */
        }
        memcpy(&u16, p, sizeof(u16));
        p += sizeof(u16);
        info->lid = u16;
        info->grh = !!(flags & GDR_IB_ADDR_FLAG_GRH);
        u64       = GDR_IB_LINK_LOCAL_PREFIX;
        if (flags & GDR_IB_ADDR_FLAG_IF_ID) {
            info->has_if_id = 1;
            memcpy(info->gid.raw + 8, p, sizeof(uint64_t));
            p += sizeof(uint64_t);
        }
        if (flags & GDR_IB_ADDR_FLAG_SUBNET16) {
            memcpy(&u16, p, sizeof(u16));
            p += sizeof(u16);
            u64 = GDR_IB_SITE_LOCAL_PREFIX | ((uint64_t)u16 << 48);
        } else if (flags & GDR_IB_ADDR_FLAG_SUBNET64) {
            memcpy(&u64, p, sizeof(u64));
            p += sizeof(u64);
        }
        memcpy(info->gid.raw, &u64, sizeof(u64));
    }
    if (flags & GDR_IB_ADDR_FLAG_PATH_MTU) {
        info->path_mtu = (enum ibv_mtu) * p++;
    }
    if (flags & GDR_IB_ADDR_FLAG_GID_INDEX) {
        info->has_gid_index = 1;
        info->gid_index     = *p++;
    }
    if (flags & GDR_IB_ADDR_FLAG_PKEY) {
        info->has_pkey = 1;
        memcpy(&info->pkey, p, sizeof(info->pkey));
        p += sizeof(info->pkey);
    }
    info->size = (size_t)(p - start);
    return 0;
}

int gdr_ib_address_names_port(const gdr_ib_address_info_t *info, uint16_t lid,
                              const union ibv_gid *gid)
{
    if (!info->is_eth && (info->lid != lid)) {
        return 0;
    }
    if (gid == NULL) {
        return !(info->is_eth || info->has_if_id);
    }
    if (info->is_eth) {
        return !memcmp(info->gid.raw, gid->raw, sizeof(gid->raw));
    }
    return !info->has_if_id ||
           !memcmp(info->gid.raw + 8, gid->raw + 8, sizeof(uint64_t));
}

int gdr_ib_address_reachable(const gdr_ib_address_port_t *local,
                             const gdr_ib_address_info_t *peer)
{
    int is_eth = gdr_ib_port_is_eth(local);

    if (peer->is_eth != is_eth) {
        return 0; /* RoCE and InfiniBand fabrics don't meet */
    }
    if (is_eth) {
        /* IPv4-mapped GIDs talk to IPv4-mapped ones, IPv6 to IPv6 */
        return gdr_ib_gid_is_v4_mapped(&peer->gid) ==
               gdr_ib_gid_is_v4_mapped(&local->gid);
    }
    /* IB: same subnet (GID prefix), or the peer routes with a GRH */
    return (peer->has_if_id && peer->grh) ||
           !memcmp(peer->gid.raw, local->gid.raw, 8);
}
