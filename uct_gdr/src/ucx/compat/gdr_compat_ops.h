/**
 * gdr_compat_ops.h - the shapes of UCX's ops tables in the release built against, for the
 * component that fills them (gdr_component.c, the only includer).
 *
 * Nothing here knows gdr's objects: each piece adapts a version-neutral answer (an md's
 * capabilities, what it knows of a buffer, a flag word) to the member's shape, or says which
 * members this release has.  Where a member's signature differs, the component writes its
 * adapter once with the types and argument macros below; where a release lacks a member (and
 * its parameter types), GDR_COMPAT_DEFINE_<OP>(name, neutral...) defines the adapter `name`
 * around the neutral entry points given, or nothing, and GDR_COMPAT_<OP>_OP(name) is the
 * member's initializer, or nothing.
 */
#ifndef GDR_COMPAT_OPS_H_
#define GDR_COMPAT_OPS_H_

#ifdef HAVE_CONFIG_H
#include "config.h" /* UCX's, before its internal headers */
#endif

#include "gdr_compat.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/sys/string.h>

#include <string.h>


/* -------------------------------------------------------------- md ------- */

/* md query: the attr struct UCX asks in, filled from the neutral caps */
#ifdef GDR_UCX_HAVE_MD_QUERY_V2
typedef uct_md_attr_v2_t gdr_compat_md_attr_t;

static inline void gdr_compat_md_attr_set(gdr_compat_md_attr_t *attr,
                                          const gdr_compat_md_caps_t *caps,
                                          const char *component_name)
{
#ifdef GDR_UCX_HAVE_MD_BASE_MD_QUERY
    uct_md_base_md_query(attr); /* the defaults of fields we do not know */
#endif
    attr->flags                  = caps->flags;
    attr->max_alloc              = caps->max_alloc;
    attr->max_reg                = caps->max_reg;
    attr->reg_mem_types          = caps->reg_mem_types;
    attr->reg_nonblock_mem_types = 0;
    /* UCP may cache registrations of these types in its own rcache.  Not CUDA:
     * nothing tells UCP about cudaFree (a distro UCX has no CUDA module to hook
     * it), so a cached memh would outlive its allocation; our md's own cache
     * checks the CUDA buffer id on every lookup instead. */
    attr->cache_mem_types           = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->detect_mem_types          = caps->detect_mem_types;
    attr->alloc_mem_types           = caps->alloc_mem_types;
    attr->access_mem_types          = caps->access_mem_types;
    attr->dmabuf_mem_types          = 0; /* we export no dma-buf fds to UCP */
    attr->rkey_packed_size          = caps->rkey_packed_size;
    attr->reg_cost                  = caps->reg_cost;
    attr->exported_mkey_packed_size = 0; /* no UCT_MD_FLAG_EXPORTED_MKEY */
    attr->reg_alignment             = 1;
#ifdef GDR_UCX_HAVE_MD_ATTR_REQUIRED_MEM_FLAGS
    attr->required_mem_flags = UCS_MEM_FLAG_REGISTRABLE; /* as ib's md */
#endif
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    ucs_strncpy_zero(attr->component_name, component_name,
                     sizeof(attr->component_name));
    ucs_strncpy_zero(attr->global_id, component_name, sizeof(attr->global_id));
}
#else
typedef uct_md_attr_t gdr_compat_md_attr_t;

static inline void gdr_compat_md_attr_set(gdr_compat_md_attr_t *attr,
                                          const gdr_compat_md_caps_t *caps,
                                          const char *component_name)
{
    memset(attr, 0, sizeof(*attr));
    attr->cap.flags            = caps->flags;
    attr->cap.max_alloc        = caps->max_alloc;
    attr->cap.max_reg          = caps->max_reg;
    attr->cap.reg_mem_types    = caps->reg_mem_types;
    attr->cap.alloc_mem_types  = caps->alloc_mem_types;
    attr->cap.detect_mem_types = caps->detect_mem_types;
    attr->cap.access_mem_types = caps->access_mem_types;
    attr->rkey_packed_size     = caps->rkey_packed_size;
    attr->reg_cost             = caps->reg_cost;
    ucs_strncpy_zero(attr->component_name, component_name,
                     sizeof(attr->component_name));
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
}
#endif

