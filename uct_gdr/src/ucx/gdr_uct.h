/**
 * gdr_uct.h - UCX-internal glue of the gdr component (md "gdr", tl "gdr_rc").
 *
 * Built against the internal headers of exactly the installed UCX release (see
 * build-aux/ucx-internal.sh); gdr_abi.c refuses to register on any other one.
 * Every UCX-version difference must live in this header or gdr_abi.c.
 */
#ifndef GDR_UCT_H_
#define GDR_UCT_H_

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/memory/rcache.h>
#include <ucs/sys/math.h>

#include "../verbs/gdr_verbs.h"
#include "../cuda/gdr_cuda.h"

#define GDR_COMPONENT_NAME  "gdr"
#define GDR_MD_NAME         "gdr"
#define GDR_TL_NAME         "gdr_rc"
#define GDR_CONFIG_PREFIX   "GDR_"

extern uct_component_t gdr_component;
extern uct_tl_t        gdr_rc_tl;


/* ---------------------------------------------------------------- md ----- */

typedef struct gdr_md_config {
    uct_md_config_t          super;
    ucs_ternary_auto_value_t gpu_direct_rdma; /* UCX_GDR_GPU_DIRECT_RDMA */
    ucs_ternary_auto_value_t dmabuf;          /* UCX_GDR_DMABUF */
    ucs_ternary_auto_value_t rcache_enable;   /* UCX_GDR_RCACHE */
    uct_md_rcache_config_t   rcache;          /* UCX_GDR_RCACHE_* */
} gdr_md_config_t;

typedef struct gdr_md {
    uct_md_t          super;
    unsigned          num_devices;
    gdr_device_t      *devices;      /* [num_devices], index = "device index" */
    uint64_t          reg_mem_types;
    uint64_t          detect_mem_types;
    size_t            rkey_packed_size;
    gdr_cuda_config_t cuda_config;
    unsigned          *cuda_methods; /* [num_devices]: GDR_CUDA_METHOD_BIT()s that work */
    ucs_rcache_t      *rcache;       /* NULL: every mem_reg registers */
    ucs_linear_func_t reg_cost;
} gdr_md_t;

/** A registration: one MR per md device, in md device order. */
typedef struct gdr_memh {
    void              *address;
    size_t            length;
    ucs_memory_type_t mem_type;
    int               access;        /* IBV_ACCESS_* of every MR */
    uint8_t           cached;        /* lives in a gdr_rcache_region_t */
    uint8_t           allocated;     /* by mem_alloc: mem_free unmaps it */
    unsigned          num_mrs;
    struct ibv_mr     *mrs[];
} gdr_memh_t;

/* A cached registration; memh must be last (flexible array) */
typedef struct gdr_rcache_region {
    ucs_rcache_region_t super;
    uint64_t            cuda_buffer_id; /* 0: host memory */
    gdr_memh_t          memh;
} gdr_rcache_region_t;

/** Packed rkey on the wire: the rkeys of every device of the packing md. */
typedef struct UCS_S_PACKED gdr_packed_rkey {
    uint8_t  magic;                 /* GDR_RKEY_MAGIC: reject foreign buffers */
    uint8_t  count;
    uint32_t rkeys[];
} gdr_packed_rkey_t;

#define GDR_RKEY_MAGIC 0xd7

/** Unpacked rkey (uct_rkey_t points here). */
typedef struct gdr_rkey {
    uint32_t count;
    uint32_t rkeys[];
} gdr_rkey_t;

ucs_status_t gdr_md_open(uct_component_t *component, const char *md_name,
                         const uct_md_config_t *config, uct_md_h *md_p);
ucs_status_t gdr_md_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                                uct_rkey_t *rkey_p, void **handle_p);
ucs_status_t gdr_md_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                 void *handle);
extern ucs_config_field_t gdr_md_config_table[];


/* ------------------------------------------------------------- iface ----- */

