/**
 * gdr_iface_types.h - transport "gdr_rc": the data of an interface (gdr_iface.h).
 *
 * Its configuration, its send ops and receive descriptors, the interface itself, and the
 * inline helpers that read them.  No function of the iface is declared here: every file of
 * the iface includes this, and the files that the open/close code (gdr_iface.c) calls, such
 * as the memory pools (gdr_iface_mpool.h), need nothing more.
 */
#ifndef GDR_IFACE_TYPES_H_
#define GDR_IFACE_TYPES_H_

#include "gdr_md.h"
#include "gdr_ib_address.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/sys/string.h> /* UCS_ULUNITS_AUTO and the like, in the config */


typedef struct gdr_iface_config {
    uct_iface_config_t super;
    unsigned tx_queue_len;
    unsigned rx_queue_len;
    unsigned long rx_max_bufs; /* UCS_ULUNITS_INF: no limit */
    unsigned tx_cq_len;
    size_t seg_size;
    size_t max_inline;
    unsigned tx_moderation;
    unsigned tx_max_poll;
    unsigned rx_max_poll;
    double timeout;
    unsigned retry_count;
    ucs_time_t stall_timeout; /* UCS_TIME_AUTO, UCS_TIME_INFINITY or a time */
    double rnr_timeout;
    unsigned rnr_retry_count;
    unsigned long gid_index; /* UCS_ULUNITS_AUTO: auto-select */
    size_t mtu; /* UCS_MEMUNITS_AUTO: port's active MTU */
    unsigned long sl; /* UCS_ULUNITS_AUTO: port's SM SL */
    unsigned traffic_class;
    unsigned hop_limit;
    unsigned max_rd_atomic;
    int wr_api; /* ucs_ternary_auto_value_t: post with ibv_wr_* builders */
    int fence; /* gdr_fence_mode_t */
    int device_atomics; /* ucs_ternary_auto_value_t */
} gdr_iface_config_t;

/* UCX_GDR_FENCE: how uct_ep_fence/uct_iface_fence order an endpoint's work */
typedef enum {
    GDR_FENCE_AUTO, /* strong on Soft-RoCE (rxe), weak elsewhere */
    GDR_FENCE_WEAK, /* IBV_SEND_FENCE on the next work request */
    GDR_FENCE_STRONG, /* the next operation waits until every WR before it
                       * completed; no IBV_SEND_FENCE at all */
    GDR_FENCE_LAST
} gdr_fence_mode_t;

/* ibv_device_attr.vendor_id of Soft-RoCE (the kernel's RXE_VENDOR_ID) */
#define GDR_SOFT_ROCE_VENDOR_ID 0xffffff

extern ucs_config_field_t gdr_iface_config_table[];

/* An endpoint (gdr_ep.h); the iface knows it by qp_num, for completions */
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
    ucs_queue_elem_t queue;
    uint16_t sn;
    uint32_t lkey; /* bounce buffer's lkey (0: none) */
    gdr_tx_op_handler_t handler;
    uct_completion_t *comp;
    void *result; /* atomic fetch result / unpack arg */
    uct_unpack_callback_t unpack_cb;
    size_t length;
    struct { /* atomics done as a compare-and-swap loop */
        uint64_t remote_addr; /* the naturally aligned 64-bit word */
        uint64_t operand;
        uint64_t compare; /* UCT_ATOMIC_OP_CSWAP's */
        uint64_t expected; /* what the last CAS compared with */
        uint64_t lane; /* the word's bits the op works on (all: 64-bit) */
        uint32_t rkey;
        uint8_t shift; /* of the lane's lowest bit */
        uint8_t op; /* uct_atomic_op_t */
        uint8_t missed; /* CASes of this op that found another value (max 2) */
    } amo;
};

#define gdr_tx_op_data(_op) ((void *)((_op) + 1))

/** Receive buffer header; payload follows after rx_headroom bytes. */
typedef struct gdr_rx_desc {
    uint32_t lkey;
    uct_recv_desc_t *release; /* must be last: see uct_recv_desc() */
} gdr_rx_desc_t;

/* qp_num -> ep for send completions: a two-level table of 2^12 x 2^12 entries
 * over the 24-bit QP number, blocks allocated as QPs land in them, as UCX's rc
 * iface does (uct_rc_iface_lookup_ep): a lookup is two loads, where a hash was
 * a probe loop per completion */
#define GDR_QP_TABLE_ORDER 12
#define GDR_QP_TABLE_MASK  (UCS_BIT(GDR_QP_TABLE_ORDER) - 1)

