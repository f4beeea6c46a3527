/**
 * @file ucp_cpp.hpp
 * @brief Everything in ucp_cpp: header-only C++17 RAII layer over UCX's UCP API.
 *
 * Ownership graph (shared_ptr): endpoint/listener/request/progress_thread -> worker -> context;
 * memory_handle -> context; remote_key -> endpoint.  Any destruction order is safe.
 */
#pragma once

#include <ucp_cpp/am.hpp>
#include <ucp_cpp/blocking.hpp>
#include <ucp_cpp/context.hpp>
#include <ucp_cpp/endpoint.hpp>
#include <ucp_cpp/error.hpp>
#include <ucp_cpp/listener.hpp>
#include <ucp_cpp/memory.hpp>
#include <ucp_cpp/plugin.hpp>
#include <ucp_cpp/progress_thread.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/rkey.hpp>
#include <ucp_cpp/tag.hpp>
#include <ucp_cpp/version.hpp>
#include <ucp_cpp/worker.hpp>
#include <ucp_cpp/coll/coll.hpp>
