/* perf/choices/ucp_ep_choices [--err] [--ops] FEATURES...: the endpoint configuration UCP
 * chooses, one block per FEATURES argument, as `ucx_info -e -P inter` prints it
 * (ucp_ep_print_info: the lanes, and per operation the protocol by message size).
 *
 * FEATURES is a comma-separated list of tag, rma, amo32, amo64, am, stream.  Why not ucx_info:
 * its -u a asks UCP_FEATURE_AMO32 and AMO64 together, and which one an application asks decides
 * whether UCP finds a transport for device atomics (UCP wants every 32-bit op when AMO32 is
 * asked); each feature, separately and as MPI and OpenSHMEM ask them, takes one context here.
 * --err: the endpoints ask UCP_ERR_HANDLING_MODE_PEER (ucx_info -u e).
 * --ops: then, on that endpoint, one operation of each kind the features allow, at 8 B and at
 * 4 MiB (tag send, sync and fast-completion send with the matching receives, stream send and
 * receive, active message with a rendezvous-capable handler, put, get, and the 32/64-bit atomic
 * post, fetch, swap and compare-and-swap; not with --err, see run_ops): with protocol v2
 * (UCX 1.15+) and UCX_PROTO_INFO=y, UCP prints each selection it makes for them, per message
 * size, inside the block, and a line "## op <what> <size> B: <status>" follows each one.
 * Protocol v1 prints its choices in ucp_ep_print_info already; the operations change nothing
 * there.
 *
 * As ucx_info -e -P inter: a second worker of the same context is the peer, its address holds
 * only network devices, one endpoint connects to it and is flushed (the wireup done, its final
 * configuration applied), then printed.  Which transports, devices and plugin: UCX_TLS,
 * UCX_NET_DEVICES, LD_PRELOAD of libuct_gdr.so, as for any UCP program.  Each block starts with
 * a line "## features <FEATURES>" (and " err" with --err) and ends with "## end"; with
 * UCX_LOG_LEVEL=info UCP's ep_cfg line (which lanes carry tag, rma, amo or amo_am...) comes
 * before it on the same stream.
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

/* One progress of both workers; nonzero once @a deadline has passed.  Every wait here is
 * bounded so, at now() + 60 (the wireup of one endpoint takes well under a second natively,
 * seconds under emulation) */
static int progress_both(ucp_worker_h a, ucp_worker_h b, double deadline)
{
    ucp_worker_progress(a);
    ucp_worker_progress(b);
    return now() > deadline;
}

/* Progress both workers until @a request completes */
static ucs_status_t wait_request(ucp_worker_h a, ucp_worker_h b, void *request, const char *what)
{
    if (request == NULL)
        return UCS_OK;
    if (UCS_PTR_IS_ERR(request))
        return UCS_PTR_STATUS(request);
    double deadline = now() + 60;
    ucs_status_t status;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        if (progress_both(a, b, deadline)) {
            fprintf(stderr, "ucp_ep_choices: %s did not complete in 60 s\n", what);
            status = UCS_ERR_TIMED_OUT;
            break;
        }
    }
    ucp_request_free(request);
    return status;
}

/* --ops: one operation of each kind the block's features allow, so that protocol v2 selects
 * (and with UCX_PROTO_INFO=y prints) its protocols for each; every operation is checked */
#define OPS_LARGE (4u << 20) /* past any rendezvous threshold UCP computes for rxe or an HCA */
/* the message sizes of each operation: an eager one, and one past every threshold */
static const size_t ops_sizes[] = {8, OPS_LARGE};
#define OPS_NSIZES (sizeof(ops_sizes) / sizeof(ops_sizes[0]))
#define OPS_AM_ID  7
#define OPS_TAG    0x5a5a

typedef struct {
    ucp_worker_h worker, peer;
    ucp_ep_h ep;
    ucp_ep_h peer_ep; /* the peer's endpoint back (stream), or NULL */
    int err_mode; /* the endpoints ask UCP_ERR_HANDLING_MODE_PEER */
    char *src, *dst; /* OPS_LARGE each */
    void *am_rndv_request; /* the receive of a rendezvous active message */
    int am_received;
} ops_t;