typedef struct gdr_iface_config {
    uct_iface_config_t super;
    unsigned           tx_queue_len;
    unsigned           rx_queue_len;
    unsigned long      rx_max_bufs;    /* UCS_ULUNITS_INF: no limit */
    unsigned           tx_cq_len;
    size_t             seg_size;
    size_t             max_inline;
    unsigned           tx_moderation;
    unsigned           tx_max_poll;
    unsigned           rx_max_poll;
    double             timeout;
    unsigned           retry_count;
    double             rnr_timeout;
    unsigned           rnr_retry_count;
    unsigned long      gid_index;      /* UCS_ULUNITS_AUTO: auto-select */
    size_t             mtu;            /* UCS_MEMUNITS_AUTO: port's active MTU */
    unsigned long      sl;             /* UCS_ULUNITS_AUTO: port's SM SL */
    unsigned           traffic_class;
    unsigned           hop_limit;
    unsigned           max_rd_atomic;
} gdr_iface_config_t;

extern ucs_config_field_t gdr_iface_config_table[];

/*
 * Device address: what a peer needs to route to our port.
 *
 * The wire format is UCX's IB device address (uct_ib_address_t, packed by
 * uct_ib_address_pack() in src/uct/ib/base/ib_iface.c), not a private struct:
 * in client-server (sockaddr) wireup UCP does not use the device address we
 * pack into the worker address at all, but overwrites every remote address
 * entry's dev_addr with the one the connection manager (rdmacm) built from the
 * RDMA-CM route with uct_ib_address_pack() (wireup_cm.c,
 * ucp_cm_client_connect_progress / ucp_ep_cm_server_create_connected).  So
 * iface_is_reachable() and ep_connect_to_ep() must parse that format; we pack
 * the same format so both wireup paths meet one parser.
 *
 *   uint8_t flags;  then, by flags:
 *     ETH (RoCE):  uint8_t gid[16]
 *     IB:          uint16_t lid; [uint64_t if_id]; [uint16_t subnet16 |
 *                  uint64_t subnet64]   (absent subnet = link-local fe80::)
 *     both:        [uint8_t path_mtu]; [uint8_t gid_index]; [uint16_t pkey]
 *
 * Flag values are UCX 1.13's UCT_IB_ADDRESS_FLAG_* (ib_device.h); the
 * RoCE version is in the top 3 bits for ETH.  GDR_IB_ADDR_FLAG_GRH is ours
 * (bit 7 is unused by UCX for the IB link layer): the port needs a GRH.
 */
enum {
    GDR_IB_ADDR_FLAG_GID_INDEX = UCS_BIT(0),
    GDR_IB_ADDR_FLAG_PATH_MTU  = UCS_BIT(1),
    GDR_IB_ADDR_FLAG_PKEY      = UCS_BIT(2),
    GDR_IB_ADDR_FLAG_ETH       = UCS_BIT(3),
    GDR_IB_ADDR_FLAG_ROCE_IPV6 = UCS_BIT(4), /* ETH */
    GDR_IB_ADDR_ROCE_VER_SHIFT = 5,          /* ETH: uct_ib_roce_version_t */
    GDR_IB_ADDR_ROCE_VER_ANY   = 3,          /* UCT_IB_DEVICE_ROCE_ANY */
    GDR_IB_ADDR_FLAG_SUBNET16  = UCS_BIT(4), /* IB */
    GDR_IB_ADDR_FLAG_SUBNET64  = UCS_BIT(5), /* IB */
    GDR_IB_ADDR_FLAG_IF_ID     = UCS_BIT(6), /* IB */
    GDR_IB_ADDR_FLAG_GRH       = UCS_BIT(7)  /* IB, gdr_rc only */
};

/* What a device address says, unpacked. */
typedef struct gdr_device_addr_info {
    int           is_eth;
    int           has_if_id;    /* IB: the full GID is known */
    int           grh;          /* IB: the peer's port needs a GRH */
    uint16_t      lid;
    union ibv_gid gid;          /* IB without if_id: subnet prefix only */
    enum ibv_mtu  path_mtu;     /* 0 when not in the address */
} gdr_device_addr_info_t;

struct gdr_iface;
size_t gdr_iface_device_addr_len(const struct gdr_iface *iface);
ucs_status_t gdr_device_addr_unpack(const uct_device_addr_t *addr,
                                    gdr_device_addr_info_t *info);

/* Endpoint address: the RC QP to connect to. */
typedef struct UCS_S_PACKED gdr_ep_addr {
    uint8_t  qp_num[3];
    uint8_t  psn[3];
    uint8_t  mtu;                   /* enum ibv_mtu: the peer's limit */
    uint8_t  dev_index;             /* peer's md device index: picks the rkey */
} gdr_ep_addr_t;

