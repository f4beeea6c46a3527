/**
 * gdr_compat.c - UCX's version-shaped tables, built from the glue's
 * version-neutral entry points (see gdr_compat.h).
 *
 * Every member a table has in the UCX built against is filled: UCP and UCT
 * call most of them unconditionally, so a member left NULL is a crash in some
 * later code path, not a missing feature.
 */
#include "../gdr_ep.h"

#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#ifdef GDR_UCX_HAVE_TOPO_GET_PCI_BW
#include <ucs/sys/topo/base/topo.h>
#endif

#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>


/* -------------------------------------------------------------- md ------- */

#ifdef GDR_UCX_HAVE_MD_QUERY_V2
static ucs_status_t gdr_compat_md_query(uct_md_h md, uct_md_attr_v2_t *attr)
{
    gdr_md_caps_t caps;

    gdr_md_query_caps(md, &caps);
#ifdef GDR_UCX_HAVE_MD_BASE_MD_QUERY
    uct_md_base_md_query(attr); /* the defaults of fields we do not know */
#endif
    attr->flags                  = caps.flags;
    attr->max_alloc              = caps.max_alloc;
    attr->max_reg                = caps.max_reg;
    attr->reg_mem_types          = caps.reg_mem_types;
    attr->reg_nonblock_mem_types = 0;
    /* UCP may cache registrations of these types in its own rcache.  Not CUDA:
     * nothing tells UCP about cudaFree (a distro UCX has no CUDA module to hook
     * it), so a cached memh would outlive its allocation; our md's own cache
     * checks the CUDA buffer id on every lookup instead. */
    attr->cache_mem_types           = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->detect_mem_types          = caps.detect_mem_types;
    attr->alloc_mem_types           = caps.alloc_mem_types;
    attr->access_mem_types          = caps.access_mem_types;
    attr->dmabuf_mem_types          = 0; /* we export no dma-buf fds to UCP */
    attr->rkey_packed_size          = caps.rkey_packed_size;
    attr->reg_cost                  = caps.reg_cost;
    attr->exported_mkey_packed_size = 0; /* no UCT_MD_FLAG_EXPORTED_MKEY */
    attr->reg_alignment             = 1;
#ifdef GDR_UCX_HAVE_MD_ATTR_REQUIRED_MEM_FLAGS
    attr->required_mem_flags = UCS_MEM_FLAG_REGISTRABLE; /* as ib's md */
#endif
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    ucs_strncpy_zero(attr->component_name, GDR_COMPONENT_NAME,
                     sizeof(attr->component_name));
    ucs_strncpy_zero(attr->global_id, GDR_COMPONENT_NAME,
                     sizeof(attr->global_id));
    return UCS_OK;
}
#else
static ucs_status_t gdr_compat_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    gdr_md_caps_t caps;

    gdr_md_query_caps(md, &caps);
    memset(attr, 0, sizeof(*attr));
    attr->cap.flags            = caps.flags;
    attr->cap.max_alloc        = caps.max_alloc;
    attr->cap.max_reg          = caps.max_reg;
    attr->cap.reg_mem_types    = caps.reg_mem_types;
    attr->cap.alloc_mem_types  = caps.alloc_mem_types;
    attr->cap.detect_mem_types = caps.detect_mem_types;
    attr->cap.access_mem_types = caps.access_mem_types;
    attr->rkey_packed_size     = caps.rkey_packed_size;
    attr->reg_cost             = caps.reg_cost;
    ucs_strncpy_zero(attr->component_name, GDR_COMPONENT_NAME,
                     sizeof(attr->component_name));
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}
#endif

#ifdef GDR_UCX_HAVE_MEM_ALLOC_SYS_DEV
/* host memory only: the system device has nothing to choose */
static ucs_status_t
gdr_compat_mem_alloc(uct_md_h md, size_t *length_p, void **address_p,
                     ucs_memory_type_t mem_type, ucs_sys_device_t sys_dev,
                     unsigned flags, const char *alloc_name, uct_mem_h *memh_p)
{
    return gdr_md_mem_alloc(md, length_p, address_p, mem_type, flags,
                            alloc_name, memh_p);
}
#else
#define gdr_compat_mem_alloc gdr_md_mem_alloc
#endif

#ifdef GDR_UCX_HAVE_MEM_REG_PARAMS
/* The params may carry a dma-buf fd of the caller's; md "gdr" finds its own
 * (gdr_cuda_reg_mr), so only the flags matter */
