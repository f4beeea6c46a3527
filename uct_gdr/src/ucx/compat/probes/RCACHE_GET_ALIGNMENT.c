/* ucs_rcache_get takes the alignment per call; ucs_rcache_params_t lost
 * max_alignment (not in 1.16.0; in 1.18.1 and later) */
#include "probe.h"
GDR_PROBE_TYPE(&ucs_rcache_get,
               ucs_status_t (*)(ucs_rcache_t *, void *, size_t, size_t, int,
                                void *, ucs_rcache_region_t **));
