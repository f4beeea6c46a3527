/* ucs_mpool_init takes ucs_mpool_params_t (not in 1.13.1; in 1.16.0 and later) */
#include "probe.h"
GDR_PROBE_TYPE(&ucs_mpool_init,
               ucs_status_t (*)(const ucs_mpool_params_t *, ucs_mpool_t *));
