/**
 * @file coll/gpu/staging.hpp
 * @brief How transfers of CUDA buffers travel: through UCX directly, or staged through pinned
 *        host memory (coll::config::gpu_staging, UCP_CPP_COLL_GPU_STAGING); and whether an
 *        allreduce of CUDA buffers reads the peers' buffers directly (coll::config::gpu_direct,
 *        UCP_CPP_COLL_GPU_DIRECT; coll/direct.hpp).
 */
#pragma once

namespace ucp_cpp::coll::gpu {

/// How transfers of CUDA buffers travel.
enum class staging {
    automatic,
    always,
    never
};

/// Whether an allreduce of CUDA buffers reads the other ranks' buffers directly.
enum class direct {
    automatic,  ///< when every rank's buffers can be mapped and no algorithm was named
    always,  ///< always; a call where it cannot fails (UCS_ERR_UNSUPPORTED)
    never
};

}  // namespace ucp_cpp::coll::gpu