static ucs_status_t
gdr_compat_mem_reg(uct_md_h md, void *address, size_t length,
                   const uct_md_mem_reg_params_t *params, uct_mem_h *memh_p)
{
    return gdr_md_mem_reg(md, address, length,
                          UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS,
                                                     0),
                          memh_p);
}
#else
static ucs_status_t gdr_compat_mem_reg(uct_md_h md, void *address,
                                       size_t length, unsigned flags,
                                       uct_mem_h *memh_p)
{
    return gdr_md_mem_reg(md, address, length, flags, memh_p);
}
#endif

#ifdef GDR_UCX_HAVE_MKEY_PACK_ADDRESS
static ucs_status_t
gdr_compat_mkey_pack(uct_md_h md, uct_mem_h memh, void *address, size_t length,
                     const uct_md_mkey_pack_params_t *params, void *buffer)
{
    uint64_t flags = UCS_PARAM_VALUE(UCT_MD_MKEY_PACK_FIELD, params, flags,
                                     FLAGS, 0);

    if (flags & UCT_MD_MKEY_PACK_FLAG_EXPORT) {
        return UCS_ERR_UNSUPPORTED; /* no UCT_MD_FLAG_EXPORTED_MKEY */
    }
    return gdr_md_mkey_pack(md, memh, buffer);
}
#else
static ucs_status_t
gdr_compat_mkey_pack(uct_md_h md, uct_mem_h memh,
                     const uct_md_mkey_pack_params_t *params, void *buffer)
{
    return gdr_md_mkey_pack(md, memh, buffer);
}
#endif

#ifdef GDR_UCX_HAVE_MEM_QUERY_V2
typedef uct_md_mem_attr_v2_t gdr_compat_mem_attr_t;
#else
typedef uct_md_mem_attr_t gdr_compat_mem_attr_t;
#endif

/* Both shapes name their fields alike: one adapter copies what is asked */
static ucs_status_t gdr_compat_mem_query(uct_md_h md, const void *address,
                                         size_t length,
                                         gdr_compat_mem_attr_t *attr)
{
    gdr_md_mem_info_t info;
    ucs_status_t status;

    status = gdr_md_mem_info(md, address, length, &info);
    if (status != UCS_OK) {
        return status;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        attr->mem_type = info.mem_type;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        attr->sys_dev = info.sys_dev;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        attr->base_address = info.base_address;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        attr->alloc_length = info.alloc_length;
    }
#ifdef GDR_UCX_HAVE_MEM_ATTR_DMABUF
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_FD) {
        attr->dmabuf_fd = UCT_DMABUF_FD_INVALID; /* none handed out */
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET) {
        attr->dmabuf_offset = 0;
    }
#endif
    return UCS_OK;
}

uct_md_ops_t gdr_md_ops = {.close      = gdr_md_close,
                           .query      = gdr_compat_md_query,
                           .mem_alloc  = gdr_compat_mem_alloc,
                           .mem_free   = gdr_md_mem_free,
                           .mem_advise = gdr_md_mem_advise,
                           .mem_reg    = gdr_compat_mem_reg,
                           .mem_dereg  = gdr_md_mem_dereg,
                           .mem_query  = gdr_compat_mem_query,
                           .mkey_pack  = gdr_compat_mkey_pack,
#ifdef GDR_UCX_HAVE_IS_SOCKADDR_ACCESSIBLE
                           .is_sockaddr_accessible =
                                   (uct_md_is_sockaddr_accessible_func_t)
                                           ucs_empty_function_return_zero,
#endif
#ifdef GDR_UCX_HAVE_MEM_ATTACH
                           .mem_attach = (uct_md_mem_attach_func_t)
                                   ucs_empty_function_return_unsupported,
#endif
#ifdef GDR_UCX_HAVE_MEM_ELEM_PACK
                           .mem_elem_pack = (uct_md_mem_elem_pack_func_t)
                                   ucs_empty_function_return_unsupported,
#endif
                           .detect_memory_type = gdr_md_detect_memory_type};


/* -------------------------------------------------------- component ------ */

#ifdef GDR_UCX_HAVE_RKEY_UNPACK_PARAMS
ucs_status_t gdr_compat_rkey_unpack(uct_component_t *component,
                                    const void *rkey_buffer,
                                    const uct_rkey_unpack_params_t *params,
                                    uct_rkey_t *rkey_p, void **handle_p)
{
    return gdr_md_rkey_unpack(component, rkey_buffer, rkey_p, handle_p);
}
#endif

#ifdef GDR_UCX_HAVE_RKEY_COMPARE
ucs_status_t gdr_compat_rkey_compare(uct_component_t *component,
                                     uct_rkey_t rkey1, uct_rkey_t rkey2,
                                     const uct_rkey_compare_params_t *params,
                                     int *result)
{
    if ((params->field_mask != 0) || (result == NULL)) {
        return UCS_ERR_INVALID_PARAM; /* as uct_base_rkey_compare */
    }
    *result = gdr_md_rkey_compare(rkey1, rkey2);
    return UCS_OK;
}
#endif


