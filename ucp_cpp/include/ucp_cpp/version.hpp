/// @file version.hpp
/// @brief ucp_cpp's version.  The UCX releases it supports (and the minimum check) are in
///        detail/ucx_compat.hpp, the one place where ucp_cpp knows UCX versions.
#pragma once

#include <ucp_cpp/detail/ucx_compat.hpp>

#define UCP_CPP_VERSION_MAJOR 0
#define UCP_CPP_VERSION_MINOR 1
#define UCP_CPP_VERSION_PATCH 0
