// CUDA memory for the gdr md: the C API of gdr_cuda.h over the dlopen'ed driver
// (gdr_cuda_driver) and the policy logic (reg_policy.h).
#include "gdr_cuda.h"

#include "reg_policy.h"

#include "gdr_status.hpp"
#include "gdr_topo.hpp"

#include <gdr_cuda_driver/context.hpp>
#include <gdr_cuda_driver/driver.hpp>
#include <gdr_cuda_driver/pointer.hpp>

#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

using namespace gdr::cuda;
using namespace gdr::cuda_driver;

namespace {

/** The loaded peer-memory module's name ("" when none): the same check as gdr-doctor's. */
std::string peermem_module()
{
    const auto found = gdr::topo::find_peer_memory_module(gdr::topo::SysRoot("/"));
    return found ? found->module : std::string();
}

size_t host_page_size()
{
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return page;
}

std::string hex(uintptr_t value)
{
    char text[32];
    std::snprintf(text, sizeof(text), "0x%zx", static_cast<size_t>(value));
    return text;
}

/** Why CUDA memory cannot be handled at all, as every reason of this API words it. */
std::string no_cuda_reason(const driver &cuda)
{
    return "no CUDA: " + cuda.reason();
}

/**
 * A context in which driver calls about memory of `attrs` can be made: the allocation's own
 * context, else (VMM allocations belong to no context) the device's primary context if active.
 * The caller's current context is restored on scope exit; none is created.
 */
class MemoryContextScope {
public:
    MemoryContextScope(const driver_api &api, const pointer_attributes &attrs)
        : primary_(api, attrs.context != nullptr ? -1 : device_of(api, attrs.device_ordinal),
                   false),
          scope_(api, attrs.context != nullptr ? attrs.context : primary_.get())
    {}

private:
    static CUdevice device_of(const driver_api &api, int ordinal)
    {
        CUdevice device = -1;
        return api.cuDeviceGet(&device, ordinal) == CUDA_SUCCESS ? device : -1;
    }

    retained_primary_context primary_;
    scoped_context scope_;
};

ucs_status_t export_dmabuf(const driver &cuda, const void *addr, size_t length, int *fd,
                           uint64_t *offset, std::string *why)
{
    if (!cuda.usable()) {
        *why = no_cuda_reason(cuda);
        return UCS_ERR_UNSUPPORTED;
    }
    const driver_api &api = cuda.api();
    if (api.cuMemGetHandleForAddressRange == nullptr) {
        *why = "the CUDA driver (version " + std::to_string(cuda.version()) +
               ") lacks cuMemGetHandleForAddressRange (needs >= 11.7)";
        return UCS_ERR_UNSUPPORTED;
    }
    const uintptr_t start = reinterpret_cast<uintptr_t>(addr);
    if (length > UINTPTR_MAX - start - host_page_size()) {
        *why = "range overflows the address space";
        return UCS_ERR_INVALID_PARAM;
    }
    pointer_attributes attrs;
    if (!attrs.query(api, addr) || !attrs.is_device()) {
        *why = hex(start) + " is not CUDA device memory";
        return UCS_ERR_INVALID_ADDR;
    }

    const size_t page             = host_page_size();
    const uintptr_t aligned_start = start & ~(page - 1);
    const uintptr_t aligned_end   = (start + length + page - 1) & ~(page - 1);
    MemoryContextScope context(api, attrs);
    int dmabuf_fd   = -1;
    CUresult result = api.cuMemGetHandleForAddressRange(&dmabuf_fd, aligned_start,
                                                        aligned_end - aligned_start,
                                                        CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (result != CUDA_SUCCESS) {
        *why = "cuMemGetHandleForAddressRange(DMA_BUF_FD, " + hex(aligned_start) + ", " +
               std::to_string(aligned_end - aligned_start) + ") failed: " + cuda.error_text(result);
        return result == CUDA_ERROR_OUT_OF_MEMORY ? UCS_ERR_NO_MEMORY : UCS_ERR_UNSUPPORTED;
    }
    *fd     = dmabuf_fd;
    *offset = start - aligned_start;
    return UCS_OK;
}

// The real registration backend: libcuda + libibverbs.
ucs_status_t backend_export(void *, const void *addr, size_t length, int *fd, uint64_t *offset,
                            std::string *why)
{
    return export_dmabuf(driver::instance(), addr, length, fd, offset, why);
}

void backend_close(void *, int fd)
{
    close(fd);
}

ibv_mr *backend_reg_dmabuf_mr(void *, ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
                              int fd, int access)
{
#ifdef GDR_HAVE_IBV_REG_DMABUF_MR
    return ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access);
#else
    (void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
    errno = ENOSYS;  // built against rdma-core < 34: no ibv_reg_dmabuf_mr
    return nullptr;
#endif
}

std::string backend_peermem_module(void *)
{
    return peermem_module();
}

ibv_mr *backend_reg_mr(void *, ibv_pd *pd, void *addr, size_t length, int access)
{
    return ibv_reg_mr(pd, addr, length, access);
}

const RegBackend &real_backend()
{
    static const RegBackend backend = [] {
        RegBackend b;
        b.export_dmabuf  = backend_export;
        b.close_fd       = backend_close;
        b.reg_dmabuf_mr  = backend_reg_dmabuf_mr;
        b.peermem_module = backend_peermem_module;
        b.reg_mr         = backend_reg_mr;
        return b;
    }();
    return backend;
}

std::string device_label(const driver_api &api, CUdevice device, int ordinal)
{
    char name[128] = "?";
    api.cuDeviceGetName(name, sizeof(name), device);
    int domain = 0, bus = 0, slot = 0;
    api.cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, device);
    api.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device);
    api.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, device);
    char label[192];
    std::snprintf(label, sizeof(label), "GPU%d %s [%04x:%02x:%02x]", ordinal, name, domain, bus,
                  slot);
    return label;
}