static ucs_status_t ops_am_handler(void *arg, const void *header, size_t header_length, void *data,
                                   size_t length, const ucp_am_recv_param_t *param)
{
    ops_t *ops = arg;
    (void)header;
    (void)header_length;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        ucp_request_param_t rp = {.op_attr_mask = 0};
        ops->am_rndv_request   = ucp_am_recv_data_nbx(ops->peer, data, ops->dst, length, &rp);
    } else {
        memcpy(ops->dst, data, length);
    }
    ops->am_received = 1;
    return UCS_OK;
}

/* The request of each side, both waited for, and a line "## op <what> <size> B: <status>" in
 * the block: an operation UCP refuses over one transport (no protocol for it: an error status)
 * is a difference in what it chooses, not a failure of this program; one that does not complete
 * within 60 s is (-1) */
static int ops_wait2(ops_t *ops, void *send, void *recv, const char *what, size_t size)
{
    ucs_status_t s1     = wait_request(ops->worker, ops->peer, send, what);
    ucs_status_t s2     = wait_request(ops->worker, ops->peer, recv, what);
    ucs_status_t status = (s1 != UCS_OK) ? s1 : s2;
    fflush(stdout);
    printf("## op %s %zu B: %s\n", what, size, ucs_status_string(status));
    fflush(stdout);
    return (s1 == UCS_ERR_TIMED_OUT || s2 == UCS_ERR_TIMED_OUT) ? -1 : 0;
}

static int ops_tag(ops_t *ops, size_t size)
{
    static const struct {
        const char *name;
        int sync;
        uint32_t flags;
    } kinds[] = {{"tag send", 0, 0},
                 {"tag send sync", 1, 0},
                 {"tag send fast-completion", 0, UCP_OP_ATTR_FLAG_FAST_CMPL}};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        ucp_request_param_t sp = {.op_attr_mask = kinds[k].flags};
        ucp_request_param_t rp = {.op_attr_mask = 0};
        void *recv = ucp_tag_recv_nbx(ops->peer, ops->dst, size, OPS_TAG, (ucp_tag_t)-1, &rp);
        void *send = kinds[k].sync ? ucp_tag_send_sync_nbx(ops->ep, ops->src, size, OPS_TAG, &sp)
                                   : ucp_tag_send_nbx(ops->ep, ops->src, size, OPS_TAG, &sp);
        if (UCS_PTR_IS_ERR(send) && UCS_PTR_IS_PTR(recv))
            ucp_request_cancel(ops->peer, recv); /* refused: nothing will arrive */
        if (ops_wait2(ops, send, recv, kinds[k].name, size))
            return -1;
    }
    return 0;
}

static int ops_stream(ops_t *ops, size_t size)
{
    ucp_request_param_t sp = {.op_attr_mask = 0};
    void *send             = ucp_stream_send_nbx(ops->ep, ops->src, size, &sp);
    if (UCS_PTR_IS_ERR(send))
        return ops_wait2(ops, send, NULL, "stream send", size);
    ucp_stream_poll_ep_t polled;
    double deadline = now() + 60;
    while (ucp_stream_worker_poll(ops->peer, &polled, 1, 0) < 1) {
        if (progress_both(ops->worker, ops->peer, deadline)) {
            fprintf(stderr, "ucp_ep_choices: stream data of %zu B did not arrive in 60 s\n", size);
            return -1;
        }
    }
    size_t length;
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags        = UCP_STREAM_RECV_FLAG_WAITALL};
    void *recv             = ucp_stream_recv_nbx(polled.ep, ops->dst, size, &length, &rp);
    return ops_wait2(ops, send, recv, "stream send", size);
}

static int ops_am(ops_t *ops, size_t size)
{
    ucp_request_param_t sp = {.op_attr_mask = 0};
    ops->am_received       = 0;
    ops->am_rndv_request   = NULL;
    void *send             = ucp_am_send_nbx(ops->ep, OPS_AM_ID, NULL, 0, ops->src, size, &sp);
    if (UCS_PTR_IS_ERR(send))
        return ops_wait2(ops, send, NULL, "am send", size);
    double deadline = now() + 60;
    while (!ops->am_received) {
        if (progress_both(ops->worker, ops->peer, deadline)) {
            fprintf(stderr, "ucp_ep_choices: active message of %zu B did not arrive\n", size);
            return -1;
        }
    }
    return ops_wait2(ops, send, ops->am_rndv_request, "am send", size);
}

