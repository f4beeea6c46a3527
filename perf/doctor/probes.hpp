// probes.hpp - what gdr-doctor asks the live system beyond sysfs: libibverbs (port MTU, the
// dma-buf registration path), libcuda (GPU attributes) and UCX (version, plugin).  None of
// these is run with --root, whose tree describes another machine.
#pragma once

#include <string>
#include <vector>

namespace gdr::doctor {

struct VerbsPort {
    unsigned port  = 0;
    int state      = 0;  ///< enum ibv_port_state (4 = ACTIVE)
    int active_mtu = 0;  ///< bytes
    int max_mtu    = 0;  ///< bytes
    bool ethernet  = false;
};

struct VerbsDevice {
    std::string name;
    std::string error;  ///< why it could not be opened/queried ("" when fine)
    std::vector<VerbsPort> ports;
    /// ibv_reg_dmabuf_mr(pd, 0, 0, 0, fd = -1, access): EBADF/EINVAL means the provider has
    /// the dma-buf path, EOPNOTSUPP that it has none.
    enum class Dmabuf {
        NotProbed,
        Supported,
        Unsupported
    } dmabuf = Dmabuf::NotProbed;
    std::string dmabuf_detail;
};

/// Opens every verbs device read-only (no QP is created; one PD for the dma-buf probe).
std::vector<VerbsDevice> probe_verbs(std::string *error);

struct CudaGpu {
    int ordinal = 0;
    std::string name;
    std::string bdf;  ///< lower-case "0000:05:00.0"
    int dma_buf_supported        = -1;  ///< CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, -1 unknown
    int gpudirect_rdma_supported = -1;  ///< CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
};

struct CudaProbe {
    bool available = false;  ///< libcuda.so.1 loaded and cuInit succeeded
    std::string error;
    int driver_version = 0;  ///< 13000 = 13.0
    std::vector<CudaGpu> gpus;
};

/// libcuda.so.1 through the project's CUDA driver layer; never needs the CUDA toolkit.
CudaProbe probe_cuda();

struct UcxProbe {
    std::string version;  ///< ucp_get_version_string()
    std::vector<std::string> components;
    std::string plugin_path;  ///< what was tried ("" when nothing was found)
    enum class Plugin {
        Preloaded,
        Loaded,
        NotFound,
        LoadFailed,
        NotRegistered
    } plugin = Plugin::NotFound;
    std::string plugin_detail;
};

/// Loads the plugin (if `plugin_path` is empty: the first of the default locations that
/// exists) and checks that UCT then lists a component named "gdr".
UcxProbe probe_ucx(const std::string &plugin_path, const std::vector<std::string> &defaults);

}  // namespace gdr::doctor