int device_attribute(const driver_api &api, CUdevice device, int attribute)
{
    int value = 0;
    return api.cuDeviceGetAttribute(&value, attribute, device) == CUDA_SUCCESS ? value : 0;
}

constexpr size_t kProbeBytes = 2u << 20;  // one GPU page: the allocation is page-aligned
constexpr int kProbeAccess   = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ;

/** Registers the probe buffer with one method only; returns "" on success, else why not. */
std::string try_method(ibv_pd *pd, const void *buffer, gdr_cuda_reg_method_t method)
{
    gdr_cuda_config_t only{GDR_CUDA_POLICY_YES, method == GDR_CUDA_REG_DMABUF ? GDR_CUDA_POLICY_YES
                                                                              : GDR_CUDA_POLICY_NO};
    RegOutcome outcome = register_in_order(real_backend(), only, GDR_CUDA_METHOD_BIT(method), pd,
                                           buffer, kProbeBytes, kProbeAccess);
    if (outcome.mr != nullptr) {
        ibv_dereg_mr(outcome.mr);
        return {};
    }
    // register_in_order lists the skipped method too; keep only the one asked about.
    const std::string prefix = method == GDR_CUDA_REG_DMABUF ? "dma-buf: " : "peermem: ";
    size_t begin             = outcome.reason.find(prefix);
    std::string why          = begin == std::string::npos ? outcome.reason
                                                          : outcome.reason.substr(begin + prefix.size());
    return why.substr(0, why.find("; "));
}

