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
#include <ucp/api/ucp.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(_cond, ...)                                  \
    do {                                                   \
        if (!(_cond)) {                                    \
            fprintf(stderr, "ucp_amo_path: " __VA_ARGS__); \
            fprintf(stderr, "\n");                         \
            exit(2);                                       \
        }                                                  \
    } while (0)

static ucp_worker_h worker_a, worker_b;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits for @a request, progressing worker a (and b when @a both) for at most
 * @a limit seconds; returns its status, UCS_INPROGRESS when it is still going */
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
    status        = wait_for(request, 0, 2.0);
    device        = (status == UCS_OK);
    if (status == UCS_INPROGRESS) {
        status = wait_for(request, 1, 30.0);
    }
    CHECK(status == UCS_OK, "first %zu-byte fetch-add: %s", size, ucs_status_string(status));
    /* 2: one at a time, both progressed */
    start = now();
    for (i = 0; i < iterations; ++i) {
        status = wait_for(fetch_add(ep, value, result, size, addr, rkey), 1, 30.0);
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
           (now() - start) * 1e9 / iterations);
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
    ucp_params_t params         = {.field_mask = UCP_PARAM_FIELD_FEATURES};
    ucp_worker_params_t wparams = {.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                   .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_mem_map_params_t mparams;
    ucp_ep_params_t eparams;
    ucp_address_t *address;
    size_t address_len, rkey_len;
    unsigned iterations;
    void *rkey_buf;
    ucp_context_h context;
    ucp_mem_h memh;
    ucp_rkey_h rkey;
    ucp_ep_h ep;
    uint64_t *target;
    int failed = 0;

    CHECK(argc >= 2, "usage: ucp_amo_path amo32|amo64|both [ITERATIONS]");
    if (!strcmp(argv[1], "amo32")) {
        params.features = UCP_FEATURE_AMO32;
    } else if (!strcmp(argv[1], "amo64")) {
        params.features = UCP_FEATURE_AMO64;
    } else {
        CHECK(!strcmp(argv[1], "both"), "unknown width %s", argv[1]);
        params.features = UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    }
    iterations = (argc > 2) ? (unsigned)atoi(argv[2]) : 2000;
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
        target = (uint64_t *)attr.address + 1; /* 8-byte aligned, not the start */
    }

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

    if (params.features & UCP_FEATURE_AMO32) {
        failed |= run_width(ep, 4, target, rkey, iterations);
    }
    if (params.features & UCP_FEATURE_AMO64) {
        failed |= run_width(ep, 8, target, rkey, iterations);
    }

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
    return failed;
}
