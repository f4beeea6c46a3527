/**
 * gdr_device.c - the md's verbs device as the transport's devices: one per active port,
 * named "<device>:<port>" as UCX's ib transports name theirs, with the PCI device UCX's
 * topology knows it by.
 */
#include "gdr_md.h"
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

ucs_status_t gdr_device_query_tl_devices(uct_md_h uct_md,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p)
{
    gdr_md_t *md             = ucs_derived_of(uct_md, gdr_md_t);
    ucs_sys_device_t sys_dev = gdr_device_sys_dev(&md->dev);
    uct_tl_device_resource_t *devices;
    unsigned p;

    /* the md opened only a device with an active port (gdr_verbs_open) */
    devices = ucs_calloc(md->dev.num_ports, sizeof(*devices), "gdr_tl_devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (p = 0; p < md->dev.num_ports; ++p) {
        gdr_device_port_name(&md->dev, p, devices[p].name,
                             sizeof(devices[p].name));
        devices[p].type       = UCT_DEVICE_TYPE_NET;
        devices[p].sys_device = sys_dev;
    }
    *devices_p     = devices;
    *num_devices_p = md->dev.num_ports;
    return UCS_OK;
}

ucs_status_t gdr_device_find_port(const gdr_md_t *md, const char *dev_name,
                                  uint8_t *port_num_p)
{
    char name[UCT_DEVICE_NAME_MAX];
    char md_name[UCT_MD_NAME_MAX];
    unsigned p;

    for (p = 0; p < md->dev.num_ports; ++p) {
        gdr_device_port_name(&md->dev, p, name, sizeof(name));
        if (!strcmp(name, dev_name)) {
            *port_num_p = md->dev.ports[p].port_num;
            return UCS_OK;
        }
    }
    gdr_md_name_of(md->dev.name, md_name, sizeof(md_name));
    ucs_error("gdr_rc: no active port '%s' on md %s", dev_name, md_name);
    return UCS_ERR_NO_DEVICE;
}
