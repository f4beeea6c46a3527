/**
 * gdr_compat_ucs.h - the part of the compatibility seam (gdr_compat.h) that
 * needs only UCS's installed headers: the registration cache and memory pool
 * APIs as they changed between UCX releases.  C and C++ (tests use it too).
 */
#ifndef GDR_COMPAT_UCS_H_
#define GDR_COMPAT_UCS_H_

#include "gdr_ucx_features.h"

#include <ucs/datastruct/mpool.h>
#include <ucs/memory/rcache.h>

/* Regions of @a params start aligned to @a alignment, and lookups may ask for
 * up to @a max_alignment: set in the params by old releases; later ones take
 * the alignment per lookup (gdr_compat_rcache_get) */
static inline void gdr_compat_rcache_params_align(ucs_rcache_params_t *params,
                                                  size_t alignment,
                                                  size_t max_alignment)
{
#ifndef GDR_UCX_HAVE_RCACHE_GET_ALIGNMENT
    params->alignment     = alignment;
    params->max_alignment = max_alignment;
#else
    (void)params;
    (void)alignment;
    (void)max_alignment;
#endif
}

static inline ucs_status_t
gdr_compat_rcache_get(ucs_rcache_t *rcache, void *address, size_t length,
                      size_t alignment, int prot, void *arg,
                      ucs_rcache_region_t **region_p)
{
#ifdef GDR_UCX_HAVE_RCACHE_GET_ALIGNMENT
    return ucs_rcache_get(rcache, address, length, alignment, prot, arg,
                          region_p);
#else
    return ucs_rcache_get(rcache, address, length, prot, arg, region_p);
#endif
}

/* The rcache ops' merge callback, where the rcache calls one (it does so
 * unconditionally: a table without it crashes on the first overlap); the
 * macro for C initializers, the function for code */
#ifdef GDR_UCX_HAVE_RCACHE_OPS_MERGE
#define GDR_COMPAT_RCACHE_OPS_MERGE(_func) .merge = (_func),
#else
#define GDR_COMPAT_RCACHE_OPS_MERGE(_func)
#endif

typedef void (*gdr_compat_rcache_merge_func_t)(void *context,
                                               ucs_rcache_t *rcache, void *arg,
                                               ucs_rcache_region_t *region);

static inline void
gdr_compat_rcache_ops_merge(ucs_rcache_ops_t *ops,
                            gdr_compat_rcache_merge_func_t func)
{
#ifdef GDR_UCX_HAVE_RCACHE_OPS_MERGE
    ops->merge = func;
#else
    (void)ops;
    (void)func;
#endif
}


/* ---------------------------------------------------- memory pools ------- */

static inline ucs_status_t
gdr_compat_mpool_init(ucs_mpool_t *mp, size_t priv_size, size_t elem_size,
                      size_t align_offset, size_t alignment,
                      unsigned elems_per_chunk, unsigned max_elems,
                      ucs_mpool_ops_t *ops, const char *name)
{
#ifdef GDR_UCX_HAVE_MPOOL_PARAMS
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.priv_size       = priv_size;
    params.elem_size       = elem_size;
    params.align_offset    = align_offset;
    params.alignment       = alignment;
    params.elems_per_chunk = elems_per_chunk;
    params.max_elems       = max_elems;
    params.ops             = ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, priv_size, elem_size, align_offset, alignment,
                          elems_per_chunk, max_elems, ops, name);
#endif
}


#endif
