/**
 * @file coll/direct.hpp
 * @brief The direct allreduce of CUDA buffers: ranks whose buffers one process can map (peer
 *        processes on the same node and device, or ranks of one process in one context) are
 *        served by one kernel that reads every rank's input and writes every rank's output.
 *
 * Schedule (p ranks; the messages are a few hundred bytes of host memory, so they cost
 * microseconds, not the ~150 µs of a transfer of CUDA memory through UCX 1.13):
 *   1. every rank sends every other its descriptor (node, process, context, device, and for its
 *      send and recv buffers an IPC handle and the offset in the allocation).  Then each rank
 *      decides, from the same p descriptors, whether all buffers can be mapped (direct_obstacle).
 *      If so, rank 0 maps the peers' buffers (gpu/peer_memory.hpp) and launches one kernel:
 *      every output = op over the p inputs, read in rank order.  Its stream drains before the
 *      next round.
 *   2. rank 0 tells every other rank (one byte) that its output is written, or that it could
 *      not map a buffer (UCX's cuda_ipc may hold that allocation mapped: the driver maps an
 *      allocation once per process), and then all run the algorithm.  Nobody reads or writes a
 *      rank's buffers after that rank completed.  Rank 0 keeps its mappings for the next call
 *      only where UCX moves no CUDA memory (staged transfers): elsewhere a mapping we hold would
 *      make UCX's cuda_ipc fail (UCX 1.13 aborts), so each call opens and closes them.
 * Why one rank does it all: the ranks share one GPU, so spreading the work over p contexts buys
 * no bandwidth (one device's memory either way) but makes the GPU switch between the ranks'
 * contexts.  A first version had each rank reduce its 1/p block and copy the others from their
 * owners (three rounds, every rank's context busy twice): it cost 1.15 ms per call at 64 KiB
 * on the H200 and reached 72.7 GB/s busbw at 64 MiB (docs/collectives.md).  One kernel also
 * moves less: p·n read and p·n written, against (2p − 1)·n read and p·n written.
 * In place is safe: a thread reads all p inputs of an element before it writes the outputs.
 *
 * When the descriptors say it cannot run (another node or device, memory that cannot be
 * exported, two contexts in one process), every rank comes to the same conclusion and runs the
 * algorithm's schedule, which follows in the same schedule (rounds that skip()), or fails the
 * call with UCS_ERR_UNSUPPORTED when the config forces the direct path.
 */
#pragma once

#include <ucp_cpp/coll/algorithms.hpp>
#include <ucp_cpp/coll/engine.hpp>
#include <ucp_cpp/coll/gpu.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace ucp_cpp::coll::detail {

/// The most ranks the direct allreduce serves (its first round is an all-to-all; the kernel
/// writes at most this many outputs).
inline constexpr int max_direct_ranks = int(gpu::max_kernel_outputs);

/// Steps of the direct rounds: the top of the step field, above every algorithm's steps.
inline constexpr uint32_t direct_step_descriptors = uint32_t(field_mask);
inline constexpr uint32_t direct_step_written     = uint32_t(field_mask) - 1;

/// The rank whose context runs the kernel.
inline constexpr int direct_leader = 0;

/// What a rank sends every other in the first round (raw bytes).
struct direct_descriptor {
    char magic[8] = {'u', 'c', 'p', 'c', 'd', 'i', 'r', '1'};
    gpu::rank_identity who;
    gpu::exported_buffer send, recv;
};

