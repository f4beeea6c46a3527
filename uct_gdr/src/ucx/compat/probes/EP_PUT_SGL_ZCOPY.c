/* internal ops have ep_put_sgl_zcopy (not in 1.18.1; in 1.22.0) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_iface_internal_ops_t, ep_put_sgl_zcopy);
