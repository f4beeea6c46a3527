/* uct_md_ops_t has mem_attach (exported memory keys; not in 1.13.1; in 1.16.0 and later) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_md_ops_t, mem_attach);