/** Probes one GPU with a real 2 MiB allocation (a context is current). */
void probe_with_allocation(const driver &cuda, ibv_pd *pd, const std::string &peermem,
                           bool gdr_attr, DeviceFacts *facts)
{
    const driver_api &api = cuda.api();
    CUdeviceptr buffer    = 0;
    CUresult result       = api.cuMemAlloc_v2(&buffer, kProbeBytes);
    if (result != CUDA_SUCCESS) {
        facts->dmabuf_detail += ", test cuMemAlloc(2 MiB) failed: " + cuda.error_text(result);
        facts->peermem_detail = "not tested (no test buffer)";
        return;
    }
    const void *address = reinterpret_cast<const void *>(buffer);
    if (pd == nullptr) {
        int fd          = -1;
        uint64_t offset = 0;
        std::string why;
        if (export_dmabuf(cuda, address, kProbeBytes, &fd, &offset, &why) == UCS_OK) {
            close(fd);
            facts->dmabuf_detail += ", export of a 2 MiB cuMemAlloc ok, not registered (no pd)";
        } else {
            facts->dmabuf_detail += ", export failed: " + why;
        }
    } else {
        std::string why  = try_method(pd, address, GDR_CUDA_REG_DMABUF);
        facts->dmabuf_ok = why.empty();
        facts->dmabuf_detail += why.empty() ? ", registered a 2 MiB cuMemAlloc buffer"
                                            : ", test registration failed: " + why;
        if (gdr_attr && !peermem.empty()) {
            why                   = try_method(pd, address, GDR_CUDA_REG_PEERMEM);
            facts->peermem_ok     = why.empty();
            facts->peermem_detail = why.empty() ? peermem + " loaded, registered a 2 MiB buffer"
                                                : "test registration failed: " + why;
        }
    }
    api.cuMemFree_v2(buffer);
}

/** Probes one GPU from attributes and the provider's answer to an fd of -1 (no context). */
void probe_without_allocation(ibv_pd *pd, DeviceFacts *facts)
{
    const std::string untested = " (not exercised: no active CUDA context on this GPU)";
    if (pd == nullptr) {
        facts->dmabuf_detail += untested;
        return;
    }
    errno      = 0;
    ibv_mr *mr = backend_reg_dmabuf_mr(nullptr, pd, 0, host_page_size(), 0, -1, kProbeAccess);
    int err    = errno;
    if (mr != nullptr) {  // cannot happen with fd -1; never leak it if it does
        ibv_dereg_mr(mr);
    }
    // EBADF: the provider implements reg_dmabuf_mr and rejected our fd (UCX's ib md test).
    facts->dmabuf_ok = err == EBADF;
    facts->dmabuf_detail +=
        facts->dmabuf_ok
            ? ", provider accepts dma-buf (ibv_reg_dmabuf_mr(fd -1) gave EBADF)" + untested
            : ", provider lacks dma-buf: ibv_reg_dmabuf_mr(fd -1) gave " +
                  std::string(strerror(err)) + " (errno " + std::to_string(err) + ")";
}

DeviceFacts probe_device(const driver &cuda, int ordinal, ibv_pd *pd, const std::string &peermem,
                         bool may_create_context)
{
    const driver_api &api = cuda.api();
    DeviceFacts facts;
    CUdevice device = 0;
    if (api.cuDeviceGet(&device, ordinal) != CUDA_SUCCESS) {
        facts.label         = "GPU" + std::to_string(ordinal);
        facts.dmabuf_detail = facts.peermem_detail = "cuDeviceGet failed";
        return facts;
    }
    facts.label   = device_label(api, device, ordinal);
    bool dma_attr = device_attribute(api, device, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED) != 0;
    bool gdr_attr = device_attribute(api, device, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED) !=
                    0;

    if (!gdr_attr) {
        facts.peermem_detail = "CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED=0";
    } else if (peermem.empty()) {
        facts.peermem_detail = "neither nvidia_peermem nor nv_peer_mem is loaded";
    } else if (pd == nullptr) {
        facts.peermem_detail = peermem + " loaded, nothing to register with (no pd)";
    } else {
        // Refined below when a test buffer can be registered.
        facts.peermem_ok     = true;
        facts.peermem_detail = peermem + " loaded (not exercised: no active CUDA context)";
    }

    if (!dma_attr) {
        facts.dmabuf_detail = "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0";
        return facts;
    }
    if (api.cuMemGetHandleForAddressRange == nullptr) {
        facts.dmabuf_detail = "driver lacks cuMemGetHandleForAddressRange";
        return facts;
    }
    facts.dmabuf_detail = "DMA_BUF_SUPPORTED=1";
    retained_primary_context primary(api, device, may_create_context);
    if (primary.get() == nullptr) {
        probe_without_allocation(pd, &facts);
        return facts;
    }
    scoped_context scope(api, primary.get());
    probe_with_allocation(cuda, pd, peermem, gdr_attr, &facts);
    return facts;
}

