/**
 * gdr_ep_trace.c - data tracing (UCX_LOG_LEVEL=data): a line per work request posted and
 * per send completion, as UCX's ib transports log theirs (uct_ib_log_post_send); active
 * messages are traced where they are sent and received, with UCX's own uct_iface_trace_am.
 *
 * The callers test ucs_log_is_enabled(UCS_LOG_LEVEL_TRACE_DATA) first (gdr_trace_data_on()):
 * in a UCX built without data logging (UCS_MAX_LOG_LEVEL below TRACE_DATA: Debian's and
 * Ubuntu's builds) that is a constant 0 and the tracing compiles to nothing; where it is built
 * in (upstream's default), it costs the data path one load and one branch, as rc_verbs pays.
 */
#include "gdr_ep.h"

#include <ucs/debug/log.h>
#include <arpa/inet.h>
#include <inttypes.h>


static const char *gdr_wr_opcode_name(enum ibv_wr_opcode opcode)
{
    switch (opcode) {
    case IBV_WR_RDMA_WRITE:
        return "RDMA_WRITE";
    case IBV_WR_RDMA_READ:
        return "RDMA_READ";
    case IBV_WR_SEND_WITH_IMM:
        return "SEND_IMM";
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return "ATOMIC_FADD";
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return "ATOMIC_CSWAP";
    default:
        return "?";
    }
}

static void gdr_ep_trace_wr(const gdr_ep_t *ep, uint64_t wr_id,
                            enum ibv_wr_opcode opcode, unsigned send_flags,
                            uint64_t remote_addr, uint32_t rkey, uint32_t imm,
                            const struct ibv_sge *sge, int num_sge,
                            const char *via)
{
    size_t length = 0;
    int i;

    for (i = 0; i < num_sge; ++i) {
        length += sge[i].length;
    }
    ucs_trace_data("gdr_rc: QP 0x%x wrid 0x%" PRIx64 " %s%s%s%s via %s "
                   "[va 0x%" PRIx64 " rkey 0x%x] [imm 0x%x] [%d sge %zu bytes%s"
                   " va 0x%" PRIx64 " lkey 0x%x]",
                   ep->qp->qp_num, wr_id, gdr_wr_opcode_name(opcode),
                   (send_flags & IBV_SEND_SIGNALED) ? " s" : "",
                   (send_flags & IBV_SEND_FENCE) ? " f" : "",
                   (send_flags & IBV_SEND_INLINE) ? " i" : "", via, remote_addr,
                   rkey, imm, num_sge, length,
                   (send_flags & IBV_SEND_INLINE) ? " inline" : "",
                   (num_sge > 0) ? (uint64_t)sge[0].addr : 0,
                   (num_sge > 0) ? sge[0].lkey : 0);
}

void gdr_ep_trace_post(const gdr_ep_t *ep, const gdr_verbs_wr_t *wr)
{
    int wr_api = (ep->qpx != NULL) && (wr->sge.length != 0);
    int send   = (wr->opcode == IBV_WR_SEND_WITH_IMM);

    /* only the fields of its opcode are set (gdr_verbs_wr_t) */
    gdr_ep_trace_wr(ep, wr->wr_id, wr->opcode, wr->send_flags,
                    send ? 0 : wr->remote_addr, send ? 0 : wr->rkey,
                    send ? ntohl(wr->imm_data) : 0, &wr->sge,
                    wr->sge.length != 0, wr_api ? "ibv_wr" : "ibv_post_send");
}

void gdr_ep_trace_post_list(const gdr_ep_t *ep, const struct ibv_send_wr *wr)
{
    int send = (wr->opcode == IBV_WR_SEND_WITH_IMM);

    gdr_ep_trace_wr(ep, wr->wr_id, wr->opcode, wr->send_flags,
                    send ? 0 : wr->wr.rdma.remote_addr,
                    send ? 0 : wr->wr.rdma.rkey, send ? ntohl(wr->imm_data) : 0,
                    wr->sg_list, wr->num_sge, "ibv_post_send");
}

void gdr_iface_trace_send_completion(const struct ibv_wc *wc)
{
    ucs_trace_data("gdr_rc: QP 0x%x send completion wrid 0x%" PRIx64 " %s",
                   wc->qp_num, (uint64_t)wc->wr_id,
                   ibv_wc_status_str(wc->status));
}
