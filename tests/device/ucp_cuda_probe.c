/*
 * ucp_cuda_probe.c - what an installed UCX (built without CUDA) does with CUDA memory
 * once the gdr plugin is loaded.  Built and run by tests/device/run-ubuntu-ucx.
 *
 *   ucp_cuda_probe PLUGIN|- uct
 *       loads PLUGIN (dlopen, before anything touches UCP), prints ucp_get_version(),
 *       the UCX class sizes the component checks (runtime vs. the headers it was
 *       built with, when compiled with GDR_PROBE_INTERNAL), every UCT component with
 *       its md resources, and for the first md of "gdr" (gdr_<device>): its capabilities, transport resources,
 *       uct_md_detect_memory_type / uct_md_mem_query on a 1 MiB cuMemAlloc; then UCP:
 *       the context's mds (ucp_context_print_info) and ucp_mem_query of a ucp_mem_map
 *       of that buffer (detected, and with the memory type given)
 *   ucp_cuda_probe PLUGIN|- send detect|cuda|host SIZE
 *       one tagged message SIZE bytes between two workers of one context, over what
 *       UCX_TLS gives (default); detect: cuMemAlloc'd buffers, UCP detects the type;
 *       cuda: cuMemAlloc'd buffers, UCP_OP_ATTR_FIELD_MEMORY_TYPE = CUDA on both sides;
 *       host: malloc'd buffers.  Prints the endpoint's lanes, the completion status of
 *       both sides and whether the received bytes are right.  Run each in its own
 *       process: UCP copying device memory with the CPU ends in SIGSEGV.
 *
 * Output lines "PROBE key: value" are what the runner collects; UCX's own output
 * (UCX_PROTO_INFO tables, errors) goes to stdout/stderr unbuffered around them.
 */
#ifdef GDR_PROBE_INTERNAL
#include <uct/base/uct_iface.h>
#endif
#include <cuda.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define P(...) printf("PROBE " __VA_ARGS__)

/* libcuda is loaded at run time (as the plugin does): the probe also runs, and says so,
 * where there is no driver */
static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
} cu;
static CUcontext cu_ctx;
static int cu_usable;

static int cuda_init(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        P("cuda: unusable (%s)\n", dlerror());
        return -1;
    }
#define CU_SYM(_f, _sym) *(void **)&cu._f = dlsym(lib, _sym)
    CU_SYM(Init, "cuInit");
    CU_SYM(DeviceGet, "cuDeviceGet");
    CU_SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    CU_SYM(CtxSetCurrent, "cuCtxSetCurrent");
    CU_SYM(GetErrorString, "cuGetErrorString");
    CU_SYM(MemAlloc, "cuMemAlloc_v2");
    CU_SYM(MemcpyHtoD, "cuMemcpyHtoD_v2");
    CU_SYM(MemcpyDtoH, "cuMemcpyDtoH_v2");
    CU_SYM(MemsetD8, "cuMemsetD8_v2");
    CUdevice dev;
    const char *s = NULL;
    CUresult rc   = cu.Init(0);
    if (rc == CUDA_SUCCESS)
        rc = cu.DeviceGet(&dev, 0);
    if (rc == CUDA_SUCCESS)
        rc = cu.DevicePrimaryCtxRetain(&cu_ctx, dev);
    if (rc == CUDA_SUCCESS)
        rc = cu.CtxSetCurrent(cu_ctx);
    if (rc != CUDA_SUCCESS) {
        cu.GetErrorString(rc, &s);
        P("cuda: unusable (%s)\n", s ? s : "?");
        return -1;
    }
    cu_usable = 1;
    return 0;
}

static void *cuda_alloc(size_t size)
{
    CUdeviceptr p = 0;
    if (!cu_usable || cu.MemAlloc(&p, size) != CUDA_SUCCESS)
        return NULL;
    return (void *)(uintptr_t)p;
}

static const char *mem_type_name(ucs_memory_type_t t)
{
    return (t < UCS_MEMORY_TYPE_LAST)       ? ucs_memory_type_names[t]
           : (t == UCS_MEMORY_TYPE_UNKNOWN) ? "unknown"
                                            : "?";
}

