/* uct_md_ops_t has is_sockaddr_accessible (in 1.13.1; gone by 1.16.0) */
#include "probe.h"
GDR_PROBE_MEMBER(uct_md_ops_t, is_sockaddr_accessible);
