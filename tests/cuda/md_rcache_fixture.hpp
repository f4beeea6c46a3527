// What the md rcache tests share: a ucs_rcache of md gdr's region type (gdr_rcache_region_t) whose
// registration the test provides, so that gdr_rcache_get_usable() -- the md's own lookup -- runs
// without an HCA.
#pragma once

extern "C" {
#include "gdr_md.h"
}

#include <climits>
#include <cstdint>

namespace gdr_test {

/// A ucs_rcache of gdr_rcache_region_t over @a ops with @a context, page-aligned, unbounded, no
/// UCM events (no test frees under it behind its back: CUDA frees raise none without UCM's CUDA
/// hooks anyway) and no PFN check (device VAs have no host PFNs).
inline ucs_status_t create_md_rcache(const ucs_rcache_ops_t *ops, void *context, const char *name,
                                     size_t page, ucs_rcache_t **rcache_p)
{
    ucs_rcache_params_t params{};
    params.region_struct_size = sizeof(gdr_rcache_region_t);
    gdr_compat_rcache_params_align(&params, page, page);
    params.ucm_events     = 0;
    params.ops            = ops;
    params.context        = context;
    params.flags          = UCS_RCACHE_FLAG_NO_PFN_CHECK;
    params.max_regions    = ULONG_MAX;
    params.max_size       = SIZE_MAX;
    params.max_unreleased = SIZE_MAX;
    return ucs_rcache_create(&params, name, nullptr, rcache_p);
}

}  // namespace gdr_test