static void print_mem_types(const char *what, uint64_t mask)
{
    printf("PROBE %s:", what);
    for (int t = 0; t < UCS_MEMORY_TYPE_LAST; ++t) {
        if (mask & UCS_BIT(t))
            printf(" %s", ucs_memory_type_names[t]);
    }
    printf("\n");
}

static void print_class_sizes(void)
{
#ifdef GDR_PROBE_INTERNAL
    extern ucs_class_t UCS_CLASS_NAME(uct_iface_t);
    struct {
        const char *name;
        size_t runtime, built;
    } c[] = {
        {"uct_iface_t", UCS_CLASS_NAME(uct_iface_t).size, sizeof(uct_iface_t)},
        {"uct_base_iface_t", UCS_CLASS_NAME(uct_base_iface_t).size, sizeof(uct_base_iface_t)},
        {"uct_ep_t", UCS_CLASS_NAME(uct_ep_t).size, sizeof(uct_ep_t)},
        {"uct_base_ep_t", UCS_CLASS_NAME(uct_base_ep_t).size, sizeof(uct_base_ep_t)},
    };
    for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); ++i) {
        P("class %s: running libuct %zu, headers+config.h %zu: %s\n", c[i].name, c[i].runtime,
          c[i].built, c[i].runtime == c[i].built ? "same" : "DIFFERENT");
    }
#else
    P("class sizes: not compiled with the internal headers\n");
#endif
}

static int probe_uct(void)
{
    uct_component_h *components;
    unsigned count;
    int found = 0;

    print_class_sizes();
    if (uct_query_components(&components, &count) != UCS_OK) {
        P("uct_query_components failed\n");
        return 1;
    }
    for (unsigned i = 0; i < count; ++i) {
        uct_component_attr_t ca = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                                                 UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT};
        uct_component_query(components[i], &ca);
        uct_md_resource_desc_t rsc[ca.md_resource_count ? ca.md_resource_count : 1];
        ca.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        ca.md_resources = rsc;
        uct_component_query(components[i], &ca);
        printf("PROBE component %s: mds", ca.name);
        for (unsigned m = 0; m < ca.md_resource_count; ++m)
            printf(" %s", rsc[m].md_name);
        printf("\n");
        if (strcmp(ca.name, "gdr") != 0)
            continue;
        found = 1;
        if (ca.md_resource_count == 0) {
            /* an md per verbs device ("gdr_<device>"): none without one */
            P("md gdr: none (no verbs device)\n");
            continue;
        }

        uct_md_config_t *config;
        uct_md_h md;
        if (uct_md_config_read(components[i], NULL, NULL, &config) != UCS_OK ||
            uct_md_open(components[i], rsc[0].md_name, config, &md) != UCS_OK) {
            P("md gdr (%s): open failed\n", rsc[0].md_name);
            continue;
        }
        uct_config_release(config);
        uct_md_attr_t attr;
        uct_md_query(md, &attr);
        print_mem_types("md gdr detect_mem_types", attr.cap.detect_mem_types);
        print_mem_types("md gdr reg_mem_types", attr.cap.reg_mem_types);
        print_mem_types("md gdr access_mem_types", attr.cap.access_mem_types);
        uct_tl_resource_desc_t *tls;
        unsigned ntl = 0;
        if (uct_md_query_tl_resources(md, &tls, &ntl) == UCS_OK) {
            printf("PROBE md gdr transport resources: %u", ntl);
            for (unsigned t = 0; t < ntl; ++t)
                printf(" %s/%s", tls[t].tl_name, tls[t].dev_name);
            printf("\n");
            uct_release_tl_resource_list(tls);
        }

        const size_t size = 1 << 20;
        void *buf         = cuda_alloc(size);
        if (buf == NULL) {
            P("cuMemAlloc 1 MiB failed\n");
        } else {
            ucs_memory_type_t type = UCS_MEMORY_TYPE_UNKNOWN;
            ucs_status_t st        = uct_md_detect_memory_type(md, buf, size, &type);
            P("md gdr detect_memory_type(cuMemAlloc %p, 1 MiB): %s, %s\n", buf,
              ucs_status_string(st), mem_type_name(type));
            uct_md_mem_attr_t ma = {
                .field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE | UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS |
                              UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH | UCT_MD_MEM_ATTR_FIELD_SYS_DEV};
            st = uct_md_mem_query(md, (char *)buf + 4096, 100, &ma);
            P("md gdr mem_query(base+4096, 100 B): %s, type %s, base %p%s, length %zu, sys_dev %u "
              "(%s)\n",
              ucs_status_string(st), mem_type_name(ma.mem_type), ma.base_address,
              ma.base_address == buf ? " (= allocation)" : "", ma.alloc_length,
              (unsigned)ma.sys_dev, ucs_topo_sys_device_get_name(ma.sys_dev));
            char host[64];
            st = uct_md_detect_memory_type(md, host, sizeof(host), &type);
            P("md gdr detect_memory_type(stack memory): %s\n", ucs_status_string(st));
            uct_mem_h memh;
            st = uct_md_mem_reg(md, buf, size, UCT_MD_MEM_ACCESS_ALL, &memh);
            P("md gdr mem_reg(cuMemAlloc 1 MiB): %s\n", ucs_status_string(st));
            if (st == UCS_OK)
                uct_md_mem_dereg(md, memh);
        }
        uct_md_close(md);
    }
    uct_release_component_list(components);
    P("component gdr registered: %s\n", found ? "yes" : "no");

    /* UCP: which mds does a context keep, and what does it make of the buffer? */
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AM};
    ucp_context_h context;
    ucs_status_t st = ucp_init(&params, NULL, &context);
    if (st != UCS_OK) {
        P("ucp_init: %s\n", ucs_status_string(st));
        return 1;
    }
    P("ucp_context_print_info follows\n");
    ucp_context_print_info(context, stdout);
    fflush(stdout);
    const size_t size = 1 << 20;
    void *buf         = cuda_alloc(size);
    for (int explicit_type = 0; explicit_type < 2 && buf; ++explicit_type) {
        ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                                 UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                                   .address = buf,
                                   .length  = size};
        if (explicit_type) {
            mp.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
            mp.memory_type = UCS_MEMORY_TYPE_CUDA;
        }
        const char *how = explicit_type ? "memory_type=cuda given" : "memory type detected";
        ucp_mem_h memh;
        st = ucp_mem_map(context, &mp, &memh);
        if (st != UCS_OK) {
            P("ucp_mem_map(cuMemAlloc 1 MiB, %s): %s\n", how, ucs_status_string(st));
            continue;
        }
        ucp_mem_attr_t ma = {.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE};
        st                = ucp_mem_query(memh, &ma);
        P("ucp_mem_map(cuMemAlloc 1 MiB, %s): ok; ucp_mem_query: %s, mem_type %s\n", how,
          ucs_status_string(st), mem_type_name(ma.mem_type));
        ucp_mem_unmap(context, memh);
    }
    ucp_cleanup(context);
    return found ? 0 : 1;
}

