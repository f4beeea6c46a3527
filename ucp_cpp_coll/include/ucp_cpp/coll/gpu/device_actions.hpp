/**
 * @file coll/gpu/device_actions.hpp
 * @brief The local actions a collective schedule runs on device memory (implemented by
 *        gpu::lane); host collectives have none and use memmove / reduction::apply.
 */
#pragma once

#include <ucp_cpp/coll/types.hpp>

#include <cstddef>
#include <memory>

namespace ucp_cpp::coll::detail {

/// Local actions on device memory (a gpu::lane for CUDA buffers): copies and reduction kernels
/// queued on the collective's stream.  Host collectives have none.
class device_actions {
public:
    virtual ~device_actions() = default;
    /// dst and src must not partially overlap.
    virtual void copy(void *dst, const void *src, size_t bytes) = 0;
    virtual void reduce(const reduction &op, datatype type, const void *in, void *inout,
                        size_t count)                           = 0;
    virtual std::shared_ptr<std::byte> allocate(size_t bytes)   = 0;
};

}  // namespace ucp_cpp::coll::detail