/* mem_alloc: a system device to allocate on (host memory only: nothing to
 * choose), in the argument list where the release has it */
#ifdef GDR_UCX_HAVE_MEM_ALLOC_SYS_DEV
#define GDR_COMPAT_MEM_ALLOC_SYS_DEV_ARG ucs_sys_device_t sys_dev,
#else
#define GDR_COMPAT_MEM_ALLOC_SYS_DEV_ARG
#endif

/* mem_reg: its last argument before memh_p, and the registration flags in it.
 * The params may carry a dma-buf fd of the caller's; md "gdr" finds its own
 * (gdr_cuda_reg_mr), so only the flags matter */
#ifdef GDR_UCX_HAVE_MEM_REG_PARAMS
typedef const uct_md_mem_reg_params_t *gdr_compat_mem_reg_arg_t;

static inline uint64_t gdr_compat_mem_reg_flags(gdr_compat_mem_reg_arg_t params)
{
    return UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0);
}
#else
typedef unsigned gdr_compat_mem_reg_arg_t;

static inline uint64_t gdr_compat_mem_reg_flags(gdr_compat_mem_reg_arg_t flags)
{
    return flags;
}
#endif

/* mkey_pack: the packed range in the argument list where the release passes
 * it, and whether the params ask for what no release of ours offers (an
 * exported mkey: no UCT_MD_FLAG_EXPORTED_MKEY) */
#ifdef GDR_UCX_HAVE_MKEY_PACK_ADDRESS
#define GDR_COMPAT_MKEY_PACK_RANGE_ARGS void *address, size_t length,

static inline int
gdr_compat_mkey_pack_supported(const uct_md_mkey_pack_params_t *params)
{
    uint64_t flags = UCS_PARAM_VALUE(UCT_MD_MKEY_PACK_FIELD, params, flags,
                                     FLAGS, 0);

    return !(flags & UCT_MD_MKEY_PACK_FLAG_EXPORT);
}
#else
#define GDR_COMPAT_MKEY_PACK_RANGE_ARGS

static inline int
gdr_compat_mkey_pack_supported(const uct_md_mkey_pack_params_t *params)
{
    return 1;
}
#endif

/* mem_query: the attr struct UCX asks in; both shapes name their fields alike,
 * so one function copies what is asked */
#ifdef GDR_UCX_HAVE_MEM_QUERY_V2
typedef uct_md_mem_attr_v2_t gdr_compat_mem_attr_t;
#else
typedef uct_md_mem_attr_t gdr_compat_mem_attr_t;
#endif

static inline void gdr_compat_mem_attr_set(gdr_compat_mem_attr_t *attr,
                                           const gdr_compat_mem_info_t *info)
{
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        attr->mem_type = info->mem_type;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        attr->sys_dev = info->sys_dev;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        attr->base_address = info->base_address;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        attr->alloc_length = info->alloc_length;
    }
#ifdef GDR_UCX_HAVE_MEM_ATTR_DMABUF
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_FD) {
        attr->dmabuf_fd = UCT_DMABUF_FD_INVALID; /* none handed out */
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET) {
        attr->dmabuf_offset = 0;
    }
#endif
}

/* The md ops some releases have and md "gdr" does not do: filled all the
 * same (UCP calls them unconditionally) */
#ifdef GDR_UCX_HAVE_IS_SOCKADDR_ACCESSIBLE
#define GDR_COMPAT_IS_SOCKADDR_ACCESSIBLE_OP                         \
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t) \
            ucs_empty_function_return_zero,
#else
#define GDR_COMPAT_IS_SOCKADDR_ACCESSIBLE_OP
#endif
#ifdef GDR_UCX_HAVE_MEM_ATTACH
#define GDR_COMPAT_MEM_ATTACH_OP             \
    .mem_attach = (uct_md_mem_attach_func_t) \
            ucs_empty_function_return_unsupported,
#else
#define GDR_COMPAT_MEM_ATTACH_OP
#endif
#ifdef GDR_UCX_HAVE_MEM_ELEM_PACK
#define GDR_COMPAT_MEM_ELEM_PACK_OP                \
    .mem_elem_pack = (uct_md_mem_elem_pack_func_t) \
            ucs_empty_function_return_unsupported,
