#include "probes.hpp"

#include "gdr_topo.hpp"

#include <gdr_cuda_driver/driver.hpp>
#include <infiniband/verbs.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <cerrno>
#include <cstring>

namespace gdr::doctor {
namespace {

int mtu_bytes(enum ibv_mtu mtu)
{
    return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

void probe_dmabuf(ibv_context *ctx, VerbsDevice &dev)
{
#ifdef GDR_HAVE_IBV_REG_DMABUF_MR
    ibv_pd *pd = ibv_alloc_pd(ctx);
    if (pd == nullptr) {
        dev.dmabuf_detail = std::string("ibv_alloc_pd: ") + std::strerror(errno);
        return;
    }
    errno      = 0;
    ibv_mr *mr = ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, IBV_ACCESS_LOCAL_WRITE);
    int err    = errno;
    if (mr != nullptr) {  // cannot happen with fd -1; never leak it if a provider disagrees
        ibv_dereg_mr(mr);
        err = 0;
    }
    ibv_dealloc_pd(pd);
    if (err == EOPNOTSUPP || err == ENOSYS) {
        dev.dmabuf        = VerbsDevice::Dmabuf::Unsupported;
        dev.dmabuf_detail = std::string("ibv_reg_dmabuf_mr(fd=-1): ") + std::strerror(err) +
                            ": the provider has no dma-buf registration";
    } else {
        dev.dmabuf        = VerbsDevice::Dmabuf::Supported;
        dev.dmabuf_detail = std::string("ibv_reg_dmabuf_mr(fd=-1): ") +
                            (err ? std::strerror(err) : "accepted") +
                            ": the provider implements dma-buf registration";
    }
#else
    (void)ctx;
    dev.dmabuf        = VerbsDevice::Dmabuf::Unsupported;
    dev.dmabuf_detail = "built against a libibverbs without ibv_reg_dmabuf_mr (rdma-core < 34)";
#endif
}

bool file_exists(const std::string &path)
{
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> list_components()
{
    std::vector<std::string> names;
    uct_component_h *components = nullptr;
    unsigned count              = 0;
    if (uct_query_components(&components, &count) != UCS_OK) {
        return names;
    }
    for (unsigned i = 0; i < count; ++i) {
        uct_component_attr_t attr{};
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if (uct_component_query(components[i], &attr) == UCS_OK) {
            names.emplace_back(attr.name);
        }
    }
    uct_release_component_list(components);
    return names;
}

bool has_gdr(const std::vector<std::string> &names)
{
    for (const auto &name : names) {
        if (name == "gdr") {
            return true;
        }
    }
    return false;
}

}  // namespace

std::vector<VerbsDevice> probe_verbs(std::string *error)
{
    std::vector<VerbsDevice> result;
    int count         = 0;
    ibv_device **list = ibv_get_device_list(&count);
    if (list == nullptr) {
        if (error) {
            *error = std::string("ibv_get_device_list: ") + std::strerror(errno);
        }
        return result;
    }
    for (int i = 0; i < count; ++i) {
        VerbsDevice dev;
        dev.name         = ibv_get_device_name(list[i]);
        ibv_context *ctx = ibv_open_device(list[i]);
        if (ctx == nullptr) {
            dev.error = std::string("ibv_open_device: ") + std::strerror(errno);
            result.push_back(std::move(dev));
            continue;
        }
        ibv_device_attr attr{};
        if (ibv_query_device(ctx, &attr) != 0) {
            dev.error = std::string("ibv_query_device: ") + std::strerror(errno);
        }
        for (unsigned port = 1; port <= attr.phys_port_cnt; ++port) {
            ibv_port_attr pattr{};
            if (ibv_query_port(ctx, static_cast<uint8_t>(port), &pattr) != 0) {
                continue;
            }
            VerbsPort p;
            p.port       = port;
            p.state      = pattr.state;
            p.active_mtu = mtu_bytes(pattr.active_mtu);
            p.max_mtu    = mtu_bytes(pattr.max_mtu);
            p.ethernet   = pattr.link_layer == IBV_LINK_LAYER_ETHERNET;
            dev.ports.push_back(p);
        }
        probe_dmabuf(ctx, dev);
        ibv_close_device(ctx);
        result.push_back(std::move(dev));
    }
    ibv_free_device_list(list);
    return result;
}

CudaProbe probe_cuda()
{
    namespace cu = gdr::cuda_driver;
    CudaProbe probe;
    const cu::driver &cuda = cu::driver::instance();
    if (!cuda.initialized()) {
        probe.error = cuda.reason();
        return probe;
    }
    probe.available      = true;
    probe.driver_version = cuda.version();
    if (!cuda.usable()) {
        probe.error = cuda.reason();
        return probe;
    }
    const cu::driver_api &api = cuda.api();
    for (int i = 0; i < cuda.device_count(); ++i) {
        cu::CUdevice dev = 0;
        if (api.cuDeviceGet(&dev, i) != cu::CUDA_SUCCESS) {
            continue;
        }
        CudaGpu gpu;
        gpu.ordinal    = i;
        char name[256] = {};
        if (api.cuDeviceGetName(name, sizeof(name) - 1, dev) == cu::CUDA_SUCCESS) {
            gpu.name = name;
        }
        // The PCI address from the attributes gdr_rc uses too (function 0, as UCX's cuda md):
        // no text to parse, and topo's formatting, so it matches the sysfs names exactly.
        int domain = -1, bus = -1, device = -1;
        if (api.cuDeviceGetAttribute(&domain, cu::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) == 0 &&
            api.cuDeviceGetAttribute(&bus, cu::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) == 0 &&
            api.cuDeviceGetAttribute(&device, cu::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) == 0) {
            gpu.bdf = gdr::topo::PciAddress{static_cast<uint16_t>(domain),
                                            static_cast<uint8_t>(bus), static_cast<uint8_t>(device),
                                            0}
                          .str();
        }
        int value = 0;
        if (api.cuDeviceGetAttribute(&value, cu::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev) == 0) {
            gpu.dma_buf_supported = value;
        }
        if (api.cuDeviceGetAttribute(&value, cu::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
                                     dev) == 0) {
            gpu.gpudirect_rdma_supported = value;
        }
        probe.gpus.push_back(std::move(gpu));
    }
    return probe;
}

UcxProbe probe_ucx(const std::string &plugin_path, const std::vector<std::string> &defaults)
{
    UcxProbe probe;
    probe.version    = ucp_get_version_string();
    probe.components = list_components();
    if (has_gdr(probe.components)) {
        probe.plugin        = UcxProbe::Plugin::Preloaded;
        probe.plugin_detail = "component \"gdr\" is already registered (LD_PRELOAD or linked)";
        return probe;
    }
    probe.plugin_path = plugin_path;
    if (probe.plugin_path.empty()) {
        for (const auto &candidate : defaults) {
            if (file_exists(candidate)) {
                probe.plugin_path = candidate;
                break;
            }
        }
    }
    if (probe.plugin_path.empty()) {
        std::string tried;
        for (const auto &candidate : defaults) {
            tried += (tried.empty() ? "" : ", ") + candidate;
        }
        probe.plugin_detail = "plugin not found (looked for " + tried + ")";
        return probe;
    }
    if (!file_exists(probe.plugin_path)) {
        probe.plugin_detail = "plugin not found: " + probe.plugin_path + " does not exist";
        return probe;
    }
    // Loading runs the plugin's constructor, which registers the component with the
    // libuct already loaded into this process - exactly what LD_PRELOAD does for an application.
    if (::dlopen(probe.plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
        const char *why     = ::dlerror();
        probe.plugin        = UcxProbe::Plugin::LoadFailed;
        probe.plugin_detail = std::string("dlopen: ") + (why ? why : "failed");
        return probe;
    }
    probe.components = list_components();
    if (has_gdr(probe.components)) {
        probe.plugin        = UcxProbe::Plugin::Loaded;
        probe.plugin_detail = "loaded " + probe.plugin_path + "; UCT lists component \"gdr\"";
    } else {
        probe.plugin        = UcxProbe::Plugin::NotRegistered;
        probe.plugin_detail = "loaded " + probe.plugin_path +
                              " but UCT lists no component \"gdr\" (the plugin refused to "
                              "register: its own message on stderr says why)";
    }
    return probe;
}

}  // namespace gdr::doctor
