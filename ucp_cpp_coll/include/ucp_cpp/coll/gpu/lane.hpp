/**
 * @file coll/gpu/lane.hpp
 * @brief One engine's GPU resources on one CUDA context: its streams and events, pinned bounce
 *        buffers, device scratch and reduction kernels; the local actions (device_actions) of
 *        collectives on CUDA buffers, and what engine.hpp needs to stage their transfers.
 *
 * Custom (user) reductions on device buffers are staged: both operands are copied to the host,
 * reduced there by the user's function and copied back (correct, slow: documented).
 * Errors are ucx_error(UCS_ERR_UNSUPPORTED / UCS_ERR_IO_ERROR) naming the CUDA call.
 * Threading: a lane follows its engine (one thread at a time).
 */
#pragma once

#include <ucp_cpp/coll/gpu/device_actions.hpp>
#include <ucp_cpp/coll/gpu/driver.hpp>
#include <ucp_cpp/coll/gpu/kernels.hpp>
#include <ucp_cpp/coll/gpu/peer_memory.hpp>
#include <ucp_cpp/coll/gpu/pinned_pool.hpp>
#include <ucp_cpp/coll/gpu/scratch_pool.hpp>
#include <ucp_cpp/coll/gpu/streams.hpp>

#include <cstddef>
#include <memory>
#include <vector>

namespace ucp_cpp::coll::gpu {

namespace detail {

/// The device and context of a lane: the buffer's own context, else the device's primary
/// context, retained for the lane's lifetime.
class device_context {
public:
    device_context(const driver &cu, const location &where)
        : device_(device_of(cu, where.ordinal)),
          primary_(cu, where.context != nullptr ? -1 : device_, true),
          context_(where.context != nullptr ? where.context : primary_.get())
    {
        if (context_ == nullptr)
            check(primary_.result(), "cuDevicePrimaryCtxRetain");
        int major = 0, minor = 0;
        check(cu.cuDeviceGetAttribute(
                  &major, gdr::cuda_driver::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
              "cuDeviceGetAttribute");
        check(cu.cuDeviceGetAttribute(
                  &minor, gdr::cuda_driver::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
              "cuDeviceGetAttribute");
        check(cu.cuDeviceGetAttribute(&sm_count_,
                                      gdr::cuda_driver::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                      device_),
              "cuDeviceGetAttribute");
        cc_                                   = major * 10 + minor;
        const std::pair<int32_t *, int> pci[] = {
            {&pci_domain_, gdr::cuda_driver::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID},
            {&pci_bus_, gdr::cuda_driver::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID},
            {&pci_device_, gdr::cuda_driver::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID}};
        for (const auto &[value, attribute] : pci)
            check(cu.cuDeviceGetAttribute(value, attribute, device_), "cuDeviceGetAttribute");
    }
    /// @brief Fills the device and context fields of @p id (the device by its PCI address,
    ///        which is the same in every process of the node).
    /// @param id what a rank tells its peers (peer_memory.hpp).
    void describe(rank_identity &id) const noexcept
    {
        id.context    = uint64_t(reinterpret_cast<uintptr_t>(context_));
        id.pci_domain = pci_domain_;
        id.pci_bus    = pci_bus_;
        id.pci_device = pci_device_;
    }

    [[nodiscard]] CUcontext get() const noexcept { return context_; }
    [[nodiscard]] int compute_capability() const noexcept { return cc_; }
    [[nodiscard]] int sm_count() const noexcept { return sm_count_; }

private:
    static CUdevice device_of(const driver &cu, int ordinal)
    {
        CUdevice device = 0;
        check(cu.cuDeviceGet(&device, ordinal < 0 ? 0 : ordinal), "cuDeviceGet");
        return device;
    }

    CUdevice device_;
    gdr::cuda_driver::retained_primary_context primary_;
    CUcontext context_;
    int cc_ = 0, sm_count_ = 1;
    int32_t pci_domain_ = -1, pci_bus_ = -1, pci_device_ = -1;
};

}  // namespace detail

/**
 * @brief One engine's GPU resources on one CUDA context (see the file comment).
 *
 * Created by the engine for the first CUDA buffer of a context and kept for later collectives.
 * Lifetime: held by shared_ptr (allocate()'s blocks keep it alive); not copyable.
 * Threading: one thread at a time (its engine's).
 */
class lane : public coll::detail::device_actions, public std::enable_shared_from_this<lane> {
public:
    /// @brief Sets up the context, streams and pools for the buffers at @p where.
    /// @param where         a device buffer's location (of locate()).
    /// @param segment_bytes the pinned bounce-buffer size (the engine's staging segment).
    /// @throws ucx_error(UCS_ERR_UNSUPPORTED) when the CUDA driver is not usable;
    ///         ucx_error(UCS_ERR_IO_ERROR) when a CUDA call fails.
    lane(const location &where, size_t segment_bytes)
        : cu_(require_driver()),
          context_(cu_, where),
          streams_(cu_, context_.get()),
          pinned_(cu_, context_.get(), segment_bytes, streams_),
          scratch_(cu_, context_.get()),
          kernels_(cu_, context_.compute_capability(), context_.sm_count()),
          peers_(cu_, context_.get())
    {}

