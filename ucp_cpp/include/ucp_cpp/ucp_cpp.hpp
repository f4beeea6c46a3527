/**
 * @file ucp_cpp.hpp
 * @brief Everything in ucp_cpp's wrapper: header-only C++17 RAII layer over UCX's UCP API.
 *        Programs include this header (programs that use the collectives: coll/coll.hpp, which
 *        includes this one).
 *
 * Ownership graph (shared_ptr): endpoint/listener/request/progress_thread -> worker -> context;
 * memory_handle -> context; remote_key -> endpoint.  Any destruction order is safe.
 *
 * Each class is declared in its own header, which includes only headers of lower layers
 * (docs/ucp_cpp.md, "Headers").  The few members that need a type of a higher layer (a worker
 * member returning a request, endpoint::put taking a remote_key, ...) are declared in their
 * class's header and defined in detail/worker.inl or detail/endpoint.inl, included here once,
 * after all the classes.
 */
#pragma once

// The public headers, lowest layer first.
#include <ucp_cpp/detail/globals.hpp>
#include <ucp_cpp/detail/ucx_compat.hpp>
#include <ucp_cpp/error.hpp>
#include <ucp_cpp/tag.hpp>
#include <ucp_cpp/version.hpp>
#include <ucp_cpp/context.hpp>
#include <ucp_cpp/plugin.hpp>
#include <ucp_cpp/worker.hpp>
#include <ucp_cpp/memory.hpp>
#include <ucp_cpp/progress_thread.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/am.hpp>
#include <ucp_cpp/endpoint.hpp>
#include <ucp_cpp/listener.hpp>
#include <ucp_cpp/rkey.hpp>
#include <ucp_cpp/blocking.hpp>

// Out-of-line members, once every class they use is complete.
#include <ucp_cpp/detail/endpoint.inl>
#include <ucp_cpp/detail/worker.inl>

// The collectives are a module on top of this one (<ucp_cpp/coll/coll.hpp>, target ucp_cpp::coll),
// which includes this header; nothing here includes them.
