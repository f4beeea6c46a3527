/* ucs_align_up and friends live in ucs/sys/ptr_arith.h (not in 1.16.0; in 1.18.1 and later) */
#include "probe.h"
#include <ucs/sys/ptr_arith.h>
