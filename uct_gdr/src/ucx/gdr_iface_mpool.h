/**
 * gdr_iface_mpool.h - transport "gdr_rc": the interface's memory pools and the SRQ's refill
 * (gdr_iface_mpool.c).
 */
#ifndef GDR_IFACE_MPOOL_H_
#define GDR_IFACE_MPOOL_H_

#include "gdr_iface_types.h"

/* The iface's memory pools: bounce buffers, ops, and receive buffers laid out as
 * @a params ask, which uct_iface_release_desc() returns (gdr_iface_mpool.c).  Cleanup
 * leak-checks the tx pools when @a leak_check; receive buffers never (the SRQ took the
 * posted ones with it). */
ucs_status_t gdr_iface_mpools_init(gdr_iface_t *iface,
                                   const uct_iface_params_t *params,
                                   const gdr_iface_config_t *config);
void gdr_iface_mpools_cleanup(gdr_iface_t *iface, int leak_check);

/* Refills the SRQ from the receive pool: at open, and from progress as completions free
 * buffers.  Beside the pools: the descriptors it posts are placed where the iface params'
 * alignment puts their payload, which UBSan's alignment check does not accept in UCX's inline
 * pool accessors (the sanitized build exempts this file and the progress file only). */
void gdr_iface_post_recv(gdr_iface_t *iface);

#endif
