/*
 * gdr_topo.h - the narrow C interface of the topology library (gdr_topo).
 *
 * Used by the UCT glue (C) to report each RDMA device's system device to UCX and to pick
 * the GID index of a RoCE port, so that the transport and the gdr-doctor tool agree.
 * Everything is read from sysfs below a root prefix: `root` NULL or "" means "/", a test
 * passes the path of a synthetic tree (tests/fixtures/...).
 *
 * No CUDA or verbs headers are needed, and of UCX's only ucs/type/status.h.  All functions are
 * thread-safe (no global state).  Errors follow gdr_status.h: a ucs_status_t, and one line saying
 * why in `reason` (which may be NULL); no C++ exception leaves an entry point.
 */
#ifndef GDR_TOPO_H
#define GDR_TOPO_H

#include "gdr_status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Distance between two PCI devices, nearest first (the nvidia-smi `topo -m` classes). */
typedef enum {
    GDR_TOPO_SELF = 0, /**< the same device */
    GDR_TOPO_PIX, /**< through at most one PCIe switch (or one bridge) */
    GDR_TOPO_PXB, /**< through several PCIe switches, not through the host bridge */
    GDR_TOPO_PHB, /**< through a PCIe host bridge (CPU root complex) */
    GDR_TOPO_NODE, /**< between host bridges of one NUMA node */
    GDR_TOPO_SYS, /**< across NUMA nodes (SMP interconnect: UPI, xGMI, ...) */
    GDR_TOPO_UNKNOWN /**< a device is not on PCI (e.g. Soft-RoCE without a PCI netdev) */
} gdr_topo_link_t;

/** "X", "PIX", "PXB", "PHB", "NODE", "SYS" or "?" (a table lookup: nothing to fail) */
const char *gdr_topo_link_name(gdr_topo_link_t link) GDR_NOEXCEPT;

typedef struct {
    uint16_t domain;
    uint8_t bus;
    uint8_t device;
    uint8_t function;
} gdr_pci_addr_t;

/**
 * Parses a PCI address "DDDD:BB:DD.F" (as sysfs names devices): the one parser of the project.
 * @param reason  may be NULL; why `bdf` is not one.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM when `bdf` is not such an address (e.g. "" for a virtual
 *         device) or `pci` is NULL.
 */
ucs_status_t gdr_topo_parse_pci_address(const char *bdf, gdr_pci_addr_t *pci, gdr_reason_t *reason);

/**
 * The PCI function behind an RDMA device (/sys/class/infiniband/<dev>/device), or for a
 * software device such as rxe the PCI function of the netdev it runs on.
 * @param numa_node  may be NULL; set to the device's NUMA node, -1 when unknown.
 * @return UCS_OK; UCS_ERR_NO_ELEM if there is no PCI function behind it (rxe on a dummy or
 *         loopback netdev); UCS_ERR_NO_DEVICE if the RDMA device does not exist;
 *         UCS_ERR_INVALID_PARAM for a NULL argument.
 */
ucs_status_t gdr_topo_rdma_device_pci(const char *root, const char *rdma_dev, gdr_pci_addr_t *pci,
                                      int *numa_node, gdr_reason_t *reason);

/**
 * Classifies the path between two PCI functions given as "DDDD:BB:DD.F".
 * @return UCS_OK; UCS_ERR_NO_DEVICE if either is not a PCI device; UCS_ERR_INVALID_PARAM for a
 *         NULL argument.
 */
ucs_status_t gdr_topo_classify(const char *root, const char *bdf_a, const char *bdf_b,
                               gdr_topo_link_t *link, gdr_reason_t *reason);

/* ---- GID selection (shared by gdr_rc and gdr-doctor) ---------------------------------- */

typedef enum {
    GDR_GID_TYPE_IB = 0, /**< InfiniBand port */
    GDR_GID_TYPE_ROCE_V1, /**< "IB/RoCE v1" */
    GDR_GID_TYPE_ROCE_V2, /**< "RoCE v2" (UDP/IP encapsulation, routable) */
    GDR_GID_TYPE_UNKNOWN
} gdr_gid_type_t;

typedef struct {
    unsigned index;
    uint8_t raw[16];
    gdr_gid_type_t type;
} gdr_gid_entry_t;

typedef struct {
    int index; /**< the chosen GID index, -1 when none is usable */
    gdr_gid_type_t type;
    uint8_t raw[16];
} gdr_gid_selection_t;

/**
 * Picks the GID index of a port. Rule: InfiniBand: index 0. RoCE: RoCE v2 with an
 * IPv4-mapped address (::ffff:a.b.c.d) first, then RoCE v2 IPv6 global, then RoCE v2
 * link-local (fe80::/10), RoCE v1 last; the lowest index within a class.
 * @param override_index  >= 0: use exactly that index (it must hold a GID), -1: the rule.
 * @param reason  one sentence: why this index, or why none (may be NULL).
 * @return UCS_OK with out->index >= 0; UCS_ERR_NO_ELEM when the port has no usable GID;
 *         UCS_ERR_INVALID_PARAM for a bad override or a NULL argument.
 */
ucs_status_t gdr_select_gid_from_table(const gdr_gid_entry_t *entries, size_t count,
                                       int is_ethernet, int override_index,
                                       gdr_gid_selection_t *out, gdr_reason_t *reason);

/** The same over the GID table of /sys/class/infiniband/<dev>/ports/<port>/; also
 *  UCS_ERR_NO_DEVICE when the RDMA device does not exist. */
ucs_status_t gdr_select_gid(const char *root, const char *rdma_dev, unsigned port,
                            int override_index, gdr_gid_selection_t *out, gdr_reason_t *reason);

#ifdef __cplusplus
}
#endif

#endif /* GDR_TOPO_H */
