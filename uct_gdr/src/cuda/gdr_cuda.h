/**
 * @file gdr_cuda.h
 * CUDA memory for the gdr md: detection, dma-buf export, registration with an HCA, and the md-open
 * probe.  A C API with no CUDA headers.  Errors follow the sub-libraries' one convention
 * (gdr_status.h): a ucs_status_t, and a gdr_reason_t line for the failures a user must read; no
 * C++ exception leaves a function of this API (those without a status are GDR_NOEXCEPT).  The md
 * glue maps gdr_cuda_mem_kind_t to ucs_memory_type_t.
 *
 * Statuses: UCS_OK; UCS_ERR_UNSUPPORTED (refused: the reason says why); UCS_ERR_INVALID_PARAM
 * (bad argument, contradictory settings); UCS_ERR_INVALID_ADDR (not CUDA memory of the kind
 * needed); UCS_ERR_NO_MEMORY; UCS_ERR_IO_ERROR (unexpected: an exception stopped at the API).
 *
 * libcuda.so.1 is dlopen'ed on first use (thread-safe: gdr_cuda_driver).  Without it (or without
 * a CUDA device) every call behaves as "host memory only" and nothing is printed: the reason is
 * available from gdr_cuda_available().  This library never logs; every failure comes back as a
 * reason line for the caller to log at the level it chooses.
 *
 * Contexts: no function here creates a CUDA context or leaves the calling thread's current
 * context changed.  Where the driver needs a context (address range, dma-buf export, the probe's
 * test allocation) the owning context, or the device's *already active* primary context, is
 * pushed for the duration of the call and popped again.  The one exception is gdr_cuda_probe()
 * with GDR_CUDA_PROBE_MAY_CREATE_CONTEXT.
 *
 * Thread-safety: all functions may be called concurrently.
 */
#ifndef GDR_CUDA_H
#define GDR_CUDA_H

#include "gdr_status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_pd;
struct ibv_mr;

/** What an address is.  Glue mapping in the comments. */
typedef enum gdr_cuda_mem_kind {
    GDR_CUDA_MEM_HOST = 0, /**< not known to CUDA, pageable     -> UCS_MEMORY_TYPE_HOST */
    GDR_CUDA_MEM_HOST_PINNED, /**< cuMemHostAlloc/cuMemHostRegister -> UCS_MEMORY_TYPE_HOST */
    GDR_CUDA_MEM_DEVICE, /**< cuMemAlloc, cudaMalloc, cuMemMap -> UCS_MEMORY_TYPE_CUDA */
    GDR_CUDA_MEM_MANAGED /**< cuMemAllocManaged -> UCS_MEMORY_TYPE_CUDA_MANAGED */
} gdr_cuda_mem_kind_t;

typedef struct gdr_cuda_mem_info {
    gdr_cuda_mem_kind_t kind;
    /** Device memory mapped with cuMemMap (VMM, e.g. cuMemCreate / PyTorch expandable segments). */
    int is_vmm;
    /** CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE (peermem works on it); 0 for host. */
    int gpu_direct_rdma_capable;
    /** The allocation holding the address: for device memory the driver's allocation (for VMM
     *  the cuMemMap'ed allocation, not the whole reservation); for the other kinds (managed
     *  included) the queried addr/length. */
    void *base;
    size_t alloc_length;
    /** CU_POINTER_ATTRIBUTE_BUFFER_ID: process-unique and never reused, so a registration made
     *  for one id is stale when the address later reports another.  0 for pageable host. */
    uint64_t buffer_id;
    /** CUDA device ordinal owning the memory, -1 for host kinds. */
    int device_ordinal;
    /** That device's PCI location (for the md's sys_dev: ucs_topo_find_device_by_bus_id with
     *  function 0, as UCX's cuda md does); -1 for host kinds. */
    int pci_domain, pci_bus, pci_device;
} gdr_cuda_mem_info_t;

/** The UCX_GDR_* ternaries: the numbers of UCX's ucs_ternary_auto_value_t (NO, YES, TRY), which
 *  the md's config table parses them into (static assertions in gdr_md_cuda_policy). */
typedef enum gdr_cuda_policy {
    GDR_CUDA_POLICY_NO  = 0,
    GDR_CUDA_POLICY_YES = 1,
    GDR_CUDA_POLICY_TRY = 2
} gdr_cuda_policy_t;

