/**
 * @file version.hpp
 * @brief ucp_cpp's version.  The UCX releases it supports (and the minimum check) are in
 *        detail/ucx_compat.hpp, the one place where ucp_cpp knows UCX versions.
 *
 * Layer: bottom.
 */
#pragma once

#include <ucp_cpp/detail/ucx_compat.hpp>

/// Major version of ucp_cpp: changes when the API changes incompatibly.
#define UCP_CPP_VERSION_MAJOR 0
/// Minor version of ucp_cpp: changes when API is added compatibly.
#define UCP_CPP_VERSION_MINOR 1
/// Patch version of ucp_cpp: changes for fixes that leave the API alone.
#define UCP_CPP_VERSION_PATCH 0
