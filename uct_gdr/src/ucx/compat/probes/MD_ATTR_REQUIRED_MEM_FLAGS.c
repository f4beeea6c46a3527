/* uct_md_attr_v2_t has required_mem_flags (not in 1.18.1; in 1.22.0): UCP only registers
 * memory that has them with the md */
#include "probe.h"
GDR_PROBE_MEMBER(uct_md_attr_v2_t, required_mem_flags);