static int ops_rma(ops_t *ops, size_t size, uint64_t remote, ucp_rkey_h rkey)
{
    ucp_request_param_t p = {.op_attr_mask = 0};
    if (ops_wait2(ops, ucp_put_nbx(ops->ep, ops->src, size, remote, rkey, &p), NULL, "put", size) ||
        ops_wait2(ops, ucp_get_nbx(ops->ep, ops->src, size, remote, rkey, &p), NULL, "get", size))
        return -1;
    return ops_wait2(ops, ucp_ep_flush_nbx(ops->ep, &p), NULL, "flush", size);
}

static int ops_amo(ops_t *ops, size_t width, uint64_t remote, ucp_rkey_h rkey)
{
    static const ucp_atomic_op_t post[]  = {UCP_ATOMIC_OP_ADD, UCP_ATOMIC_OP_AND, UCP_ATOMIC_OP_OR,
                                            UCP_ATOMIC_OP_XOR};
    static const ucp_atomic_op_t fetch[] = {UCP_ATOMIC_OP_ADD, UCP_ATOMIC_OP_SWAP,
                                            UCP_ATOMIC_OP_CSWAP};
    uint64_t value = 1, result = 0;
    ucp_request_param_t p            = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                                        .datatype     = ucp_dt_make_contig(width)};
    static const char *const names[] = {
        [UCP_ATOMIC_OP_ADD] = "add",   [UCP_ATOMIC_OP_AND] = "and",
        [UCP_ATOMIC_OP_OR] = "or",     [UCP_ATOMIC_OP_XOR] = "xor",
        [UCP_ATOMIC_OP_SWAP] = "swap", [UCP_ATOMIC_OP_CSWAP] = "cswap"};
    char what[32];
    for (size_t i = 0; i < sizeof(post) / sizeof(post[0]); i++) {
        snprintf(what, sizeof(what), "atomic post %s", names[post[i]]);
        if (ops_wait2(ops, ucp_atomic_op_nbx(ops->ep, post[i], &value, 1, remote, rkey, &p), NULL,
                      what, width))
            return -1;
    }
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    p.reply_buffer = &result;
    for (size_t i = 0; i < sizeof(fetch) / sizeof(fetch[0]); i++) {
        snprintf(what, sizeof(what), "atomic fetch %s", names[fetch[i]]);
        if (ops_wait2(ops, ucp_atomic_op_nbx(ops->ep, fetch[i], &value, 1, remote, rkey, &p), NULL,
                      what, width))
            return -1;
    }
    return 0;
}

