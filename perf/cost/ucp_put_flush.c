/*
 * ucp_put_flush [ITERATIONS] [GAP_US]: the cost section's ucp_put_flush row (issue 27): one
 * 8-byte ucp_put_nbx and a ucp_ep_flush_nbx of its endpoint, waited for, ITERATIONS (default
 * 200) times, over the transports in UCX_TLS.
 *
 * One process, two workers of one context (UCP_FEATURE_RMA), an endpoint from worker a to
 * worker b, 8 bytes of b's memory as the target: an RDMA write needs nothing of the target
 * process, so worker b is progressed only while the endpoint wires up.  Each iteration calls
 * ucp_put_nbx (through put_op), sleeps GAP_US (default 20000) microseconds, so that the
 * write's completion is already in the CQ when the flush polls (a flush then waits for no
 * spin of progress: its cost does not depend on timing), then flush_op: ucp_ep_flush_nbx,
 * ucp_worker_progress until the request completes, ucp_request_free.  The cost section runs it
 * under callgrind with put_op and flush_op collected, a dump before put_op (sections/cost.py,
 * PROGRAM rows): the pair's cost is the inclusive cost of both calls.  The value written by
 * the last put is checked at the end.
 * Exit status: 0 when every put and flush completed and the target holds the last value, 1
 * otherwise, 2 on setup errors.
 */
#include <ucp/api/ucp.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(_cond, ...)                                   \
    do {                                                    \
        if (!(_cond)) {                                     \
            fprintf(stderr, "ucp_put_flush: " __VA_ARGS__); \
            fprintf(stderr, "\n");                          \
            exit(2);                                        \
        }                                                   \
    } while (0)

static ucp_worker_h worker_a, worker_b;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits at most @a limit seconds for @a request, progressing worker a (and b when @a both) */
static ucs_status_t wait_for(void *request, int both, double limit)
{
    double deadline = now() + limit;
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker_a);
        if (both) {
            ucp_worker_progress(worker_b);
        }
        if (now() > deadline) {
            return UCS_INPROGRESS;
        }
    }
    ucp_request_free(request);
    return status;
}

/* The measured calls: noinline, so that callgrind sees each as a function of its own; two
 * names without a common prefix (callgrind 3.19 lost the collection of one of PMPI_Send and
 * PMPI_Recv given both) */
__attribute__((noinline)) ucs_status_t put_op(ucp_ep_h ep, const uint64_t *value, uint64_t addr,
                                              ucp_rkey_h rkey)
{
    ucp_request_param_t param = {.op_attr_mask = 0};

    /* an 8-byte put from a stack buffer completes in the call (UCP's put_short) or returns a
     * request that the flush below completes with it */
    void *request = ucp_put_nbx(ep, value, sizeof(*value), addr, rkey, &param);

    if (UCS_PTR_IS_PTR(request)) {
        ucp_request_free(request);
        return UCS_OK;
    }
    return UCS_PTR_STATUS(request);
}

__attribute__((noinline)) ucs_status_t flush_op(ucp_ep_h ep)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    void *request             = ucp_ep_flush_nbx(ep, &param);
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }
    /* bounded by the caller's check of the iteration's time, not here: a clock read per spin
     * would be counted */
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker_a);
    }
    ucp_request_free(request);
    return status;
}

int main(int argc, char **argv)
{
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_RMA};
    ucp_worker_params_t wparams = {.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                   .thread_mode = UCS_THREAD_MODE_SINGLE};
    unsigned iterations         = (argc > 1) ? (unsigned)atoi(argv[1]) : 200;
    unsigned gap_us             = (argc > 2) ? (unsigned)atoi(argv[2]) : 20000;
    ucp_mem_map_params_t mparams;
    ucp_ep_params_t eparams;
    ucp_address_t *address;
    size_t address_len, rkey_len;
    uint64_t *target, value = 0;
    void *rkey_buf;
    ucp_context_h context;
    ucp_mem_h memh;
    ucp_rkey_h rkey;
    ucp_ep_h ep;
    ucs_status_t status;
    unsigned i;

    CHECK(iterations > 0, "usage: ucp_put_flush [ITERATIONS] [GAP_US]");
    CHECK(ucp_init(&params, NULL, &context) == UCS_OK, "ucp_init failed");
    CHECK(ucp_worker_create(context, &wparams, &worker_a) == UCS_OK, "worker a");
    CHECK(ucp_worker_create(context, &wparams, &worker_b) == UCS_OK, "worker b");

    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mparams.length     = 4096;
    mparams.flags      = UCP_MEM_MAP_ALLOCATE;
    CHECK(ucp_mem_map(context, &mparams, &memh) == UCS_OK, "ucp_mem_map");
    {
        ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
        CHECK(ucp_mem_query(memh, &attr) == UCS_OK, "ucp_mem_query");
        target = (uint64_t *)attr.address;
    }
    *target = 0;

    CHECK(ucp_worker_get_address(worker_b, &address, &address_len) == UCS_OK, "worker address");
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = address;
    CHECK(ucp_ep_create(worker_a, &eparams, &ep) == UCS_OK, "ucp_ep_create");
    ucp_worker_release_address(worker_b, address);
    CHECK(ucp_rkey_pack(context, memh, &rkey_buf, &rkey_len) == UCS_OK, "rkey pack");
    CHECK(ucp_ep_rkey_unpack(ep, rkey_buf, &rkey) == UCS_OK, "rkey unpack");
    ucp_rkey_buffer_release(rkey_buf);
    {
        ucp_request_param_t flush = {.op_attr_mask = 0};
        CHECK(wait_for(ucp_ep_flush_nbx(ep, &flush), 1, 60.0) == UCS_OK,
              "wireup (flush) did not complete");
    }
    ucp_ep_print_info(ep, stdout);
    fflush(stdout);

    for (i = 0; i < iterations; ++i) {
        value  = i + 1;
        status = put_op(ep, &value, (uintptr_t)target, rkey);
        CHECK(status == UCS_OK, "put %u: %s", i, ucs_status_string(status));
        usleep(gap_us);
        status = flush_op(ep);
        CHECK(status == UCS_OK, "flush %u: %s", i, ucs_status_string(status));
    }
    if (*(volatile uint64_t *)target != value) {
        fprintf(stderr, "ucp_put_flush: target holds %" PRIu64 ", expected %" PRIu64 "\n", *target,
                value);
        return 1;
    }
    printf("ucp_put_flush: %u put+flush pairs, target %" PRIu64 "\n", iterations, value);

    ucp_rkey_destroy(rkey);
    {
        ucp_request_param_t close = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                     .flags        = UCP_EP_CLOSE_FLAG_FORCE};
        wait_for(ucp_ep_close_nbx(ep, &close), 1, 10.0);
    }
    ucp_mem_unmap(context, memh);
    ucp_worker_destroy(worker_b);
    ucp_worker_destroy(worker_a);
    ucp_cleanup(context);
    return 0;
}
