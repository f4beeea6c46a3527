/**
 * gdr_abi.c - see gdr_abi.h.
 *
 * The loader (src/loader/gdr_loader.c) has already compared the running UCX's
 * major.minor with the one we were built for; this checks what a patch
 * release or a vendor's build could still change under the same version: the
 * sizes of the UCX classes our iface and ep derive from, against the
 * ucs_class_t descriptors libuct exports.
 */
#include "gdr_uct.h"
#include "gdr_abi.h"

#include <stdio.h>

/* uct_iface.h declares it under the name of its handle type; libuct exports
 * the class as uct_iface_t_class */
extern ucs_class_t UCS_CLASS_NAME(uct_iface_t);

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
    if (gdr_abi_check_class("uct_iface_t", &UCS_CLASS_NAME(uct_iface_t),
                            sizeof(uct_iface_t), reason, reason_len) ||
        gdr_abi_check_class("uct_base_iface_t",
                            &UCS_CLASS_NAME(uct_base_iface_t),
                            sizeof(uct_base_iface_t), reason, reason_len) ||
        gdr_abi_check_class("uct_ep_t", &UCS_CLASS_NAME(uct_ep_t),
                            sizeof(uct_ep_t), reason, reason_len) ||
        gdr_abi_check_class("uct_base_ep_t", &UCS_CLASS_NAME(uct_base_ep_t),
                            sizeof(uct_base_ep_t), reason, reason_len)) {
        return -1;
    }
    return 0;
}
