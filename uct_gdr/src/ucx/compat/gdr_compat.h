/**
 * gdr_compat.h - the one place where the gdr component knows that UCX changes.
 *
 * UCT's internal interfaces change in every minor release: the md ops (query,
 * mem_reg, mkey_pack, mem_query, mem_alloc...), the component's rkey ops, the
 * iface's internal ops, the registration cache and memory pool APIs.  The rest
 * of the glue (the .c files of src/ucx/) is written against version-neutral entry
 * points (gdr_md.h, gdr_iface.h, gdr_ep.h: "Version-neutral entry points");
 * this directory adapts them to the UCX being built against:
 *
 *   gdr_compat.h   small inline helpers the glue calls (this file), and
 *   gdr_compat_ucs.h  those that need only UCS's installed headers (tests use
 *                  them too)
 *   gdr_compat.c   the version-shaped tables: gdr_md_ops, the component's rkey
 *                  ops, gdr_iface_internal_ops, and their adapters
 *   probes/<F>.c   one feature each: compiles exactly when the UCX source tree
 *                  has that feature; cmake/GdrUcxFeatures.cmake turns the
 *                  results into GDR_UCX_HAVE_<FEATURE> (gdr_ucx_features.h)
 *
 * Decisions are made by the shape UCX has, never by its version number, and no
 * file outside compat/ tests a GDR_UCX_HAVE_* macro.  The ABI guard (gdr_abi.c)
 * still refuses to register in any UCX other than the one built against: the
 * shapes here are compile-time facts about that one release.
 */
#ifndef GDR_COMPAT_H_
#define GDR_COMPAT_H_

#include "gdr_compat_ucs.h"

#include <uct/base/uct_md.h>
#include <ucs/time/time.h>
#ifdef GDR_UCX_HAVE_PTR_ARITH_H
#include <ucs/sys/ptr_arith.h> /* ucs_align_up() moved here */
#endif


/* ---------------------------------------------- registration cache ------- */

/* UCX_GDR_RCACHE_* settings: the md's own table in old releases, UCS's later */
#ifdef GDR_UCX_HAVE_UCS_RCACHE_CONFIG
typedef ucs_rcache_config_t gdr_compat_rcache_config_t;
#define GDR_COMPAT_RCACHE_CONFIG_TABLE ucs_config_rcache_table
#else
typedef uct_md_rcache_config_t gdr_compat_rcache_config_t;
#define GDR_COMPAT_RCACHE_CONFIG_TABLE uct_md_config_rcache_table
#endif

/* ucs_rcache_params_t from the settings; lookups align up to @a max_alignment */
static inline void
gdr_compat_rcache_params(ucs_rcache_params_t *params,
                         const gdr_compat_rcache_config_t *config,
                         size_t max_alignment)
{
#ifdef GDR_UCX_HAVE_UCS_RCACHE_CONFIG
    ucs_rcache_set_params(params, config);
#else
    uct_md_set_rcache_params(params, config);
#endif
#ifndef GDR_UCX_HAVE_RCACHE_GET_ALIGNMENT
    params->max_alignment = max_alignment; /* the settings gave the alignment */
#endif
}

/* Lookup cost of a cached registration, seconds: what UCX's own
 * uct_md_rcache_overhead() answered before it was removed */
static inline double
gdr_compat_rcache_overhead(const gdr_compat_rcache_config_t *config)
{
    return (config->overhead == UCS_TIME_AUTO) ?
                   180e-9 :
                   ucs_time_to_sec(config->overhead);
}

/* -------------------------------------------------------- iface ------- */

/* Bandwidth of the PCIe link of the device at @a pci_bdf ("" when virtual), bytes/s, as
 * rc_verbs' uct_ib_iface_query caps its bandwidth with it: DBL_MAX when unknown (gdr_compat.c) */
double gdr_compat_pci_bw(const char *dev_name, const char *pci_bdf);

/* UCT_IFACE_FLAG_INTER_NODE (UCX 1.17 and later, as rc_verbs sets it): without it UCP leaves
 * the transport out of a network-only worker address (UCP_WORKER_ADDRESS_FLAG_NET_ONLY, what
 * `ucx_info -e` connects with: "Destination is unreachable") and counts every endpoint on it
 * as intra-node.  Earlier UCX decided both by the device type. */
#ifdef UCT_IFACE_FLAG_INTER_NODE
#define GDR_COMPAT_IFACE_FLAG_INTER_NODE UCT_IFACE_FLAG_INTER_NODE
#else
#define GDR_COMPAT_IFACE_FLAG_INTER_NODE 0
#endif

/* ------------------------------------------------- version-shaped tables -- */

/* md "gdr"'s ops, built from the neutral entry points (gdr_compat.c) */
extern uct_md_ops_t gdr_md_ops;

/* the iface's internal ops (gdr_compat.c) */
extern uct_iface_internal_ops_t gdr_iface_internal_ops;

/* The component's rkey ops, for uct_component_t's initializer */
#ifdef GDR_UCX_HAVE_RKEY_UNPACK_PARAMS
ucs_status_t gdr_compat_rkey_unpack(uct_component_t *component,
                                    const void *rkey_buffer,
                                    const uct_rkey_unpack_params_t *params,
                                    uct_rkey_t *rkey_p, void **handle_p);
#define GDR_COMPAT_RKEY_UNPACK_OP .rkey_unpack = gdr_compat_rkey_unpack,
#else
#define GDR_COMPAT_RKEY_UNPACK_OP .rkey_unpack = gdr_md_rkey_unpack,
#endif
#ifdef GDR_UCX_HAVE_RKEY_COMPARE
ucs_status_t gdr_compat_rkey_compare(uct_component_t *component,
                                     uct_rkey_t rkey1, uct_rkey_t rkey2,
                                     const uct_rkey_compare_params_t *params,
                                     int *result);
#define GDR_COMPAT_RKEY_COMPARE_OP .rkey_compare = gdr_compat_rkey_compare,
#else
#define GDR_COMPAT_RKEY_COMPARE_OP
#endif
#define GDR_COMPAT_COMPONENT_RKEY_OPS \
    GDR_COMPAT_RKEY_UNPACK_OP         \
    GDR_COMPAT_RKEY_COMPARE_OP

#endif
