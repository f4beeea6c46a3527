/**
 * gdr_component.c - registers component "gdr" (an md "gdr_<device>" per verbs
 * device, tl "gdr_rc") in the UCX that loaded us.
 *
 * UCX up to 1.21 only loads the modules compiled into it, so we register from
 * our own ELF constructor, which runs after libucs/libuct's (we depend on
 * them): LD_PRELOAD, linking, or dlopen before ucp_init() all work.  UCX 1.22
 * also dlopens lib<framework>_<name>.so from its module directory and
 * UCX_PLUGIN_PATH: the same constructor registers us then.  Registration is
 * what UCT_COMPONENT_REGISTER/UCT_TL_DEFINE would do, but done by hand so that
 * the ABI guard runs first and nothing is registered on a mismatching UCX.
 */
#include "gdr_iface.h"
#include "gdr_abi.h"

#include <ucs/debug/log.h>
#include <stdio.h>
#include <string.h>

uct_component_t gdr_component = {
        .query_md_resources = gdr_md_query_resources,
        .md_open            = gdr_md_open,
        .cm_open            = (uct_component_cm_open_func_t)
                ucs_empty_function_return_unsupported,
        GDR_COMPAT_COMPONENT_RKEY_OPS.rkey_ptr = (uct_component_rkey_ptr_func_t)
                ucs_empty_function_return_unsupported,
        .rkey_release = gdr_md_rkey_release,
        .name         = GDR_COMPONENT_NAME,
        .md_config =
                {
                        .name   = "GPUDirect RDMA memory domain",
                        .prefix = GDR_CONFIG_PREFIX,
                        .table  = gdr_md_config_table,
                        .size   = sizeof(gdr_md_config_t),
                },
        .cm_config   = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
        .tl_list     = UCT_COMPONENT_TL_LIST_INITIALIZER(&gdr_component),
        .flags       = 0,
        .md_vfs_init = (uct_component_md_vfs_init_func_t)ucs_empty_function};

uct_tl_t gdr_rc_tl = {.name          = GDR_TL_NAME,
                      .query_devices = gdr_device_query_tl_devices,
                      .iface_open    = UCS_CLASS_NEW_FUNC_NAME(gdr_iface_t),
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
