/* internal ops have ep_is_connected (not in 1.13.1; in 1.16.0 and later) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_iface_internal_ops_t, ep_is_connected);
