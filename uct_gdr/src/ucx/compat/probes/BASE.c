/* the probe setup itself works: every other probe is meaningless if this one fails */
#include "probe.h"
GDR_PROBE_MEMBER(uct_md_ops_t, mem_reg);
