/* the registration-cache settings are UCS's ucs_rcache_config_t/ucs_config_rcache_table
 * (not in 1.13.1; in 1.16.0 and later), no longer uct_md_rcache_config_t/uct_md_config_rcache_table */
#include "probe.h"
static ucs_rcache_config_t probe_config;
static ucs_config_field_t *probe_table                = ucs_config_rcache_table;
static void (*probe_set)(ucs_rcache_params_t *,
                         const ucs_rcache_config_t *) = ucs_rcache_set_params;
