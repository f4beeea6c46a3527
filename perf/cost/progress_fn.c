/* perf/cost/progress_fn TRANSPORT DEVICE: the function UCT's worker progress calls for an iface of
 * TRANSPORT on DEVICE (e.g. rc_verbs rxe0:1), as "<transport> <object> 0x<offset> <symbol>".
 *
 * Why: the cost section counts the iface's progress per call (idle, and the receiver's work) with
 * callgrind's --toggle-collect/--dump-before, which take a function name.  ucx_perftest reaches
 * it through uct_worker_progress(), inline in the executable, and rc_verbs' progress function is
 * static and stripped in Debian's UCX: callgrind names it by its offset in libuct_ib, which this
 * helper reads from the callback that uct_iface_progress_enable() puts in the worker's queue.
 * gdr_rc's plugin is found as in any UCX process (LD_PRELOAD or UCX_MODULE_DIR). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <uct/api/uct.h>

/* The md of @a component that has TRANSPORT on DEVICE, opened; NULL if none */
static uct_md_h open_md(uct_component_h component, const char *tl, const char *dev)
{
    uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT};
    if (uct_component_query(component, &attr) != UCS_OK)
        return NULL;
    uct_md_resource_desc_t mds[attr.md_resource_count ? attr.md_resource_count : 1];
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds;
    if (uct_component_query(component, &attr) != UCS_OK)
        return NULL;
    for (unsigned i = 0; i < attr.md_resource_count; i++) {
        uct_md_config_t *config;
        uct_md_h md;
        if (uct_md_config_read(component, NULL, NULL, &config) != UCS_OK)
            continue;
        ucs_status_t status = uct_md_open(component, mds[i].md_name, config, &md);
        uct_config_release(config);
        if (status != UCS_OK)
            continue;
        uct_tl_resource_desc_t *tls;
        unsigned n;
        int found = 0;
        if (uct_md_query_tl_resources(md, &tls, &n) == UCS_OK) {
            for (unsigned j = 0; j < n; j++)
                found |= !strcmp(tls[j].tl_name, tl) && !strcmp(tls[j].dev_name, dev);
            uct_release_tl_resource_list(tls);
        }
        if (found)
            return md;
        uct_md_close(md);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    uct_component_h *components;
    unsigned n;
    uct_md_h md = NULL;

    if (argc != 3) {
        fprintf(stderr, "usage: progress_fn TRANSPORT DEVICE\n");
        return 2;
    }
    if (uct_query_components(&components, &n) != UCS_OK)
        return 1;
    for (unsigned i = 0; i < n && !md; i++)
        md = open_md(components[i], argv[1], argv[2]);
    if (!md) {
        fprintf(stderr, "progress_fn: no %s on %s\n", argv[1], argv[2]);
        return 1;
    }

    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_iface_config_t *config;
    uct_iface_h iface;
    uct_iface_params_t params = {.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                               UCT_IFACE_PARAM_FIELD_DEVICE,
                                 .open_mode   = UCT_IFACE_OPEN_MODE_DEVICE,
                                 .mode.device = {.tl_name = argv[1], .dev_name = argv[2]}};
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK ||
        uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK ||
        uct_md_iface_config_read(md, argv[1], NULL, NULL, &config) != UCS_OK ||
        uct_iface_open(md, worker, &params, config, &iface) != UCS_OK) {
        fprintf(stderr, "progress_fn: cannot open a %s iface on %s\n", argv[1], argv[2]);
        return 1;
    }
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    /* uct_worker_t's one public member: the callback queue uct_worker_progress() runs */
    int shown = 0;
    for (ucs_callbackq_elem_t *e = worker->progress_q.fast_elems; e->cb != NULL; e++) {
        Dl_info info;
        if (dladdr((void *)e->cb, &info) && info.dli_fname) {
            printf("%s %s 0x%lx %s\n", argv[1], info.dli_fname,
                   (unsigned long)((char *)e->cb - (char *)info.dli_fbase),
                   info.dli_sname && info.dli_saddr == (void *)e->cb ? info.dli_sname : "-");
            shown++;
        }
    }
    uct_iface_close(iface);
    uct_config_release(config);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_md_close(md);
    uct_release_component_list(components);
    if (!shown)
        fprintf(stderr, "progress_fn: no progress callback in the worker's queue\n");
    return shown ? 0 : 1;
}