typedef struct gdr_cuda_config {
    /** UCX_GDR_GPU_DIRECT_RDMA: register CUDA memory at all (no), if possible (try), or
     *  fail md open when no method works (yes). */
    gdr_cuda_policy_t gpu_direct_rdma;
    /** UCX_GDR_DMABUF: skip dma-buf (no: peermem only), prefer it (try), or require it (yes:
     *  md open fails without it, and registration never falls back to peermem). */
    gdr_cuda_policy_t dmabuf;
} gdr_cuda_config_t;

typedef enum gdr_cuda_reg_method {
    GDR_CUDA_REG_NONE    = 0,
    GDR_CUDA_REG_DMABUF  = 1, /**< cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr */
    GDR_CUDA_REG_PEERMEM = 2 /**< ibv_reg_mr on the device pointer (nvidia_peermem, nv_peer_mem) */
} gdr_cuda_reg_method_t;

/** Bit masks of methods, as in gdr_cuda_probe_result_t::methods. */
#define GDR_CUDA_METHOD_BIT(m) (1u << (m))
#define GDR_CUDA_METHODS_ALL \
    (GDR_CUDA_METHOD_BIT(GDR_CUDA_REG_DMABUF) | GDR_CUDA_METHOD_BIT(GDR_CUDA_REG_PEERMEM))

/** "dma-buf", "peermem" or "none". */
const char *gdr_cuda_reg_method_name(gdr_cuda_reg_method_t method) GDR_NOEXCEPT;
/** "no", "yes" or "try". */
const char *gdr_cuda_policy_name(gdr_cuda_policy_t policy) GDR_NOEXCEPT;

/**
 * @brief Loads libcuda on first call and says whether CUDA can be used.
 * @param reason  may be NULL; when CUDA cannot be used, one line such as
 *                "no CUDA: cannot load libcuda.so.1 (...)" or
 *                "no CUDA: cuInit failed: CUDA_ERROR_NO_DEVICE (...)"; "" when it can.
 * @return UCS_OK when CUDA is usable (driver loaded, cuInit succeeded, at least one device),
 *         else UCS_ERR_UNSUPPORTED.
 */
ucs_status_t gdr_cuda_available(gdr_reason_t *reason);

/**
 * @brief Classifies [addr, addr+length).  Never fails for host memory: without CUDA, or for
 *        memory CUDA does not know, info->kind is GDR_CUDA_MEM_HOST with base/alloc_length =
 *        addr/length.
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM for a NULL info.
 */
ucs_status_t gdr_cuda_mem_query(const void *addr, size_t length, gdr_cuda_mem_info_t *info);

/**
 * @brief The buffer id of the CUDA allocation holding addr (one driver call, for rcache checks).
 * @return UCS_OK; UCS_ERR_INVALID_ADDR when addr is not CUDA device/managed/pinned memory (e.g.
 *         freed), *buffer_id then 0; UCS_ERR_INVALID_PARAM for a NULL buffer_id.
 */
ucs_status_t gdr_cuda_buffer_id(const void *addr, uint64_t *buffer_id);

/**
 * @brief Registration-cache check.
 * @return 1 when a registration made while addr had `buffer_id` must not be used any more (the
 *         allocation was freed, or freed and another one now lives at addr), else 0.  Always 0
 *         for buffer_id 0 (host memory: UCX's own memory hooks invalidate those).
 */
int gdr_cuda_region_is_stale(const void *addr, uint64_t buffer_id) GDR_NOEXCEPT;

/**
 * @brief Exports [addr, addr+length) of CUDA device memory as a dma-buf.  The exported range is
 *        the host-page-aligned hull [align_down(addr), align_up(addr+length)), which
 *        cuMemGetHandleForAddressRange requires, and *offset is addr - align_down(addr): the
 *        value to pass as ibv_reg_dmabuf_mr's offset (with iova = addr).  The caller owns *fd
 *        (close() it; an MR keeps its own reference to the dma-buf).
 * @param reason  may be NULL; why the export failed.
 * @return UCS_OK; UCS_ERR_INVALID_ADDR for non-device memory; UCS_ERR_UNSUPPORTED when the
 *         driver cannot export; UCS_ERR_NO_MEMORY; UCS_ERR_INVALID_PARAM for length 0 or a NULL
 *         fd/offset.
 */
ucs_status_t gdr_cuda_dmabuf_export(const void *addr, size_t length, int *fd, uint64_t *offset,
                                    gdr_reason_t *reason);

