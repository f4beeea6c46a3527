/* uct_ib_iface_config_t.send_overhead: UCX's ib transports estimate each operation's send
 * overheads (wqe_post, db, bcopy, cqe, wqe_fetch: UCX_<TL>_SEND_OVERHEAD) in estimate_perf, which
 * protocol v2 reads (1.17 and later; before, the iface overhead alone, as UCT's base estimate) */
#include "probe.h"
#include <uct/ib/base/ib_iface.h>
GDR_PROBE_MEMBER(uct_ib_iface_config_t, send_overhead);