typedef struct gdr_iface {
    uct_base_iface_t super;
    gdr_device_t *dev; /* its md's */
    const gdr_port_info_t *port;
    gdr_qp_local_t qp_local; /* port/GID/timeouts for every QP */
    union ibv_gid gid;
    struct ibv_comp_channel *comp_channel;
    struct ibv_cq *send_cq;
    struct ibv_cq *recv_cq;
    struct ibv_srq *srq;
    gdr_ep_t **eps[UCS_BIT(24 - GDR_QP_TABLE_ORDER)]; /* by qp_num: above */
    ucs_list_link_t ep_list;

    struct {
        ucs_mpool_t desc_mp; /* registered bounce buffers */
        ucs_mpool_t op_mp; /* ops without buffers */
        ucs_arbiter_t arbiter; /* pending requests */
        int cq_available;
        int cq_len; /* cq_available with no WR in flight */
        unsigned queue_len;
        unsigned max_inline;
        unsigned max_sge;
        unsigned moderation;
        unsigned max_poll;
        uint32_t fence_beat; /* iface fence generation */
        unsigned cas_loops; /* the eps' compare-and-swap loops in flight */
        uint64_t send_ops_flags; /* asked of each QP: ibv_wr_* builders (0: none) */
    } tx;

    struct {
        ucs_mpool_t mp;
        uct_recv_desc_t release_desc;
        unsigned queue_len;
        unsigned available; /* SRQ slots not posted */
        unsigned post_batch; /* refill once this many are free */
        int starved; /* the pool ran dry while refilling */
        unsigned max_poll;
        unsigned headroom;
    } rx;

    struct { /* CQEs polled by event_arm */
        struct ibv_wc wc[16];
        unsigned count;
    } stash_tx, stash_rx;

    size_t seg_size;
    int atomic_hca; /* device atomics advertised (UCX_GDR_DEVICE_ATOMICS): the
                     * device does 64-bit atomics, and so gdr_rc 32-bit ones */
    /* Last, off the data path's lines: the fence (UCX_GDR_FENCE resolved:
     * 1 strong, 0 weak), and the progress callback while a strong one holds
     * endpoints (gdr_ep_flush.c) */
    int fence_strong;
    uct_worker_cb_id_t fence_prog_id;
    /* The stall check (UCX_GDR_STALL_TIMEOUT, gdr_ep_flush.c): an endpoint
     * whose signaled WR has not completed for `timeout`, while the device
     * received no packet either, fails as a retry-exceeded one would.  Run
     * from progress calls that poll no send completion, every `every` of
     * them and at most once per `interval`; countdown is never 0 while the
     * check is off. */
    struct {
        ucs_time_t timeout; /* 0: off */
        ucs_time_t interval;
        ucs_time_t next_check;
        unsigned every;
        unsigned countdown;
        int rcvd_pkts_fd; /* the device's received-packet counter, or -1 */
        uint64_t rcvd_pkts; /* its value at the last check */
    } stall;
} gdr_iface_t;

/* The iface of an endpoint of it (a gdr_ep_t begins with its uct_base_ep_t) */
static UCS_F_ALWAYS_INLINE gdr_iface_t *gdr_ep_iface(gdr_ep_t *ep)
{
    return ucs_derived_of(((uct_base_ep_t *)ep)->super.iface, gdr_iface_t);
}

/* The endpoint of a completion's QP; NULL when it is gone.  Every CQE on this
 * iface's CQs is of a QP that was added, so its block exists. */
static UCS_F_ALWAYS_INLINE gdr_ep_t *
gdr_iface_ep_lookup(gdr_iface_t *iface, uint32_t qp_num)
{
    return iface->eps[qp_num >> GDR_QP_TABLE_ORDER][qp_num & GDR_QP_TABLE_MASK];
}

/* Where a receive buffer's payload starts: after the descriptor and UCP's headroom */
static UCS_F_ALWAYS_INLINE void *
gdr_rx_desc_payload(gdr_iface_t *iface, gdr_rx_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(desc + 1, iface->rx.headroom);
}

/* am_zcopy headers go through a bounce buffer: this much of it */
static inline size_t gdr_iface_am_max_hdr(const gdr_iface_t *iface)
{
    return ucs_min(iface->seg_size, 128);
}

/* The lkey of a registration of this iface's md */
static inline uint32_t gdr_memh_lkey(const gdr_iface_t *iface, uct_mem_h memh)
{
    return ((const gdr_memh_t *)memh)->mr->lkey;
}

#endif
