/* md query fills uct_md_attr_v2_t (not in 1.13.1; in 1.16.0 and later) instead of uct_md_attr_t */
#include "probe.h"
GDR_PROBE_TYPE(((uct_md_ops_t *)0)->query,
               ucs_status_t (*)(uct_md_h, uct_md_attr_v2_t *));
