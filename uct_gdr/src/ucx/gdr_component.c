/**
 * gdr_component.c - component "gdr" (an md "gdr_<device>" per verbs device, tl "gdr_rc"):
 * every ops table, and its registration in the UCX that loaded us.
 *
 * As UCX's rc_verbs keeps its tables with the leaf class and hands them to the base
 * constructor, the component holds them all here, at the top, and hands them down: the md
 * ops to gdr_md_open(), the iface ops and internal ops to gdr_iface_t's constructor.  The
 * members are the glue's version-neutral entry points; where a member's shape differs between
 * UCX releases, the adapter is written with compat/gdr_compat_ops.h's shapes, so that this
 * file tests no release itself.
 *
 * UCX up to 1.21 only loads the modules compiled into it, so we register from
 * our own ELF constructor, which runs after libucs/libuct's (we depend on
 * them): LD_PRELOAD, linking, or dlopen before ucp_init() all work.  UCX 1.22
 * also dlopens lib<framework>_<name>.so from its module directory and
 * UCX_PLUGIN_PATH: the same constructor registers us then.  Registration is
 * what UCT_COMPONENT_REGISTER/UCT_TL_DEFINE would do, but done by hand so that
 * the ABI guard runs first and nothing is registered on a mismatching UCX.
 */
#include "gdr_ep.h"
#include "gdr_abi.h"
#include "gdr_device.h"
#include "compat/gdr_compat_ops.h"

#include <ucs/debug/log.h>
#include <stdio.h>
#include <string.h>


/* ----------------------------------------------------------- md ops ----- */

static ucs_status_t gdr_md_query_op(uct_md_h md, gdr_compat_md_attr_t *attr)
{
    gdr_compat_md_caps_t caps;

    gdr_md_query_caps(md, &caps);
    gdr_compat_md_attr_set(attr, &caps, GDR_COMPONENT_NAME);
    return UCS_OK;
}

/* host memory only: the system device, where UCX passes one, has nothing to choose */
static ucs_status_t
gdr_md_mem_alloc_op(uct_md_h md, size_t *length_p, void **address_p,
                    ucs_memory_type_t mem_type,
                    GDR_COMPAT_MEM_ALLOC_SYS_DEV_ARG unsigned flags,
                    const char *alloc_name, uct_mem_h *memh_p)
{
    return gdr_md_mem_alloc(md, length_p, address_p, mem_type, flags,
                            alloc_name, memh_p);
}

static ucs_status_t gdr_md_mem_reg_op(uct_md_h md, void *address, size_t length,
                                      gdr_compat_mem_reg_arg_t arg,
                                      uct_mem_h *memh_p)
{
    return gdr_md_mem_reg(md, address, length, gdr_compat_mem_reg_flags(arg),
                          memh_p);
}

static ucs_status_t gdr_md_mkey_pack_op(
        uct_md_h md, uct_mem_h memh,
        GDR_COMPAT_MKEY_PACK_RANGE_ARGS const uct_md_mkey_pack_params_t *params,
        void *buffer)
{
    if (!gdr_compat_mkey_pack_supported(params)) {
        return UCS_ERR_UNSUPPORTED;
    }
    return gdr_md_mkey_pack(md, memh, buffer);
}

static ucs_status_t gdr_md_mem_query_op(uct_md_h md, const void *address,
                                        size_t length,
                                        gdr_compat_mem_attr_t *attr)
{
    gdr_compat_mem_info_t info;
    ucs_status_t status;

    status = gdr_md_mem_info(md, address, length, &info);
    if (status != UCS_OK) {
        return status;
    }
    gdr_compat_mem_attr_set(attr, &info);
    return UCS_OK;
}

/* Every member a release has is filled: UCP calls most of them unconditionally,
 * so a member left NULL is a crash in some later code path, not a missing
 * feature */
/* clang-format off */
static uct_md_ops_t gdr_md_ops = {
        .close              = gdr_md_close,
        .query              = gdr_md_query_op,
        .mem_alloc          = gdr_md_mem_alloc_op,
        .mem_free           = gdr_md_mem_free,
        .mem_advise         = gdr_md_mem_advise,
        .mem_reg            = gdr_md_mem_reg_op,
        .mem_dereg          = gdr_md_mem_dereg,
        .mem_query          = gdr_md_mem_query_op,
        .mkey_pack          = gdr_md_mkey_pack_op,
        .detect_memory_type = gdr_md_detect_memory_type,
        GDR_COMPAT_MD_OPS_UNSUPPORTED
};
/* clang-format on */


