/**
 * @file coll/gpu/peer_memory.hpp
 * @brief Reading other ranks' CUDA buffers directly (the direct allreduce, coll/direct.hpp):
 *        what a rank tells its peers about a buffer (exported_buffer: a cuIpcGetMemHandle
 *        handle, the buffer's offset in its allocation), who the rank is (which node, process,
 *        CUDA context and device), and the per-lane cache of opened mappings (peer_mappings).
 *
 * A mapping is opened once per (peer process, allocation) and counted: map() takes a use,
 * release() gives it back and, unless the mappings are kept, closes the mapping with its last
 * use.  Keeping them saves the open of the next call, but the driver maps an allocation once
 * per process: while we hold it, UCX's cuda_ipc cannot open it (UCX 1.13 aborts then), and
 * while UCX holds it, we cannot (map() throws).  So mappings are kept only where UCX moves no
 * CUDA memory (the direct allreduce decides).  A peer that freed an allocation and made a new
 * one gets a new CU_POINTER_ATTRIBUTE_BUFFER_ID: a descriptor whose id differs from the kept
 * one, or whose range overlaps a kept one of the same process, closes the old mapping first.
 * Threading: a peer_mappings belongs to one lane (one thread at a time).
 */
#pragma once

#include <ucp_cpp/coll/gpu/driver.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <utility>

namespace ucp_cpp::coll::gpu {

/// What a rank tells its peers about one of its CUDA buffers (sent as raw bytes).
struct exported_buffer {
    gdr::cuda_driver::CUipcMemHandle handle{};  ///< of the allocation (valid if exportable)
    uint64_t address    = 0;  ///< the buffer in the exporter's process (same-process peers)
    uint64_t base       = 0;  ///< its allocation's start, in the exporter's process
    uint64_t size       = 0;  ///< its allocation's size
    uint64_t buffer_id  = 0;  ///< CU_POINTER_ATTRIBUTE_BUFFER_ID: unique per allocation
    uint32_t exportable = 0;  ///< cuIpcGetMemHandle accepted it (not managed or VMM memory)
    uint32_t reserved   = 0;  ///< zero (padding, so that the bytes sent are all defined)
};

/// Who a rank is, as the direct allreduce decides whether it can read its peers' buffers.
struct rank_identity {
    char node[40]      = {};  ///< /proc/sys/kernel/random/boot_id, else the host name
    uint64_t process   = 0;  ///< process_identity()
    uint64_t context   = 0;  ///< the lane's CUcontext (meaningful between ranks of one process)
    int32_t pci_domain = -1;  ///< the lane's device: PCI domain,
    int32_t pci_bus    = -1;  ///< bus
    int32_t pci_device = -1;  ///< and device number (the same in every process of the node)
    int32_t reserved   = 0;  ///< zero (padding, so that the bytes sent are all defined)
};

/// @brief A random number drawn once per process: equal identities are the same process (pids
///        repeat across containers and over time).
/// @return this process's identity
[[nodiscard]] inline uint64_t process_identity()
{
    static const uint64_t id = [] {
        std::random_device entropy;
        const uint64_t drawn = (uint64_t(entropy()) << 32) ^ uint64_t(entropy());
        const uint64_t now = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
        return drawn ^ (now * 0x9E3779B97F4A7C15ull) ^ uint64_t(::getpid());
    }();
    return id;
}

/// @brief This machine's identity for rank_identity::node: the kernel's boot id (the same for
///        every process of one running kernel), else the host name.
/// @param out where it goes, NUL-terminated
inline void node_identity(char (&out)[40])
{
    std::memset(out, 0, sizeof out);
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string id;
    if (!(boot >> id) || id.empty()) {
        char host[sizeof out] = {};
        ::gethostname(host, sizeof host - 1);
        id = host;
    }
    std::memcpy(out, id.data(), std::min(id.size(), sizeof out - 1));
}

/**
 * @brief The mappings of peer processes' allocations into one CUDA context (a lane's), opened
 *        on first use and kept (see the file comment).
 *
 * Lifetime: closes every mapping when destroyed (the lane's stream has drained by then).
 * Threading: one thread at a time.
 */
class peer_mappings {
public:
    /// @param cu  the driver (cuda()).
    /// @param ctx the context mappings are opened in (made current by the caller).
    peer_mappings(const driver &cu, CUcontext ctx) : cu_(cu), context_(ctx) {}
    ~peer_mappings()
    {
        gdr::cuda_driver::scoped_context scope(cu_, context_);
        for (auto &[key, open] : open_)
            cu_.cuIpcCloseMemHandle(open.local);
    }
    peer_mappings(const peer_mappings &)            = delete;
    peer_mappings &operator=(const peer_mappings &) = delete;