/* ------------------------------------------------------------ iface ------ */

#ifdef GDR_UCX_HAVE_EP_CONNECT_TO_EP_V2
static ucs_status_t
gdr_compat_ep_connect_to_ep_v2(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                               const uct_ep_addr_t *ep_addr,
                               const uct_ep_connect_to_ep_params_t *params)
{
    return gdr_ep_connect_to_ep(ep, dev_addr, ep_addr);
}
#endif

#ifdef GDR_UCX_HAVE_IFACE_IS_REACHABLE_V2
/* Scope "network": can we route to it; scope "device": is it this very port
 * (what UCP asks before it uses a transport for loopback) */
static int
gdr_compat_iface_is_reachable_v2(const uct_iface_h iface,
                                 const uct_iface_is_reachable_params_t *params)
{
    const uct_device_addr_t *dev_addr;
    uct_iface_reachability_scope_t scope;

    if (!uct_iface_is_reachable_params_valid(
                params, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR)) {
        return 0;
    }
    dev_addr = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params,
                               device_addr, DEVICE_ADDR, NULL);
    scope = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params, scope, SCOPE,
                            UCT_IFACE_REACHABILITY_SCOPE_NETWORK);
    if ((dev_addr == NULL) || !gdr_iface_is_reachable(iface, dev_addr, NULL)) {
        return 0;
    }
    return (scope == UCT_IFACE_REACHABILITY_SCOPE_NETWORK) ||
           gdr_iface_is_same_device(iface, dev_addr);
}
#endif

#ifdef GDR_UCX_HAVE_EP_IS_CONNECTED
static int
gdr_compat_ep_is_connected(uct_ep_h ep,
                           const uct_ep_is_connected_params_t *params)
{
    UCT_EP_IS_CONNECTED_CHECK_DEV_ADDR(params);
    return gdr_ep_is_connected_to(ep, params->device_addr,
                                  (params->field_mask &
                                   UCT_EP_IS_CONNECTED_FIELD_EP_ADDR) ?
                                          params->ep_addr :
                                          NULL);
}
#endif

/* ------------------------------------------------------------ iface ---- */

#ifndef GDR_UCX_HAVE_TOPO_GET_PCI_BW
/* UCX 1.13's uct_ib_device_set_pci_bw(): the PCIe generations it knows, their
 * transfer rate, TLP payload and overheads and line encoding; a faster link
 * (gen5) is "undetected" there and caps nothing (DBL_MAX), so also here */
static double gdr_compat_pci_bw_of_link(const char *sysfs_path)
{
    static const struct {
        double gt_s;
        unsigned payload, tlp_overhead, ctrl_ratio, ctrl_overhead;
        unsigned encoding, decoding;
    } gens[] = {
            {2.5, 256, 24, 4, 16, 8, 10},
            {5, 256, 24, 4, 16, 8, 10},
            {8, 256, 26, 4, 16, 128, 130},
            {16, 256, 26, 4, 16, 128, 130},
    };
    char width_str[16], speed_str[16], gts[16];
    double gt_s, utilization;
    unsigned width;
    size_t i;

    if ((ucs_read_file_str(width_str, sizeof(width_str), 1, "%s/%s", sysfs_path,
                           "current_link_width") < 0) ||
        (ucs_read_file_str(speed_str, sizeof(speed_str), 1, "%s/%s", sysfs_path,
                           "current_link_speed") < 0) ||
        (sscanf(width_str, "%u", &width) < 1) ||
        (sscanf(speed_str, "%lf%15s", &gt_s, gts) < 2) ||
        strcasecmp("GT/s", gts)) {
        return DBL_MAX;
    }
    for (i = 0; i < ucs_static_array_size(gens); i++) {
        if ((gt_s / gens[i].gt_s) > 1.01) {
            continue;
        }
        utilization = (double)(gens[i].payload * gens[i].ctrl_ratio) /
                      (((gens[i].payload + gens[i].tlp_overhead) *
                        gens[i].ctrl_ratio) +
                       gens[i].ctrl_overhead);
        return (gens[i].gt_s * 1e9 / 8.0) * width *
               ((double)gens[i].encoding / gens[i].decoding) * utilization;
    }
    return DBL_MAX;
}
#endif

