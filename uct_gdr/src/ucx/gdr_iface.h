/**
 * gdr_iface.h - transport "gdr_rc": an interface on one port of one device.
 *
 * One send CQ and one receive CQ (both on a completion channel, for UCP's worker wakeup), one
 * SRQ of active-message receive buffers, and an RC QP per endpoint (gdr_ep.h).  Bounce buffers
 * come from registered ucs_mpools; the pending queue is a ucs_arbiter, as in UCX's own rc
 * transports.  Its data (gdr_iface_types.h) sits below every file of it, so that the files
 * the open/close code calls need only the data, not the open/close code.  The iface's files,
 * one concern each:
 *   gdr_iface.c           open/close (CQs, SRQ, the port's QP settings)
 *   gdr_iface_config.c    UCX_GDR_* of the transport: the table and its range checks
 *   gdr_iface_mpool.c     registered memory pools: bounce buffers, receive buffers, ops,
 *                         and the SRQ's refill (gdr_iface_mpool.h)
 *   gdr_iface_progress.c  polling the CQs: receives, send completions, the pending queue
 *   gdr_iface_event.c     the event fd and arming it
 *   gdr_iface_query.c     uct_iface_query: capabilities and limits
 *   gdr_iface_address.c   the device address and what it says of peers
 */
#ifndef GDR_IFACE_H_
#define GDR_IFACE_H_

#include "gdr_iface_types.h"


/* An iface with the component's ops tables (gdr_component.c: uct_tl_t.iface_open), and
 * uct_iface_ops_t.iface_close */
UCS_CLASS_DECLARE_NEW_FUNC(gdr_iface_t, uct_iface_t, uct_iface_ops_t *,
                           uct_iface_internal_ops_t *, uct_md_h, uct_worker_h,
                           const uct_iface_params_t *,
                           const uct_iface_config_t *);
UCS_CLASS_DECLARE_DELETE_FUNC(gdr_iface_t, uct_iface_t);

/* uct_iface_ops_t members, each in the file of its concern (the component fills the
 * table) */
unsigned gdr_iface_progress(uct_iface_h iface);
/* gdr_ep_flush.c: the stall check, off the data path */
void gdr_iface_check_stalls(gdr_iface_t *iface);
ucs_status_t gdr_iface_event_fd_get(uct_iface_h iface, int *fd_p);
ucs_status_t gdr_iface_event_arm(uct_iface_h iface, unsigned events);
ucs_status_t gdr_iface_query(uct_iface_h iface, uct_iface_attr_t *attr);
ucs_status_t
gdr_iface_get_device_address(uct_iface_h iface, uct_device_addr_t *addr);
ucs_status_t
gdr_iface_flush(uct_iface_h iface, unsigned flags, uct_completion_t *comp);
ucs_status_t gdr_iface_fence(uct_iface_h iface, unsigned flags);

/*
 * Version-neutral entry points of the iface (the component puts them into
 * uct_iface_internal_ops_t where that UCX has the members)
 */
int gdr_iface_is_reachable(const uct_iface_h iface,
                           const uct_device_addr_t *dev_addr,
                           const uct_iface_addr_t *iface_addr);
/* dev_addr names the very port this iface is on */
int gdr_iface_is_same_device(const uct_iface_h iface,
                             const uct_device_addr_t *dev_addr);

/* Between the iface's files */

/* The settings' ranges, against what the device can do (gdr_iface_config.c) */
ucs_status_t gdr_iface_config_check(const gdr_iface_config_t *config,
                                    const gdr_device_t *dev);

/* The endpoint table (gdr_iface.c): an ep's QP number is added when its QP is
 * created (UCS_ERR_ALREADY_EXISTS if taken) and removed when it is destroyed */
ucs_status_t
gdr_iface_ep_add(gdr_iface_t *iface, gdr_ep_t *ep, uint32_t qp_num);
void gdr_iface_ep_remove(gdr_iface_t *iface, uint32_t qp_num);

/* Bytes of this iface's device address (gdr_iface_address.c) */
size_t gdr_iface_device_addr_len(const gdr_iface_t *iface);

#endif