/** A device's PCI location (read once: UCP asks for it per operation when its memory-type
 *  cache is off). */
struct PciLocation {
    int domain = -1, bus = -1, device = -1;
};

/** The PCI location of each device of the usable process-wide driver, by ordinal. */
const PciLocation &pci_location(int ordinal)
{
    static const std::vector<PciLocation> locations = [] {
        const driver &cuda    = driver::instance();
        const driver_api &api = cuda.api();
        std::vector<PciLocation> all(static_cast<size_t>(cuda.device_count()));
        for (int index = 0; index < cuda.device_count(); ++index) {
            CUdevice device       = 0;
            PciLocation &location = all[static_cast<size_t>(index)];
            if (api.cuDeviceGet(&device, index) == CUDA_SUCCESS) {
                api.cuDeviceGetAttribute(&location.domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
                                         device);
                api.cuDeviceGetAttribute(&location.bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device);
                api.cuDeviceGetAttribute(&location.device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
                                         device);
            }
        }
        return all;
    }();
    static const PciLocation unknown;
    return ordinal >= 0 && static_cast<size_t>(ordinal) < locations.size()
               ? locations[static_cast<size_t>(ordinal)]
               : unknown;
}

/** gdr_cuda_mem_query() for a non-NULL info. */
void query_memory(const void *addr, size_t length, gdr_cuda_mem_info_t *info)
{
    *info                = gdr_cuda_mem_info_t{};
    info->kind           = GDR_CUDA_MEM_HOST;
    info->base           = const_cast<void *>(addr);
    info->alloc_length   = length;
    info->device_ordinal = -1;
    info->pci_domain = info->pci_bus = info->pci_device = -1;

    const driver &cuda = driver::instance();
    if (!cuda.usable()) {
        return;
    }
    const driver_api &api = cuda.api();
    pointer_attributes attrs;
    if (!attrs.query(api, addr)) {
        return;
    }
    info->buffer_id = attrs.buffer_id;
    if (attrs.memory_type == CU_MEMORYTYPE_HOST) {
        info->kind = GDR_CUDA_MEM_HOST_PINNED;
        return;
    }
    if (attrs.memory_type != CU_MEMORYTYPE_DEVICE) {
        return;  // arrays are not addressable memory: treat as unknown
    }
    info->device_ordinal   = attrs.device_ordinal;
    info->kind             = attrs.is_managed ? GDR_CUDA_MEM_MANAGED : GDR_CUDA_MEM_DEVICE;
    const PciLocation &pci = pci_location(attrs.device_ordinal);
    info->pci_domain       = pci.domain;
    info->pci_bus          = pci.bus;
    info->pci_device       = pci.device;

    if (!attrs.is_managed) {
        // Only cuMemMap'ed ranges have an allocation handle to retain.
        CUmemGenericAllocationHandle handle = 0;
        if (api.cuMemRetainAllocationHandle(&handle, const_cast<void *>(addr)) == CUDA_SUCCESS) {
            info->is_vmm = 1;
            api.cuMemRelease(handle);
        }
    }

    // Allocation range and GPUDirect capability: attributes first (no context needed);
    // cuMemGetAddressRange in the allocation's context as the fallback for older drivers.
    CUdeviceptr range_start       = 0;
    size_t range_size             = 0;
    unsigned gdr_capable          = 0;
    int attributes[]              = {CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE,
                                     CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[]                  = {&gdr_capable, &range_start, &range_size};
    CUresult result               = api.cuPointerGetAttributes(3, attributes, data,
                                                               reinterpret_cast<CUdeviceptr>(addr));
    info->gpu_direct_rdma_capable = result == CUDA_SUCCESS && gdr_capable != 0;
    if (attrs.is_managed) {
        return;  // cuMemGetAddressRange does not support managed memory
    }
    if (info->is_vmm || result != CUDA_SUCCESS || range_size == 0) {
        // VMM: the range attributes describe the whole cuMemAddressReserve reservation, which
        // may hold unmapped holes and other physical allocations (H200, driver 580: a 4 MiB
        // reservation with 2 MiB mapped reports 4 MiB), while cuMemGetAddressRange reports the
        // mapped allocation holding the address, the unit dma-buf export works on.  It is also
        // the fallback for drivers without the range attributes.
        MemoryContextScope context(api, attrs);
        result = api.cuMemGetAddressRange_v2(&range_start, &range_size,
                                             reinterpret_cast<CUdeviceptr>(addr));
    }
    if (result == CUDA_SUCCESS && range_size != 0) {
        info->base         = reinterpret_cast<void *>(range_start);
        info->alloc_length = range_size;
    }
}

}  // namespace

