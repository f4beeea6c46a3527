/**
 * gdr_verbs_post.h - posting one send work request: the data path's only calls into the
 * verbs provider on the send side.
 *
 * Two ways into the provider, chosen per QP when it is created (gdr_verbs_qp_create):
 *  - the ibv_wr_* interface (ibv_wr_post(3)) where the provider has it (rxe, mlx5, efa, ...):
 *    a builder and a setter write the provider's WQE directly, with none of ibv_post_send's
 *    translation of struct ibv_send_wr (rxe's post_send validates, converts and copies the
 *    WR field by field, work the builders skip: docs/perf-compare.md);
 *  - ibv_post_send, which every provider has, for the others and for what the first way does
 *    not take (gather lists and empty WRs: below).
 * Both may be used on one QP: ibv_wr_post(3) allows interleaving them outside each other's
 * critical section, and each call here is one whole critical section.
 *
 * Everything here is inline: with the op functions' constant opcodes and flags the compiler
 * keeps only the branch an op takes.
 *
 * Pure C, libibverbs only: no UCX header.
 */
#ifndef GDR_VERBS_POST_H_
#define GDR_VERBS_POST_H_

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GDR_VERBS_INLINE static inline __attribute__((always_inline))
#else
#define GDR_VERBS_INLINE static inline
#endif

/**
 * A work request of at most one buffer: what every gdr_rc operation posts but the zcopy
 * gathers.  Built by value in the op function and read here field by field, so that it
 * lives in registers: a struct ibv_send_wr is only built where ibv_send_wr is called.
 * Only the fields of its opcode are read (and need be set): remote_addr and rkey for RDMA
 * and atomics, imm_data for SEND_WITH_IMM, compare_add and swap for atomics.
 */
typedef struct gdr_verbs_wr {
    enum ibv_wr_opcode opcode;
    unsigned send_flags; /**< IBV_SEND_* */
    uint64_t wr_id;
    uint64_t remote_addr; /**< RDMA and atomics */
    uint32_t rkey; /**< RDMA and atomics */
    __be32 imm_data; /**< SEND_WITH_IMM */
    uint64_t compare_add; /**< atomics */
    uint64_t swap; /**< compare-and-swap */
    struct ibv_sge sge; /**< the buffer; length 0: none */
} gdr_verbs_wr_t;

/** Posts @a wr with the ibv_wr_* builders of @a qpx: a builder, then one setter. */
GDR_VERBS_INLINE int gdr_verbs_post_wr_api(struct ibv_qp_ex *qpx, const gdr_verbs_wr_t *wr)
{
    ibv_wr_start(qpx);
    qpx->wr_id = wr->wr_id;
    /* IBV_SEND_INLINE stays in the flags: rxe's kernel side reads the WQE's data as inline
     * by that flag, which its inline setter does not set; mlx5 ignores it */
    qpx->wr_flags = wr->send_flags;
    switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE:
        ibv_wr_rdma_write(qpx, wr->rkey, wr->remote_addr);
        break;
    case IBV_WR_RDMA_READ:
        ibv_wr_rdma_read(qpx, wr->rkey, wr->remote_addr);
        break;
    case IBV_WR_SEND_WITH_IMM:
        ibv_wr_send_imm(qpx, wr->imm_data);
        break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        ibv_wr_atomic_fetch_add(qpx, wr->rkey, wr->remote_addr, wr->compare_add);
        break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        ibv_wr_atomic_cmp_swp(qpx, wr->rkey, wr->remote_addr, wr->compare_add, wr->swap);
        break;
    default:
        /* not an opcode gdr_rc asks its QPs for (GDR_VERBS_WR_API_SEND_OPS) */
        ibv_wr_abort(qpx);
        return EINVAL;
    }
    if (wr->send_flags & IBV_SEND_INLINE) {
        ibv_wr_set_inline_data(qpx, (void *)(uintptr_t)wr->sge.addr, wr->sge.length);
    } else {
        ibv_wr_set_sge(qpx, wr->sge.lkey, wr->sge.addr, wr->sge.length);
    }
    return ibv_wr_complete(qpx);
}

/** Posts @a wr with ibv_post_send, which every provider has. */
GDR_VERBS_INLINE int gdr_verbs_post_legacy(struct ibv_qp *qp, const gdr_verbs_wr_t *wr)
{
    struct ibv_sge sge = wr->sge;
    struct ibv_send_wr send_wr, *bad_wr;

    send_wr.wr_id      = wr->wr_id;
    send_wr.next       = NULL;
    send_wr.sg_list    = &sge;
    send_wr.num_sge    = (sge.length != 0);
    send_wr.opcode     = wr->opcode;
    send_wr.send_flags = wr->send_flags;
    switch (wr->opcode) {
    case IBV_WR_SEND_WITH_IMM:
        send_wr.imm_data = wr->imm_data;
        break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        send_wr.wr.atomic.remote_addr = wr->remote_addr;
        send_wr.wr.atomic.compare_add = wr->compare_add;
        send_wr.wr.atomic.swap        = wr->swap;
        send_wr.wr.atomic.rkey        = wr->rkey;
        break;
    default:
        send_wr.wr.rdma.remote_addr = wr->remote_addr;
        send_wr.wr.rdma.rkey        = wr->rkey;
        break;
    }
    return ibv_post_send(qp, &send_wr, &bad_wr);
}

/**
 * Posts @a wr on @a qp: with @a qpx's builders when the QP has them (@a qpx not NULL), else
 * with ibv_post_send.  A WR without a buffer (a zero-length put, the flush's empty write)
 * always goes through ibv_post_send: a builder without a setter is not a WQE every provider
 * completes the same way.  0, or the provider's errno value.
 */
GDR_VERBS_INLINE int gdr_verbs_post(struct ibv_qp *qp, struct ibv_qp_ex *qpx,
                                    const gdr_verbs_wr_t *wr)
{
    if ((qpx != NULL) && (wr->sge.length != 0)) {
        return gdr_verbs_post_wr_api(qpx, wr);
    }
    return gdr_verbs_post_legacy(qp, wr);
}

/**
 * Posts a gather list (@a wr->num_sge > 1; wr->next NULL) with ibv_post_send: the builders'
 * list setters are wrong in rxe before rdma-core 54.5/64 (wr_set_sge_list and
 * wr_set_inline_data_list do not accumulate the length: the WQE says the first SGE's length
 * times their number, or 0 bytes), which Debian 12 (44) and Ubuntu 24.04 (50) ship.
 */
GDR_VERBS_INLINE int gdr_verbs_post_list(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad_wr;

    return ibv_post_send(qp, wr, &bad_wr);
}

#ifdef __cplusplus
}
#endif

#endif
