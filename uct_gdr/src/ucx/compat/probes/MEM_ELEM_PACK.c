/* uct_md_ops_t has mem_elem_pack (device-side API; not in 1.18.1; in 1.22.0) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_md_ops_t, mem_elem_pack);
