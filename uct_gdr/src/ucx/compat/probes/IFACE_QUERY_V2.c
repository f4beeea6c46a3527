/* internal ops have iface_query_v2 (not in 1.18.1; in 1.22.0; UCP's protocols call it) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_iface_internal_ops_t, iface_query_v2);
