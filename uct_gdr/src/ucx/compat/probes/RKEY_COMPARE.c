/* uct_component_t has rkey_compare (not in 1.13.1; in 1.16.0 and later; UCP calls it unconditionally) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_component_t, rkey_compare);