extern "C" {

const char *gdr_cuda_reg_method_name(gdr_cuda_reg_method_t method) GDR_NOEXCEPT
{
    switch (method) {
    case GDR_CUDA_REG_DMABUF:
        return "dma-buf";
    case GDR_CUDA_REG_PEERMEM:
        return "peermem";
    default:
        return "none";
    }
}

const char *gdr_cuda_policy_name(gdr_cuda_policy_t policy) GDR_NOEXCEPT
{
    switch (policy) {
    case GDR_CUDA_POLICY_NO:
        return "no";
    case GDR_CUDA_POLICY_YES:
        return "yes";
    case GDR_CUDA_POLICY_TRY:
        return "try";
    default:
        return "?";
    }
}

ucs_status_t gdr_cuda_available(gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        const driver &cuda = driver::instance();
        if (!cuda.usable()) {
            throw gdr::error(UCS_ERR_UNSUPPORTED, no_cuda_reason(cuda));
        }
        return UCS_OK;
    });
}

ucs_status_t gdr_cuda_mem_query(const void *addr, size_t length, gdr_cuda_mem_info_t *info)
{
    return gdr::guard(nullptr, [&] {
        if (info == nullptr) {
            return UCS_ERR_INVALID_PARAM;
        }
        query_memory(addr, length, info);
        return UCS_OK;
    });
}

ucs_status_t gdr_cuda_buffer_id(const void *addr, uint64_t *buffer_id)
{
    return gdr::guard(nullptr, [&] {
        if (buffer_id == nullptr) {
            return UCS_ERR_INVALID_PARAM;
        }
        *buffer_id            = 0;
        const driver &cuda    = driver::instance();
        unsigned long long id = 0;
        if (!cuda.usable() ||
            cuda.api().cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                             reinterpret_cast<CUdeviceptr>(addr)) != CUDA_SUCCESS ||
            id == 0) {
            return UCS_ERR_INVALID_ADDR;
        }
        *buffer_id = id;
        return UCS_OK;
    });
}

int gdr_cuda_region_is_stale(const void *addr, uint64_t buffer_id) GDR_NOEXCEPT
{
    if (buffer_id == 0) {
        return 0;
    }
    uint64_t current = 0;
    return gdr_cuda_buffer_id(addr, &current) != UCS_OK || current != buffer_id;
}

ucs_status_t gdr_cuda_dmabuf_export(const void *addr, size_t length, int *fd, uint64_t *offset,
                                    gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        if (fd == nullptr || offset == nullptr || length == 0) {
            throw gdr::error(UCS_ERR_INVALID_PARAM, "NULL fd/offset or empty range");
        }
        *fd = -1;
        std::string why;
        const ucs_status_t status = export_dmabuf(driver::instance(), addr, length, fd, offset,
                                                  &why);
        gdr::set_reason(reason, why.c_str());
        return status;
    });
}

