/* mem_query fills uct_md_mem_attr_v2_t (not in 1.18.1; in 1.22.0) */
#include "probe.h"
GDR_PROBE_TYPE(((uct_md_ops_t *)0)->mem_query,
               ucs_status_t (*)(uct_md_h, const void *, size_t,
                                uct_md_mem_attr_v2_t *));
