/*
 * gdr_ib_address: gdr_rc's device address, in UCX's IB address format.
 *
 * Pure C11 on <infiniband/verbs.h>: no UCX header, so that the host unit test
 * (tests/uct_unit) links it alone and checks it against bytes that UCX's own
 * uct_ib_address_pack() produced (tests/fixtures/ib-address).
 *
 * Why UCX's format and not a private struct: in client-server (sockaddr)
 * wireup UCP does not use the device address we pack into the worker address
 * at all, but overwrites every remote address entry's dev_addr with the one
 * the connection manager (rdmacm) built from the RDMA-CM route with
 * uct_ib_address_pack() (wireup_cm.c, ucp_cm_client_connect_progress /
 * ucp_ep_cm_server_create_connected; rdmacm_cm.c,
 * uct_rdmacm_cm_id_to_dev_addr).  So iface_is_reachable() and
 * ep_connect_to_ep() must parse that format; we pack the same format so both
 * wireup paths meet one parser.
 *
 * The format (uct_ib_address_t, src/uct/ib/base/ib_device.h; packer and
 * unpacker in src/uct/ib/base/ib_iface.c), identical in UCX 1.13.1, 1.16.0,
 * 1.18.1 and 1.22.0:
 *
 *   uint8_t flags;  then, by flags, in this order:
 *     ETH (RoCE):  uint8_t gid[16]
 *     IB:          uint16_t lid; [uint64_t if_id]; [uint16_t subnet16 |
 *                  uint64_t subnet64]   (absent subnet = link-local fe80::)
 *     both:        [uint8_t path_mtu]; [uint8_t gid_index]; [uint16_t pkey]
 *
 *   flags  bit 0  GID_INDEX  bit 1 PATH_MTU  bit 2 PKEY  bit 3 LINK_LAYER_ETH
 *          ETH:   bit 4 ROCE_IPV6 (address family AF_INET6),
 *                 bits 5-7 RoCE version (uct_ib_roce_version_t: V1 0, V1_5 1,
 *                 V2 2, ANY 3; 4-7 are not defined)
 *          IB:    bit 4 SUBNET16, bit 5 SUBNET64, bit 6 IF_ID,
 *                 bit 7 GDR_IB_ADDR_FLAG_GRH: ours, unused by UCX for IB (its
 *                 unpacker ignores it): our port needs a GRH
 *
 * if_id, subnet64 and gid are the GID's bytes as they lie in union ibv_gid
 * (network order).  lid, pkey and subnet16 are host-order integers (UCX
 * stores them with a plain uint16_t store); subnet16 is the site-local
 * prefix's last 16 bits (fec0:0:0:XXXX::, read as a host uint64 and shifted
 * right by 48), so on a little-endian host its two bytes are the prefix's
 * bytes 6 and 7 in wire order.  A site-local prefix with a non-zero FLID
 * (bytes 4-5, UCX >= 1.16 IB routing) is not "site-local" by this mask and
 * travels as subnet64, in every version.
 *
 * Differences between versions are in what the unpacker does, not in the
 * bytes: 1.22 rejects SUBNET16|SUBNET64 together (1.13-1.18 assert, then read
 * both); 1.13 reports an absent if_id as if_id 0 (INTERFACE_ID flag always
 * set), 1.16+ only when present.  This codec rejects SUBNET16|SUBNET64 too.
 */
#ifndef GDR_IB_ADDRESS_H
#define GDR_IB_ADDRESS_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    GDR_IB_ADDR_FLAG_GID_INDEX = 1u << 0,
    GDR_IB_ADDR_FLAG_PATH_MTU  = 1u << 1,
    GDR_IB_ADDR_FLAG_PKEY      = 1u << 2,
    GDR_IB_ADDR_FLAG_ETH       = 1u << 3,
    GDR_IB_ADDR_FLAG_ROCE_IPV6 = 1u << 4, /* ETH */
    GDR_IB_ADDR_ROCE_VER_SHIFT = 5, /* ETH: uct_ib_roce_version_t */
    GDR_IB_ADDR_FLAG_SUBNET16  = 1u << 4, /* IB */
    GDR_IB_ADDR_FLAG_SUBNET64  = 1u << 5, /* IB */
    GDR_IB_ADDR_FLAG_IF_ID     = 1u << 6, /* IB */
    GDR_IB_ADDR_FLAG_GRH       = 1u << 7 /* IB, gdr_rc only */
};

