/**
 * gdr_verbs.h - the verbs half of gdr_rc, behind a narrow C interface.
 *
 * Device discovery, port/GID/MTU facts and the RC QP state machine live in C++
 * (gdr_verbs.cpp); the UCT glue in ../ucx/ only sees these plain structs and
 * calls.  Nothing here is on the data path: posting work requests and polling
 * completion queues stay in the glue, inline, where UCX's helpers are.
 *
 * Errors follow gdr_status.h: a ucs_status_t, and one line saying why in
 * `reason` (which may be NULL) for the glue to log; no C++ exception leaves an
 * entry point (the lookups and conversions without a status are GDR_NOEXCEPT).
 */
#ifndef GDR_VERBS_H_
#define GDR_VERBS_H_

#include "gdr_status.h"

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GDR_VERBS_MAX_DEVICES    32
#define GDR_VERBS_MAX_PORTS      4
#define GDR_VERBS_NAME_MAX       64
#define GDR_VERBS_GID_REASON_MAX 256

/** One usable (ACTIVE, InfiniBand or Ethernet) port. */
typedef struct gdr_port_info {
    uint8_t port_num;
    uint8_t link_layer; /**< IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
    uint8_t sm_sl;
    uint8_t grh_required; /**< IB port flag IBV_QPF_GRH_REQUIRED */
    uint16_t lid;
    enum ibv_mtu active_mtu;
    uint32_t max_msg_sz; /**< the largest message the port carries (rxe: 8 MiB) */
    double bandwidth; /**< bytes/s on the wire, from active width x speed (UCX's table) */
    double latency; /**< s, UCX's estimate for the active speed, +200 ns on Ethernet */
    int gid_index; /**< auto-selected GID index, -1 if none */
    union ibv_gid gid; /**< GID at gid_index */
    char gid_reason[GDR_VERBS_GID_REASON_MAX]; /**< why that GID */
} gdr_port_info_t;

/** An opened verbs device with its protection domain. */
typedef struct gdr_device {
    char name[GDR_VERBS_NAME_MAX]; /**< e.g. "rxe0", "mlx5_0" */
    char pci_bdf[32]; /**< "0000:3b:00.0", "" when virtual (rxe) */
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_device_attr attr;
    unsigned num_ports;
    gdr_port_info_t ports[GDR_VERBS_MAX_PORTS];
    double pci_bw; /**< bytes/s of its PCIe link as UCX estimates it; 0: not read yet */
} gdr_device_t;

/**
 * Open every verbs device that has at least one ACTIVE InfiniBand or Ethernet
 * port.  "No devices" is not an error (UCS_OK, *count_p = 0).  Devices that
 * cannot be opened are skipped, and @a reason names them and why ("" when none
 * was).  On an error (UCS_ERR_NO_MEMORY) the *count_p devices opened so far
 * are still open: the caller closes them.
 */
ucs_status_t gdr_verbs_open_all(gdr_device_t *devs, unsigned max_devs, unsigned *count_p,
                                gdr_reason_t *reason);

/** A verbs device's name, as gdr_verbs_list() gives it. */
typedef struct gdr_device_name {
    char name[GDR_VERBS_NAME_MAX];
} gdr_device_name_t;

/**
 * Name the verbs devices gdr_verbs_open_all() would open: those with at least one ACTIVE
 * InfiniBand or Ethernet port.  Each device is opened only as far as that takes (ibv_open_device,
 * ibv_query_device, ibv_query_port: no protection domain, no GID table) and closed again, so
 * listing costs a few ioctls per device.  "No devices" is not an error (UCS_OK, *count_p = 0).
 * Devices that cannot be opened or queried are skipped, and @a reason names them and why ("" when
 * none was).
 */
ucs_status_t gdr_verbs_list(gdr_device_name_t *names, unsigned max_names, unsigned *count_p,
                            gdr_reason_t *reason);

/**
 * Open the verbs device called @a name as gdr_verbs_open_all() opens each (context,
 * protection domain, its ACTIVE ports).  UCS_ERR_NO_DEVICE, with @a reason saying why, when
 * there is no such device, it has no ACTIVE InfiniBand or Ethernet port, or it cannot be
 * opened; then nothing is open.
 */
