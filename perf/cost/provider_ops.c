/* perf/cost/provider_ops [DEVICE]: which function of the verbs provider is post_send, post_recv,
 * post_srq_recv, poll_cq and the builders' wr_complete, as "<name> <object> 0x<offset>" lines.
 *
 * Why: ibv_post_send and friends are inline in <infiniband/verbs.h>; they call the provider
 * (librxe-rdmav34.so) through ibv_context.ops, whose functions are static and stripped, so
 * callgrind names them by their offset in the object.  The cost section maps those offsets back
 * to the verbs call with this list, taken from the device's own context.
 *
 * wr_complete: where the provider has the ibv_wr_* builders gdr_rc posts with them, and the WQE
 * reaches the device in the QP's wr_complete (one per posted WR: the builders' ibv_post_send).
 * It is a per-QP pointer, so it takes an RC QP created with send_ops_flags. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

static void show(const char *name, void *fn)
{
    Dl_info info;
    if (fn && dladdr(fn, &info) && info.dli_fname)
        printf("%s %s 0x%lx\n", name, info.dli_fname,
               (unsigned long)((char *)fn - (char *)info.dli_fbase));
}

/* Prints the QP's wr_complete, or nothing where the provider has no ibv_wr_* builders */
static void show_wr_complete(struct ibv_context *ctx)
{
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 1, NULL, NULL, 0) : NULL;
    struct ibv_qp_init_attr_ex attr;
    struct ibv_qp *qp = NULL;

    if (cq) {
        memset(&attr, 0, sizeof(attr));
        attr.qp_type          = IBV_QPT_RC;
        attr.send_cq          = cq;
        attr.recv_cq          = cq;
        attr.cap.max_send_wr  = 1;
        attr.cap.max_recv_wr  = 1;
        attr.cap.max_send_sge = 1;
        attr.cap.max_recv_sge = 1;
        attr.comp_mask        = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        attr.pd               = pd;
        attr.send_ops_flags   = IBV_QP_EX_WITH_RDMA_WRITE;
        qp                    = ibv_create_qp_ex(ctx, &attr);
    }
    if (qp) {
        show("wr_complete", (void *)ibv_qp_to_qp_ex(qp)->wr_complete);
        ibv_destroy_qp(qp);
    }
    if (cq)
        ibv_destroy_cq(cq);
    if (pd)
        ibv_dealloc_pd(pd);
}

int main(int argc, char **argv)
{
    int n                    = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    for (int i = 0; list && i < n; i++) {
        if (argc > 1 && strcmp(ibv_get_device_name(list[i]), argv[1]) != 0)
            continue;
        struct ibv_context *ctx = ibv_open_device(list[i]);
        if (!ctx)
            continue;
        show("post_send", (void *)ctx->ops.post_send);
        show("post_recv", (void *)ctx->ops.post_recv);
        show("post_srq_recv", (void *)ctx->ops.post_srq_recv);
        show("poll_cq", (void *)ctx->ops.poll_cq);
        show_wr_complete(ctx);
        ibv_close_device(ctx);
        ibv_free_device_list(list);
        return 0;
    }
    fprintf(stderr, "provider_ops: no device %s\n", argc > 1 ? argv[1] : "");
    return 1;
}