/* uct_ib_roce_version_t */
enum {
    GDR_IB_ADDR_ROCE_V1   = 0,
    GDR_IB_ADDR_ROCE_V1_5 = 1,
    GDR_IB_ADDR_ROCE_V2   = 2,
    GDR_IB_ADDR_ROCE_ANY  = 3
};

/* Longest address: IB, lid + if_id + subnet64 + path_mtu + gid_index + pkey */
#define GDR_IB_ADDRESS_MAX_LEN (1 + 2 + 8 + 8 + 1 + 1 + 2)

/* What we pack: our port. */
typedef struct gdr_ib_address_port {
    uint8_t link_layer; /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
    uint8_t grh_required; /* IB: the port needs a GRH */
    uint16_t lid; /* IB */
    union ibv_gid gid; /* the GID in use */
} gdr_ib_address_port_t;

/* What a device address says, unpacked. */
typedef struct gdr_ib_address_info {
    int is_eth;
    int roce_ver; /* ETH: GDR_IB_ADDR_ROCE_* */
    int roce_ipv6; /* ETH: the ROCE_IPV6 flag (rdmacm leaves it
                                   clear whatever the GID) */
    int has_if_id; /* IB: the full GID is known */
    int grh; /* IB: the peer's port needs a GRH (ours) */
    uint16_t lid; /* IB */
    union ibv_gid gid; /* IB without if_id: subnet prefix, if_id 0 */
    enum ibv_mtu path_mtu; /* 0 when not in the address */
    int has_gid_index;
    uint8_t gid_index; /* rdmacm: the local sgid_index of the route */
    int has_pkey;
    uint16_t pkey; /* 0xffff (default) when not in the address */
    size_t size; /* bytes the address took */
} gdr_ib_address_info_t;

/* Bytes gdr_ib_address_pack() writes for @port. */
size_t gdr_ib_address_size(const gdr_ib_address_port_t *port);

/* Packs @port as UCX does: RoCE as ETH, RoCE version ANY, ROCE_IPV6 unless
 * the GID is IPv4-mapped; IB as lid + if_id + subnet (16 bits site-local,
 * none link-local, else 64), plus GDR_IB_ADDR_FLAG_GRH when the port needs a
 * GRH.  Returns the size written. */
size_t gdr_ib_address_pack(const gdr_ib_address_port_t *port, void *buf);

/* Parses ours and any UCX IB address (rdmacm's included).  0, or -1 for
 * NULL or an address no UCX version packs (SUBNET16 and SUBNET64 together;
 * an ETH RoCE version above ANY). */
int gdr_ib_address_unpack(const void *buf, gdr_ib_address_info_t *info);

/* Whether @local can reach @peer: same link layer; RoCE: IPv4-mapped GIDs
 * with IPv4-mapped ones, others with others; IB: same subnet prefix, or a
 * peer with a full GID that routes with a GRH. */
int gdr_ib_address_reachable(const gdr_ib_address_port_t *local,
                             const gdr_ib_address_info_t *peer);

/* Whether the address @info names the port with @lid and @gid, by UCX's rule
 * (uct_ib_iface_is_same_device, also what uct_rc_ep_is_connected asks): RoCE
 * by the whole GID; InfiniBand by the LID, and by the interface id (the GID's
 * last 8 bytes) where the address has one.  @gid NULL means the port's GID is
 * not known (an InfiniBand QP connected without a GRH knows only the LID): then
 * only an address that names no GID either (InfiniBand without interface id)
 * can match, RoCE never. */
int gdr_ib_address_names_port(const gdr_ib_address_info_t *info, uint16_t lid,
                              const union ibv_gid *gid);

/* Whether the GID is an IPv4-mapped IPv6 address (::ffff:a.b.c.d) */
int gdr_ib_gid_is_v4_mapped(const union ibv_gid *gid);

#ifdef __cplusplus
}
#endif

#endif