typedef struct gdr_ep gdr_ep_t;
typedef struct gdr_tx_op gdr_tx_op_t;

typedef void (*gdr_tx_op_handler_t)(gdr_tx_op_t *op, gdr_ep_t *ep,
                                    ucs_status_t status);

/**
 * Something to finish when the WR with sequence number @a sn (or a later one)
 * completes: release a bounce buffer, unpack a get, copy an atomic result,
 * call the user's completion.  Bounce-buffer ops carry the buffer after them.
 */
struct gdr_tx_op {
    ucs_queue_elem_t      queue;
    uint16_t              sn;
    uint32_t              lkey;       /* bounce buffer's lkey (0: none) */
    gdr_tx_op_handler_t   handler;
    uct_completion_t      *comp;
    void                  *result;    /* atomic fetch result / unpack arg */
    uct_unpack_callback_t unpack_cb;
    size_t                length;
    struct {                          /* atomics done as a compare-and-swap loop */
        uint64_t          remote_addr;
        uint64_t          operand;
        uint64_t          expected;   /* what the last CAS compared with */
        uint32_t          rkey;
        uint8_t           op;         /* uct_atomic_op_t */
        uint8_t           swapping;   /* 0: reading the value, 1: CAS posted */
    } amo;
};

#define gdr_tx_op_data(_op) ((void*)((_op) + 1))

/** Receive buffer header; payload follows after rx_headroom bytes. */
typedef struct gdr_rx_desc {
    uint32_t         lkey;
    uct_recv_desc_t  *release;       /* must be last: see uct_recv_desc() */
} gdr_rx_desc_t;

KHASH_MAP_INIT_INT(gdr_qp_ep, gdr_ep_t*)

typedef struct gdr_iface {
    uct_base_iface_t         super;
    gdr_device_t             *dev;
    uint8_t                  dev_index;
    const gdr_port_info_t    *port;
    gdr_qp_local_t           qp_local;  /* port/GID/timeouts for every QP */
    union ibv_gid            gid;
    struct ibv_comp_channel  *comp_channel;
    struct ibv_cq            *send_cq;
    struct ibv_cq            *recv_cq;
    struct ibv_srq           *srq;
    khash_t(gdr_qp_ep)       eps;       /* qp_num -> ep, for completions */
    ucs_list_link_t          ep_list;

    struct {
        ucs_mpool_t          desc_mp;   /* registered bounce buffers */
        ucs_mpool_t          op_mp;     /* ops without buffers */
        ucs_arbiter_t        arbiter;   /* pending requests */
        int                  cq_available;
        unsigned             queue_len;
        unsigned             max_inline;
        unsigned             max_sge;
        unsigned             moderation;
        unsigned             max_poll;
        uint32_t             fence_beat; /* iface fence generation */
    } tx;

    struct {
        ucs_mpool_t          mp;
        uct_recv_desc_t      release_desc;
        unsigned             queue_len;
        unsigned             available;  /* SRQ slots not posted */
        int                  starved;    /* the pool ran dry while refilling */
        unsigned             max_poll;
        unsigned             headroom;
    } rx;

    struct {                            /* CQEs polled by event_arm */
        struct ibv_wc        wc[16];
        unsigned             count;
    } stash_tx, stash_rx;

    size_t                   seg_size;
    int                      atomic_hca;    /* device does 64-bit atomics */
} gdr_iface_t;


/* ---------------------------------------------------------------- ep ----- */

enum {
    GDR_EP_FLAG_CONNECTED    = UCS_BIT(0),
    GDR_EP_FLAG_FAILED       = UCS_BIT(1),
    GDR_EP_FLAG_FLUSH_CANCEL = UCS_BIT(2),
    GDR_EP_FLAG_FENCE        = UCS_BIT(3)
};

