/* internal ops have iface_is_reachable_v2 (not in 1.13.1; in 1.16.0 and later; UCP selects lanes through it) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_iface_internal_ops_t, iface_is_reachable_v2);
