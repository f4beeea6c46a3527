/* rkey_unpack takes uct_rkey_unpack_params_t (not in 1.18.1; in 1.22.0) */
#include "probe.h"
GDR_PROBE_TYPE(((uct_component_t *)0)->rkey_unpack,
               ucs_status_t (*)(uct_component_t *, const void *,
                                const uct_rkey_unpack_params_t *, uct_rkey_t *,
                                void **));
