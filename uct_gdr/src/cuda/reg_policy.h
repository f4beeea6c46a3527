/**
 * @file reg_policy.h
 * The decisions of gdr_cuda, separated from the libraries they drive so that every branch is
 * unit-testable on a machine without a GPU or an HCA:
 *  - register_in_order(): dma-buf -> peermem -> refuse on one pd, under the UCX_GDR_* policies,
 *    over a RegBackend table that gdr_cuda.cpp fills from libcuda/libibverbs (tests fill it with
 *    failure-injecting functions; the order/policy logic under test is the real one);
 *  - decide_probe_verdict(): md-open verdict from the facts gathered per GPU;
 *  - check_config().
 * Internal C++17 header.  All functions are pure or only touch what the backend does: thread-safe.
 */
#pragma once

#include "gdr_cuda.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gdr::cuda {

/** What registration needs from the outside world.  Each function sets errno like the verbs
 *  call it stands for; `ctx` is passed through. */
struct RegBackend {
    void *ctx = nullptr;
    /** Export [addr, addr+length) as a dma-buf (page-aligned hull; *offset = addr - hull start).
     *  On failure returns the status and sets *why. */
    ucs_status_t (*export_dmabuf)(void *ctx, const void *addr, size_t length, int *fd,
                                  uint64_t *offset, std::string *why) = nullptr;
    void (*close_fd)(void *ctx, int fd)                               = nullptr;
    /** ibv_reg_dmabuf_mr; NULL + errno on failure. */
    ibv_mr *(*reg_dmabuf_mr)(void *ctx, ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
                             int fd, int access) = nullptr;
    /** Name of the loaded peer-memory module ("nvidia_peermem", "nv_peer_mem"), or "". */
    std::string (*peermem_module)(void *ctx) = nullptr;
    /** ibv_reg_mr; NULL + errno on failure. */
    ibv_mr *(*reg_mr)(void *ctx, ibv_pd *pd, void *addr, size_t length, int access) = nullptr;
};

struct RegOutcome {
    ucs_status_t status          = UCS_ERR_UNSUPPORTED;
    ibv_mr *mr                   = nullptr;
    gdr_cuda_reg_method_t method = GDR_CUDA_REG_NONE;
    /** Failure: "dma-buf: <why>; peermem: <why>".  Success: what failed before, or empty. */
    std::string reason;
};

/** dma-buf -> peermem -> refuse, as `config` and `methods` (GDR_CUDA_METHOD_BIT mask) allow.
 *  A dma-buf is exported for this one registration and closed before returning (the MR holds its
 *  own reference to it); a failure leaves no MR and no fd behind. */
RegOutcome register_in_order(const RegBackend &backend, const gdr_cuda_config_t &config,
                             unsigned methods, ibv_pd *pd, const void *addr, size_t length,
                             int access);

/** Empty when consistent, else why not (a contradiction that must fail md open). */
std::string check_config(const gdr_cuda_config_t &config);

/** What the probe found out about one GPU, before the policies are applied. */
struct DeviceFacts {
    std::string label;  ///< "GPU0 NVIDIA H200 [0000:18:00]"
    bool dmabuf_ok = false;
    std::string dmabuf_detail;  ///< what was checked and its outcome
    bool peermem_ok = false;
    std::string peermem_detail;
};

struct ProbeInput {
    bool cuda_available = false;
    std::string no_cuda_reason;  ///< when !cuda_available
    bool have_pd = false;  ///< false: no verbs device to register with
    std::vector<DeviceFacts> devices;
};

struct ProbeVerdict {
    ucs_status_t status = UCS_OK;  ///< non-OK: md open must fail
    bool registrable    = false;  ///< advertise CUDA in reg_mem_types
    unsigned methods    = 0;
    std::string reason;
};

ProbeVerdict decide_probe_verdict(const gdr_cuda_config_t &config, const ProbeInput &input);

}  // namespace gdr::cuda
