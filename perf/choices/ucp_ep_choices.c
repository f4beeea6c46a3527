/* perf/choices/ucp_ep_choices [--err] FEATURES...: the endpoint configuration UCP chooses, one
 * block per FEATURES argument, as `ucx_info -e -P inter` prints it (ucp_ep_print_info: the lanes,
 * and per operation the protocol by message size).
 *
 * FEATURES is a comma-separated list of tag, rma, amo32, amo64, am, stream.  Why not ucx_info:
 * its -u a asks UCP_FEATURE_AMO32 and AMO64 together, and which one an application asks decides
 * whether UCP finds a transport for device atomics (UCP wants every 32-bit op when AMO32 is
 * asked); each feature, separately and as MPI and OpenSHMEM ask them, takes one context here.
 * --err: the endpoints ask UCP_ERR_HANDLING_MODE_PEER (ucx_info -u e).
 *
 * As ucx_info -e -P inter: a second worker of the same context is the peer, its address holds
 * only network devices, one endpoint connects to it and is flushed (the wireup done, its final
 * configuration applied), then printed.  Which transports, devices and plugin: UCX_TLS,
 * UCX_NET_DEVICES, LD_PRELOAD of libuct_gdr.so, as for any UCP program.  Each block starts with
 * a line "## features <FEATURES>" (and " err" with --err); with UCX_LOG_LEVEL=info UCP's ep_cfg
 * line (which lanes carry tag, rma, amo or amo_am...) comes before it on the same stream.
 *
 * Exit status: 0 every block printed; 1 UCP failed (message on stderr); 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>

static const struct {
    const char *name;
    uint64_t feature;
} features_by_name[] = {
    {"tag", UCP_FEATURE_TAG},     {"rma", UCP_FEATURE_RMA}, {"amo32", UCP_FEATURE_AMO32},
    {"amo64", UCP_FEATURE_AMO64}, {"am", UCP_FEATURE_AM},   {"stream", UCP_FEATURE_STREAM},
};

static int parse_features(const char *arg, uint64_t *features)
{
    char copy[256];
    if (snprintf(copy, sizeof(copy), "%s", arg) >= (int)sizeof(copy))
        return -1;
    *features = 0;
    for (char *save, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < sizeof(features_by_name) / sizeof(features_by_name[0]); i++)
            if (!strcmp(tok, features_by_name[i].name))
                break;
        if (i == sizeof(features_by_name) / sizeof(features_by_name[0]))
            return -1;
        *features |= features_by_name[i].feature;
    }
    return *features ? 0 : -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Progress both workers until @a request completes; bounded (the wireup of one endpoint takes
 * well under a second natively, seconds under emulation) */
static ucs_status_t wait_request(ucp_worker_h a, ucp_worker_h b, void *request, const char *what)
{
    if (request == NULL)
        return UCS_OK;
    if (UCS_PTR_IS_ERR(request))
        return UCS_PTR_STATUS(request);
    double deadline = now() + 60;
    ucs_status_t status;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(a);
        ucp_worker_progress(b);
        if (now() > deadline) {
            fprintf(stderr, "ucp_ep_choices: %s did not complete in 60 s\n", what);
            status = UCS_ERR_TIMED_OUT;
            break;
        }
    }
    ucp_request_free(request);
    return status;
}

static int print_one(const char *arg, int err_mode)
{
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES};
    if (parse_features(arg, &params.features)) {
        fprintf(stderr, "ucp_ep_choices: bad FEATURES '%s' (tag,rma,amo32,amo64,am,stream)\n", arg);
        return 2;
    }
    ucp_context_h context;
    ucs_status_t status = ucp_init(&params, NULL, &context);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_ep_choices: ucp_init(%s): %s\n", arg, ucs_status_string(status));
        return 1;
    }
    int rc                      = 1;
    ucp_worker_params_t wparams = {.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                   .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_worker_h worker = NULL, peer = NULL;
    ucp_ep_h ep             = NULL;
    ucp_worker_attr_t wattr = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS |
                                             UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS,
                               .address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY};
    if ((status = ucp_worker_create(context, &wparams, &worker)) != UCS_OK ||
        (status = ucp_worker_create(context, &wparams, &peer)) != UCS_OK ||
        (status = ucp_worker_query(peer, &wattr)) != UCS_OK) {
        fprintf(stderr, "ucp_ep_choices: worker (%s): %s\n", arg, ucs_status_string(status));
        goto out;
    }
    ucp_ep_params_t eparams = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                               .address    = wattr.address};
    if (err_mode) {
        eparams.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        eparams.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    }
    status = ucp_ep_create(worker, &eparams, &ep);
    ucp_worker_release_address(peer, wattr.address);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_ep_choices: ucp_ep_create (%s): %s\n", arg, ucs_status_string(status));
        ep = NULL;
        goto out;
    }
    ucp_request_param_t rparams = {.op_attr_mask = 0};
    status = wait_request(worker, peer, ucp_ep_flush_nbx(ep, &rparams), "flush");
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_ep_choices: flush (%s): %s\n", arg, ucs_status_string(status));
        goto out;
    }
    fflush(stdout); /* UCP's log lines and ours on one stream, in order */
    printf("## features %s%s\n", arg, err_mode ? " err" : "");
    ucp_ep_print_info(ep, stdout);
    printf("## end\n");
    fflush(stdout);
    rc = 0;
out:
    if (ep != NULL) {
        rparams.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        rparams.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        wait_request(worker, peer, ucp_ep_close_nbx(ep, &rparams), "close");
    }
    if (peer != NULL)
        ucp_worker_destroy(peer);
    if (worker != NULL)
        ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return rc;
}

int main(int argc, char **argv)
{
    int err_mode = 0, first = 1;
    if (argc > 1 && !strcmp(argv[1], "--err")) {
        err_mode = 1;
        first    = 2;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: ucp_ep_choices [--err] FEATURES... "
                        "(FEATURES: comma-separated tag,rma,amo32,amo64,am,stream)\n");
        return 2;
    }
    for (int i = first; i < argc; i++) {
        int rc = print_one(argv[i], err_mode);
        if (rc)
            return rc;
    }
    return 0;
}
