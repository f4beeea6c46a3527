/**
 * gdr_ep_atomic.c - 64-bit atomics: fetch-add and compare-and-swap as verbs has them, and
 * and/or/xor/swap as compare-and-swap loops on top.
 */
#include "gdr_ep.inl"


static void
gdr_op_atomic_fetch(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    if (status == UCS_OK) {
        GDR_HCA_WROTE(gdr_tx_op_data(op), sizeof(uint64_t));
        *(uint64_t *)op->result = *(uint64_t *)gdr_tx_op_data(op);
    }
    gdr_op_complete(op, ep, status);
}

/* An atomic work request whose result lands in @a op's bounce buffer */
static UCS_F_ALWAYS_INLINE void
gdr_wr_atomic(gdr_verbs_wr_t *wr, enum ibv_wr_opcode opcode,
              uint64_t remote_addr, uint32_t rkey, uint64_t compare_add,
              uint64_t swap, gdr_tx_op_t *op)
{
    wr->opcode      = opcode;
    wr->send_flags  = 0;
    wr->remote_addr = remote_addr;
    wr->rkey        = rkey;
    wr->compare_add = compare_add;
    wr->swap        = swap;
    gdr_op_sge(op, sizeof(uint64_t), &wr->sge);
}

/* Checks an atomic's target and takes the op whose bounce buffer receives the
 * word's old value */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_atomic_begin(
        gdr_iface_t *iface, gdr_ep_t *ep, uint64_t remote_addr,
        uct_rkey_t uct_rkey, gdr_tx_op_handler_t handler,
        uct_completion_t *comp, uint32_t *rkey_p, gdr_tx_op_t **op_p)
{
    ucs_status_t status;

    if (ucs_unlikely(remote_addr % sizeof(uint64_t))) {
        ucs_error("gdr_rc: atomic remote address 0x%" PRIx64 " is not 8-byte "
                  "aligned",
                  remote_addr);
        return UCS_ERR_INVALID_PARAM;
    }
    status = gdr_ep_rma_desc_begin(iface, ep, uct_rkey, sizeof(uint64_t),
                                   handler, comp, rkey_p, op_p);
    if (ucs_likely(status == UCS_OK)) {
        UCT_TL_EP_STAT_ATOMIC(&ep->super);
    }
    return status;
}

/* 64-bit fetch-and-add / compare-and-swap; the result lands in a bounce buffer */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_atomic(uct_ep_h tl_ep, enum ibv_wr_opcode opcode, uint64_t compare_add,
              uint64_t swap, uint64_t remote_addr, uct_rkey_t uct_rkey,
              uint64_t *result, gdr_tx_op_handler_t handler,
              uct_completion_t *comp, ucs_status_t success)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    gdr_verbs_wr_t wr;
    ucs_status_t status;
    gdr_tx_op_t *op;
    uint32_t rkey;

    status = gdr_ep_atomic_begin(iface, ep, remote_addr, uct_rkey, handler,
                                 comp, &rkey, &op);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    op->result = result;
    gdr_wr_atomic(&wr, opcode, remote_addr, rkey, compare_add, swap, op);
    /* signaled when someone waits for the value */
    return gdr_ep_op_posted(gdr_ep_post(iface, ep, &wr, result != NULL, op), op,
                            success);
}

/*
 * swap/and/or/xor are not in the verbs standard: compare-and-swap the word
 * with op(value, operand) until the CAS finds the value it compared with.
 * Linearizable with every other atomic the HCAs execute on that word (not
 * with CPU atomics on it, like all device atomics).
 *
 * A CAS that misses returns the word as an atomic read would, so there is no
 * read first: the first CAS compares with a guess, the value the endpoint's
 * own CASes will have left in that word (gdr_ep_t::amo), 0 for a word it has
 * not changed yet.  An endpoint that posts many ops on one word before the
 * first completes (a counter, a flag word) thus needs one round trip an op,
 * where reading first made every op in flight read the same value and all
 * but one CAS of each round miss: k ops in flight cost about k^2/2 CASes.  A
 * wrong guess costs what the read cost.  When another initiator changes the
 * word, one op of the endpoint retries at a time (gdr_op_cas_loop).
 */
