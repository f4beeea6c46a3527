/**
 * gdr_md_rcache.c - md gdr's registration-cache lookup: the region ucs_rcache
 * hands back is used only if it is still right for the request.
 *
 * Apart from the md (its ucs_rcache_ops_t, in gdr_md.c, do the registering)
 * so that the GPU test drives this very loop over CUDA memory without an HCA
 * (tests/cuda/test_gdr_cuda_rcache.cpp) and a host test its access rule
 * (tests/cuda/test_gdr_md_rcache.cpp).
 */
#include "gdr_md.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>
#include <sys/mman.h>

/* ucs_rcache_get() merges overlapping regions but gives no way to say "not
 * this one": a region dropped here is registered again by the next get.  Two
 * drops in a row are the most a request needs (one for missing rights, one for
 * a freed allocation); a third means the cache keeps returning what it was
 * told to drop. */
#define GDR_RCACHE_GET_ATTEMPTS 3

int gdr_rcache_region_usable(const gdr_rcache_region_t *region, int access)
{
    if ((region->memh.access & access) != access) {
        return 0;
    }
    /* No memory event tells us about cuMemFree (Debian's UCX has no UCM CUDA
     * hooks): a buffer id that changed does, also after a reallocation at the
     * same address */
    return (region->cuda_buffer_id == 0) ||
           !gdr_cuda_region_is_stale((void *)region->super.super.start,
                                     region->cuda_buffer_id);
}

ucs_status_t gdr_rcache_get_usable(ucs_rcache_t *rcache, void *address,
                                   size_t length, gdr_rcache_reg_arg_t *arg,
                                   gdr_rcache_region_t **region_p)
{
    gdr_rcache_region_t *region;
    ucs_rcache_region_t *rregion;
    ucs_status_t status;
    int attempt;

    for (attempt = 0; attempt < GDR_RCACHE_GET_ATTEMPTS; ++attempt) {
        status = gdr_compat_rcache_get(rcache, address, length,
                                       ucs_get_page_size(),
                                       PROT_READ | PROT_WRITE, arg, &rregion);
        if (status != UCS_OK) {
            return status;
        }
        region = ucs_derived_of(rregion, gdr_rcache_region_t);
        if (gdr_rcache_region_usable(region, arg->access)) {
            *region_p = region;
            return UCS_OK;
        }
        /* drop it from the cache (holders keep their MRs until they put); the
         * new registration allows what the old one did too, since its users
         * may look the range up again */
        ucs_debug("gdr: rcache region %p..%p %s, registering again",
                  (void *)region->super.super.start,
                  (void *)region->super.super.end,
                  ((region->memh.access & arg->access) != arg->access) ?
                          "lacks access rights" :
                          "belongs to a freed CUDA allocation");
        arg->access |= region->memh.access;
        ucs_rcache_region_invalidate(
                rcache, rregion,
                (ucs_rcache_invalidate_comp_func_t)ucs_empty_function, NULL);
        ucs_rcache_region_put(rcache, rregion);
    }
    ucs_error("gdr: registration cache keeps returning unusable regions for "
              "%p..%p",
              address, UCS_PTR_BYTE_OFFSET(address, length));
    return UCS_ERR_IO_ERROR;
}