    /// Waits for the queued work; the members then free their memory, events and streams.
    ~lane() override { streams_.synchronize(); }
    lane(const lane &)            = delete;
    lane &operator=(const lane &) = delete;

    /// @return the context every resource of the lane lives in.
    [[nodiscard]] CUcontext context() const noexcept { return context_.get(); }
    /// @return the main stream: the collective's copies and kernels, in order.
    [[nodiscard]] CUstream stream() const noexcept { return streams_.main(); }
    /// @return the device's compute capability (e.g. 90).
    [[nodiscard]] int compute_capability() const noexcept { return context_.compute_capability(); }
    /// @return the size of a pinned bounce buffer (take_pinned()).
    [[nodiscard]] size_t segment_bytes() const noexcept { return pinned_.segment_bytes(); }

    // -------------------------------------------------- local actions (device_actions)

    /// @brief Queues a device-to-device copy on the main stream (nothing when @p dst is @p src).
    /// @param dst   destination; must not partially overlap @p src.
    /// @param src   source.
    /// @param bytes how much to copy.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when cuMemcpyAsync fails.
    void copy(void *dst, const void *src, size_t bytes) override
    {
        if (dst == src || bytes == 0)
            return;
        context_scope scope(cu_, context_.get());
        check(cu_.cuMemcpyAsync(streams::address(dst), streams::address(src), bytes,
                                streams_.main()),
              "cuMemcpyAsync");
    }

    /// @brief inout[i] = op(inout[i], in[i]): a kernel queued on the main stream, or for a custom
    ///        reduction a synchronous round trip through the host.
    /// @param op    the reduction.
    /// @param type  the elements' datatype.
    /// @param in    device operand, read.
    /// @param inout device operand and result.
    /// @param count the number of elements.
    /// @throws ucx_error(UCS_ERR_UNSUPPORTED) when the kernels cannot be built for the device;
    ///         ucx_error(UCS_ERR_IO_ERROR) when a CUDA call fails.
    void reduce(const reduction &op, datatype type, const void *in, void *inout,
                size_t count) override
    {
        if (count == 0)
            return;
        context_scope scope(cu_, context_.get());
        if (op.kind() == op_kind::custom)
            return reduce_on_host(op, type, in, inout, count);
        kernels_.launch(type, op.kind(), in, inout, count, streams_.main());
    }