struct gdr_ep {
    uct_base_ep_t        super;
    ucs_list_link_t      list;
    struct ibv_qp        *qp;
    uint32_t             psn;
    uint8_t              flags;
    uint8_t              remote_dev_index;
    ucs_status_t         error;          /* why it failed */
    ucs_arbiter_group_t  arb_group;
    uint32_t             fence_beat;
    struct {
        uint16_t         posted_sn;      /* sn of the last posted WR */
        uint16_t         completed_sn;   /* sn of the last completed WR */
        uint16_t         signaled_sn;    /* sn of the last signaled WR */
        uint16_t         unsignaled;     /* WRs since the last signaled one */
        int              available;      /* free send queue slots */
        unsigned         cas_loops;      /* emulated atomics in flight */
        ucs_queue_head_t outstanding;    /* gdr_tx_op_t, sn order */
    } tx;
};

UCS_CLASS_DECLARE(gdr_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(gdr_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(gdr_ep_t, uct_ep_t);

ucs_status_t gdr_ep_put_short(uct_ep_h, const void*, unsigned, uint64_t, uct_rkey_t);
ssize_t      gdr_ep_put_bcopy(uct_ep_h, uct_pack_callback_t, void*, uint64_t, uct_rkey_t);
ucs_status_t gdr_ep_put_zcopy(uct_ep_h, const uct_iov_t*, size_t, uint64_t, uct_rkey_t,
                              uct_completion_t*);
ucs_status_t gdr_ep_get_bcopy(uct_ep_h, uct_unpack_callback_t, void*, size_t, uint64_t,
                              uct_rkey_t, uct_completion_t*);
ucs_status_t gdr_ep_get_zcopy(uct_ep_h, const uct_iov_t*, size_t, uint64_t, uct_rkey_t,
                              uct_completion_t*);
ucs_status_t gdr_ep_am_short(uct_ep_h, uint8_t, uint64_t, const void*, unsigned);
ucs_status_t gdr_ep_am_short_iov(uct_ep_h, uint8_t, const uct_iov_t*, size_t);
ssize_t      gdr_ep_am_bcopy(uct_ep_h, uint8_t, uct_pack_callback_t, void*, unsigned);
ucs_status_t gdr_ep_am_zcopy(uct_ep_h, uint8_t, const void*, unsigned, const uct_iov_t*,
                             size_t, unsigned, uct_completion_t*);
ucs_status_t gdr_ep_atomic64_post(uct_ep_h, unsigned, uint64_t, uint64_t, uct_rkey_t);
ucs_status_t gdr_ep_atomic64_fetch(uct_ep_h, uct_atomic_op_t, uint64_t, uint64_t*, uint64_t,
                                   uct_rkey_t, uct_completion_t*);
ucs_status_t gdr_ep_atomic_cswap64(uct_ep_h, uint64_t, uint64_t, uint64_t, uct_rkey_t,
                                   uint64_t*, uct_completion_t*);
ucs_status_t gdr_ep_flush(uct_ep_h, unsigned, uct_completion_t*);
ucs_status_t gdr_ep_fence(uct_ep_h, unsigned);
ucs_status_t gdr_ep_check(uct_ep_h, unsigned, uct_completion_t*);
ucs_status_t gdr_ep_pending_add(uct_ep_h, uct_pending_req_t*, unsigned);
void         gdr_ep_pending_purge(uct_ep_h, uct_pending_purge_callback_t, void*);
ucs_status_t gdr_ep_get_address(uct_ep_h, uct_ep_addr_t*);
ucs_status_t gdr_ep_connect_to_ep(uct_ep_h, const uct_device_addr_t*, const uct_ep_addr_t*);

/* completion processing, called by the iface's progress */
void gdr_ep_tx_completed(gdr_ep_t *ep, uint16_t sn, ucs_status_t status);
ucs_arbiter_cb_result_t gdr_ep_arbiter_dispatch_cb(ucs_arbiter_t *arbiter,
                                                   ucs_arbiter_group_t *group,
                                                   ucs_arbiter_elem_t *elem,
                                                   void *arg);

static inline uint32_t gdr_memh_lkey(const gdr_iface_t *iface, uct_mem_h memh)
{
    return ((const gdr_memh_t*)memh)->mrs[iface->dev_index]->lkey;
}

/* am_zcopy headers go through a bounce buffer: this much of it */
static inline size_t gdr_iface_am_max_hdr(const gdr_iface_t *iface)
{
    return ucs_min(iface->seg_size, 128);
}

ucs_status_t gdr_wc_status(enum ibv_wc_status status);

#endif
