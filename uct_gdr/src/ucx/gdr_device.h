/**
 * gdr_device.h - a verbs device's active ports as transport gdr_rc's devices (gdr_device.c):
 * one per port, named "<device>:<port>" as UCX's ib transports name theirs.  It takes the
 * device, and knows no md: the component hands it the md's device.
 */
#ifndef GDR_DEVICE_H_
#define GDR_DEVICE_H_

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "../verbs/gdr_verbs.h"

#include <uct/base/uct_iface.h>

/* uct_tl_t.query_devices of gdr_rc, for the md's device @a dev: its active ports */
ucs_status_t gdr_device_query_tl_devices(const gdr_device_t *dev,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p);

/* "mlx5_0:1" -> the port number on @a dev; UCS_ERR_NO_DEVICE (not logged) when
 * @a dev has no such active port */
ucs_status_t gdr_device_find_port(const gdr_device_t *dev, const char *dev_name,
                                  uint8_t *port_num_p);

#endif
