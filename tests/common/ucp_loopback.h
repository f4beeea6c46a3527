/*
 * ucp_loopback.h: one process, two workers of one UCP context and an endpoint from worker a to
 * worker b, with a buffer of b's mapped memory and its remote key: the set-up shared by the
 * single-process UCP measurement programs (perf/cost/ucp_put_flush.c,
 * tests/ucx_tools/ucp_amo_path.c).  C, header only: each program is one file built without the
 * project's libraries (ucp_amo_path.c also by hand with gcc).
 *
 * Define LOOPBACK_PROGRAM (the program's name, a string literal) before including it: CHECK's
 * messages start with it.  CHECK(cond, fmt, ...) prints the message and exits with status 2
 * (the programs' "setup error").
 */
#ifndef GDR_UCP_LOOPBACK_H
#define GDR_UCP_LOOPBACK_H

#include <ucp/api/ucp.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef LOOPBACK_PROGRAM
#error "define LOOPBACK_PROGRAM (the program's name) before including ucp_loopback.h"
#endif

#define CHECK(_cond, ...)                                       \
    do {                                                        \
        if (!(_cond)) {                                         \
            fprintf(stderr, LOOPBACK_PROGRAM ": " __VA_ARGS__); \
            fprintf(stderr, "\n");                              \
            exit(2);                                            \
        }                                                       \
    } while (0)

typedef struct {
    ucp_context_h context;
    ucp_worker_h worker_a; /* the endpoint's side: the initiator */
    ucp_worker_h worker_b; /* the target's side */
    ucp_mem_h memh; /* mapped (allocated) by worker b's context */
    void *buffer; /* its address */
    ucp_ep_h ep; /* worker a -> worker b */
    ucp_rkey_h rkey; /* the buffer's key, unpacked on ep */
} loopback_t;

static inline double loopback_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits for @a request, progressing worker a (and b when @a both) for at most @a limit
 * seconds; returns its status (the request freed), UCS_INPROGRESS when it is still going (the
 * request kept, to be waited for again) */
static inline ucs_status_t loopback_wait(const loopback_t *lb, void *request, int both,
                                         double limit)
{
    double deadline = loopback_now() + limit;
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(lb->worker_a);
        if (both) {
            ucp_worker_progress(lb->worker_b);
        }
        if (loopback_now() > deadline) {
            return UCS_INPROGRESS;
        }
    }
    ucp_request_free(request);
    return status;
}

/* The context with @a features, both workers (single-threaded), @a length bytes mapped, the
 * endpoint wired up (a flush completed within 60 s) and its lanes printed on stdout
 * (ucp_ep_print_info) */
static inline void loopback_open(loopback_t *lb, uint64_t features, size_t length)
{
    ucp_params_t params         = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = features};
    ucp_worker_params_t wparams = {.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                   .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_mem_map_params_t mparams;
    ucp_mem_attr_t mattr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
    ucp_ep_params_t eparams;
    ucp_request_param_t flush = {.op_attr_mask = 0};
    ucp_address_t *address;
    size_t address_len, rkey_len;
    void *rkey_buf;

    CHECK(ucp_init(&params, NULL, &lb->context) == UCS_OK, "ucp_init failed");
    CHECK(ucp_worker_create(lb->context, &wparams, &lb->worker_a) == UCS_OK, "worker a");
    CHECK(ucp_worker_create(lb->context, &wparams, &lb->worker_b) == UCS_OK, "worker b");

    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mparams.length     = length;
    mparams.flags      = UCP_MEM_MAP_ALLOCATE;
    CHECK(ucp_mem_map(lb->context, &mparams, &lb->memh) == UCS_OK, "ucp_mem_map");
    CHECK(ucp_mem_query(lb->memh, &mattr) == UCS_OK, "ucp_mem_query");
    lb->buffer = mattr.address;

    CHECK(ucp_worker_get_address(lb->worker_b, &address, &address_len) == UCS_OK, "worker address");
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = address;
    CHECK(ucp_ep_create(lb->worker_a, &eparams, &lb->ep) == UCS_OK, "ucp_ep_create");
    ucp_worker_release_address(lb->worker_b, address);
    CHECK(ucp_rkey_pack(lb->context, lb->memh, &rkey_buf, &rkey_len) == UCS_OK, "rkey pack");
    CHECK(ucp_ep_rkey_unpack(lb->ep, rkey_buf, &lb->rkey) == UCS_OK, "rkey unpack");
    ucp_rkey_buffer_release(rkey_buf);
    CHECK(loopback_wait(lb, ucp_ep_flush_nbx(lb->ep, &flush), 1, 60.0) == UCS_OK,
          "wireup (flush) did not complete");
    ucp_ep_print_info(lb->ep, stdout);
    fflush(stdout);
}

/* Everything loopback_open made, in reverse order; the endpoint force-closed (10 s at most) */
static inline void loopback_close(loopback_t *lb)
{
    ucp_request_param_t close = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags        = UCP_EP_CLOSE_FLAG_FORCE};

    ucp_rkey_destroy(lb->rkey);
    loopback_wait(lb, ucp_ep_close_nbx(lb->ep, &close), 1, 10.0);
    ucp_mem_unmap(lb->context, lb->memh);
    ucp_worker_destroy(lb->worker_b);
    ucp_worker_destroy(lb->worker_a);
    ucp_cleanup(lb->context);
}

#endif
