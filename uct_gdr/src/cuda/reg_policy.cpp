// Registration order, probe verdict and config rules: see reg_policy.h.
#include "reg_policy.h"

#include <cerrno>
#include <cstring>

namespace gdr::cuda {

namespace {

std::string errno_text(int err)
{
    return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
}

std::string join(const std::vector<std::string> &parts, const char *separator)
{
    std::string out;
    for (const std::string &part : parts) {
        if (!out.empty()) {
            out += separator;
        }
        out += part;
    }
    return out;
}

bool has_method(unsigned methods, gdr_cuda_reg_method_t method)
{
    return (methods & GDR_CUDA_METHOD_BIT(method)) != 0;
}

/** An MR from a dma-buf of [addr, addr+length), or NULL with why not in `why`. */
ibv_mr *register_dmabuf(const RegBackend &backend, ibv_pd *pd, const void *addr, size_t length,
                        int access, std::string *why)
{
    int fd          = -1;
    uint64_t offset = 0;
    std::string export_why;
    if (backend.export_dmabuf(backend.ctx, addr, length, &fd, &offset, &export_why) != UCS_OK) {
        *why = "export failed: " + export_why;
        return nullptr;
    }
    errno      = 0;
    ibv_mr *mr = backend.reg_dmabuf_mr(backend.ctx, pd, offset, length,
                                       reinterpret_cast<uintptr_t>(addr), fd, access);
    int err    = errno;
    backend.close_fd(backend.ctx, fd);  // the MR, if any, holds its own reference to the dma-buf
    if (mr == nullptr) {
        *why = "ibv_reg_dmabuf_mr(offset " + std::to_string(offset) + ", length " +
               std::to_string(length) + ") failed: " + errno_text(err);
    }
    return mr;
}

}  // namespace

std::string check_config(const gdr_cuda_config_t &config)
{
    if (config.gpu_direct_rdma == GDR_CUDA_POLICY_NO && config.dmabuf == GDR_CUDA_POLICY_YES) {
        return "UCX_GDR_DMABUF=yes contradicts UCX_GDR_GPU_DIRECT_RDMA=no";
    }
    return {};
}

RegOutcome register_in_order(const RegBackend &backend, const gdr_cuda_config_t &config,
                             unsigned methods, ibv_pd *pd, const void *addr, size_t length,
                             int access)
{
    RegOutcome outcome;
    std::vector<std::string> tried;  // one "<method>: <why not>" per method that did not work
    auto registered = [&](ibv_mr *mr, gdr_cuda_reg_method_t method) {
        outcome.status = UCS_OK;
        outcome.mr     = mr;
        outcome.method = method;
        outcome.reason = join(tried, "; ");  // what failed before, worth a debug line
        return outcome;
    };

    if (methods == 0) {
        methods = GDR_CUDA_METHODS_ALL;
    }
    if (pd == nullptr || addr == nullptr || length == 0) {
        outcome.status = UCS_ERR_INVALID_PARAM;
        outcome.reason = pd == nullptr ? "no protection domain" : "empty range";
        return outcome;
    }
    if (config.gpu_direct_rdma == GDR_CUDA_POLICY_NO) {
        outcome.reason = "CUDA memory registration disabled by UCX_GDR_GPU_DIRECT_RDMA=no";
        return outcome;
    }

    // (1) dma-buf
    if (config.dmabuf == GDR_CUDA_POLICY_NO) {
        tried.push_back("dma-buf: disabled by UCX_GDR_DMABUF=no");
    } else if (!has_method(methods, GDR_CUDA_REG_DMABUF)) {
        tried.push_back("dma-buf: not used (md-open probe found it unavailable)");
    } else {
        std::string why;
        ibv_mr *mr = register_dmabuf(backend, pd, addr, length, access, &why);
        if (mr != nullptr) {
            return registered(mr, GDR_CUDA_REG_DMABUF);
        }
        tried.push_back("dma-buf: " + why);
    }

    // (2) peermem.  UCX_GDR_DMABUF=yes means dma-buf or nothing: no silent fallback.
    if (config.dmabuf == GDR_CUDA_POLICY_YES) {
        tried.push_back("peermem: not tried (UCX_GDR_DMABUF=yes)");
    } else if (!has_method(methods, GDR_CUDA_REG_PEERMEM)) {
        tried.push_back("peermem: not used (md-open probe found it unavailable)");
    } else {
        std::string module = backend.peermem_module(backend.ctx);
        if (module.empty()) {
            tried.push_back("peermem: neither nvidia_peermem nor nv_peer_mem is loaded");
        } else {
            errno      = 0;
            ibv_mr *mr = backend.reg_mr(backend.ctx, pd, const_cast<void *>(addr), length, access);
            int err    = errno;
            if (mr != nullptr) {
                return registered(mr, GDR_CUDA_REG_PEERMEM);
            }
            tried.push_back("peermem: ibv_reg_mr on the device pointer failed with " + module +
                            " loaded: " + errno_text(err));
        }
    }

    // (3) refuse
    outcome.status = UCS_ERR_UNSUPPORTED;
    outcome.reason = join(tried, "; ");
    return outcome;
}

ProbeVerdict decide_probe_verdict(const gdr_cuda_config_t &config, const ProbeInput &input)
{
    ProbeVerdict verdict;
    std::string contradiction = check_config(config);
    if (!contradiction.empty()) {
        verdict.status = UCS_ERR_INVALID_PARAM;
        verdict.reason = contradiction;
        return verdict;
    }
    if (config.gpu_direct_rdma == GDR_CUDA_POLICY_NO) {
        verdict.reason = "CUDA memory registration disabled by UCX_GDR_GPU_DIRECT_RDMA=no";
        return verdict;
    }

    // What is required, for the message when it cannot be had.
    std::string requirement;
    if (config.dmabuf == GDR_CUDA_POLICY_YES) {
        requirement = "UCX_GDR_DMABUF=yes";
    } else if (config.gpu_direct_rdma == GDR_CUDA_POLICY_YES) {
        requirement = "UCX_GDR_GPU_DIRECT_RDMA=yes";
    }

    if (!input.cuda_available) {
        verdict.reason = input.no_cuda_reason.empty() ? "no CUDA" : input.no_cuda_reason;
    } else {
        std::vector<std::string> per_device;
        for (const DeviceFacts &device : input.devices) {
            per_device.push_back(device.label + ": dma-buf: " + device.dmabuf_detail +
                                 "; peermem: " + device.peermem_detail);
            if (!input.have_pd) {
                continue;
            }
            if (device.dmabuf_ok && config.dmabuf != GDR_CUDA_POLICY_NO) {
                verdict.methods |= GDR_CUDA_METHOD_BIT(GDR_CUDA_REG_DMABUF);
            }
            if (device.peermem_ok && config.dmabuf != GDR_CUDA_POLICY_YES) {
                verdict.methods |= GDR_CUDA_METHOD_BIT(GDR_CUDA_REG_PEERMEM);
            }
        }
        std::string facts = join(per_device, " | ");
        if (!input.have_pd) {
            verdict.reason = "no verbs device (no protection domain to register with); " + facts;
        } else if (verdict.methods == 0) {
            verdict.reason = "no GPU memory registration method works: " + facts;
        } else {
            verdict.reason = facts;
        }
        if (config.dmabuf == GDR_CUDA_POLICY_NO) {
            verdict.reason += " (dma-buf disabled by UCX_GDR_DMABUF=no)";
        }
    }
    verdict.registrable = verdict.methods != 0;

    bool unmet = (config.dmabuf == GDR_CUDA_POLICY_YES &&
                  !has_method(verdict.methods, GDR_CUDA_REG_DMABUF)) ||
                 (config.gpu_direct_rdma == GDR_CUDA_POLICY_YES && !verdict.registrable);
    if (unmet) {
        verdict.status = UCS_ERR_UNSUPPORTED;
        verdict.reason = requirement + " but " +
                         (config.dmabuf == GDR_CUDA_POLICY_YES ? "dma-buf registration"
                                                               : "GPU memory registration") +
                         " is not available: " + verdict.reason;
    }
    return verdict;
}

}  // namespace gdr::cuda