static uint64_t gdr_amo_apply(uint8_t op, uint64_t value, uint64_t operand)
{
    switch (op) {
    case UCT_ATOMIC_OP_AND:
        return value & operand;
    case UCT_ATOMIC_OP_OR:
        return value | operand;
    case UCT_ATOMIC_OP_XOR:
        return value ^ operand;
    case UCT_ATOMIC_OP_SWAP:
        return operand;
    default:
        return value + operand;
    }
}

/* Points the endpoint's guess at @a op's word; a word it has not changed is
 * guessed 0, where counters and flag words start */
static void gdr_amo_guess_for(gdr_ep_t *ep, const gdr_tx_op_t *op)
{
    if (!ep->amo.valid || (ep->amo.remote_addr != op->amo.remote_addr) ||
        (ep->amo.rkey != op->amo.rkey)) {
        ep->amo.remote_addr = op->amo.remote_addr;
        ep->amo.rkey        = op->amo.rkey;
        ep->amo.basis       = 0;
        ep->amo.next        = 0;
        ep->amo.valid       = 1;
    }
}

/* Posts op's next CAS, comparing with @a expected; the guess moves behind it */
static ucs_status_t gdr_amo_post_cas(gdr_iface_t *iface, gdr_ep_t *ep,
                                     gdr_tx_op_t *op, uint64_t expected)
{
    uint64_t swap = gdr_amo_apply(op->amo.op, expected, op->amo.operand);
    gdr_verbs_wr_t wr;
    ucs_status_t status;

    op->amo.expected = expected;
    gdr_wr_atomic(&wr, IBV_WR_ATOMIC_CMP_AND_SWP, op->amo.remote_addr,
                  op->amo.rkey, expected, swap, op);
    status = gdr_ep_post(iface, ep, &wr, 1, op);
    if (status == UCS_OK) {
        ep->amo.next = swap;
    }
    return status;
}

/* @a op becomes the endpoint's retrier, comparing with @a expected */
static ucs_status_t
gdr_amo_retry(gdr_ep_t *ep, gdr_tx_op_t *op, uint64_t expected)
{
    ucs_status_t status;

    ep->amo.retrier = op;
    ep->amo.basis   = expected;
    status          = gdr_amo_post_cas(gdr_ep_iface(ep), ep, op, expected);
    if (status != UCS_OK) {
        ep->amo.retrier = NULL;
    }
    return status;
}

/* The retrier @a done finished with @a status: the first parked op retries
 * next, from what the endpoint's CASes leave in the word (its own last
 * observation for another word); a failure fails every parked op. */
static void
gdr_amo_unpark(gdr_ep_t *ep, const gdr_tx_op_t *done, ucs_status_t status)
{
    uint64_t expected;
    gdr_tx_op_t *op;

    while (!ucs_queue_is_empty(&ep->amo.parked)) {
        op = ucs_queue_pull_elem_non_empty(&ep->amo.parked, gdr_tx_op_t, queue);
        if (status == UCS_OK) {
            expected = op->amo.expected;
            if ((op->amo.remote_addr == done->amo.remote_addr) &&
                (op->amo.rkey == done->amo.rkey)) {
                expected = ep->amo.next;
            }
            gdr_amo_guess_for(ep, op);
            status = gdr_amo_retry(ep, op, expected);
            if (status == UCS_OK) {
                return;
            }
        }
        --ep->tx.cas_loops;
        gdr_op_complete(op, ep, status);
    }
}

/*
 * A CAS of @a op completed.  After a miss: on an op's first miss that found
 * what the guess was computed from, the retry of the op that found it first,
 * posted before ours, changes the word from there: chain behind it (once: a
 * loop cannot spin on a guess while the word stays still).  Otherwise another
 * initiator changed the word, and every op this endpoint has in flight on it
 * will miss too: one of them (the retrier) retries with what it found, the
 * others wait for it, instead of all of them retrying at once and all but one
 * missing again, round after round.
 */