ucs_status_t gdr_verbs_open(const char *name, gdr_device_t *dev, gdr_reason_t *reason);

/** Close what gdr_verbs_open_all() or gdr_verbs_open() opened for one device (cannot fail). */
void gdr_verbs_close(gdr_device_t *dev) GDR_NOEXCEPT;

/** The port with number @a port_num, or NULL. */
const gdr_port_info_t *gdr_verbs_port(const gdr_device_t *dev, uint8_t port_num) GDR_NOEXCEPT;

/**
 * Resolve the GID to use on a port: @a forced_index >= 0 takes that entry,
 * otherwise the port's auto-selected one.  UCS_ERR_NO_DEVICE: the port is not
 * active; UCS_ERR_NO_ELEM: it has no usable GID (auto); UCS_ERR_INVALID_PARAM:
 * the forced entry is empty or invalid.
 */
ucs_status_t gdr_verbs_port_gid(const gdr_device_t *dev, uint8_t port_num, int forced_index,
                                union ibv_gid *gid, int *index_p, gdr_reason_t *reason);

/** The work requests gdr_rc builds with the ibv_wr_* interface (ibv_wr_post(3)). */
#define GDR_VERBS_WR_API_SEND_OPS                                                          \
    (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_SEND_WITH_IMM | \
     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

/** RC QP creation. @a max_inline is in/out: asked for, then what the QP gives.
 *  With @a send_ops_flags (IBV_QP_EX_WITH_*), the QP is asked for the ibv_wr_*
 *  builders of those operations first; *qpx_p is then the QP's ibv_qp_ex, or NULL
 *  when the provider has no such interface (the QP is created without it: posting
 *  goes through ibv_post_send, which every provider has).  @a qpx_p may be NULL
 *  when @a send_ops_flags is 0.  UCS_ERR_IO_ERROR when the device refuses the QP. */
ucs_status_t gdr_verbs_qp_create(struct ibv_pd *pd, struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
                                 struct ibv_srq *srq, uint32_t max_send_wr, uint32_t max_send_sge,
                                 uint64_t send_ops_flags, uint32_t *max_inline,
                                 struct ibv_qp **qp_p, struct ibv_qp_ex **qpx_p,
                                 gdr_reason_t *reason);

/** What a peer tells us to connect an RC QP to it. */
typedef struct gdr_qp_remote {
    uint32_t qp_num;
    uint32_t psn;
    uint16_t lid;
    uint8_t is_global; /**< use a GRH (RoCE always, IB across subnets) */
    enum ibv_mtu mtu; /**< the peer's path MTU limit */
    union ibv_gid gid;
} gdr_qp_remote_t;

/** Local side of the connection, from the port and the UCX_GDR_* config. */
typedef struct gdr_qp_local {
    uint8_t port_num;
    int gid_index;
    enum ibv_mtu mtu; /**< our path MTU limit */
    uint32_t psn;
    uint8_t sl;
    uint8_t traffic_class;
    uint8_t hop_limit;
    uint8_t timeout; /**< local ACK timeout exponent: 4.096us * 2^t */
    uint8_t retry_count;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;
    uint8_t max_rd_atomic; /**< both as initiator and as target */
} gdr_qp_local_t;

/** RESET -> INIT -> RTR -> RTS. Path MTU = min(ours, peer's).  UCS_ERR_UNREACHABLE
 *  when the peer cannot be reached as addressed (RTR refused), UCS_ERR_IO_ERROR
 *  when the device refuses another transition. */
ucs_status_t gdr_verbs_qp_connect(struct ibv_qp *qp, const gdr_qp_local_t *local,
                                  const gdr_qp_remote_t *remote, gdr_reason_t *reason);

/** Move a QP to the error state: every posted WR completes with FLUSH_ERR. */
ucs_status_t gdr_verbs_qp_to_error(struct ibv_qp *qp, gdr_reason_t *reason);

/** Bytes of an MTU enum (IBV_MTU_1024 -> 1024), 0 if invalid. */
unsigned gdr_verbs_mtu_bytes(enum ibv_mtu mtu) GDR_NOEXCEPT;

/** MTU enum for a byte count (rounded down to a valid one), 0 if < 256. */
enum ibv_mtu gdr_verbs_mtu_from_bytes(unsigned bytes) GDR_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