/* --------------------------------------------------------- iface ops ---- */

/* The data path: the same in every UCX release gdr builds for */
static uct_iface_ops_t gdr_iface_ops = {
        .ep_put_short             = gdr_ep_put_short,
        .ep_put_bcopy             = gdr_ep_put_bcopy,
        .ep_put_zcopy             = gdr_ep_put_zcopy,
        .ep_get_bcopy             = gdr_ep_get_bcopy,
        .ep_get_zcopy             = gdr_ep_get_zcopy,
        .ep_am_short              = gdr_ep_am_short,
        .ep_am_short_iov          = gdr_ep_am_short_iov,
        .ep_am_bcopy              = gdr_ep_am_bcopy,
        .ep_am_zcopy              = gdr_ep_am_zcopy,
        .ep_atomic_cswap64        = gdr_ep_atomic_cswap64,
        .ep_atomic64_post         = gdr_ep_atomic64_post,
        .ep_atomic64_fetch        = gdr_ep_atomic64_fetch,
        .ep_atomic_cswap32        = gdr_ep_atomic_cswap32,
        .ep_atomic32_post         = gdr_ep_atomic32_post,
        .ep_atomic32_fetch        = gdr_ep_atomic32_fetch,
        .ep_pending_add           = gdr_ep_pending_add,
        .ep_pending_purge         = gdr_ep_pending_purge,
        .ep_flush                 = gdr_ep_flush,
        .ep_fence                 = gdr_ep_fence,
        .ep_check                 = gdr_ep_check,
        .ep_create                = UCS_CLASS_NEW_FUNC_NAME(gdr_ep_t),
        .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(gdr_ep_t),
        .ep_get_address           = gdr_ep_get_address,
        .ep_connect_to_ep         = gdr_ep_connect_to_ep,
        .iface_flush              = gdr_iface_flush,
        .iface_fence              = gdr_iface_fence,
        .iface_progress_enable    = uct_base_iface_progress_enable,
        .iface_progress_disable   = uct_base_iface_progress_disable,
        .iface_progress           = gdr_iface_progress,
        .iface_event_fd_get       = gdr_iface_event_fd_get,
        .iface_event_arm          = gdr_iface_event_arm,
        .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(gdr_iface_t),
        .iface_query              = gdr_iface_query,
        .iface_get_device_address = gdr_iface_get_device_address,
        .iface_get_address        = (uct_iface_get_address_func_t)
                ucs_empty_function_return_success,
        .iface_is_reachable = gdr_iface_is_reachable};

GDR_COMPAT_DEFINE_EP_CONNECT_TO_EP_V2(gdr_ep_connect_to_ep_v2_op,
                                      gdr_ep_connect_to_ep)
GDR_COMPAT_DEFINE_IFACE_IS_REACHABLE_V2(gdr_iface_is_reachable_v2_op,
                                        gdr_iface_is_reachable,
                                        gdr_iface_is_same_device)
GDR_COMPAT_DEFINE_EP_IS_CONNECTED(gdr_ep_is_connected_op,
                                  gdr_ep_is_connected_to)

/* One member a line, whichever of them this release has */
/* clang-format off */
static uct_iface_internal_ops_t gdr_iface_internal_ops = {
        GDR_COMPAT_IFACE_INTERNAL_OPS_COMMON
        GDR_COMPAT_EP_CONNECT_TO_EP_V2_OP(gdr_ep_connect_to_ep_v2_op)
        GDR_COMPAT_IFACE_IS_REACHABLE_V2_OP(gdr_iface_is_reachable_v2_op)
        GDR_COMPAT_EP_IS_CONNECTED_OP(gdr_ep_is_connected_op)
};
/* clang-format on */


/* ------------------------------------------------ component and tl ----- */

static ucs_status_t
gdr_component_md_open(uct_component_t *component, const char *md_name,
                      const uct_md_config_t *config, uct_md_h *md_p)
{
    return gdr_md_open(&gdr_md_ops, component, md_name, config, md_p);
}

