/* ucs_topo_get_pci_bw(): UCS estimates a device's PCIe bandwidth (1.16.0 and later; UCX 1.13's ib device did it itself) */
#include "probe.h"
#include <ucs/sys/topo/base/topo.h>
static double (*probe)(const char *, const char *) = ucs_topo_get_pci_bw;