    /// @brief Device scratch (cached by power-of-two size; freed when the lane goes).
    /// @param bytes the size needed.
    /// @return the block; dropping the last copy returns it to the lane's cache.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when cuMemAlloc fails.
    std::shared_ptr<std::byte> allocate(size_t bytes) override
    {
        const auto [block, rounded] = scratch_.take(bytes);
        // Returned to the cache when the schedule drops it: the schedule is done with it then
        // (completed through a stream fence, or abandoned after synchronize()).  The block keeps
        // the lane alive (the lane frees the cache).
        return std::shared_ptr<std::byte>(reinterpret_cast<std::byte *>(uintptr_t(block)),
                                          [owner   = shared_from_this(),
                                           rounded = rounded](std::byte *b) {
                                              owner->scratch_.give(CUdeviceptr(uintptr_t(b)),
                                                                   rounded);
                                          });
    }

    /// @brief Every output = op over @p k device operands (kernels on the main stream; see
    ///        reduction_kernels::launch_many()).
    /// @param op      the reduction (not custom).
    /// @param type    the elements' datatype.
    /// @param inputs  the operands (this context's pointers, or peers' through map_peer()).
    /// @param k       how many.
    /// @param outputs the results (may be inputs: in place).
    /// @param m       how many, at most max_kernel_outputs.
    /// @param count   the number of elements.
    /// @throws ucx_error(UCS_ERR_UNSUPPORTED) for a custom reduction or when the kernels cannot
    ///         be built; ucx_error(UCS_ERR_IO_ERROR) when a CUDA call fails.
    void reduce_many(const reduction &op, datatype type, const void *const *inputs, size_t k,
                     void *const *outputs, size_t m, size_t count)
    {
        if (count == 0 || k == 0 || m == 0)
            return;
        if (m > max_kernel_outputs) {
            throw ucx_error(UCS_ERR_UNSUPPORTED, "coll/gpu: at most " +
                                                     std::to_string(max_kernel_outputs) +
                                                     " outputs per reduction kernel");
        }
        if (op.kind() == op_kind::custom) {
            throw ucx_error(UCS_ERR_UNSUPPORTED,
                            "coll/gpu: a custom reduction has no many-input kernel");
        }
        context_scope scope(cu_, context_.get());
        kernels_.launch_many(type, op.kind(), inputs, k, outputs, m, count, streams_.main());
    }

    // -------------------------------------------------- direct reads of peers' buffers
    /// @brief Who this rank is, for the direct allreduce's decision (node, process, context,
    ///        device).
    /// @return the identity
    [[nodiscard]] rank_identity identity() const
    {
        rank_identity id;
        node_identity(id.node);
        id.process = process_identity();
        context_.describe(id);
        return id;
    }
    /// @brief Describes @p p (a buffer of this lane's context) for peer processes.
    /// @param p a device pointer.
    /// @return see peer_mappings::export_buffer().
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when the lane's context cannot be made current.
    exported_buffer export_buffer(const void *p)
    {
        context_scope scope(cu_, context_.get());
        return peers_.export_buffer(p);
    }
    /// @brief A peer process's buffer, mapped into this lane's context (cached).
    /// @param process the peer's process_identity().
    /// @param b       its export_buffer() description.
    /// @return a device pointer this lane's kernels and copies can read and write.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when cuIpcOpenMemHandle fails.
    void *map_peer(uint64_t process, const exported_buffer &b)
    {
        context_scope scope(cu_, context_.get());
        return peers_.map(process, b);
    }
    /// @brief Gives back a use map_peer() took (see peer_mappings::release()).
    /// @param process the peer's process_identity().
    /// @param b       what was passed to map_peer().
    /// @param keep    keep the mapping for later calls.
    void release_peer(uint64_t process, const exported_buffer &b, bool keep) noexcept
    {
        gdr::cuda_driver::scoped_context scope(cu_, context_.get());
        peers_.release(process, b, keep);
    }
    /// @return how many peer allocations this lane has mapped.
    [[nodiscard]] size_t mapped_peer_allocations() const noexcept { return peers_.open_count(); }

    // -------------------------------------------------- staging support (engine.hpp)

