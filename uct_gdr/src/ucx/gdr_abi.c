/**
 * gdr_abi.c - see gdr_abi.h.
 *
 * UCX has no runtime version call below UCP, so the version comes from
 * ucp_get_version() in the libucp that sits beside the libuct we are linked
 * to (RTLD_NOLOAD first: UCP applications already have it).  Class sizes come
 * from the ucs_class_t descriptors libuct exports.
 *
 * GDR_ABI_SKEW (a test build only) pretends to be built for another minor
 * release, to prove the guard fires.
 */
#include "gdr_uct.h"
#include "gdr_abi.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#ifndef GDR_ABI_SKEW
#  define GDR_ABI_SKEW 0
#endif

/* uct_iface.h declares it under the name of its handle type; libuct exports
 * the class as uct_iface_t_class */
extern ucs_class_t UCS_CLASS_NAME(uct_iface_t);

typedef void (*gdr_ucp_get_version_func_t)(unsigned*, unsigned*, unsigned*);

static gdr_ucp_get_version_func_t gdr_abi_find_ucp_get_version(void)
{
    gdr_ucp_get_version_func_t func;
    char path[PATH_MAX];
    Dl_info info;
    void *handle;

    func = (gdr_ucp_get_version_func_t)dlsym(RTLD_DEFAULT, "ucp_get_version");
    if (func != NULL) {
        return func;
    }

    /* A pure-UCT process (e.g. ucx_perftest -x): load the sibling libucp */
    if (!dladdr((void*)&uct_components_list, &info) || (info.dli_fname == NULL)) {
        return NULL;
    }
    snprintf(path, sizeof(path), "%s", info.dli_fname);
    snprintf(path + strlen(dirname(path)), sizeof(path) - strlen(path),
             "/libucp.so.0");
    handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    return (handle == NULL) ? NULL :
           (gdr_ucp_get_version_func_t)dlsym(handle, "ucp_get_version");
}

static int gdr_abi_check_class(const char *name, const ucs_class_t *cls,
                               size_t expected, char *reason, size_t reason_len)
{
    if (cls->size == expected) {
        return 0;
    }
    snprintf(reason, reason_len, "UCX class %s has size %zu, built for %zu",
             name, cls->size, expected);
    return -1;
}

int gdr_abi_check(char *reason, size_t reason_len)
{
    const unsigned built_major = UCT_VERNO_MAJOR;
    const unsigned built_minor = UCT_VERNO_MINOR + GDR_ABI_SKEW;
    gdr_ucp_get_version_func_t get_version;
    unsigned major, minor, release;

    get_version = gdr_abi_find_ucp_get_version();
    if (get_version == NULL) {
        snprintf(reason, reason_len, "cannot find ucp_get_version() to check the "
                 "UCX version (built for %u.%u)", built_major, built_minor);
        return -1;
    }

    get_version(&major, &minor, &release);
    if ((major != built_major) || (minor != built_minor)) {
        snprintf(reason, reason_len, "built for UCX %u.%u but running in UCX "
                 "%u.%u.%u; rebuild ucx-gdr against this UCX",
                 built_major, built_minor, major, minor, release);
        return -1;
    }

    if (gdr_abi_check_class("uct_iface_t", &UCS_CLASS_NAME(uct_iface_t),
                            sizeof(uct_iface_t), reason, reason_len) ||
        gdr_abi_check_class("uct_base_iface_t", &UCS_CLASS_NAME(uct_base_iface_t),
                            sizeof(uct_base_iface_t), reason, reason_len) ||
        gdr_abi_check_class("uct_ep_t", &UCS_CLASS_NAME(uct_ep_t),
                            sizeof(uct_ep_t), reason, reason_len) ||
        gdr_abi_check_class("uct_base_ep_t", &UCS_CLASS_NAME(uct_base_ep_t),
                            sizeof(uct_base_ep_t), reason, reason_len)) {
        return -1;
    }
    return 0;
}
