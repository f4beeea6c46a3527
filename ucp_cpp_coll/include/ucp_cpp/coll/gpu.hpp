/**
 * @file coll/gpu.hpp
 * @brief CUDA buffers for ucp_cpp::coll, without CUDA at build time: everything of coll/gpu/.
 *
 * - gpu/driver.hpp: the CUDA driver (the project's one layer, <gdr_cuda_driver/...>, libcuda.so.1
 *   through dlopen) and locate(): is a pointer device memory (one batched pointer query).
 * - gpu/kernels.hpp, gpu/nvrtc.hpp: the reduction kernels, compiled by NVRTC (dlopen'ed too).
 * - gpu/streams.hpp, gpu/pinned_pool.hpp, gpu/scratch_pool.hpp: a lane's streams and events,
 *   pinned bounce buffers and device scratch.
 * - gpu/lane.hpp: per engine (worker) and CUDA context, the local actions of collectives on CUDA
 *   buffers (gpu/device_actions.hpp) and the staging of their transfers (engine.hpp).
 * - gpu/peer_memory.hpp: peers' buffers read directly (IPC handles, their cached mappings).
 * - gpu/staging.hpp: how transfers of CUDA buffers travel, and whether the allreduce reads
 *   the peers' buffers directly (both set in coll::config).
 */
#pragma once

#include <ucp_cpp/coll/gpu/device_actions.hpp>
#include <ucp_cpp/coll/gpu/driver.hpp>
#include <ucp_cpp/coll/gpu/kernels.hpp>
#include <ucp_cpp/coll/gpu/lane.hpp>
#include <ucp_cpp/coll/gpu/nvrtc.hpp>
#include <ucp_cpp/coll/gpu/peer_memory.hpp>
#include <ucp_cpp/coll/gpu/pinned_pool.hpp>
#include <ucp_cpp/coll/gpu/scratch_pool.hpp>
#include <ucp_cpp/coll/gpu/staging.hpp>
#include <ucp_cpp/coll/gpu/streams.hpp>
