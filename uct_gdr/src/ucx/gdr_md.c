/**
 * gdr_md.c - the memory domains of component "gdr": one per usable verbs
 * device, as UCX's ib md.
 *
 * A registration makes one MR on the md's device, and a packed rkey carries
 * its rkey.  UCP registers a buffer on the mds of the lanes that carry it, so a
 * host with N NICs pays one registration per NIC a transfer uses, not N for
 * every buffer (docs/perf-compare.md, "Decision: one md per device").
 */
#include "gdr_md.h"

#include <ucs/sys/string.h>
#include <ucs/debug/log.h>
#include <ucs/sys/topo/base/topo.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <errno.h>
#include <pthread.h>
#include <ucm/api/ucm.h>

ucs_config_field_t gdr_md_config_table[] = {
        {"", "", NULL, ucs_offsetof(gdr_md_config_t, super),
         UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

        {"GPU_DIRECT_RDMA", "try",
         "Register CUDA device memory with the HCA (GPUDirect RDMA): "
         "yes|no|try.\n"
         "'yes' fails md open when neither dma-buf nor peermem works.",
         ucs_offsetof(gdr_md_config_t, gpu_direct_rdma),
         UCS_CONFIG_TYPE_TERNARY},

        {"DMABUF", "try",
         "Use dma-buf (cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr) for "
         "CUDA\n"
         "memory: yes|no|try. 'yes' fails md open when dma-buf is unavailable.",
         ucs_offsetof(gdr_md_config_t, dmabuf), UCS_CONFIG_TYPE_TERNARY},

        {"RCACHE", "try",
         "Registration cache (ucs_rcache): yes|no|try. Host regions are "
         "dropped on\n"
         "munmap; CUDA regions when the allocation's buffer id changes "
         "(freed/reused).",
         ucs_offsetof(gdr_md_config_t, rcache_enable), UCS_CONFIG_TYPE_TERNARY},

        {"", "", NULL, ucs_offsetof(gdr_md_config_t, rcache),
         UCS_CONFIG_TYPE_TABLE(GDR_COMPAT_RCACHE_CONFIG_TABLE)},

        {NULL}};

/* Access rights no wider than what the registration asks for. */
static int gdr_md_access_flags(uint64_t uct_flags)
{
    int access = IBV_ACCESS_LOCAL_WRITE; /* gets, atomics results, receives */

    if (uct_flags & UCT_MD_MEM_ACCESS_REMOTE_PUT) {
        access |= IBV_ACCESS_REMOTE_WRITE;
    }
    if (uct_flags & UCT_MD_MEM_ACCESS_REMOTE_GET) {
        access |= IBV_ACCESS_REMOTE_READ;
    }
    if (uct_flags & UCT_MD_MEM_ACCESS_REMOTE_ATOMIC) {
        access |= IBV_ACCESS_REMOTE_ATOMIC;
    }
    return access;
}

void gdr_md_query_caps(uct_md_h uct_md, gdr_compat_md_caps_t *caps)
{
    gdr_md_t *md = ucs_derived_of(uct_md, gdr_md_t);

    memset(caps, 0, sizeof(*caps));
    caps->flags = UCT_MD_FLAG_REG | UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_ADVISE |
                  UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY;
    caps->max_alloc        = ULONG_MAX;
    caps->max_reg          = ULONG_MAX;
    caps->reg_mem_types    = md->reg_mem_types;
    caps->alloc_mem_types  = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    caps->detect_mem_types = md->detect_mem_types;
    caps->access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    caps->rkey_packed_size = sizeof(gdr_packed_rkey_t);
    caps->reg_cost         = md->reg_cost;
}

static void gdr_memh_deregister(gdr_memh_t *memh)
{
    if (ibv_dereg_mr(memh->mr) != 0) {
        ucs_warn("gdr: ibv_dereg_mr(%p, %zu) failed: %m", memh->address,
                 memh->length);
    }
}

/* What a buffer is, asked of the driver once per registration: the same answer
 * gives the kind and the buffer id for the rcache */
static ucs_memory_type_t gdr_md_classify(gdr_md_t *md, const void *address,
                                         size_t length,
                                         gdr_cuda_mem_info_t *info)
{
    info->kind      = GDR_CUDA_MEM_HOST;
    info->buffer_id = 0;
    if (!(md->reg_mem_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) ||
        (gdr_cuda_mem_query(address, length, info) != UCS_OK)) {
        return UCS_MEMORY_TYPE_HOST;
    }
    switch (info->kind) {
    case GDR_CUDA_MEM_DEVICE:
        return UCS_MEMORY_TYPE_CUDA;
    case GDR_CUDA_MEM_MANAGED:
        return UCS_MEMORY_TYPE_CUDA_MANAGED;
    default:
        return UCS_MEMORY_TYPE_HOST;
    }
}

/* ENOMEM from ibv_reg_mr is nearly always the locked-memory limit, not a
 * lack of RAM: the kernel refuses to pin past RLIMIT_MEMLOCK unless the
 * process has CAP_IPC_LOCK (ib_umem_get). "Cannot allocate memory" alone
 * sends people looking for free memory, so name the limit and its value. */
static void gdr_md_memlock_hint(int err, char *buf, size_t max)
{
    struct rlimit limit;

    buf[0] = '\0';
    if ((err != ENOMEM) || (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) ||
        (limit.rlim_cur == RLIM_INFINITY)) {
        return;
    }
    ucs_snprintf_safe(buf, max,
                      "; the locked-memory limit (RLIMIT_MEMLOCK, ulimit -l) "
                      "is %llu KiB: raise it, or run with CAP_IPC_LOCK",
                      (unsigned long long)limit.rlim_cur / 1024);
}

/* Host memory: ibv_reg_mr, of the naturally aligned 64-bit words the buffer
 * touches.  A 32-bit atomic is a compare-and-swap of the word that contains it
 * (gdr_ep_atomic.c), which the HCA checks against the registration: a 4-byte
 * buffer would otherwise refuse the word's other half.  The words lie on the
 * buffer's own pages, which are pinned whole anyway (the registration cache
 * registers whole pages already). */
static ucs_status_t
gdr_md_reg_host(gdr_md_t *md, gdr_memh_t *memh, ucs_log_level_t level)
{
    void *start = (void *)ucs_align_down((uintptr_t)memh->address,
                                         sizeof(uint64_t));
    void *end   = (void *)ucs_align_up(
            (uintptr_t)UCS_PTR_BYTE_OFFSET(memh->address, memh->length),
            sizeof(uint64_t));
    char hint[128];
    int err;

    memh->mr = ibv_reg_mr(md->dev.pd, start, UCS_PTR_BYTE_DIFF(start, end),
                          memh->access);
    if (memh->mr == NULL) {
        err = errno;
        gdr_md_memlock_hint(err, hint, sizeof(hint));
        ucs_log(level,
                "gdr: ibv_reg_mr(%s, address=%p, length=%zu, access=0x%x) "
                "failed: %s%s",
                md->dev.name, memh->address, memh->length, memh->access,
                strerror(err), hint);
        return (err == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* CUDA memory: by dma-buf or peermem, as the device's probe allows */
static ucs_status_t gdr_md_reg_cuda(gdr_md_t *md, gdr_memh_t *memh,
                                    const gdr_cuda_mem_info_t *info,
                                    ucs_log_level_t level)
{
    gdr_cuda_reg_result_t result;
    gdr_reason_t reason;

    if (gdr_cuda_reg_mr_classified(md->dev.pd, info, memh->address,
                                   memh->length, memh->access, &md->cuda_config,
                                   md->cuda_methods, &result,
                                   &reason) != UCS_OK) {
        ucs_log(level, "gdr: cannot register %s memory %p..%p with %s: %s",
                ucs_memory_type_names[memh->mem_type], memh->address,
                UCS_PTR_BYTE_OFFSET(memh->address, memh->length), md->dev.name,
                reason.text);
        return UCS_ERR_UNSUPPORTED;
    }
    if (reason.text[0] != '\0') {
        ucs_debug("gdr: %p..%p registered after: %s", memh->address,
                  UCS_PTR_BYTE_OFFSET(memh->address, memh->length),
                  reason.text);
    }
    memh->mr = result.mr;
    return UCS_OK;
}

/* Register [address, address+length) on the md's device into @a memh; the CUDA
 * buffer id (0 for host memory) comes back for the rcache's staleness check */
static ucs_status_t gdr_md_memh_register(gdr_md_t *md, gdr_memh_t *memh,
                                         void *address, size_t length,
                                         int access, uint64_t flags,
                                         uint64_t *buffer_id_p)
{
    ucs_log_level_t level = (flags & UCT_MD_MEM_FLAG_HIDE_ERRORS) ?
                                    UCS_LOG_LEVEL_DEBUG :
                                    UCS_LOG_LEVEL_ERROR;
    gdr_cuda_mem_info_t info;
    ucs_status_t status;

    memh->address  = address;
    memh->length   = length;
    memh->mem_type = gdr_md_classify(md, address, length, &info);
    memh->access   = access;
    status         = (memh->mem_type == UCS_MEMORY_TYPE_HOST) ?
                             gdr_md_reg_host(md, memh, level) :
                             gdr_md_reg_cuda(md, memh, &info, level);
    if (status != UCS_OK) {
        return status;
    }
    *buffer_id_p = (memh->mem_type == UCS_MEMORY_TYPE_HOST) ? 0 :
                                                              info.buffer_id;
    return UCS_OK;
}

static ucs_status_t gdr_md_mem_reg_direct(gdr_md_t *md, void *address,
                                          size_t length, uint64_t flags,
                                          uct_mem_h *memh_p)
{
    uint64_t buffer_id; /* uncached: nothing to check it against later */
    gdr_memh_t *memh;
    ucs_status_t status;

    memh = ucs_calloc(1, sizeof(*memh), "gdr_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = gdr_md_memh_register(md, memh, address, length,
                                  gdr_md_access_flags(flags), flags,
                                  &buffer_id);
    if (status != UCS_OK) {
        ucs_free(memh);
        return status;
    }
    *memh_p = memh;
    return UCS_OK;
}

/* Host memory allocated and registered in one step (UCT_MD_FLAG_ALLOC): whole
 * pages of an anonymous mapping, registered outside the rcache, so that
 * mem_free can deregister and unmap it at once. */
ucs_status_t gdr_md_mem_alloc(uct_md_h uct_md, size_t *length_p,
                              void **address_p, ucs_memory_type_t mem_type,
                              unsigned flags, const char *alloc_name,
                              uct_mem_h *memh_p)
{
    gdr_md_t *md  = ucs_derived_of(uct_md, gdr_md_t);
    size_t length = ucs_align_up(*length_p, ucs_get_page_size());
    ucs_status_t status;
    uct_mem_h uct_memh;
    gdr_memh_t *memh;
    void *address;

    if ((mem_type != UCS_MEMORY_TYPE_HOST) || (flags & UCT_MD_MEM_FLAG_FIXED)) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (length == 0) {
        ucs_error("gdr: cannot allocate 0 bytes (%s)", alloc_name);
        return UCS_ERR_INVALID_PARAM;
    }
    address = mmap(NULL, length, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (address == MAP_FAILED) {
        ucs_log((flags & UCT_MD_MEM_FLAG_HIDE_ERRORS) ? UCS_LOG_LEVEL_DEBUG :
                                                        UCS_LOG_LEVEL_ERROR,
                "gdr: mmap(%zu) for %s failed: %m", length, alloc_name);
        return UCS_ERR_NO_MEMORY;
    }
    status = gdr_md_mem_reg_direct(md, address, length, flags, &uct_memh);
    if (status != UCS_OK) {
        munmap(address, length);
        return status;
    }
    memh            = uct_memh;
    memh->allocated = 1;
    *length_p       = length;
    *address_p      = address;
    *memh_p         = memh;
    return UCS_OK;
}

ucs_status_t gdr_md_mem_free(uct_md_h uct_md, uct_mem_h uct_memh)
{
    gdr_memh_t *memh = uct_memh;

    if (!memh->allocated) {
        ucs_error("gdr: memory %p was not allocated by uct_md_mem_alloc(): "
                  "deregister it with uct_md_mem_dereg()",
                  memh->address);
        return UCS_ERR_INVALID_PARAM;
    }
    gdr_memh_deregister(memh);
    munmap(memh->address, memh->length);
    ucs_free(memh);
    return UCS_OK;
}

/* Advice on a registered range.  Our MRs pin their pages at registration (no
 * on-demand paging), so what UCT_MADV_WILLNEED asks for -- the pages resident
 * and mapped for the HCA -- is already true; the range is still checked. */
ucs_status_t gdr_md_mem_advise(uct_md_h uct_md, uct_mem_h uct_memh, void *addr,
                               size_t length, unsigned advice)
{
    gdr_memh_t *memh = uct_memh;

    if ((advice != UCT_MADV_NORMAL) && (advice != UCT_MADV_WILLNEED)) {
        ucs_error("gdr: unknown memory advice %u", advice);
        return UCS_ERR_INVALID_PARAM;
    }
    if (((uintptr_t)addr < (uintptr_t)memh->address) ||
        (UCS_PTR_BYTE_OFFSET(addr, length) >
         UCS_PTR_BYTE_OFFSET(memh->address, memh->length))) {
        ucs_error("gdr: advice for %p..%p outside the registration %p..%p",
                  addr, UCS_PTR_BYTE_OFFSET(addr, length), memh->address,
                  UCS_PTR_BYTE_OFFSET(memh->address, memh->length));
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* --------------------------------------------------------- rcache ----- */

static ucs_status_t
gdr_rcache_mem_reg_cb(void *context, ucs_rcache_t *rcache, void *arg,
                      ucs_rcache_region_t *rregion, uint16_t rcache_flags)
{
    gdr_md_t *md                  = context;
    gdr_rcache_reg_arg_t *reg_arg = arg;
    gdr_rcache_region_t *region = ucs_derived_of(rregion, gdr_rcache_region_t);
    void *start                 = (void *)region->super.super.start;
    uint64_t flags              = reg_arg->flags;
    ucs_status_t status;

    if (rcache_flags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) {
        flags |= UCT_MD_MEM_FLAG_HIDE_ERRORS;
    }
    status = gdr_md_memh_register(md, &region->memh, start,
                                  region->super.super.end -
                                          region->super.super.start,
                                  reg_arg->access, flags,
                                  &region->cuda_buffer_id);
    if (status != UCS_OK) {
        return status;
    }
    region->memh.cached    = 1;
    region->memh.allocated = 0;
    return UCS_OK;
}

static void gdr_rcache_mem_dereg_cb(void *context, ucs_rcache_t *rcache,
                                    ucs_rcache_region_t *rregion)
{
    gdr_memh_deregister(&ucs_derived_of(rregion, gdr_rcache_region_t)->memh);
}

static void gdr_rcache_dump_region_cb(void *context, ucs_rcache_t *rcache,
                                      ucs_rcache_region_t *rregion, char *buf,
                                      size_t max)
{
    gdr_rcache_region_t *region = ucs_derived_of(rregion, gdr_rcache_region_t);

    snprintf(buf, max, "%s access 0x%x rkey 0x%x buffer_id %" PRIu64,
             ucs_memory_type_names[region->memh.mem_type], region->memh.access,
             region->memh.mr->rkey, region->cuda_buffer_id);
}

/* A new region swallows an overlapping one: it must allow at least what the
 * old one did, since the old one's users may look it up again */
static UCS_F_MAYBE_UNUSED void
gdr_rcache_merge_cb(void *context, ucs_rcache_t *rcache, void *arg,
                    ucs_rcache_region_t *rregion)
{
    gdr_rcache_reg_arg_t *reg_arg = arg;

    reg_arg->access |= ucs_derived_of(rregion, gdr_rcache_region_t)->memh.access;
}

static ucs_rcache_ops_t gdr_rcache_ops = {
        .mem_reg   = gdr_rcache_mem_reg_cb,
        .mem_dereg = gdr_rcache_mem_dereg_cb,
        GDR_COMPAT_RCACHE_OPS_MERGE(gdr_rcache_merge_cb).dump_region =
                gdr_rcache_dump_region_cb};

static ucs_status_t gdr_md_mem_reg_cached(gdr_md_t *md, void *address,
                                          size_t length, uint64_t flags,
                                          uct_mem_h *memh_p)
{
    gdr_rcache_reg_arg_t arg = {flags, gdr_md_access_flags(flags)};
    gdr_rcache_region_t *region;
    ucs_status_t status;

    status = gdr_rcache_get_usable(md->rcache, address, length, &arg, &region);
    if (status == UCS_OK) {
        *memh_p = &region->memh;
    }
    return status;
}

ucs_status_t gdr_md_mem_reg(uct_md_h uct_md, void *address, size_t length,
                            uint64_t flags, uct_mem_h *memh_p)
{
    gdr_md_t *md = ucs_derived_of(uct_md, gdr_md_t);

    return (md->rcache != NULL) ?
                   gdr_md_mem_reg_cached(md, address, length, flags, memh_p) :
                   gdr_md_mem_reg_direct(md, address, length, flags, memh_p);
}

/* No UCT_MD_FLAG_INVALIDATE: dereg(INVALIDATE) is refused (UCS_ERR_UNSUPPORTED,
 * as UCX's ib md does without ODP), so UCP never relies on it.  A cached region
 * may still be used by other registrations of the same range; it is
 * deregistered when the last one puts it, or when the range is unmapped. */
ucs_status_t
gdr_md_mem_dereg(uct_md_h uct_md, const uct_md_mem_dereg_params_t *params)
{
    gdr_md_t *md = ucs_derived_of(uct_md, gdr_md_t);
    gdr_memh_t *memh;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);
    memh = params->memh;
    if (memh->allocated) {
        ucs_error("gdr: memory %p was allocated by uct_md_mem_alloc(): free it "
                  "with "
                  "uct_md_mem_free()",
                  memh->address);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!memh->cached) {
        gdr_memh_deregister(memh);
        ucs_free(memh);
        return UCS_OK;
    }
    ucs_rcache_region_put(
            md->rcache,
            &ucs_container_of(memh, gdr_rcache_region_t, memh)->super);
    return UCS_OK;
}

static ucs_status_t
gdr_md_open_rcache(gdr_md_t *md, const gdr_md_config_t *config)
{
    char name[UCT_MD_NAME_MAX];
    ucs_rcache_params_t params;
    ucs_status_t status;

    /* ibv_reg_mr: a syscall plus page pinning, roughly linear in size */
    md->reg_cost = ucs_linear_func_make(2e-6, 0.03e-9);
    if (config->rcache_enable == UCS_NO) {
        return UCS_OK;
    }

    gdr_compat_rcache_params(&params, &config->rcache, ucs_get_page_size());
    params.region_struct_size = sizeof(gdr_rcache_region_t);
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MEM_TYPE_FREE;
    params.context            = md;
    params.ops                = &gdr_rcache_ops;
    /* named as the md, so that UCX's logs and vfs tell the mds' caches apart
     * (it fits: the md was opened by that name) */
    gdr_md_name_of(md->dev.name, name, sizeof(name));
    status = ucs_rcache_create(&params, name, NULL, &md->rcache);
    if (status != UCS_OK) {
        md->rcache = NULL;
        if (config->rcache_enable == UCS_YES) {
            ucs_error(
                    "gdr: UCX_GDR_RCACHE=yes but the registration cache could "
                    "not be created: %s",
                    ucs_status_string(status));
            return status;
        }
        ucs_debug("gdr: no registration cache: %s", ucs_status_string(status));
        return UCS_OK;
    }
    md->reg_cost = ucs_linear_func_make(gdr_compat_rcache_overhead(
                                                &config->rcache),
                                        0);
    return UCS_OK;
}

ucs_status_t
gdr_md_mkey_pack(uct_md_h uct_md, uct_mem_h uct_memh, void *rkey_buffer)
{
    gdr_memh_t *memh          = uct_memh;
    gdr_packed_rkey_t *packed = rkey_buffer;

    packed->magic = GDR_RKEY_MAGIC;
    packed->rkey  = memh->mr->rkey;
    return UCS_OK;
}

/* Allocates nothing: the key itself is the uct_rkey_t, and there is no handle */
ucs_status_t gdr_md_rkey_unpack(uct_component_t *component,
                                const void *rkey_buffer, uct_rkey_t *rkey_p,
                                void **handle_p)
{
    const gdr_packed_rkey_t *packed = rkey_buffer;

    if (packed->magic != GDR_RKEY_MAGIC) {
        ucs_error(
                "gdr: invalid remote key buffer (magic 0x%x, expected 0x%x%s)",
                packed->magic, GDR_RKEY_MAGIC,
                (packed->magic == 0xd7) ?
                        ": packed by a libuct_gdr of one md over all devices, "
                        "this one has an md per device; run one version "
                        "everywhere" :
                        "");
        return UCS_ERR_INVALID_PARAM;
    }
    *rkey_p   = gdr_rkey_make(packed->rkey);
    *handle_p = NULL;
    return UCS_OK;
}

ucs_status_t
gdr_md_rkey_release(uct_component_t *component, uct_rkey_t rkey, void *handle)
{
    return UCS_OK; /* unpack allocated nothing */
}

int gdr_md_rkey_compare(uct_rkey_t rkey1, uct_rkey_t rkey2)
{
    uint32_t key1 = gdr_rkey_value(rkey1);
    uint32_t key2 = gdr_rkey_value(rkey2);

    return (key1 < key2) ? -1 : (key1 > key2);
}

/* CUDA memory only: host memory is not ours to claim, other mds answer it */
static ucs_status_t gdr_md_query_cuda(const void *address, size_t length,
                                      gdr_cuda_mem_info_t *info,
                                      ucs_memory_type_t *mem_type_p)
{
    if (gdr_cuda_mem_query(address, length, info) != UCS_OK) {
        return UCS_ERR_INVALID_ADDR;
    }
    switch (info->kind) {
    case GDR_CUDA_MEM_DEVICE:
        *mem_type_p = UCS_MEMORY_TYPE_CUDA;
        return UCS_OK;
    case GDR_CUDA_MEM_MANAGED:
        *mem_type_p = UCS_MEMORY_TYPE_CUDA_MANAGED;
        return UCS_OK;
    default:
        return UCS_ERR_INVALID_ADDR;
    }
}

ucs_status_t gdr_md_detect_memory_type(uct_md_h uct_md, const void *address,
                                       size_t length,
                                       ucs_memory_type_t *mem_type_p)
{
    gdr_cuda_mem_info_t info;

    return gdr_md_query_cuda(address, length, &info, mem_type_p);
}

/* What UCP asks of CUDA memory (ucp_memory_detect): type, owning GPU,
 * allocation bounds; compat/ copies what the caller's attr asks for */
ucs_status_t gdr_md_mem_info(uct_md_h uct_md, const void *address,
                             size_t length, gdr_compat_mem_info_t *mem_info)
{
    gdr_cuda_mem_info_t info;
    ucs_sys_bus_id_t bus_id;
    ucs_status_t status;

    status = gdr_md_query_cuda(address, length, &info, &mem_info->mem_type);
    if (status != UCS_OK) {
        return status;
    }
    mem_info->sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    if (info.pci_bus >= 0) {
        bus_id.domain   = info.pci_domain;
        bus_id.bus      = info.pci_bus;
        bus_id.slot     = info.pci_device;
        bus_id.function = 0;
        ucs_topo_find_device_by_bus_id(&bus_id, &mem_info->sys_dev);
    }
    mem_info->base_address = info.base;
    mem_info->alloc_length = info.alloc_length;
    return UCS_OK;
}

void gdr_md_close(uct_md_h uct_md)
{
    gdr_md_t *md = ucs_derived_of(uct_md, gdr_md_t);

    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
    }
    gdr_verbs_close(&md->dev);
    ucs_free(md);
}

/* UCX_GDR_GPU_DIRECT_RDMA and UCX_GDR_DMABUF are UCS_CONFIG_TYPE_TERNARY settings
 * (no|yes|try): their values are the CUDA layer's policies, number for number */
static gdr_cuda_policy_t gdr_md_cuda_policy(ucs_ternary_auto_value_t value)
{
    UCS_STATIC_ASSERT((int)GDR_CUDA_POLICY_NO == (int)UCS_NO);
    UCS_STATIC_ASSERT((int)GDR_CUDA_POLICY_YES == (int)UCS_YES);
    UCS_STATIC_ASSERT((int)GDR_CUDA_POLICY_TRY == (int)UCS_TRY);
    return (gdr_cuda_policy_t)value;
}

/*
 * Decide whether CUDA memory can be registered: which of dma-buf/peermem works
 * on the md's device (the probe really registers a small allocation where a
 * CUDA context is active).  The probe reads the policy once: a contradiction
 * refuses the md open, "no" probes nothing.  Logged once, at md open.
 */
static ucs_status_t
gdr_md_open_cuda(gdr_md_t *md, const gdr_md_config_t *config)
{
    gdr_cuda_probe_result_t probe;
    ucs_status_t status;

    md->cuda_config.gpu_direct_rdma = gdr_md_cuda_policy(
            config->gpu_direct_rdma);
    md->cuda_config.dmabuf = gdr_md_cuda_policy(config->dmabuf);
    if ((md->cuda_config.gpu_direct_rdma != GDR_CUDA_POLICY_NO) &&
        (gdr_cuda_available(NULL) == UCS_OK)) {
        md->detect_mem_types = UCS_BIT(UCS_MEMORY_TYPE_CUDA) |
                               UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);
    }

    status = gdr_cuda_probe(md->dev.pd, &md->cuda_config, 0, &probe);
    if (status == UCS_ERR_INVALID_PARAM) {
        ucs_error("gdr: UCX_GDR_GPU_DIRECT_RDMA/UCX_GDR_DMABUF: %s",
                  probe.reason.text);
        return status;
    } else if (status != UCS_OK) {
        ucs_error(
                "gdr: GPUDirect RDMA required (UCX_GDR_GPU_DIRECT_RDMA=yes or "
                "UCX_GDR_DMABUF=yes) but unavailable on %s: %s",
                md->dev.name, probe.reason.text);
        return status;
    }
    if (md->cuda_config.gpu_direct_rdma == GDR_CUDA_POLICY_NO) {
        return UCS_OK; /* nothing probed, nothing to say */
    }
    ucs_debug("gdr: CUDA registration on %s: %s", md->dev.name,
              probe.reason.text);
    if (probe.cuda_registrable) {
        md->cuda_methods = probe.methods;
        md->reg_mem_types |= UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    }
    return UCS_OK;
}

int gdr_md_name_of(const char *dev_name, char *name, size_t max)
{
    int length = snprintf(name, max, GDR_MD_NAME_PREFIX "%s", dev_name);

    return (length >= 0) && ((size_t)length < max);
}

/* The verbs device of md "gdr_<device>", or NULL (logged) for another name */
static const char *gdr_md_device_name(const char *md_name)
{
    size_t prefix_len = strlen(GDR_MD_NAME_PREFIX);

    if (strncmp(md_name, GDR_MD_NAME_PREFIX, prefix_len) ||
        (md_name[prefix_len] == '\0')) {
        ucs_error("gdr: no md '%s': the mds of component '" GDR_COMPONENT_NAME
                  "' are named " GDR_MD_NAME_PREFIX
                  "<verbs device>, e.g. " GDR_MD_NAME_PREFIX
                  "mlx5_0 (ucx_info -d lists them)",
                  md_name);
        return NULL;
    }
    return md_name + prefix_len;
}

ucs_status_t gdr_md_open(uct_md_ops_t *ops, uct_component_t *component,
                         const char *md_name, const uct_md_config_t *uct_config,
                         uct_md_h *md_p)
{
    const gdr_md_config_t *config = ucs_derived_of(uct_config, gdr_md_config_t);
    const char *dev_name          = gdr_md_device_name(md_name);
    ucs_status_t status;
    gdr_reason_t why;
    gdr_md_t *md;

    if (dev_name == NULL) {
        status = UCS_ERR_NO_DEVICE;
        goto err;
    }

    md = ucs_calloc(1, sizeof(*md), "gdr_md");
    if (md == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    status = gdr_verbs_open(dev_name, &md->dev, &why);
    if (status != UCS_OK) {
        ucs_error("gdr: md %s: cannot open verbs device '%s': %s", md_name,
                  dev_name, why.text);
        goto err_free_md;
    }
    ucs_debug("gdr: md %s opened on %s (%u active port(s))", md_name,
              md->dev.name, md->dev.num_ports);

    md->super.ops       = ops;
    md->super.component = component;
    md->reg_mem_types   = UCS_BIT(UCS_MEMORY_TYPE_HOST);

    status = gdr_md_open_cuda(md, config);
    if (status != UCS_OK) {
        goto err_close_device;
    }
    status = gdr_md_open_rcache(md, config);
    if (status != UCS_OK) {
        goto err_close_device;
    }
    *md_p = &md->super;
    return UCS_OK;

err_close_device:
    gdr_verbs_close(&md->dev);
err_free_md:
    ucs_free(md);
err:
    return status;
}

/* A device that cannot have an md is reported once per process, as UCX's
 * detectors report what they find: UCP init lists the mds more than once
 * (ucx_info -u t -p: twice), and every process of a job lists them.  The first
 * listing warns, later ones leave a debug line.  The names warned about are remembered for the process's life
 * (as many as a listing can hold; past that, it warns again). */
static void gdr_md_report_name_too_long(const char *dev_name)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static gdr_device_name_t warned[GDR_VERBS_MAX_DEVICES];
    static unsigned num_warned;
    char md_name[sizeof(GDR_MD_NAME_PREFIX) + GDR_VERBS_NAME_MAX];
    ucs_log_level_t level = UCS_LOG_LEVEL_WARN;
    unsigned i;

    pthread_mutex_lock(&lock);
    for (i = 0; i < num_warned; ++i) {
        if (!strcmp(warned[i].name, dev_name)) {
            level = UCS_LOG_LEVEL_DEBUG;
            break;
        }
    }
    if ((level == UCS_LOG_LEVEL_WARN) && (num_warned < GDR_VERBS_MAX_DEVICES)) {
        ucs_strncpy_zero(warned[num_warned++].name, dev_name,
                         sizeof(warned[0].name));
    }
    pthread_mutex_unlock(&lock);

    gdr_md_name_of(dev_name, md_name, sizeof(md_name));
    ucs_log(level,
            "gdr: verbs device %s has no md: '%s' is longer than UCX's md "
            "names (%d characters)",
            dev_name, md_name, UCT_MD_NAME_MAX - 1);
}

/* Lists the devices gdr_verbs_open() can open (those with an active port):
 * what an md of ours can be opened on.  UCP lists the mds several times at
 * init, so the listing opens no more of a device than it needs to say that. */
ucs_status_t gdr_md_query_resources(uct_component_t *component,
                                    uct_md_resource_desc_t **resources_p,
                                    unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources = NULL;
    gdr_device_name_t devices[GDR_VERBS_MAX_DEVICES];
    unsigned i, num_devices, count = 0;
    ucs_status_t status;
    gdr_reason_t why;

    status = gdr_verbs_list(devices, GDR_VERBS_MAX_DEVICES, &num_devices, &why);
    if (status != UCS_OK) {
        ucs_error("gdr: listing verbs devices: %s", why.text);
        return status;
    }
    if (why.text[0] != '\0') {
        ucs_debug("gdr: skipped verbs devices: %s", why.text);
    }
    if (num_devices > 0) {
        resources = ucs_calloc(num_devices, sizeof(*resources),
                               "gdr_md_resources");
        if (resources == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }
    for (i = 0; i < num_devices; ++i) {
        /* a name cut to fit is left in the next free slot, not counted */
        if (gdr_md_name_of(devices[i].name, resources[count].md_name,
                           sizeof(resources[count].md_name))) {
            ++count;
            continue;
        }
        gdr_md_report_name_too_long(devices[i].name);
    }
    if (count == 0) {
        ucs_free(resources);
        resources = NULL;
    }
    *resources_p     = resources;
    *num_resources_p = count;
    return UCS_OK;
}
