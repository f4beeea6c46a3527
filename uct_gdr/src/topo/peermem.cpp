// The peer-memory module check shared by the transport and gdr-doctor (gdr_topo.hpp).
#include "gdr_topo.hpp"

namespace gdr::topo {

std::optional<PeerMemoryModule> find_peer_memory_module(const SysRoot &sys)
{
    // UCX's order (uct_ib_md_open): the MLNX_OFED peer-memory API's file first, then the module
    // NVIDIA ships with its driver, then the older standalone module.
    static const struct {
        const char *evidence;
        const char *module;
    } candidates[] = {
        {"/sys/kernel/mm/memory_peers/nv_mem/version", "nv_peer_mem"},
        {"/sys/module/nvidia_peermem/version", "nvidia_peermem"},
        {"/sys/module/nv_peer_mem/version", "nv_peer_mem"},
    };
    for (const auto &candidate : candidates) {
        if (sys.exists(candidate.evidence)) {
            return PeerMemoryModule{candidate.module, candidate.evidence};
        }
    }
    return std::nullopt;
}

}  // namespace gdr::topo
