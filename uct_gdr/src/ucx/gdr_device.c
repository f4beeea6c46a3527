/**
 * gdr_device.c - a verbs device as the transport's devices: one per active port,
 * named "<device>:<port>" as UCX's ib transports name theirs, with the PCI device UCX's
 * topology knows it by.
 */
#include "gdr_device.h"
#include "gdr_topo.h" /* the PCI address parser */

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/sys/topo/base/topo.h>

/* "<device>:<port>" */
static void gdr_device_port_name(const gdr_device_t *dev, unsigned port_index,
                                 char *name, size_t max)
{
    ucs_snprintf_zero(name, max, "%s:%u", dev->name,
                      dev->ports[port_index].port_num);
}

static ucs_sys_device_t gdr_device_sys_dev(const gdr_device_t *dev)
{
    ucs_sys_device_t sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    gdr_pci_addr_t pci;
    ucs_sys_bus_id_t bus_id;

    if (gdr_topo_parse_pci_address(dev->pci_bdf, &pci, NULL) != UCS_OK) {
        return sys_dev; /* virtual device (rxe, siw): no PCI location */
    }
    bus_id.domain   = pci.domain;
    bus_id.bus      = pci.bus;
    bus_id.slot     = pci.device;
    bus_id.function = pci.function;
    if (ucs_topo_find_device_by_bus_id(&bus_id, &sys_dev) != UCS_OK) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    return sys_dev;
}

ucs_status_t gdr_device_query_tl_devices(const gdr_device_t *dev,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p)
{
    ucs_sys_device_t sys_dev = gdr_device_sys_dev(dev);
    uct_tl_device_resource_t *devices;
    unsigned p;

    /* the md opened only a device with an active port (gdr_verbs_open) */
    devices = ucs_calloc(dev->num_ports, sizeof(*devices), "gdr_tl_devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (p = 0; p < dev->num_ports; ++p) {
        gdr_device_port_name(dev, p, devices[p].name, sizeof(devices[p].name));
        devices[p].type       = UCT_DEVICE_TYPE_NET;
        devices[p].sys_device = sys_dev;
    }
    *devices_p     = devices;
    *num_devices_p = dev->num_ports;
    return UCS_OK;
}

ucs_status_t gdr_device_find_port(const gdr_device_t *dev, const char *dev_name,
                                  uint8_t *port_num_p)
{
    char name[UCT_DEVICE_NAME_MAX];
    unsigned p;

    for (p = 0; p < dev->num_ports; ++p) {
        gdr_device_port_name(dev, p, name, sizeof(name));
        if (!strcmp(name, dev_name)) {
            *port_num_p = dev->ports[p].port_num;
            return UCS_OK;
        }
    }
    return UCS_ERR_NO_DEVICE;
}
