/* the registration cache merges overlapping regions through ops->merge, which it
 * calls unconditionally (not in 1.16.0; in 1.18.1 and later) */
#include "probe.h"
GDR_PROBE_MEMBER(ucs_rcache_ops_t, merge);
