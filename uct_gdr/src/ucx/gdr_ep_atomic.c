/**
 * gdr_ep_atomic.c - atomics: 64-bit fetch-add and compare-and-swap as verbs has them; 64-bit
 * and/or/xor/swap, and every 32-bit op, as compare-and-swap loops on top.
 *
 * Verbs has no 32-bit atomic: a 32-bit op works on one half (its lane) of the naturally
 * aligned 64-bit word that contains it, by the same loop, which leaves the other half as it
 * found it.  Which half a 4-byte address is follows the host's byte order, the order in which
 * the HCAs' 64-bit atomics treat the word in memory (the 64-bit ops assume it already: their
 * values are the host's integers).  docs/atomics.md has the semantics and the limits.
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

/* Checks a @a size-byte atomic's target and takes the op whose bounce buffer
 * receives the old value of the 64-bit word that contains it */
static UCS_F_ALWAYS_INLINE ucs_status_t gdr_ep_atomic_begin(
        gdr_iface_t *iface, gdr_ep_t *ep, uint64_t remote_addr, unsigned size,
        uct_rkey_t uct_rkey, gdr_tx_op_handler_t handler,
        uct_completion_t *comp, uint32_t *rkey_p, gdr_tx_op_t **op_p)
{
    ucs_status_t status;

    if (ucs_unlikely(remote_addr % size)) {
        ucs_error("gdr_rc: %u-bit atomic remote address 0x%" PRIx64 " is not "
                  "%u-byte aligned",
                  size * 8, remote_addr, size);
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

    status = gdr_ep_atomic_begin(iface, ep, remote_addr, sizeof(uint64_t),
                                 uct_rkey, handler, comp, &rkey, &op);
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
 * swap/and/or/xor, and every 32-bit op, are not in the verbs standard:
 * compare-and-swap the word with op(value, operand) until the CAS finds the
 * value it compared with; a 32-bit op computes its half of the word and
 * leaves the other half as the CAS found it.  Linearizable with every other
 * atomic the HCAs execute on that word, of either width and on either half
 * (not with CPU atomics on it, like all device atomics); a write to the other
 * half after the word was read makes the CAS miss and the op retry.
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

/* The value of @a op's lane in @a word */
static UCS_F_ALWAYS_INLINE uint64_t gdr_amo_lane_value(const gdr_tx_op_t *op,
                                                       uint64_t word)
{
    return (word & op->amo.lane) >> op->amo.shift;
}

/* What @a op makes of @a word: its lane changed, the rest as it is */
static uint64_t gdr_amo_apply(const gdr_tx_op_t *op, uint64_t word)
{
    uint64_t value = gdr_amo_lane_value(op, word);

    switch (op->amo.op) {
    case UCT_ATOMIC_OP_AND:
        value &= op->amo.operand;
        break;
    case UCT_ATOMIC_OP_OR:
        value |= op->amo.operand;
        break;
    case UCT_ATOMIC_OP_XOR:
        value ^= op->amo.operand;
        break;
    case UCT_ATOMIC_OP_SWAP:
        value = op->amo.operand;
        break;
    case UCT_ATOMIC_OP_CSWAP:
        /* a compare that fails writes the word back as it is */
        value = (value == op->amo.compare) ? op->amo.operand : value;
        break;
    default:
        value += op->amo.operand; /* the carry out of the lane is dropped */
        break;
    }
    return (word & ~op->amo.lane) | ((value << op->amo.shift) & op->amo.lane);
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
    uint64_t swap = gdr_amo_apply(op, expected);
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

/* A loop of the endpoint starts; counted on the iface too, whose fence looks
 * for endpoints with loops only when there are some (gdr_iface_fence) */
static void gdr_amo_loop_started(gdr_ep_t *ep)
{
    ++ep->tx.cas_loops;
    ++gdr_ep_iface(ep)->tx.cas_loops;
}

/* A loop of the endpoint is done, its last CAS completed (or it failed) */
static void gdr_amo_loop_done(gdr_ep_t *ep)
{
    --ep->tx.cas_loops;
    --gdr_ep_iface(ep)->tx.cas_loops;
    if (ucs_unlikely((ep->tx.cas_loops == 0) &&
                     (ep->flags & GDR_EP_FLAG_FENCE_LOOPS))) {
        gdr_ep_fence_loops_done(ep);
    }
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
        gdr_amo_loop_done(ep);
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
    gdr_amo_loop_done(ep);
    if ((status == UCS_OK) && (op->result != NULL)) {
        if (op->amo.lane == UINT64_MAX) {
            *(uint64_t *)op->result = observed;
        } else {
            *(uint32_t *)op->result = gdr_amo_lane_value(op, observed);
        }
    }
    gdr_op_complete(op, ep, status);
}

/* The shift of the lowest bit of the @a size bytes at @a offset in a 64-bit
 * word, in the host's byte order (the HCAs' order for the word in memory) */
static UCS_F_ALWAYS_INLINE unsigned
gdr_amo_lane_shift(uint64_t offset, unsigned size)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    (void)size;
    return offset * 8;
#else
    return (sizeof(uint64_t) - size - offset) * 8;
#endif
}

/* A @a size-byte (4 or 8) @a opcode as compare-and-swap loop on the 64-bit
 * word that contains it; @a compare only for UCT_ATOMIC_OP_CSWAP */
static ucs_status_t
gdr_ep_atomic_cas_loop(uct_ep_h tl_ep, uct_atomic_op_t opcode, unsigned size,
                       uint64_t value, uint64_t compare, void *result,
                       uint64_t remote_addr, uct_rkey_t uct_rkey,
                       uct_completion_t *comp, ucs_status_t success)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    uint64_t offset    = remote_addr % sizeof(uint64_t);
    gdr_tx_op_t *op;
    ucs_status_t status;
    uint32_t rkey;

    status = gdr_ep_atomic_begin(iface, ep, remote_addr, size, uct_rkey,
                                 gdr_op_cas_loop, comp, &rkey, &op);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    op->result          = result;
    op->amo.remote_addr = remote_addr - offset;
    op->amo.shift       = gdr_amo_lane_shift(offset, size);
    op->amo.lane        = (UINT64_MAX >> (64 - 8 * size)) << op->amo.shift;
    op->amo.operand     = value;
    op->amo.compare     = compare;
    op->amo.rkey        = rkey;
    op->amo.op          = opcode;
    op->amo.missed      = 0;
    gdr_amo_guess_for(ep, op);
    status = gdr_ep_op_posted(gdr_amo_post_cas(iface, ep, op, ep->amo.next), op,
                              success);
    if (status == success) {
        gdr_amo_loop_started(ep);
    }
    return status;
}

/* The 64-bit loops' entry: its own call, of the arguments the 64-bit ops have,
 * so that the fetch-add and cswap paths beside it in gdr_ep_atomic64_fetch
 * compile as they did before the loop took a width and a compare value
 * (perf/cost's fetch_add64 row counts the difference) */
static UCS_F_NOINLINE ucs_status_t gdr_ep_atomic64_cas_loop(
        uct_ep_h tl_ep, uct_atomic_op_t opcode, uint64_t value,
        uint64_t *result, uint64_t remote_addr, uct_rkey_t uct_rkey,
        uct_completion_t *comp, ucs_status_t success)
{
    return gdr_ep_atomic_cas_loop(tl_ep, opcode, sizeof(uint64_t), value, 0,
                                  result, remote_addr, uct_rkey, comp, success);
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
        return gdr_ep_atomic64_cas_loop(tl_ep, opcode, value, NULL, remote_addr,
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
        return gdr_ep_atomic64_cas_loop(tl_ep, opcode, value, result,
                                        remote_addr, rkey, comp,
                                        UCS_INPROGRESS);
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

/* 32 bits: every op a compare-and-swap loop on the word's half */
ucs_status_t gdr_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                  uint32_t value, uint64_t remote_addr,
                                  uct_rkey_t rkey)
{
    if (!(UCS_BIT(opcode) & GDR_ATOMIC_OPS)) {
        return UCS_ERR_UNSUPPORTED;
    }
    return gdr_ep_atomic_cas_loop(tl_ep, opcode, sizeof(uint32_t), value, 0,
                                  NULL, remote_addr, rkey, NULL, UCS_OK);
}

ucs_status_t gdr_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                   uint32_t value, uint32_t *result,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp)
{
    if (!(UCS_BIT(opcode) & GDR_ATOMIC_FETCH_OPS) ||
        (opcode == UCT_ATOMIC_OP_CSWAP)) {
        return UCS_ERR_UNSUPPORTED;
    }
    return gdr_ep_atomic_cas_loop(tl_ep, opcode, sizeof(uint32_t), value, 0,
                                  result, remote_addr, rkey, comp,
                                  UCS_INPROGRESS);
}

ucs_status_t gdr_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                   uint32_t swap, uint64_t remote_addr,
                                   uct_rkey_t rkey, uint32_t *result,
                                   uct_completion_t *comp)
{
    return gdr_ep_atomic_cas_loop(tl_ep, UCT_ATOMIC_OP_CSWAP, sizeof(uint32_t),
                                  swap, compare, result, remote_addr, rkey,
                                  comp, UCS_INPROGRESS);
}
