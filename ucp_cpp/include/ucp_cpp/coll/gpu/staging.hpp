/**
 * @file coll/gpu/staging.hpp
 * @brief How transfers of CUDA buffers travel: through UCX directly, or staged through pinned
 *        host memory (coll::config::gpu_staging, UCP_CPP_COLL_GPU_STAGING).
 */
#pragma once

namespace ucp_cpp::coll::gpu {

/// How transfers of CUDA buffers travel.
enum class staging {
    automatic,
    always,
    never
};

}  // namespace ucp_cpp::coll::gpu
