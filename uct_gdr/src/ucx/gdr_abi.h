/**
 * gdr_abi.h - load-time ABI guard.
 *
 * The plugin is compiled against the internal headers of one UCX release.
 * Internal structures (uct_component_t, uct_base_iface_t, ...) change between
 * releases, so registering into any other UCX would corrupt memory.  The
 * loader (libuct_gdr.so) compares the running UCX's version with the one we
 * were built for before it loads us; this compares the class sizes.
 */
#ifndef GDR_ABI_H_
#define GDR_ABI_H_

#include <stddef.h>

/** 0 when the running UCX's classes match the build; else -1 and a one-line reason. */
int gdr_abi_check(char *reason, size_t reason_len);

#endif
