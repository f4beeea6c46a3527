/*
 * ucp_put_flush [ITERATIONS] [GAP_US]: the cost section's ucp_put_flush row: one
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
#define LOOPBACK_PROGRAM "ucp_put_flush"
#include "ucp_loopback.h" /* tests/common: the context, two workers, the endpoint */

#include <inttypes.h>
#include <unistd.h>

static loopback_t lb;

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
        ucp_worker_progress(lb.worker_a);
    }
    ucp_request_free(request);
    return status;
}

int main(int argc, char **argv)
{
    unsigned iterations = (argc > 1) ? (unsigned)atoi(argv[1]) : 200;
    unsigned gap_us     = (argc > 2) ? (unsigned)atoi(argv[2]) : 20000;
    uint64_t *target, value = 0;
    ucs_status_t status;
    unsigned i;

    CHECK(iterations > 0, "usage: ucp_put_flush [ITERATIONS] [GAP_US]");
    loopback_open(&lb, UCP_FEATURE_RMA, 4096);
    target  = (uint64_t *)lb.buffer;
    *target = 0;

    for (i = 0; i < iterations; ++i) {
        value  = i + 1;
        status = put_op(lb.ep, &value, (uintptr_t)target, lb.rkey);
        CHECK(status == UCS_OK, "put %u: %s", i, ucs_status_string(status));
        usleep(gap_us);
        status = flush_op(lb.ep);
        CHECK(status == UCS_OK, "flush %u: %s", i, ucs_status_string(status));
    }
    if (*(volatile uint64_t *)target != value) {
        fprintf(stderr, "ucp_put_flush: target holds %" PRIu64 ", expected %" PRIu64 "\n", *target,
                value);
        return 1;
    }
    printf("ucp_put_flush: %u put+flush pairs, target %" PRIu64 "\n", iterations, value);

    loopback_close(&lb);
    return 0;
}