ucs_status_t gdr_cuda_config_check(const gdr_cuda_config_t *config, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        const std::string why = config == nullptr ? "NULL config" : check_config(*config);
        if (!why.empty()) {
            throw gdr::error(UCS_ERR_INVALID_PARAM, why);
        }
        return UCS_OK;
    });
}

ucs_status_t gdr_cuda_probe(struct ibv_pd *pd, const gdr_cuda_config_t *config, unsigned flags,
                            gdr_cuda_probe_result_t *result)
{
    return gdr::guard(result != nullptr ? &result->reason : nullptr, [&] {
        if (result == nullptr) {
            return UCS_ERR_INVALID_PARAM;
        }
        *result = gdr_cuda_probe_result_t{};
        if (config == nullptr) {
            throw gdr::error(UCS_ERR_INVALID_PARAM, "NULL config");
        }

        ProbeInput input;
        input.have_pd = pd != nullptr;
        // Nothing to find out when CUDA registration is off (so is the one contradiction,
        // which decide_probe_verdict, the policy's one reader, refuses): touch no driver.
        if (config->gpu_direct_rdma != GDR_CUDA_POLICY_NO) {
            const driver &cuda        = driver::instance();
            input.cuda_available      = cuda.usable();
            input.no_cuda_reason      = no_cuda_reason(cuda);
            const std::string peermem = peermem_module();
            const bool may_create     = (flags & GDR_CUDA_PROBE_MAY_CREATE_CONTEXT) != 0;
            for (int ordinal = 0; ordinal < cuda.device_count(); ++ordinal) {
                input.devices.push_back(probe_device(cuda, ordinal, pd, peermem, may_create));
            }
        }
        const ProbeVerdict verdict = decide_probe_verdict(*config, input);
        result->cuda_registrable   = verdict.registrable;
        result->methods            = verdict.methods;
        gdr::set_reason(&result->reason, verdict.reason.c_str());
        return verdict.status;
    });
}

ucs_status_t gdr_cuda_reg_mr_classified(struct ibv_pd *pd, const gdr_cuda_mem_info_t *info,
                                        const void *addr, size_t length, int access,
                                        const gdr_cuda_config_t *config, unsigned methods,
                                        gdr_cuda_reg_result_t *result, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        if (info == nullptr || config == nullptr || result == nullptr) {
            throw gdr::error(UCS_ERR_INVALID_PARAM, "NULL argument");
        }
        *result = gdr_cuda_reg_result_t{};
        if (info->kind != GDR_CUDA_MEM_DEVICE && info->kind != GDR_CUDA_MEM_MANAGED) {
            const driver &cuda = driver::instance();
            throw gdr::error(UCS_ERR_INVALID_ADDR, cuda.usable()
                                                       ? hex(reinterpret_cast<uintptr_t>(addr)) +
                                                             " is not CUDA device memory"
                                                       : no_cuda_reason(cuda));
        }
        const RegOutcome outcome = register_in_order(real_backend(), *config, methods, pd, addr,
                                                     length, access);
        // Failure: why each method did not work; success: what failed before the one that did.
        gdr::set_reason(reason, outcome.reason.c_str());
        if (outcome.status == UCS_OK) {
            *result = {outcome.mr, outcome.method};
        }
        return outcome.status;
    });
}

ucs_status_t gdr_cuda_reg_mr(struct ibv_pd *pd, const void *addr, size_t length, int access,
                             const gdr_cuda_config_t *config, unsigned methods,
                             gdr_cuda_reg_result_t *result, gdr_reason_t *reason)
{
    return gdr::guard(reason, [&] {
        if (result == nullptr || config == nullptr) {
            return UCS_ERR_INVALID_PARAM;
        }
        gdr_cuda_mem_info_t info;
        query_memory(addr, length, &info);
        return gdr_cuda_reg_mr_classified(pd, &info, addr, length, access, config, methods, result,
                                          reason);
    });
}

}  // extern "C"
