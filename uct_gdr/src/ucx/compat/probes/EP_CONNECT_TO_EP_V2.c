/* internal ops have ep_connect_to_ep_v2 (not in 1.13.1; in 1.16.0 and later; UCP wires up through it) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_iface_internal_ops_t, ep_connect_to_ep_v2);