static void gdr_op_cas_loop(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    uint64_t observed;

    GDR_HCA_WROTE(gdr_tx_op_data(op), sizeof(uint64_t));
    observed = *(uint64_t *)gdr_tx_op_data(op);

    /* No credit check: this runs from gdr_ep_tx_completed() before the
     * completed WRs' credits are returned, and the send queue and CQ do have
     * room for at least the one WR whose completion brought us here (a parked
     * op posts in place of the retrier that finished). */
    if ((status == UCS_OK) && (observed != op->amo.expected)) {
        if (op->amo.missed < 2) {
            ++op->amo.missed;
        }
        gdr_amo_guess_for(ep, op);
        if ((op->amo.missed == 1) && (observed == ep->amo.basis)) {
            status = gdr_amo_post_cas(gdr_ep_iface(ep), ep, op, ep->amo.next);
        } else if ((ep->amo.retrier != NULL) && (ep->amo.retrier != op)) {
            op->amo.expected = observed; /* where it goes on from */
            ucs_queue_push(&ep->amo.parked, &op->queue);
            return;
        } else {
            status = gdr_amo_retry(ep, op, observed);
        }
        if (status == UCS_OK) {
            return; /* back here when the CAS completes */
        }
    }

    if (ep->amo.retrier == op) {
        ep->amo.retrier = NULL;
        gdr_amo_unpark(ep, op, status);
    }
    --ep->tx.cas_loops;
    if ((status == UCS_OK) && (op->result != NULL)) {
        *(uint64_t *)op->result = observed;
    }
    gdr_op_complete(op, ep, status);
}

static ucs_status_t
gdr_ep_atomic_cas_loop(uct_ep_h tl_ep, uct_atomic_op_t opcode, uint64_t value,
                       uint64_t *result, uint64_t remote_addr,
                       uct_rkey_t uct_rkey, uct_completion_t *comp,
                       ucs_status_t success)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    gdr_tx_op_t *op;
    ucs_status_t status;
    uint32_t rkey;

    status = gdr_ep_atomic_begin(iface, ep, remote_addr, uct_rkey,
                                 gdr_op_cas_loop, comp, &rkey, &op);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    op->result          = result;
    op->amo.remote_addr = remote_addr;
    op->amo.operand     = value;
    op->amo.rkey        = rkey;
    op->amo.op          = opcode;
    op->amo.missed      = 0;
    gdr_amo_guess_for(ep, op);
    status = gdr_ep_op_posted(gdr_amo_post_cas(iface, ep, op, ep->amo.next), op,
                              success);
    if (status == success) {
        ++ep->tx.cas_loops;
    }
    return status;
}

ucs_status_t gdr_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                  uint64_t value, uint64_t remote_addr,
                                  uct_rkey_t rkey)
{
    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:
        return gdr_ep_atomic(tl_ep, IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0,
                             remote_addr, rkey, NULL, gdr_op_release, NULL,
                             UCS_OK);
    case UCT_ATOMIC_OP_AND:
    case UCT_ATOMIC_OP_OR:
    case UCT_ATOMIC_OP_XOR:
        return gdr_ep_atomic_cas_loop(tl_ep, opcode, value, NULL, remote_addr,
                                      rkey, NULL, UCS_OK);
    default:
        return UCS_ERR_UNSUPPORTED;
    }
}

ucs_status_t gdr_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                   uint64_t value, uint64_t *result,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp)
{
    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:
        return gdr_ep_atomic(tl_ep, IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0,
                             remote_addr, rkey, result, gdr_op_atomic_fetch,
                             comp, UCS_INPROGRESS);
    case UCT_ATOMIC_OP_AND:
    case UCT_ATOMIC_OP_OR:
    case UCT_ATOMIC_OP_XOR:
    case UCT_ATOMIC_OP_SWAP:
        return gdr_ep_atomic_cas_loop(tl_ep, opcode, value, result, remote_addr,
                                      rkey, comp, UCS_INPROGRESS);
    default:
        return UCS_ERR_UNSUPPORTED;
    }
}

ucs_status_t gdr_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                   uint64_t swap, uint64_t remote_addr,
                                   uct_rkey_t rkey, uint64_t *result,
                                   uct_completion_t *comp)
{
    return gdr_ep_atomic(tl_ep, IBV_WR_ATOMIC_CMP_AND_SWP, compare, swap,
                         remote_addr, rkey, result, gdr_op_atomic_fetch, comp,
                         UCS_INPROGRESS);
}
