/**
 * @file coll/coll.hpp
 * @brief Collectives over ucp_cpp (host or CUDA memory): communicator, bootstrap, nine
 *        collectives, blocking and nonblocking, their algorithms and their configuration.
 *        See docs/collectives.md.  Programs that use them include this header, which brings the
 *        whole wrapper too (ucp_cpp.hpp, with the out-of-line members the collectives call).
 */
#pragma once

#include <ucp_cpp/ucp_cpp.hpp>

#include <ucp_cpp/coll/algorithms.hpp>
#include <ucp_cpp/coll/bootstrap.hpp>
#include <ucp_cpp/coll/communicator.hpp>
#include <ucp_cpp/coll/config.hpp>
#include <ucp_cpp/coll/engine.hpp>
#include <ucp_cpp/coll/environment.hpp>
#include <ucp_cpp/coll/gpu.hpp>
#include <ucp_cpp/coll/types.hpp>
