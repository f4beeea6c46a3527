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

/* 64-bit fetch-and-add / compare-and-swap; the result lands in a bounce buffer.
 * @a op_p (may be NULL) receives the op, valid when this returns @a success. */
static UCS_F_ALWAYS_INLINE ucs_status_t
gdr_ep_atomic(uct_ep_h tl_ep, enum ibv_wr_opcode opcode, uint64_t compare_add,
              uint64_t swap, uint64_t remote_addr, uct_rkey_t uct_rkey,
              uint64_t *result, gdr_tx_op_handler_t handler,
              uct_completion_t *comp, ucs_status_t success, gdr_tx_op_t **op_p)
{
    gdr_ep_t *ep       = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_iface_t *iface = gdr_ep_iface(ep);
    gdr_verbs_wr_t wr;
    ucs_status_t status;
    gdr_tx_op_t *op;
    uint32_t rkey;

    if (ucs_unlikely(remote_addr % sizeof(uint64_t))) {
        ucs_error("gdr_rc: atomic remote address 0x%" PRIx64 " is not 8-byte "
                  "aligned",
                  remote_addr);
        return UCS_ERR_INVALID_PARAM;
    }
    status = gdr_ep_rma_desc_begin(iface, ep, uct_rkey, sizeof(uint64_t),
                                   handler, comp, &rkey, &op);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    op->result = result;
    UCT_TL_EP_STAT_ATOMIC(&ep->super);
    gdr_wr_atomic(&wr, opcode, remote_addr, rkey, compare_add, swap, op);
    if (op_p != NULL) {
        *op_p = op;
    }
    /* signaled when someone waits for the value (a fetch, or a CAS loop) */
    return gdr_ep_op_posted(gdr_ep_post(iface, ep, &wr,
                                        (result != NULL) || (op_p != NULL), op),
                            op, success);
}

/*
 * swap/and/or/xor are not in the verbs standard: read the word (fetch-add 0),
 * then compare-and-swap it with op(value, operand) until the CAS finds the
 * value it compared with.  Linearizable with every other atomic the HCAs
 * execute on that word (not with CPU atomics on it, like all device atomics).
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

static void gdr_op_cas_loop(gdr_tx_op_t *op, gdr_ep_t *ep, ucs_status_t status)
{
    gdr_iface_t *iface = gdr_ep_iface(ep);
    uint64_t observed;
    gdr_verbs_wr_t wr;

    GDR_HCA_WROTE(gdr_tx_op_data(op), sizeof(uint64_t));
    observed = *(uint64_t *)gdr_tx_op_data(op);

    /* No credit check: this runs from gdr_ep_tx_completed() before the
     * completed WRs' credits are returned, and the send queue and CQ do have
     * room for at least the one WR whose completion brought us here. */
    if ((status == UCS_OK) &&
        (!op->amo.swapping || (observed != op->amo.expected))) {
        op->amo.expected = observed;
        op->amo.swapping = 1;
        gdr_wr_atomic(&wr, IBV_WR_ATOMIC_CMP_AND_SWP, op->amo.remote_addr,
                      op->amo.rkey, observed,
                      gdr_amo_apply(op->amo.op, observed, op->amo.operand), op);
        status = gdr_ep_post(iface, ep, &wr, 1, op);
        if (status == UCS_OK) {
            return; /* back here when the CAS completes */
        }
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
    gdr_ep_t *ep    = ucs_derived_of(tl_ep, gdr_ep_t);
    gdr_tx_op_t *op = NULL;
    ucs_status_t status;
    uint32_t rkey;

    status = gdr_ep_rkey(ep, uct_rkey, sizeof(uint64_t), &rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    /* step 1 is a fetch-add of 0: an atomic read */
    status = gdr_ep_atomic(tl_ep, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0,
                           remote_addr, uct_rkey, result, gdr_op_cas_loop, comp,
                           success, &op);
    if (status != success) {
        return status;
    }
    op->amo.remote_addr = remote_addr;
    op->amo.operand     = value;
    op->amo.rkey        = rkey;
    op->amo.op          = opcode;
    op->amo.swapping    = 0;
    ++ep->tx.cas_loops;
    return success;
}

ucs_status_t gdr_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                  uint64_t value, uint64_t remote_addr,
                                  uct_rkey_t rkey)
{
    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:
        return gdr_ep_atomic(tl_ep, IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0,
                             remote_addr, rkey, NULL, gdr_op_release, NULL,
                             UCS_OK, NULL);
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
                             comp, UCS_INPROGRESS, NULL);
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
                         UCS_INPROGRESS, NULL);
}