double gdr_compat_pci_bw(const char *dev_name, const char *pci_bdf)
{
    char sysfs_path[PATH_MAX];

    if (pci_bdf[0] == '\0') {
        return DBL_MAX; /* rxe, siw: as UCX's "pci bandwidth undetected" */
    }
    ucs_snprintf_safe(sysfs_path, sizeof(sysfs_path), "/sys/bus/pci/devices/%s",
                      pci_bdf);
#ifdef GDR_UCX_HAVE_TOPO_GET_PCI_BW
    return ucs_topo_get_pci_bw(dev_name, sysfs_path);
#else
    return gdr_compat_pci_bw_of_link(sysfs_path);
#endif
}

/*
 * What UCP's protocol selection reads per operation (protocol v2: send pre/post
 * overheads, latency; v1: max_inflight_eps for keepalive's lane).  UCX's ib
 * transports (1.17 and later) add their UCX_<TL>_SEND_OVERHEAD to UCT's base
 * estimate; gdr_rc posts through the same verbs calls, so it reports what
 * rc_verbs does with that setting's defaults (UCT_IB_SEND_OVERHEAD_VALUE with
 * wqe_post = rc_verbs' iface overhead): with the base estimate, eager short
 * and copy crossed at other sizes and the rendezvous threshold moved.  Earlier
 * UCX (1.13, 1.16) estimate ib sends as the base does.
 */
#ifdef GDR_UCX_HAVE_IB_SEND_OVERHEAD
#define GDR_SEND_OVERHEAD_BCOPY     5e-9 /* allocating a tx buffer */
#define GDR_SEND_OVERHEAD_CQE       20e-9 /* processing a completion */
#define GDR_SEND_OVERHEAD_DB        40e-9 /* the doorbell write */
#define GDR_SEND_OVERHEAD_WQE_FETCH 350e-9 /* the HCA fetching the wqe */
#endif

static ucs_status_t
gdr_compat_iface_estimate_perf(uct_iface_h tl_iface, uct_perf_attr_t *perf_attr)
{
    ucs_status_t status = uct_base_iface_estimate_perf(tl_iface, perf_attr);
#ifdef GDR_UCX_HAVE_IB_SEND_OVERHEAD
    uct_ep_operation_t op = UCT_ATTR_VALUE(PERF, perf_attr, operation,
                                           OPERATION, UCT_EP_OP_LAST);
    int copies            = uct_ep_op_is_bcopy(op);
    int zero_copy         = uct_ep_op_is_zcopy(op);

    if (status != UCS_OK) {
        return status;
    }
    /* the base gave send_pre_overhead = the iface overhead (rc_verbs' wqe_post
     * default) and send_post_overhead = 0 */
    if ((perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD) &&
        copies) {
        perf_attr->send_pre_overhead += GDR_SEND_OVERHEAD_BCOPY;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD) {
        perf_attr->send_post_overhead = GDR_SEND_OVERHEAD_DB +
                                        (zero_copy ? GDR_SEND_OVERHEAD_CQE : 0);
    }
    if ((perf_attr->field_mask & UCT_PERF_ATTR_FIELD_LATENCY) &&
        (copies || zero_copy)) {
        perf_attr->latency.c += GDR_SEND_OVERHEAD_WQE_FETCH;
    }
#endif
    return status;
}

uct_iface_internal_ops_t gdr_iface_internal_ops = {
#ifdef GDR_UCX_HAVE_IFACE_QUERY_V2
        .iface_query_v2 = uct_iface_base_query_v2,
#endif
        .iface_estimate_perf = gdr_compat_iface_estimate_perf,
        .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
        .ep_query = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
        .ep_invalidate = (uct_ep_invalidate_func_t)
                ucs_empty_function_return_unsupported,
#ifdef GDR_UCX_HAVE_EP_CONNECT_TO_EP_V2
        .ep_connect_to_ep_v2 = gdr_compat_ep_connect_to_ep_v2,
#endif
#ifdef GDR_UCX_HAVE_IFACE_IS_REACHABLE_V2
        .iface_is_reachable_v2 = gdr_compat_iface_is_reachable_v2,
#endif
#ifdef GDR_UCX_HAVE_EP_IS_CONNECTED
        .ep_is_connected = gdr_compat_ep_is_connected,
#endif
#ifdef GDR_UCX_HAVE_EP_GET_DEVICE_EP
        /* GPU-initiated operations (UCX's device API) need a device-side QP */
        .ep_get_device_ep = (uct_ep_get_device_ep_func_t)
                ucs_empty_function_return_unsupported,
#endif
#ifdef GDR_UCX_HAVE_EP_PUT_SGL_ZCOPY
        .ep_put_sgl_zcopy = (uct_ep_put_sgl_zcopy_func_t)
                ucs_empty_function_return_unsupported,
#endif
};
