/* perf/cost/provider_ops [DEVICE]: which function of the verbs provider is post_send, post_recv,
 * post_srq_recv and poll_cq, as "<name> <object> 0x<offset>" lines.
 *
 * Why: ibv_post_send and friends are inline in <infiniband/verbs.h>; they call the provider
 * (librxe-rdmav34.so) through ibv_context.ops, whose functions are static and stripped, so
 * callgrind names them by their offset in the object.  The cost section maps those offsets back
 * to the verbs call with this list, taken from the device's own context. */
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
        ibv_close_device(ctx);
        ibv_free_device_list(list);
        return 0;
    }
    fprintf(stderr, "provider_ops: no device %s\n", argc > 1 ? argv[1] : "");
    return 1;
}
