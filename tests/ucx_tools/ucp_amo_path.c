/*
 * ucp_amo_path amo32|amo64|both [ITERATIONS]: which path UCP gives its atomics over the
 * transports in UCX_TLS -- a device atomic lane, or software emulation over active messages
 * (which needs the target to progress) -- and what a fetch-add costs on it.
 *
 * One process, two workers of one context (features UCP_FEATURE_AMO32, AMO64 or both), an
 * endpoint from worker a to worker b, 8 bytes of b's memory mapped.  For each width the context
 * asked for it:
 *   1. posts one fetch-add and progresses only worker a for 2 s: a device atomic completes
 *      (the target's HCA does it), an emulated one cannot (b's worker must run its handler);
 *   2. then ITERATIONS (default 2000) fetch-adds of 1, one at a time, progressing both workers,
 *      and checks each fetched value and the end value.
 * Prints the endpoint's lanes (ucp_ep_print_info: "amo#0" on the lane that does atomics, none
 * when they are emulated) and one line per width:
 *   path amo32 device|emulated ns_per_op N
 * With UCX_LOG_LEVEL=info UCP also logs its ep_cfg line: amo(tl/dev) or amo_am(tl/dev).
 * Exit status: 0 when every op fetched and left the right values, 1 otherwise, 2 on setup errors.
 */
#define LOOPBACK_PROGRAM "ucp_amo_path"
#include "../common/ucp_loopback.h" /* the context, two workers, the endpoint */

#include <inttypes.h>
#include <string.h>

static loopback_t lb;

static void *fetch_add(ucp_ep_h ep, void *value, void *result, size_t size, uint64_t addr,
                       ucp_rkey_h rkey)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
                                                 UCP_OP_ATTR_FIELD_REPLY_BUFFER,
                                 .datatype     = ucp_dt_make_contig(size),
                                 .reply_buffer = result};

    return ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, value, 1, addr, rkey, &param);
}

/* One width: returns 0 when every value was right */
static int run_width(ucp_ep_h ep, size_t size, uint64_t *target, ucp_rkey_h rkey,
                     unsigned iterations)
{
    uint64_t addr = (uintptr_t)target, one = 1, fetched = 0, expect;
    uint32_t one32 = 1, fetched32 = 0;
    void *value  = (size == 4) ? (void *)&one32 : (void *)&one;
    void *result = (size == 4) ? (void *)&fetched32 : (void *)&fetched;
    ucs_status_t status;
    double start;
    unsigned i;
    int device, bad = 0;

    *target = 0;
    /* 1: target not progressed */
    void *request = fetch_add(ep, value, result, size, addr, rkey);
    status        = loopback_wait(&lb, request, 0, 2.0);
    device        = (status == UCS_OK);
    if (status == UCS_INPROGRESS) {
        status = loopback_wait(&lb, request, 1, 30.0);
    }
    CHECK(status == UCS_OK, "first %zu-byte fetch-add: %s", size, ucs_status_string(status));
    /* 2: one at a time, both progressed */
    start = loopback_now();
    for (i = 0; i < iterations; ++i) {
        status = loopback_wait(&lb, fetch_add(ep, value, result, size, addr, rkey), 1, 30.0);
        CHECK(status == UCS_OK, "fetch-add %u: %s", i, ucs_status_string(status));
        expect = i + 1;
        if (((size == 4) ? fetched32 : fetched) != expect) {
            if (bad++ < 5) {
                fprintf(stderr,
                        "ucp_amo_path: %zu-byte fetch-add %u fetched %" PRIu64 ", expected %" PRIu64
                        "\n",
                        size, i, (uint64_t)((size == 4) ? fetched32 : fetched), expect);
            }
        }
    }
    printf("path amo%zu %s ns_per_op %.0f\n", size * 8, device ? "device" : "emulated",
           (loopback_now() - start) * 1e9 / iterations);
    expect = iterations + 1;
    if (((size == 4) ? *(uint32_t *)target : *target) != expect) {
        fprintf(stderr,
                "ucp_amo_path: %zu-byte target ended at 0x%" PRIx64 ", expected %" PRIu64 "\n",
                size, *target, expect);
        ++bad;
    }
    return bad != 0;
}

int main(int argc, char **argv)
{
    uint64_t features;
    unsigned iterations;
    uint64_t *target;
    int failed = 0;

    CHECK(argc >= 2, "usage: ucp_amo_path amo32|amo64|both [ITERATIONS]");
    if (!strcmp(argv[1], "amo32")) {
        features = UCP_FEATURE_AMO32;
    } else if (!strcmp(argv[1], "amo64")) {
        features = UCP_FEATURE_AMO64;
    } else {
        CHECK(!strcmp(argv[1], "both"), "unknown width %s", argv[1]);
        features = UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    }
    iterations = (argc > 2) ? (unsigned)atoi(argv[2]) : 2000;
    loopback_open(&lb, features, 4096);
    target = (uint64_t *)lb.buffer + 1; /* 8-byte aligned, not the start */

    if (features & UCP_FEATURE_AMO32) {
        failed |= run_width(lb.ep, 4, target, lb.rkey, iterations);
    }
    if (features & UCP_FEATURE_AMO64) {
        failed |= run_width(lb.ep, 8, target, lb.rkey, iterations);
    }

    loopback_close(&lb);
    return failed;
}