/// Why the ranks of @p all cannot read each other's buffers ("" when they can).  A function of
/// the descriptors alone, so that every rank, holding the same ones, decides alike.
inline std::string direct_obstacle(const std::vector<direct_descriptor> &all)
{
    const direct_descriptor &first = all.front();
    for (size_t r = 0; r < all.size(); ++r) {
        const direct_descriptor &d = all[r];
        const std::string rank     = "rank " + std::to_string(r);
        if (std::memcmp(d.magic, first.magic, sizeof d.magic) != 0)
            return rank + " sent no direct-allreduce descriptor (another version?)";
        if (std::strncmp(d.who.node, first.who.node, sizeof d.who.node) != 0)
            return rank + " runs on another node than rank 0";
        if (d.who.pci_domain != first.who.pci_domain || d.who.pci_bus != first.who.pci_bus ||
            d.who.pci_device != first.who.pci_device) {
            return rank + "'s buffers are on another GPU than rank 0's";
        }
        for (size_t q = 0; q < r; ++q) {
            const direct_descriptor &e = all[q];
            if (e.who.process == d.who.process) {
                if (e.who.context != d.who.context) {
                    return "ranks " + std::to_string(q) + " and " + std::to_string(r) +
                           " share a process but not a CUDA context";
                }
            } else if (!(d.send.exportable && d.recv.exportable)) {
                return rank + "'s buffers cannot be exported to other processes " +
                       "(cuIpcGetMemHandle refuses managed and VMM memory)";
            } else if (!(e.send.exportable && e.recv.exportable)) {
                return "rank " + std::to_string(q) + "'s buffers cannot be exported to " +
                       "other processes (cuIpcGetMemHandle refuses managed and VMM memory)";
            }
        }
    }
    return "";
}

/// What the rounds of one direct allreduce share.
struct direct_state {
    std::vector<direct_descriptor> all;  ///< every rank's, own included
    bool direct = false;  ///< decided by the first round
    bool forced = false;  ///< the config says always: fail instead of falling back
    std::function<void()> fallback_prologue;  ///< the algorithm's, run only when falling back
    std::shared_ptr<gpu::lane> lane;
    bool keep_mappings = false;  ///< rank 0: leave the peers' buffers mapped for later calls
    char written       = 0;  ///< rank 0's verdict: 1 the outputs are written, 0 fall back
    std::string problem;  ///< rank 0: why it could not map
    std::vector<std::pair<uint64_t, gpu::exported_buffer>> mapped;  ///< rank 0: to release
};

/// Rank 0 of a direct allreduce: maps every rank's buffers and queues the kernel; false (the
/// uses taken so far given back, the reason in state.problem) when a buffer cannot be mapped.
inline bool direct_launch(direct_state &state, const reduction &op, datatype type, size_t count)
{
    gpu::lane &lane   = *state.lane;
    const size_t p    = state.all.size();
    const uint64_t me = state.all[size_t(direct_leader)].who.process;
    std::vector<const void *> inputs(p, nullptr);
    std::vector<void *> outputs(p, nullptr);
    try {
        for (size_t q = 0; q < p; ++q) {
            const direct_descriptor &d = state.all[q];
            if (d.who.process == me) {  // this rank, or a rank of this process: its pointers
                inputs[q]  = reinterpret_cast<const void *>(uintptr_t(d.send.address));
                outputs[q] = reinterpret_cast<void *>(uintptr_t(d.recv.address));
                continue;
            }
            inputs[q] = lane.map_peer(d.who.process, d.send);
            state.mapped.emplace_back(d.who.process, d.send);
            outputs[q] = lane.map_peer(d.who.process, d.recv);
            state.mapped.emplace_back(d.who.process, d.recv);
        }
    } catch (const ucx_error &e) {
        for (const auto &[process, b] : state.mapped)
            lane.release_peer(process, b, state.keep_mappings);
        state.mapped.clear();
        state.problem = e.what();
        return false;
    }
    lane.reduce_many(op, type, inputs.data(), p, outputs.data(), p, count);
    return true;
}

/**
 * @brief Compiles the direct allreduce (see the file comment) followed by @p fallback's
 *        schedule, which runs only when the first round finds the direct path impossible.
 * @param c        the rank's context (c.plan.device set: CUDA buffers)
 * @param a        the call (a.op not custom)
 * @param lane     the lane of the buffers
 * @param forced   config gpu::direct::always: fail rather than fall back
 * @param keep_mappings rank 0 keeps the peers' buffers mapped (only where UCX moves no CUDA
 *                 memory: see the file comment)
 * @param fallback the builder of the algorithm chosen for the call
 * @throws ucx_error(UCS_ERR_IO_ERROR) when the driver cannot describe the buffers
 */