#else
#define GDR_COMPAT_MEM_ELEM_PACK_OP
#endif
#define GDR_COMPAT_MD_OPS_UNSUPPORTED    \
    GDR_COMPAT_IS_SOCKADDR_ACCESSIBLE_OP \
    GDR_COMPAT_MEM_ATTACH_OP             \
    GDR_COMPAT_MEM_ELEM_PACK_OP


/* -------------------------------------------------------- component ------ */

/* rkey_unpack: the params, in the argument list where the release has them */
#ifdef GDR_UCX_HAVE_RKEY_UNPACK_PARAMS
#define GDR_COMPAT_RKEY_UNPACK_PARAMS_ARG \
    const uct_rkey_unpack_params_t *params,
#else
#define GDR_COMPAT_RKEY_UNPACK_PARAMS_ARG
#endif

/* rkey_compare(name, compare): int compare(uct_rkey_t, uct_rkey_t) answering
 * <0, 0, >0, as the component's rkey_compare */
#ifdef GDR_UCX_HAVE_RKEY_COMPARE
#define GDR_COMPAT_DEFINE_RKEY_COMPARE(_name, _compare)                     \
    static ucs_status_t _name(uct_component_t *component, uct_rkey_t rkey1, \
                              uct_rkey_t rkey2,                             \
                              const uct_rkey_compare_params_t *params,      \
                              int *result)                                  \
    {                                                                       \
        if ((params->field_mask != 0) || (result == NULL)) {                \
            return UCS_ERR_INVALID_PARAM; /* as uct_base_rkey_compare */    \
        }                                                                   \
        *result = _compare(rkey1, rkey2);                                   \
        return UCS_OK;                                                      \
    }
#define GDR_COMPAT_RKEY_COMPARE_OP(_name) .rkey_compare = _name,
#else
#define GDR_COMPAT_DEFINE_RKEY_COMPARE(_name, _compare)
#define GDR_COMPAT_RKEY_COMPARE_OP(_name)
#endif


/* ---------------------------------------------------- iface internal ----- */

/* ep_connect_to_ep_v2(name, connect): connect is uct_iface_ops_t's
 * ep_connect_to_ep; the params add nothing it needs */
#ifdef GDR_UCX_HAVE_EP_CONNECT_TO_EP_V2
#define GDR_COMPAT_DEFINE_EP_CONNECT_TO_EP_V2(_name, _connect)                \
    static ucs_status_t _name(uct_ep_h ep, const uct_device_addr_t *dev_addr, \
                              const uct_ep_addr_t *ep_addr,                   \
                              const uct_ep_connect_to_ep_params_t *params)    \
    {                                                                         \
        return _connect(ep, dev_addr, ep_addr);                               \
    }
#define GDR_COMPAT_EP_CONNECT_TO_EP_V2_OP(_name) .ep_connect_to_ep_v2 = _name,
#else
#define GDR_COMPAT_DEFINE_EP_CONNECT_TO_EP_V2(_name, _connect)
#define GDR_COMPAT_EP_CONNECT_TO_EP_V2_OP(_name)
#endif

/* iface_is_reachable_v2(name, reachable, same_device): reachable is
 * uct_iface_ops_t's iface_is_reachable, same_device(iface, dev_addr) whether
 * the address names this very port.  Scope "network": can we route to it;
 * scope "device": is it this very port (what UCP asks before it uses a
 * transport for loopback) */
#ifdef GDR_UCX_HAVE_IFACE_IS_REACHABLE_V2
#define GDR_COMPAT_DEFINE_IFACE_IS_REACHABLE_V2(_name, _reachable,               \
                                                _same_device)                    \
    static int _name(const uct_iface_h iface,                                    \
                     const uct_iface_is_reachable_params_t *params)              \
    {                                                                            \
        const uct_device_addr_t *dev_addr;                                       \
        uct_iface_reachability_scope_t scope;                                    \
                                                                                 \
        if (!uct_iface_is_reachable_params_valid(                                \
                    params, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR)) {         \
            return 0;                                                            \
        }                                                                        \
        dev_addr = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params,         \
                                   device_addr, DEVICE_ADDR, NULL);              \
        scope    = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params, scope,  \
                                   SCOPE, UCT_IFACE_REACHABILITY_SCOPE_NETWORK); \
        if ((dev_addr == NULL) || !_reachable(iface, dev_addr, NULL)) {          \
            return 0;                                                            \
        }                                                                        \
        return (scope == UCT_IFACE_REACHABILITY_SCOPE_NETWORK) ||                \
               _same_device(iface, dev_addr);                                    \
    }