static ucs_status_t
gdr_component_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                          GDR_COMPAT_RKEY_UNPACK_PARAMS_ARG uct_rkey_t *rkey_p,
                          void **handle_p)
{
    return gdr_md_rkey_unpack(component, rkey_buffer, rkey_p, handle_p);
}

GDR_COMPAT_DEFINE_RKEY_COMPARE(gdr_component_rkey_compare, gdr_md_rkey_compare)

/* clang-format off */
static uct_component_t gdr_component = {
        .query_md_resources = gdr_md_query_resources,
        .md_open            = gdr_component_md_open,
        .cm_open            = (uct_component_cm_open_func_t)
                ucs_empty_function_return_unsupported,
        .rkey_unpack        = gdr_component_rkey_unpack,
        GDR_COMPAT_RKEY_COMPARE_OP(gdr_component_rkey_compare)
        .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                ucs_empty_function_return_unsupported,
        .rkey_release       = gdr_md_rkey_release,
        .name               = GDR_COMPONENT_NAME,
        .md_config          = {
                .name   = "GPUDirect RDMA memory domain",
                .prefix = GDR_CONFIG_PREFIX,
                .table  = gdr_md_config_table,
                .size   = sizeof(gdr_md_config_t),
        },
        .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
        .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&gdr_component),
        .flags              = 0,
        .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};
/* clang-format on */

/* The md's device: the device layer knows no md */
static ucs_status_t gdr_rc_query_devices(uct_md_h md,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p)
{
    return gdr_device_query_tl_devices(&ucs_derived_of(md, gdr_md_t)->dev,
                                       devices_p, num_devices_p);
}

static ucs_status_t gdr_rc_iface_open(uct_md_h md, uct_worker_h worker,
                                      const uct_iface_params_t *params,
                                      const uct_iface_config_t *config,
                                      uct_iface_h *iface_p)
{
    return UCS_CLASS_NEW_FUNC_NAME(
            gdr_iface_t)(&gdr_iface_ops, &gdr_iface_internal_ops, md, worker,
                         params, config, iface_p);
}

static uct_tl_t gdr_rc_tl = {.name          = GDR_TL_NAME,
                             .query_devices = gdr_rc_query_devices,
                             .iface_open    = gdr_rc_iface_open,
                             .config        = {
                                            .name   = GDR_TL_NAME " transport",
                                            .prefix = GDR_CONFIG_PREFIX,
                                            .table  = gdr_iface_config_table,
                                            .size   = sizeof(gdr_iface_config_t),
                             }};

static int gdr_registered;

/* Another copy of this library registered already: e.g. UCX >= 1.22 loaded
 * one from its module directory and LD_PRELOAD brought another.  Two
 * components of one name would make every md and transport appear twice. */
static int gdr_component_is_registered(void)
{
    uct_component_t *component;

    ucs_list_for_each(component, &uct_components_list, list) {
        if (!strcmp(component->name, GDR_COMPONENT_NAME)) {
            return 1;
        }
    }
    return 0;
}

static void __attribute__((constructor)) gdr_component_init(void)
{
    char reason[256];

    if (gdr_abi_check(reason, sizeof(reason)) != 0) {
        /* One line, on stderr: logging may not even be usable on a foreign UCX */
        fprintf(stderr,
                "libuct_gdr: not registering component '" GDR_COMPONENT_NAME
                "': %s\n",
                reason);
        return;
    }
    if (gdr_component_is_registered()) {
        return; /* the first copy serves; this one stays inert */
    }

    ucs_list_add_tail(&gdr_component.tl_list, &gdr_rc_tl.list);
    ucs_list_add_tail(&ucs_config_global_list, &gdr_component.md_config.list);
    ucs_list_add_tail(&ucs_config_global_list, &gdr_rc_tl.config.list);
    ucs_list_add_tail(&uct_components_list, &gdr_component.list);
    gdr_registered = 1;
}

static void __attribute__((destructor)) gdr_component_cleanup(void)
{
    if (!gdr_registered) {
        return;
    }
    ucs_list_del(&gdr_component.list);
    ucs_list_del(&gdr_rc_tl.config.list);
    ucs_list_del(&gdr_component.md_config.list);
    ucs_list_del(&gdr_rc_tl.list);
    gdr_registered = 0;
}
