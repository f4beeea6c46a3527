/**
 * gdr_ep.h - gdr_rc endpoints: one RC QP each, and the UCT data path.
 *
 * Every work request gets a 16-bit sequence number (wr_id = sn).  Things to
 * finish later (a bounce buffer to release, a get to unpack, a user
 * completion) are gdr_tx_op_t's queued on the endpoint with the sn of their
 * WR; a completion for sn N finishes every op with sn <= N (RC completes in
 * order), so most WRs need not be signaled: only those with a user
 * completion, every TX_MODERATION-th one so that credits come back, and one
 * posted when nothing is in flight (a later flush then has no NOP to post).
 * Every op goes through gdr_ep_post() (gdr_ep.inl): one place for fencing,
 * signalling, sequence numbers and credits.  The endpoint's files, one concern
 * each:
 *   gdr_ep.c             create, connect (wireup), ask whom it is connected to, destroy
 *   gdr_ep_rma.c         put and get
 *   gdr_ep_am.c          active messages
 *   gdr_ep_atomic.c      atomics (verbs' own, and the others as compare-and-swap loops)
 *   gdr_ep_completion.c  send completions: finishing ops, failing the endpoint
 *   gdr_ep_flush.c       flush, fence, keepalive and stall checks (of an endpoint and of the iface)
 *   gdr_ep_pending.c     the pending queue
 *   gdr_ep_trace.c       data tracing (UCX_LOG_LEVEL=data) of posts and completions
 */
#ifndef GDR_EP_H_
#define GDR_EP_H_

#include "gdr_iface.h"
#include "gdr_verbs_post.h"


/* Endpoint address: the RC QP to connect to. */
typedef struct UCS_S_PACKED gdr_ep_addr {
    uint8_t qp_num[3];
    uint8_t psn[3];
    uint8_t mtu; /* enum ibv_mtu: the peer's limit */
} gdr_ep_addr_t;

enum {
    GDR_EP_FLAG_CONNECTED    = UCS_BIT(0),
    GDR_EP_FLAG_FAILED       = UCS_BIT(1),
    GDR_EP_FLAG_FLUSH_CANCEL = UCS_BIT(2),
    /* fenced while compare-and-swap loops ran: no new operation until the
     * last of them is done (gdr_ep_fence) */
    GDR_EP_FLAG_FENCE_LOOPS = UCS_BIT(3),
    GDR_EP_FLAG_PEER_GID = UCS_BIT(4), /* peer_gid holds the peer port's GID */
    /* a strong fence (UCX_GDR_FENCE): no new operation until every WR posted
     * before it completed and no compare-and-swap loop runs */
    GDR_EP_FLAG_FENCE_DRAIN = UCS_BIT(5),
    /* the stall check moved the QP to the error state: the flushed WRs fail
     * it with "Endpoint timeout" (gdr_iface_check_stalls) */
    GDR_EP_FLAG_STALLED = UCS_BIT(6)
};

/* The atomics gdr_rc does, at both widths, where the device has atomics
 * (iface->atomic_hca): posted, and fetching (cswap has its own entry point) */
#define GDR_ATOMIC_OPS                                         \
    (UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) | \
     UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_XOR))
#define GDR_ATOMIC_FETCH_OPS                        \
    (GDR_ATOMIC_OPS | UCS_BIT(UCT_ATOMIC_OP_SWAP) | \
     UCS_BIT(UCT_ATOMIC_OP_CSWAP))