static int run_ops(ucp_context_h context, uint64_t features, ops_t *ops)
{
    int rc          = -1;
    ucp_mem_h memh  = NULL;
    void *packed    = NULL;
    ucp_rkey_h rkey = NULL;
    ops->src        = calloc(1, OPS_LARGE);
    ops->dst        = calloc(1, OPS_LARGE);
    if (!ops->src || !ops->dst) {
        fprintf(stderr, "ucp_ep_choices: out of memory\n");
        goto out;
    }
    if (features & UCP_FEATURE_STREAM) {
        /* stream data is delivered on an endpoint the receiver created itself: the peer's
         * endpoint back to the worker (UCP matches it with the one the wireup made) */
        ucp_worker_attr_t wattr = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS |
                                                 UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS,
                                   .address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY};
        ucs_status_t status     = ucp_worker_query(ops->worker, &wattr);
        if (status == UCS_OK) {
            ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                                         .address    = wattr.address};
            status                    = ucp_ep_create(ops->peer, &ep_params, &ops->peer_ep);
            ucp_worker_release_address(ops->worker, wattr.address);
        }
        if (status == UCS_OK) {
            ucp_request_param_t fp = {.op_attr_mask = 0};
            status = wait_request(ops->peer, ops->worker, ucp_ep_flush_nbx(ops->peer_ep, &fp),
                                  "flush of the peer's endpoint");
        }
        if (status != UCS_OK) {
            fprintf(stderr, "ucp_ep_choices: the peer's endpoint: %s\n", ucs_status_string(status));
            goto out;
        }
    }
    if (features & UCP_FEATURE_AM) {
        ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                                   UCP_AM_HANDLER_PARAM_FIELD_CB |
                                                   UCP_AM_HANDLER_PARAM_FIELD_ARG,
                                     .id  = OPS_AM_ID,
                                     .cb  = ops_am_handler,
                                     .arg = ops};
        if (ucp_worker_set_am_recv_handler(ops->peer, &hp) != UCS_OK) {
            fprintf(stderr, "ucp_ep_choices: ucp_worker_set_am_recv_handler failed\n");
            goto out;
        }
    }
    if (features & (UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64)) {
        size_t packed_size;
        ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                                                 UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                                   .length = OPS_LARGE,
                                   .flags  = UCP_MEM_MAP_ALLOCATE};
        ucp_mem_attr_t ma       = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
        ucs_status_t status;
        if ((status = ucp_mem_map(context, &mp, &memh)) != UCS_OK ||
            (status = ucp_mem_query(memh, &ma)) != UCS_OK ||
            (status = ucp_rkey_pack(context, memh, &packed, &packed_size)) != UCS_OK ||
            (status = ucp_ep_rkey_unpack(ops->ep, packed, &rkey)) != UCS_OK) {
            fprintf(stderr, "ucp_ep_choices: remote memory: %s\n", ucs_status_string(status));
            goto out;
        }
        uint64_t remote = (uintptr_t)ma.address;
        for (size_t i = 0; (features & UCP_FEATURE_RMA) && i < OPS_NSIZES; i++)
            if (ops_rma(ops, ops_sizes[i], remote, rkey))
                goto out;
        /* Not with UCP_ERR_HANDLING_MODE_PEER: between two workers of one process UCP then
         * finds no protocol for atomics over rc_verbs as over gdr_rc ("cannot find remote
         * protocol"): UCX 1.18.1 cancels the request, 1.22.0 built with assertions aborts in
         * ucp_ep_set_lanes_failed_schedule (checked in the VM, 2026-12-05) */
        if (ops->err_mode)
            features &= ~(UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64);
        if ((features & UCP_FEATURE_AMO32) && ops_amo(ops, 4, remote, rkey))
            goto out;
        if ((features & UCP_FEATURE_AMO64) && ops_amo(ops, 8, remote, rkey))
            goto out;
    }
    for (size_t i = 0; i < OPS_NSIZES; i++) {
        if (((features & UCP_FEATURE_TAG) && ops_tag(ops, ops_sizes[i])) ||
            ((features & UCP_FEATURE_STREAM) && ops_stream(ops, ops_sizes[i])) ||
            ((features & UCP_FEATURE_AM) && ops_am(ops, ops_sizes[i])))
            goto out;
    }
    rc = 0;
out:
    if (rkey != NULL)
        ucp_rkey_destroy(rkey);
    if (packed != NULL)
        ucp_rkey_buffer_release(packed);
    if (memh != NULL)
        ucp_mem_unmap(context, memh);
    if (ops->peer_ep != NULL) {
        ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                  .flags        = UCP_EP_CLOSE_FLAG_FORCE};
        wait_request(ops->peer, ops->worker, ucp_ep_close_nbx(ops->peer_ep, &cp), "close");
    }
    free(ops->src);
    free(ops->dst);
    return rc;
}

static int print_one(const char *arg, int err_mode, int with_ops)
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
    fflush(stdout);
    if (with_ops) {
        ops_t ops = {.worker = worker, .peer = peer, .ep = ep, .err_mode = err_mode};
        if (run_ops(context, params.features, &ops))
            goto out;
        fflush(stdout);
    }
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
    int err_mode = 0, with_ops = 0, first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (!strcmp(argv[first], "--err")) {
            err_mode = 1;
        } else if (!strcmp(argv[first], "--ops")) {
            with_ops = 1;
        } else {
            first = argc; /* usage */
        }
    }
    if (first >= argc) {
        fprintf(stderr, "usage: ucp_ep_choices [--err] [--ops] FEATURES... "
                        "(FEATURES: comma-separated tag,rma,amo32,amo64,am,stream)\n");
        return 2;
    }
    for (int i = first; i < argc; i++) {
        int rc = print_one(argv[i], err_mode, with_ops);
        if (rc)
            return rc;
    }
    return 0;
}