    /// @brief Describes @p p for the peers: its allocation, offset and IPC handle.
    /// @param p a device pointer of this process (the lane's context must be current).
    /// @return the description; exportable = 0 when the allocation cannot be exported (managed
    ///         or VMM memory, or the driver cannot say where it starts), which the direct
    ///         allreduce reports as why it cannot run.  A CUDA failure is no error here: a
    ///         buffer the direct path cannot use is one the collective's algorithm can.
    exported_buffer export_buffer(const void *p)
    {
        using gdr::cuda_driver::CUDA_SUCCESS;
        exported_buffer out;
        const CUdeviceptr address = CUdeviceptr(reinterpret_cast<uintptr_t>(p));
        CUdeviceptr base          = 0;
        size_t size               = 0;
        unsigned long long id     = 0;
        out.address               = address;
        if (cu_.cuMemGetAddressRange_v2(&base, &size, address) != CUDA_SUCCESS ||
            cu_.cuPointerGetAttribute(&id, gdr::cuda_driver::CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                      address) != CUDA_SUCCESS) {
            return out;
        }
        out.base      = base;
        out.size      = size;
        out.buffer_id = id;
        // cuIpcGetMemHandle is a call into the kernel driver: keep the handle per allocation.
        auto known = exported_.find(id);
        if (known == exported_.end()) {
            if (exported_.size() >= max_cached)
                exported_.clear();
            gdr::cuda_driver::CUipcMemHandle handle{};
            const bool ok = cu_.cuIpcGetMemHandle(&handle, base) == CUDA_SUCCESS;
            known         = exported_.emplace(id, std::make_pair(ok, handle)).first;
        }
        out.exportable = known->second.first ? 1 : 0;
        out.handle     = known->second.second;
        return out;
    }

    /// @brief The address, in this process, of the buffer @p b of the peer process @p process;
    ///        takes a use of its mapping (give it back with release()).
    /// @param process the peer's process_identity()
    /// @param b       what the peer exported (exportable)
    /// @return a device pointer for this context's kernels and copies
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when cuIpcOpenMemHandle fails (e.g.
    ///         CUDA_ERROR_ALREADY_MAPPED: UCX's cuda_ipc holds that allocation)
    void *map(uint64_t process, const exported_buffer &b)
    {
        auto found = open_.find({process, b.base});
        if (found != open_.end() && found->second.buffer_id != b.buffer_id &&
            found->second.users == 0) {
            close(found);  // the peer freed that allocation and made a new one there
            found = open_.end();
        }
        if (found == open_.end()) {
            // A new allocation of this peer may cover an older one's addresses: that one is gone.
            for (auto it = open_.lower_bound({process, 0});
                 it != open_.end() && it->first.first == process;) {
                const bool overlaps = it->first.second < b.base + b.size &&
                                      b.base < it->first.second + it->second.size;
                it = overlaps && it->second.users == 0 ? close(it) : std::next(it);
            }
            mapping m;
            check(cu_.cuIpcOpenMemHandle_v2(&m.local, b.handle,
                                            gdr::cuda_driver::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                  "cuIpcOpenMemHandle");
            m.buffer_id = b.buffer_id;
            m.size      = b.size;
            found       = open_.emplace(std::make_pair(process, b.base), m).first;
        }
        ++found->second.users;
        return reinterpret_cast<void *>(uintptr_t(found->second.local + (b.address - b.base)));
    }

    /// @brief Gives back a use that map() took of the mapping of @p b; closes the mapping with
    ///        its last use unless @p keep.  Call it once the work that used the address is done.
    /// @param process the peer's process_identity()
    /// @param b       what was passed to map()
    /// @param keep    keep the mapping open for later calls
    void release(uint64_t process, const exported_buffer &b, bool keep) noexcept
    {
        auto found = open_.find({process, b.base});
        if (found == open_.end() || found->second.users == 0)
            return;
        if (--found->second.users == 0 && !keep)
            close(found);
    }

    /// @return how many peer allocations are mapped (diagnostics and tests).
    [[nodiscard]] size_t open_count() const noexcept { return open_.size(); }

private:
    struct mapping {
        CUdeviceptr local  = 0;
        uint64_t buffer_id = 0;
        uint64_t size      = 0;
        size_t users       = 0;  ///< calls between map() and release()
    };
    using table = std::map<std::pair<uint64_t, uint64_t>, mapping>;  // (process, base)

    table::iterator close(table::iterator it)
    {
        cu_.cuIpcCloseMemHandle(it->second.local);
        return open_.erase(it);
    }

    static constexpr size_t max_cached = 256;
    const driver &cu_;
    CUcontext context_;
    table open_;
    std::map<uint64_t, std::pair<bool, gdr::cuda_driver::CUipcMemHandle>> exported_;
};

}  // namespace ucp_cpp::coll::gpu