inline void build_direct_allreduce(context &c, const arguments &a,
                                   const std::shared_ptr<gpu::lane> &lane, bool forced,
                                   bool keep_mappings, builder fallback)
{
    const int p = c.size, r = c.rank;
    auto state = std::make_shared<direct_state>();
    state->all.resize(size_t(p));
    state->forced        = forced;
    state->lane          = lane;
    state->keep_mappings = keep_mappings;
    // The caller's buffers are ready at issue (the collectives' contract): describe them now.
    direct_descriptor &mine = state->all[size_t(r)];
    mine.who                = lane->identity();
    mine.send               = lane->export_buffer(a.send);
    mine.recv               = lane->export_buffer(a.recv);

    schedule *plan      = &c.plan;
    const reduction *op = a.op;
    const datatype type = c.type;
    const size_t count  = a.count;

    round &describe = c.plan.add_round();
    for (int q = 0; q < p; ++q) {
        if (q == r)
            continue;
        describe.transfers.push_back(
            transfer{true, q, &mine, sizeof(direct_descriptor), direct_step_descriptors, true});
        describe.transfers.push_back(transfer{false, q, &state->all[size_t(q)],
                                              sizeof(direct_descriptor), direct_step_descriptors,
                                              true});
    }
    describe.drain = true;
    describe.then  = [state, plan, op, type, count, r] {
        const std::string obstacle = direct_obstacle(state->all);
        if (!obstacle.empty()) {
            if (state->forced) {
                throw ucx_error(UCS_ERR_UNSUPPORTED,
                                 "coll::allreduce: UCP_CPP_COLL_GPU_DIRECT=yes (config::gpu_direct"
                                  "(always)) but the ranks cannot read each other's buffers: " +
                                     obstacle);
            }
            if (state->fallback_prologue)
                state->fallback_prologue();
            return;
        }
        // Every rank's buffers can be mapped: rank 0 confirms in the next round.
        state->direct      = true;
        plan->direct_reads = true;
        if (r == direct_leader)
            state->written = direct_launch(*state, *op, type, count) ? 1 : 0;
    };

    round &written = c.plan.add_round();
    for (int q = 0; q < p; ++q) {
        if (r == direct_leader && q != r) {
            written.transfers.push_back(
                transfer{true, q, &state->written, 1, direct_step_written, true});
        }
    }
    if (r != direct_leader) {
        written.transfers.push_back(
            transfer{false, direct_leader, &state->written, 1, direct_step_written, true});
    }
    written.skip  = [state] { return !state->direct; };
    written.drain = true;
    written.then  = [state, plan] {
        // The kernel is done (the stream drained before this round was posted).
        for (const auto &[process, b] : state->mapped)
            state->lane->release_peer(process, b, state->keep_mappings);
        state->mapped.clear();
        if (state->written == 1)
            return;
        state->direct      = false;
        plan->direct_reads = false;
        if (state->forced) {
            throw ucx_error(UCS_ERR_UNSUPPORTED,
                             "coll::allreduce: UCP_CPP_COLL_GPU_DIRECT=yes (config::gpu_direct"
                              "(always)) but rank 0 could not map the peers' buffers" +
                                 (state->problem.empty() ? std::string(" (UCX's cuda_ipc may "
                                                                        "hold them mapped)")
                                                         : ": " + state->problem));
        }
        if (state->fallback_prologue)
            state->fallback_prologue();
    };

    // The algorithm's schedule, for when the first round decides against the direct path.
    const size_t first_fallback = c.plan.rounds.size();
    fallback(c, a);
    state->fallback_prologue = std::move(c.plan.prologue);
    c.plan.prologue          = nullptr;
    auto direct              = [state] { return state->direct; };
    for (size_t i = first_fallback; i < c.plan.rounds.size(); ++i)
        c.plan.rounds[i].skip = direct;
}

}  // namespace ucp_cpp::coll::detail
