/**
 * gdr_uct.h - UCX-internal glue of the gdr component (md "gdr", tl "gdr_rc").
 *
 * Built against the internal headers of exactly the installed UCX release (see
 * build-aux/ucx-internal.sh); gdr_abi.c refuses to register on any other one.
 * Every difference between UCX releases lives in compat/ (see
 * compat/gdr_compat.h): the glue implements the version-neutral entry points
 * declared below, and compat/ builds UCX's version-shaped tables from them.
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

#include "compat/gdr_compat.h"
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
    gdr_compat_rcache_config_t rcache;        /* UCX_GDR_RCACHE_* */
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

extern ucs_config_field_t gdr_md_config_table[];

/*
 * Version-neutral entry points of md "gdr" (compat/gdr_compat.c puts them into
 * uct_md_ops_t and uct_component_t in the shape the UCX built against wants).
 */

/* What the md can do, whichever attr struct UCX asks it in */
typedef struct gdr_md_caps {
    uint64_t          flags;             /* UCT_MD_FLAG_* */
    size_t            max_alloc;
    size_t            max_reg;
    uint64_t          reg_mem_types;
    uint64_t          alloc_mem_types;
    uint64_t          detect_mem_types;
    uint64_t          access_mem_types;
    size_t            rkey_packed_size;
    ucs_linear_func_t reg_cost;
} gdr_md_caps_t;

/* What the md knows of a (CUDA) buffer */
typedef struct gdr_md_mem_info {
    ucs_memory_type_t mem_type;
    ucs_sys_device_t  sys_dev;           /* the GPU; UCS_SYS_DEVICE_ID_UNKNOWN */
    void              *base_address;     /* of the whole allocation */
    size_t            alloc_length;
} gdr_md_mem_info_t;

ucs_status_t gdr_md_open(uct_component_t *component, const char *md_name,
                         const uct_md_config_t *config, uct_md_h *md_p);
void         gdr_md_close(uct_md_h md);
void         gdr_md_query_caps(uct_md_h md, gdr_md_caps_t *caps);
ucs_status_t gdr_md_mem_alloc(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type, unsigned flags,
                              const char *alloc_name, uct_mem_h *memh_p);
ucs_status_t gdr_md_mem_free(uct_md_h md, uct_mem_h memh);
ucs_status_t gdr_md_mem_advise(uct_md_h md, uct_mem_h memh, void *addr,
                               size_t length, unsigned advice);
ucs_status_t gdr_md_mem_reg(uct_md_h md, void *address, size_t length,
                            uint64_t flags, uct_mem_h *memh_p);
ucs_status_t gdr_md_mem_dereg(uct_md_h md, const uct_md_mem_dereg_params_t *params);
ucs_status_t gdr_md_mem_info(uct_md_h md, const void *address, size_t length,
                             gdr_md_mem_info_t *info);
ucs_status_t gdr_md_detect_memory_type(uct_md_h md, const void *address,
                                       size_t length, ucs_memory_type_t *mem_type_p);
ucs_status_t gdr_md_mkey_pack(uct_md_h md, uct_mem_h memh, void *rkey_buffer);
ucs_status_t gdr_md_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                                uct_rkey_t *rkey_p, void **handle_p);
ucs_status_t gdr_md_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                 void *handle);
/* <0, 0, >0 as rkey1 orders before, with, after rkey2 (same keys: 0) */
int          gdr_md_rkey_compare(uct_rkey_t rkey1, uct_rkey_t rkey2);


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

/* Device address: UCX's IB address format (rdmacm's, in client-server
 * wireup), packed and parsed by gdr_ib_address.c */
#include "gdr_ib_address.h"

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

/*
 * Version-neutral entry points of the iface and ep (compat/gdr_compat.c puts
 * them into uct_iface_internal_ops_t where that UCX has the members)
 */
int gdr_iface_is_reachable(const uct_iface_h iface, const uct_device_addr_t *dev_addr,
                           const uct_iface_addr_t *iface_addr);
/* dev_addr names the very port this iface is on */
int gdr_iface_is_same_device(const uct_iface_h iface, const uct_device_addr_t *dev_addr);
/* the ep is connected to the peer at dev_addr (and to its QP in ep_addr, when
 * not NULL) */
int gdr_ep_is_connected_to(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                           const uct_ep_addr_t *ep_addr);

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
