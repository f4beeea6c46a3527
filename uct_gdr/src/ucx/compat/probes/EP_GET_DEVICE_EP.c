/* internal ops have ep_get_device_ep (GPU-initiated device API; not in 1.18.1; in 1.22.0) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_iface_internal_ops_t, ep_get_device_ep);
