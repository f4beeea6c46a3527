/* uct_md_base_md_query() sets the defaults of every uct_md_attr_v2_t field (not in 1.16.0; in 1.18.1 and later) */
#include "probe.h"
static void (*probe)(uct_md_attr_v2_t *) = uct_md_base_md_query;