struct gdr_ep {
    uct_base_ep_t super;
    ucs_list_link_t list;
    struct ibv_qp *qp;
    struct ibv_qp_ex
            *qpx; /* the QP's ibv_wr_* builders; NULL: ibv_post_send only */
    uint32_t psn;
    uint8_t flags;
    ucs_status_t error; /* why it failed */
    ucs_arbiter_group_t arb_group;
    uint32_t fence_beat; /* != the iface's: the next WR fences */
    struct {
        uint16_t posted_sn; /* sn of the last posted WR */
        uint16_t completed_sn; /* sn of the last completed WR */
        uint16_t signaled_sn; /* sn of the last signaled WR */
        uint16_t unsignaled; /* WRs since the last signaled one */
        int available; /* free send queue slots */
        unsigned cas_loops; /* emulated atomics in flight */
        ucs_queue_head_t outstanding; /* gdr_tx_op_t, sn order */
    } tx;
    /* The emulated atomics' state (gdr_ep_atomic.c): what they expect of the
     * last word they changed, so that the first CAS of the next one compares
     * with it instead of reading the word first; and the one op at a time that
     * retries after another initiator changed the word, with the ops that
     * missed meanwhile waiting behind it.  Nothing else reads or writes it. */
    struct {
        uint64_t remote_addr;
        uint64_t next; /* the word once every CAS posted on it succeeded */
        uint64_t basis; /* the value `next` was last computed from */
        uint32_t rkey;
        uint8_t valid;
        struct gdr_tx_op *retrier; /* NULL: none */
        ucs_queue_head_t parked; /* gdr_tx_op_t that missed, behind retrier */
    } amo;
    /* The peer's GID as its device address named it: a QP connected without a
     * GRH knows only the LID (gdr_ep_is_connected_to).  Last: the data path
     * never reads it. */
    union ibv_gid peer_gid;
    /* The stall check's view (gdr_iface_check_stalls): completed_sn when it
     * last moved, and since when the endpoint has waited on it (0: the last
     * check found nothing waited on).  Only that check reads or writes it. */
    struct {
        uint16_t completed_sn;
        ucs_time_t since;
    } stall;
};