/**
 * @brief Rejects contradictory settings (UCX_GDR_DMABUF=yes with UCX_GDR_GPU_DIRECT_RDMA=no).
 * @param reason  may be NULL; the contradiction.
 * @return UCS_OK or UCS_ERR_INVALID_PARAM.
 */
ucs_status_t gdr_cuda_config_check(const gdr_cuda_config_t *config, gdr_reason_t *reason);

/** Let the probe retain (create) a device's primary context to test a real allocation. */
#define GDR_CUDA_PROBE_MAY_CREATE_CONTEXT 1u

typedef struct gdr_cuda_probe_result {
    /** 1: advertise UCS_MEMORY_TYPE_CUDA in reg_mem_types (some method works on some GPU). */
    int cuda_registrable;
    /** GDR_CUDA_METHOD_BIT()s that work (or are expected to: see reason) on at least one GPU;
     *  pass to gdr_cuda_reg_mr() to skip methods known not to work with this pd. */
    unsigned methods;
    /** Always set: what the probe found, in one line, e.g.
     *  "GPU0 NVIDIA H200 [0000:18:00]: dma-buf: ...; peermem: ..."; on failure, why. */
    gdr_reason_t reason;
} gdr_cuda_probe_result_t;

/**
 * @brief md-open probe: can this pd register CUDA memory?  Per CUDA device it checks
 *        CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED and _GPU_DIRECT_RDMA_SUPPORTED, whether
 *        nvidia_peermem / nv_peer_mem is loaded, and, when the device has an active context (or
 *        `flags` has GDR_CUDA_PROBE_MAY_CREATE_CONTEXT), really does cuMemAlloc(2 MiB) + dma-buf
 *        export + ibv_reg_dmabuf_mr against `pd` (and ibv_reg_mr for peermem).  Without a
 *        context it falls back to ibv_reg_dmabuf_mr(fd=-1) (EBADF: the provider implements
 *        dma-buf) and says so in the reason.  `pd` may be NULL (no verbs device): nothing can be
 *        registered, and the reason says so.
 * @return UCS_OK: md open goes on (result->cuda_registrable says whether to advertise CUDA).
 *         UCS_ERR_UNSUPPORTED: a `yes` policy cannot be met; md open must fail with
 *         result->reason.  UCS_ERR_INVALID_PARAM: contradictory config or NULL argument.
 */
ucs_status_t gdr_cuda_probe(struct ibv_pd *pd, const gdr_cuda_config_t *config, unsigned flags,
                            gdr_cuda_probe_result_t *result);

typedef struct gdr_cuda_reg_result {
    struct ibv_mr *mr; /**< deregister with ibv_dereg_mr() */
    gdr_cuda_reg_method_t method; /**< which method produced mr */
} gdr_cuda_reg_result_t;

/**
 * @brief Registers CUDA memory [addr, addr+length), already classified as `info` (the caller's
 *        gdr_cuda_mem_query(), whose buffer id it keeps), on pd, in order: dma-buf, then
 *        peermem, else refuse, as `config` and `methods` allow (a mask from the probe; 0 means
 *        GDR_CUDA_METHODS_ALL).  A dma-buf is exported for this registration and closed before
 *        returning (the MR holds its own reference).  The MR's iova is addr in every case, so
 *        rkeys use virtual addresses.
 * @param reason  may be NULL.  On failure: every method tried or skipped and why.  On success:
 *                "", or what failed before the method that worked (worth a debug line).
 * @return UCS_OK with result->mr; UCS_ERR_UNSUPPORTED (nothing worked or was allowed; no MR is
 *         left); UCS_ERR_INVALID_ADDR (info is not CUDA device or managed memory);
 *         UCS_ERR_INVALID_PARAM.
 */
ucs_status_t gdr_cuda_reg_mr_classified(struct ibv_pd *pd, const gdr_cuda_mem_info_t *info,
                                        const void *addr, size_t length, int access,
                                        const gdr_cuda_config_t *config, unsigned methods,
                                        gdr_cuda_reg_result_t *result, gdr_reason_t *reason);

/**
 * @brief gdr_cuda_reg_mr_classified() for a caller that has not classified the memory: asks
 *        gdr_cuda_mem_query() first.
 */
ucs_status_t gdr_cuda_reg_mr(struct ibv_pd *pd, const void *addr, size_t length, int access,
                             const gdr_cuda_config_t *config, unsigned methods,
                             gdr_cuda_reg_result_t *result, gdr_reason_t *reason);

#ifdef __cplusplus
}
#endif

#endif /* GDR_CUDA_H */
