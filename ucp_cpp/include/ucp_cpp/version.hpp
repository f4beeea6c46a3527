/// @file version.hpp
/// @brief ucp_cpp's version and the UCX it was written against.
#pragma once

#include <ucp/api/ucp_version.h>

#define UCP_CPP_VERSION_MAJOR 0
#define UCP_CPP_VERSION_MINOR 1
#define UCP_CPP_VERSION_PATCH 0

// ucp_cpp uses the *_nbx API and UCP_OP_ATTR_FIELD_MEMORY_TYPE / MEMH, present since UCX 1.13.
#if UCP_API_VERSION < UCP_VERSION(1, 13)
#error "ucp_cpp needs UCX >= 1.13"
#endif
