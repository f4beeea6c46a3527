/**
 * gdr_compat.h - the one place where the gdr component knows that UCX changes.
 *
 * UCT's internal interfaces change in every minor release: the md ops (query,
 * mem_reg, mkey_pack, mem_query, mem_alloc...), the component's rkey ops, the
 * iface's internal ops, the registration cache and memory pool APIs.  This
 * directory is the seam at the bottom of the glue: it knows UCX, and nothing of
 * gdr's objects.  The glue's files call its shims; the component at the top
 * (gdr_component.c) builds every ops table from the glue's version-neutral
 * entry points with its table shapes:
 *
 *   gdr_compat.h      the shims the glue calls (this file): registration cache
 *                     settings, PCI bandwidth, the neutral md answers
 *   gdr_compat_ucs.h  those that need only UCS's installed headers (tests use
 *                     them too): rcache lookups and ops, memory pools
 *   gdr_compat_ops.h  the shapes of the ops tables' members (the component's)
 *   gdr_compat.c      what is too long to inline: PCI bandwidth, the iface's
 *                     performance estimate
 *   probes/<F>.c      one feature each: compiles exactly when the UCX source tree
 *                     has that feature; cmake/GdrUcxFeatures.cmake turns the
 *                     results into GDR_UCX_HAVE_<FEATURE> (gdr_ucx_features.h)
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

/* ------------------------------------------------- md, neutrally ------- */

/* What an md can do, whichever attr struct UCX asks it in (gdr_compat_ops.h
 * fills that struct from it) */
typedef struct gdr_compat_md_caps {
    uint64_t flags; /* UCT_MD_FLAG_* */
    size_t max_alloc;
    size_t max_reg;
    uint64_t reg_mem_types;
    uint64_t alloc_mem_types;
    uint64_t detect_mem_types;
    uint64_t access_mem_types;
    size_t rkey_packed_size;
    ucs_linear_func_t reg_cost;
} gdr_compat_md_caps_t;

/* What an md knows of a (CUDA) buffer, whichever mem attr struct UCX asks it in */
typedef struct gdr_compat_mem_info {
    ucs_memory_type_t mem_type;
    ucs_sys_device_t sys_dev; /* the GPU; UCS_SYS_DEVICE_ID_UNKNOWN */
    void *base_address; /* of the whole allocation */
    size_t alloc_length;
} gdr_compat_mem_info_t;

#endif
