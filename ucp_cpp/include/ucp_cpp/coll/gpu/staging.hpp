/**
 * @file coll/gpu/staging.hpp
 * @brief How transfers of CUDA buffers travel (through UCX directly, or staged through pinned
 *        host memory) and the pinned segment size, with their environment overrides.
 */
#pragma once

#include <ucp_cpp/error.hpp>

#include <cstdlib>
#include <string>

namespace ucp_cpp::coll::gpu {

/// How transfers of CUDA buffers travel.
enum class staging { automatic, always, never };

/// UCP_CPP_COLL_GPU_STAGING=auto|yes|no overrides @p configured when set.
inline staging staging_from_environment(staging configured)
{
    const char *v = std::getenv("UCP_CPP_COLL_GPU_STAGING");
    if (v == nullptr || *v == '\0') return configured;
    const std::string s(v);
    if (s == "auto") return staging::automatic;
    if (s == "yes" || s == "1" || s == "on") return staging::always;
    if (s == "no" || s == "0" || s == "off") return staging::never;
    throw ucx_error(UCS_ERR_INVALID_PARAM,
                    "UCP_CPP_COLL_GPU_STAGING=" + s + ": expected auto, yes or no");
}

/// UCP_CPP_COLL_GPU_SEGMENT (bytes, >= 4096) overrides @p configured when set.
inline size_t segment_from_environment(size_t configured)
{
    const char *v = std::getenv("UCP_CPP_COLL_GPU_SEGMENT");
    if (v == nullptr || *v == '\0') return configured;
    char *end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end != '\0' || n < 4096) {
        throw ucx_error(UCS_ERR_INVALID_PARAM,
                        std::string("UCP_CPP_COLL_GPU_SEGMENT=") + v + ": expected bytes >= 4096");
    }
    return size_t(n);
}

}  // namespace ucp_cpp::coll::gpu