    /// @brief A pinned host bounce buffer for one staged segment.
    /// @return a block of segment_bytes().
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when cuMemHostAlloc fails.
    void *take_pinned() { return pinned_.take(); }
    /// @brief Returns @p block now (no queued copy reads it).
    /// @param block a block of take_pinned().
    void give_pinned(void *block) { pinned_.give(block); }
    /// @brief Returns @p block to the pool once the work before @p e (an H2D copy still reading
    ///        the block) has completed; the event goes back with it.
    /// @param block a block of take_pinned().
    /// @param e     an event of record() after the copy.
    void give_pinned_after(void *block, CUevent e) { pinned_.give_after(block, e); }

    /// @brief Device -> pinned host on the D2H stream (see streams::d2h_after_main()).
    /// @param host      pinned destination (take_pinned()).
    /// @param device    device source.
    /// @param bytes     how much to copy.
    /// @param wait_main true: after everything queued so far on the main stream.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when a CUDA call fails.
    void d2h_after_main(void *host, const void *device, size_t bytes, bool wait_main)
    {
        streams_.d2h_after_main(host, device, bytes, wait_main);
    }
    /// @brief Pinned host -> device on the main stream.
    /// @param device device destination.
    /// @param host   pinned source (take_pinned()); give it back with give_pinned_after().
    /// @param bytes  how much to copy.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when a CUDA call fails.
    void h2d(void *device, const void *host, size_t bytes) { streams_.h2d(device, host, bytes); }

    /// @brief Marks the work queued so far, to poll it with passed().
    /// @param on_d2h_stream true: the D2H stream; false: the main stream.
    /// @return an event recorded now on the main stream (or the D2H stream); release() it.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) when a CUDA call fails.
    CUevent record(bool on_d2h_stream = false) { return streams_.record(on_d2h_stream); }
    /// @brief Polls an event without blocking.
    /// @param e an event of record().
    /// @return true once the work before @p e has completed.
    /// @throws ucx_error(UCS_ERR_IO_ERROR) on a CUDA error.
    bool passed(CUevent e) { return streams_.passed(e); }
    /// @brief Gives an event back for a later record().
    /// @param e an event of record(), not used after this.
    void release(CUevent e) { streams_.release(e); }

    /// Waits for everything queued on both streams (errors ignored: used on failure paths).
    void synchronize() noexcept { streams_.synchronize(); }

private:
    static const driver &require_driver()
    {
        const driver *cu = cuda();
        if (cu == nullptr) {
            throw ucx_error(UCS_ERR_UNSUPPORTED,
                            "coll/gpu: a CUDA buffer needs the CUDA driver: " + driver_problem());
        }
        return *cu;
    }

    /// Custom reductions: copy both operands to the host, reduce there, copy back (synchronous).
    void reduce_on_host(const reduction &op, datatype type, const void *in, void *inout,
                        size_t count)
    {
        const size_t bytes = count * size_of(type);
        std::vector<std::byte> a(bytes), b(bytes);
        const CUstream s = streams_.main();
        check(cu_.cuMemcpyDtoHAsync_v2(a.data(), streams::address(inout), bytes, s),
              "cuMemcpyDtoHAsync");
        check(cu_.cuMemcpyDtoHAsync_v2(b.data(), streams::address(in), bytes, s),
              "cuMemcpyDtoHAsync");
        check(cu_.cuStreamSynchronize(s), "cuStreamSynchronize");
        op.apply(type, b.data(), a.data(), count);
        check(cu_.cuMemcpyHtoDAsync_v2(streams::address(inout), a.data(), bytes, s),
              "cuMemcpyHtoDAsync");
        check(cu_.cuStreamSynchronize(s), "cuStreamSynchronize");
    }

    // Declaration order is construction order; destruction runs backwards, so the context is
    // released last, after the pools and streams that live in it.
    const driver &cu_;
    detail::device_context context_;
    streams streams_;
    pinned_pool pinned_;
    scratch_pool scratch_;
    reduction_kernels kernels_;
    peer_mappings peers_;  ///< closed before the context is released
};

}  // namespace ucp_cpp::coll::gpu