UCS_CLASS_DECLARE(gdr_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_NEW_FUNC(gdr_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_DELETE_FUNC(gdr_ep_t, uct_ep_t);

ucs_status_t
gdr_ep_put_short(uct_ep_h, const void *, unsigned, uint64_t, uct_rkey_t);
ssize_t
gdr_ep_put_bcopy(uct_ep_h, uct_pack_callback_t, void *, uint64_t, uct_rkey_t);
ucs_status_t gdr_ep_put_zcopy(uct_ep_h, const uct_iov_t *, size_t, uint64_t,
                              uct_rkey_t, uct_completion_t *);
ucs_status_t gdr_ep_get_bcopy(uct_ep_h, uct_unpack_callback_t, void *, size_t,
                              uint64_t, uct_rkey_t, uct_completion_t *);
ucs_status_t gdr_ep_get_zcopy(uct_ep_h, const uct_iov_t *, size_t, uint64_t,
                              uct_rkey_t, uct_completion_t *);
ucs_status_t
gdr_ep_am_short(uct_ep_h, uint8_t, uint64_t, const void *, unsigned);
ucs_status_t gdr_ep_am_short_iov(uct_ep_h, uint8_t, const uct_iov_t *, size_t);
ssize_t
gdr_ep_am_bcopy(uct_ep_h, uint8_t, uct_pack_callback_t, void *, unsigned);
ucs_status_t gdr_ep_am_zcopy(uct_ep_h, uint8_t, const void *, unsigned,
                             const uct_iov_t *, size_t, unsigned,
                             uct_completion_t *);
ucs_status_t
gdr_ep_atomic64_post(uct_ep_h, unsigned, uint64_t, uint64_t, uct_rkey_t);
ucs_status_t gdr_ep_atomic64_fetch(uct_ep_h, uct_atomic_op_t, uint64_t,
                                   uint64_t *, uint64_t, uct_rkey_t,
                                   uct_completion_t *);
ucs_status_t gdr_ep_atomic_cswap64(uct_ep_h, uint64_t, uint64_t, uint64_t,
                                   uct_rkey_t, uint64_t *, uct_completion_t *);
ucs_status_t
gdr_ep_atomic32_post(uct_ep_h, unsigned, uint32_t, uint64_t, uct_rkey_t);
ucs_status_t gdr_ep_atomic32_fetch(uct_ep_h, uct_atomic_op_t, uint32_t,
                                   uint32_t *, uint64_t, uct_rkey_t,
                                   uct_completion_t *);
ucs_status_t gdr_ep_atomic_cswap32(uct_ep_h, uint32_t, uint32_t, uint64_t,
                                   uct_rkey_t, uint32_t *, uct_completion_t *);
ucs_status_t gdr_ep_flush(uct_ep_h, unsigned, uct_completion_t *);
ucs_status_t gdr_ep_fence(uct_ep_h, unsigned);
ucs_status_t gdr_ep_check(uct_ep_h, unsigned, uct_completion_t *);
ucs_status_t gdr_ep_pending_add(uct_ep_h, uct_pending_req_t *, unsigned);
void gdr_ep_pending_purge(uct_ep_h, uct_pending_purge_callback_t, void *);
ucs_status_t gdr_ep_get_address(uct_ep_h, uct_ep_addr_t *);
ucs_status_t gdr_ep_connect_to_ep(uct_ep_h, const uct_device_addr_t *,
                                  const uct_ep_addr_t *);

/*
 * Version-neutral entry point of the ep (the component puts it into
 * uct_iface_internal_ops_t where that UCX has the member): the ep is connected
 * to the peer at dev_addr (and to its QP in ep_addr, when not NULL)
 */
int gdr_ep_is_connected_to(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                           const uct_ep_addr_t *ep_addr);

/* A send completion's ops to finish, or its error: the part of
 * gdr_ep_tx_completed() (below) that an unsignaled short send's completion
 * does not need (gdr_ep_completion.c) */
void gdr_ep_tx_finish_ops(gdr_ep_t *ep, uint16_t sn, ucs_status_t status);

/*
 * One CQE covers every WR since the previous one (unsignaled included).
 * The user's completions run *before* the credits come back, as in UCX's rc
 * transports: a send issued from a completion callback then finds no room
 * while requests wait on the pending queue, and cannot overtake them; the
 * caller dispatches the pending queue right after this.  Inline in the iface's
 * progress: the usual completion (no op outstanding: short sends) costs no
 * call (recv_put_short: the put_lat server reaps one a reply).
 */
static UCS_F_ALWAYS_INLINE void
gdr_ep_tx_completed(gdr_ep_t *ep, uint16_t sn, ucs_status_t status)
{
    gdr_iface_t *iface = gdr_ep_iface(ep);
    uint16_t count     = sn - ep->tx.completed_sn;

    ep->tx.completed_sn = sn;
    if ((status != UCS_OK) || (ep->flags & GDR_EP_FLAG_FAILED) ||
        !ucs_queue_is_empty(&ep->tx.outstanding)) {
        gdr_ep_tx_finish_ops(ep, sn, status);
    }
    ep->tx.available += count;
    iface->tx.cq_available += count;
    ucs_arbiter_group_schedule(&iface->tx.arbiter, &ep->arb_group);
}

ucs_arbiter_cb_result_t
gdr_ep_arbiter_dispatch_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                           ucs_arbiter_elem_t *elem, void *arg);

/* Between the endpoint's files (gdr_ep_completion.c) */

/* Op handlers every kind of operation uses: give the op back; also call its completion */
void gdr_op_release(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status);
void gdr_op_complete(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status);

/* Finishes every outstanding op with @a status (the ep is failing or going away) */
void gdr_ep_purge_ops(gdr_ep_t *ep, ucs_status_t status);

/* The last compare-and-swap loop of a fenced endpoint is done (gdr_ep_flush.c) */
void gdr_ep_fence_loops_done(gdr_ep_t *ep);

/* Data tracing (gdr_ep_trace.c), called only when gdr_trace_data_on(): a
 * constant 0 where UCX is built without data logging */
#define gdr_trace_data_on() ucs_log_is_enabled(UCS_LOG_LEVEL_TRACE_DATA)
void gdr_ep_trace_post(const gdr_ep_t *ep, const gdr_verbs_wr_t *wr);
void gdr_ep_trace_post_list(const gdr_ep_t *ep, const struct ibv_send_wr *wr);
void gdr_iface_trace_send_completion(const struct ibv_wc *wc);

#endif
