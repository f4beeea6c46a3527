/**
 * @file coll/direct.hpp
 * @brief The direct allreduce of CUDA buffers: ranks whose buffers this process can map (peer
 *        processes on the same node and device, or ranks of this process in the same context)
 *        read each other's buffers instead of sending them.
 *
 * Schedule (p ranks, n elements cut into p blocks aligned to 16 bytes; the messages are a few
 * hundred bytes of host memory each, so they cost microseconds, not the ~150 µs of a transfer
 * of CUDA memory through UCX 1.13):
 *   1. every rank sends every other its descriptor (node, process, context, device, and for
 *      its send and recv buffers an IPC handle and the offset in the allocation).  Then each
 *      rank decides, from the same p descriptors, whether all can read all (direct_obstacle);
 *      if so it maps the peers' buffers (cached per peer allocation, gpu/peer_memory.hpp) and
 *      launches one kernel: its output block = op over the p inputs' block, read in rank order.
 *      The stream drains before the next round.
 *   2. everyone tells everyone its block is reduced (empty messages); then each rank copies
 *      the other blocks from their owners' outputs.  The stream drains.
 *   3. everyone tells everyone its copies are done, so no rank returns (and lets its caller
 *      reuse a buffer) while a peer still reads it.
 * In place is safe: in step 1 a rank writes only its own block, which no peer reads then; in
 * step 2 it writes the other blocks, which every peer finished reading in step 1.
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

/// The most ranks the direct allreduce serves (its first round is an all-to-all, and a node
/// holds few GPUs).
inline constexpr int max_direct_ranks = 16;

/// Steps of the direct rounds: the top of the step field, above every algorithm's steps.
inline constexpr uint32_t direct_step_descriptors = uint32_t(field_mask);
inline constexpr uint32_t direct_step_reduced     = uint32_t(field_mask) - 1;
inline constexpr uint32_t direct_step_copied      = uint32_t(field_mask) - 2;

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

/// Blocks of the direct allreduce: ceil(n / p) elements rounded up to 16 bytes, so that every
/// block starts 16-byte aligned where the buffers do (the kernels' vector loads); the last
/// blocks may be short or empty (n < p).
struct direct_blocks {
    size_t count, elem, chunk;
    direct_blocks(size_t n, int p, size_t elem_bytes) : count(n), elem(elem_bytes)
    {
        const size_t per_vector = elem < 16 ? 16 / elem : 1;
        chunk = (n + size_t(p) - 1) / size_t(p);
        chunk = (chunk + per_vector - 1) / per_vector * per_vector;
    }
    size_t first(int i) const { return std::min(count, size_t(i) * chunk); }
    size_t elements(int i) const { return first(i + 1) - first(i); }
    size_t offset(int i) const { return first(i) * elem; }
    size_t bytes(int i) const { return elements(i) * elem; }
};

/// What the rounds of one direct allreduce share.
struct direct_state {
    std::vector<direct_descriptor> all;  ///< every rank's, own included
    bool direct = false;  ///< decided by the first round
    bool forced = false;  ///< the config says always: fail instead of falling back
    std::function<void()> fallback_prologue;  ///< the algorithm's, run only when falling back
    std::shared_ptr<gpu::lane> lane;
    std::vector<std::byte *> peer_outputs;  ///< every rank's recv as mapped here
};

/**
 * @brief Compiles the direct allreduce (see the file comment) followed by @p fallback's
 *        schedule, which runs only when the first round finds the direct path impossible.
 * @param c        the rank's context (c.plan.device set: CUDA buffers)
 * @param a        the call (a.op not custom)
 * @param lane     the lane of the buffers
 * @param forced   config gpu::direct::always: fail rather than fall back
 * @param fallback the builder of the algorithm chosen for the call
 * @throws ucx_error(UCS_ERR_IO_ERROR) when the driver cannot describe the buffers
 */
inline void build_direct_allreduce(context &c, const arguments &a,
                                   const std::shared_ptr<gpu::lane> &lane, bool forced,
                                   builder fallback)
{
    const int p = c.size, r = c.rank;
    auto state  = std::make_shared<direct_state>();
    state->all.resize(size_t(p));
    state->forced = forced;
    state->lane   = lane;
    // The caller's buffers are ready at issue (the collectives' contract): describe them now.
    direct_descriptor &mine = state->all[size_t(r)];
    mine.who                = lane->identity();
    mine.send               = lane->export_buffer(a.send);
    mine.recv               = lane->export_buffer(a.recv);

    schedule *plan        = &c.plan;
    const reduction *op   = a.op;
    const datatype type   = c.type;
    const direct_blocks b(a.count, p, c.elem);
    static char token;  // the notifications carry no bytes

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
    describe.then  = [state, plan, op, type, b, r, p, send = a.send, recv = a.recv] {
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
        state->direct      = true;
        plan->direct_reads = true;
        gpu::lane &lane    = *state->lane;
        const uint64_t me  = state->all[size_t(r)].who.process;
        std::vector<const void *> inputs(static_cast<size_t>(p), nullptr);
        state->peer_outputs.assign(size_t(p), nullptr);
        for (int q = 0; q < p; ++q) {
            const direct_descriptor &d = state->all[size_t(q)];
            const std::byte *in = nullptr;
            std::byte *out      = nullptr;
            if (q == r) {
                in  = send;
                out = recv;
            } else if (d.who.process == me) {  // a rank of this process: its own pointers
                in  = reinterpret_cast<const std::byte *>(uintptr_t(d.send.address));
                out = reinterpret_cast<std::byte *>(uintptr_t(d.recv.address));
            } else {
                in  = static_cast<const std::byte *>(lane.map_peer(d.who.process, d.send));
                out = static_cast<std::byte *>(lane.map_peer(d.who.process, d.recv));
            }
            inputs[size_t(q)]             = in + b.offset(r);
            state->peer_outputs[size_t(q)] = out;
        }
        lane.reduce_many(*op, type, inputs.data(), inputs.size(), recv + b.offset(r),
                         b.elements(r));
    };

    auto not_direct = [state] { return !state->direct; };
    round &reduced  = c.plan.add_round();
    for (int q = 0; q < p; ++q) {
        if (q == r)
            continue;
        reduced.transfers.push_back(transfer{true, q, &token, 0, direct_step_reduced, true});
        reduced.transfers.push_back(transfer{false, q, &token, 0, direct_step_reduced, true});
    }
    reduced.skip  = not_direct;
    reduced.drain = true;
    reduced.then  = [state, b, r, p, recv = a.recv] {
        for (int q = 0; q < p; ++q) {
            if (q != r && b.bytes(q) != 0) {
                state->lane->copy(recv + b.offset(q), state->peer_outputs[size_t(q)] + b.offset(q),
                                  b.bytes(q));
            }
        }
    };

    round &copied = c.plan.add_round();
    for (int q = 0; q < p; ++q) {
        if (q == r)
            continue;
        copied.transfers.push_back(transfer{true, q, &token, 0, direct_step_copied, true});
        copied.transfers.push_back(transfer{false, q, &token, 0, direct_step_copied, true});
    }
    copied.skip  = not_direct;
    copied.drain = true;

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