#define GDR_COMPAT_IFACE_IS_REACHABLE_V2_OP(_name) \
    .iface_is_reachable_v2 = _name,
#else
#define GDR_COMPAT_DEFINE_IFACE_IS_REACHABLE_V2(_name, _reachable, _same_device)
#define GDR_COMPAT_IFACE_IS_REACHABLE_V2_OP(_name)
#endif

/* ep_is_connected(name, connected_to): connected_to(ep, dev_addr, ep_addr)
 * with ep_addr NULL when the params carry none */
#ifdef GDR_UCX_HAVE_EP_IS_CONNECTED
#define GDR_COMPAT_DEFINE_EP_IS_CONNECTED(_name, _connected_to)               \
    static int _name(uct_ep_h ep, const uct_ep_is_connected_params_t *params) \
    {                                                                         \
        UCT_EP_IS_CONNECTED_CHECK_DEV_ADDR(params);                           \
        return _connected_to(ep, params->device_addr,                         \
                             (params->field_mask &                            \
                              UCT_EP_IS_CONNECTED_FIELD_EP_ADDR) ?            \
                                     params->ep_addr :                        \
                                     NULL);                                   \
    }
#define GDR_COMPAT_EP_IS_CONNECTED_OP(_name) .ep_is_connected = _name,
#else
#define GDR_COMPAT_DEFINE_EP_IS_CONNECTED(_name, _connected_to)
#define GDR_COMPAT_EP_IS_CONNECTED_OP(_name)
#endif

/* uct_iface_internal_ops_t's performance estimate: UCT's base estimate, with
 * the ib send overheads where UCX's ib transports add them (gdr_compat.c) */
ucs_status_t gdr_compat_iface_estimate_perf(uct_iface_h tl_iface,
                                            uct_perf_attr_t *perf_attr);

/* The internal ops every gdr_rc iface has alike: the performance estimate,
 * and the members that do nothing or refuse (GPU-initiated operations, UCX's
 * device API, would need a device-side QP) */
#ifdef GDR_UCX_HAVE_IFACE_QUERY_V2
#define GDR_COMPAT_IFACE_QUERY_V2_OP .iface_query_v2 = uct_iface_base_query_v2,
#else
#define GDR_COMPAT_IFACE_QUERY_V2_OP
#endif
#ifdef GDR_UCX_HAVE_EP_GET_DEVICE_EP
#define GDR_COMPAT_EP_GET_DEVICE_EP_OP                \
    .ep_get_device_ep = (uct_ep_get_device_ep_func_t) \
            ucs_empty_function_return_unsupported,
#else
#define GDR_COMPAT_EP_GET_DEVICE_EP_OP
#endif
#ifdef GDR_UCX_HAVE_EP_PUT_SGL_ZCOPY
#define GDR_COMPAT_EP_PUT_SGL_ZCOPY_OP                \
    .ep_put_sgl_zcopy = (uct_ep_put_sgl_zcopy_func_t) \
            ucs_empty_function_return_unsupported,
#else
#define GDR_COMPAT_EP_PUT_SGL_ZCOPY_OP
#endif
#define GDR_COMPAT_IFACE_INTERNAL_OPS_COMMON                                     \
    GDR_COMPAT_IFACE_QUERY_V2_OP.iface_estimate_perf =                           \
            gdr_compat_iface_estimate_perf,                                      \
    .iface_vfs_refresh = (uct_iface_vfs_refresh_func_t)ucs_empty_function,       \
    .ep_query      = (uct_ep_query_func_t)ucs_empty_function_return_unsupported, \
    .ep_invalidate = (uct_ep_invalidate_func_t)                                  \
            ucs_empty_function_return_unsupported,                               \
    GDR_COMPAT_EP_GET_DEVICE_EP_OP GDR_COMPAT_EP_PUT_SGL_ZCOPY_OP

#endif