struct req_state {
    int done;
    ucs_status_t status;
    size_t length;
};

static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    struct req_state *s = user_data;
    s->status           = status;
    s->done             = 1;
}

static void recv_cb(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    struct req_state *s = user_data;
    s->status           = status;
    s->length           = info->length;
    s->done             = 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ucp_*_nbx result: a request (wait for the callback) or an immediate status */
static void track(void *r, struct req_state *s, void **req)
{
    *req = NULL;
    if (r == NULL) {
        s->status = UCS_OK;
        s->done   = 1;
    } else if (UCS_PTR_IS_ERR(r)) {
        s->status = UCS_PTR_STATUS(r);
        s->done   = 1;
    } else {
        *req = r;
    }
}

static int probe_send(const char *mode, size_t size)
{
    int cuda = strcmp(mode, "host") != 0, explicit_type = strcmp(mode, "cuda") == 0;
    unsigned char *pattern = malloc(size), *check = malloc(size);
    for (size_t i = 0; i < size; ++i)
        pattern[i] = (unsigned char)(i * 7 + 3);
    void *sbuf, *rbuf;
    if (cuda) {
        sbuf = cuda_alloc(size);
        rbuf = cuda_alloc(size);
        if (!sbuf || !rbuf) {
            P("cuMemAlloc failed\n");
            return 1;
        }
        cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)sbuf, pattern, size);
        cu.MemsetD8((CUdeviceptr)(uintptr_t)rbuf, 0, size);
    } else {
        sbuf = malloc(size);
        rbuf = calloc(1, size);
        memcpy(sbuf, pattern, size);
    }

    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AM};
    ucp_context_h context;
    ucs_status_t st = ucp_init(&params, NULL, &context);
    if (st != UCS_OK) {
        P("ucp_init: %s\n", ucs_status_string(st));
        return 1;
    }
    ucp_worker_params_t wp = {.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_worker_h w[2];
    for (int i = 0; i < 2; ++i) {
        if ((st = ucp_worker_create(context, &wp, &w[i])) != UCS_OK) {
            P("ucp_worker_create: %s\n", ucs_status_string(st));
            return 1;
        }
    }
    ucp_address_t *addr;
    size_t addr_len;
    ucp_worker_get_address(w[1], &addr, &addr_len);
    ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = addr};
    ucp_ep_h ep;
    if ((st = ucp_ep_create(w[0], &ep_params, &ep)) != UCS_OK) {
        P("ucp_ep_create: %s\n", ucs_status_string(st));
        return 1;
    }
    ucp_worker_release_address(w[1], addr);
    P("endpoint lanes (ucp_ep_print_info) follow\n");
    ucp_ep_print_info(ep, stdout);
    fflush(stdout);

    struct req_state ss = {0}, rs = {0};
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                              UCP_OP_ATTR_FIELD_USER_DATA,
                              .cb.recv   = recv_cb,
                              .user_data = &rs};
    ucp_request_param_t sp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                              UCP_OP_ATTR_FIELD_USER_DATA,
                              .cb.send   = send_cb,
                              .user_data = &ss};
    if (explicit_type) {
        rp.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        sp.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        rp.memory_type = sp.memory_type = UCS_MEMORY_TYPE_CUDA;
    }
    void *rreq, *sreq;
    P("posting recv and send (%s, %zu B)\n", mode, size);
    track(ucp_tag_recv_nbx(w[1], rbuf, size, 0x1234, (ucp_tag_t)-1, &rp), &rs, &rreq);
    track(ucp_tag_send_nbx(ep, sbuf, size, 0x1234, &sp), &ss, &sreq);
    double deadline = now() + 10;
    while ((!ss.done || !rs.done) && now() < deadline) {
        ucp_worker_progress(w[0]);
        ucp_worker_progress(w[1]);
    }
    int ok           = ss.done && rs.done && ss.status == UCS_OK && rs.status == UCS_OK;
    const char *data = "not checked";
    if (ok) {
        if (cuda)
            cu.MemcpyDtoH(check, (CUdeviceptr)(uintptr_t)rbuf, size);
        else
            memcpy(check, rbuf, size);
        data = (memcmp(check, pattern, size) == 0 && rs.length == size) ? "correct" : "WRONG";
    }
    P("result %s %zu B: send %s, recv %s, data %s\n", mode, size,
      ss.done ? ucs_status_string(ss.status) : "not completed in 10 s",
      rs.done ? ucs_status_string(rs.status) : "not completed in 10 s", data);
    if (sreq) {
        if (!ss.done)
            ucp_request_cancel(w[0], sreq);
    }
    if (rreq) {
        if (!rs.done)
            ucp_request_cancel(w[1], rreq);
    }
    /* leave without tearing down: requests may still be in flight */
    fflush(stdout);
    _exit(ok ? 0 : 3);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: %s PLUGIN|- uct | send detect|cuda|host SIZE\n", argv[0]);
        return 2;
    }
    alarm(60);
    if (strcmp(argv[1], "-") != 0) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        P("dlopen %s: %s\n", argv[1], h ? "ok" : dlerror());
    } else {
        P("no plugin loaded\n");
    }
    unsigned major, minor, release;
    ucp_get_version(&major, &minor, &release);
    P("ucp_get_version: %u.%u.%u (%s)\n", major, minor, release, ucp_get_version_string());
    if (cuda_init() != 0 && strcmp(argv[2], "send") == 0 && argc >= 4 &&
        strcmp(argv[3], "host") != 0) {
        return 1;
    }
    if (strcmp(argv[2], "uct") == 0)
        return probe_uct();
    if (strcmp(argv[2], "send") == 0 && argc == 5)
        return probe_send(argv[3], strtoul(argv[4], NULL, 0));
    fprintf(stderr, "unknown mode\n");
    return 2;
}
