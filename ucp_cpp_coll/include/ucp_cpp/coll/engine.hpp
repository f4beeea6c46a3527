/**
 * @file coll/engine.hpp
 * @brief The machinery under ucp_cpp::coll: schedules of point-to-point rounds, the per-worker
 *        engine that progresses every collective in flight, and coll::request.
 *
 * A collective is compiled, when it is issued, into a schedule: a list of rounds, each a set of
 * tagged sends/receives posted together plus a local action (reduce, copy) that runs once they
 * all completed.  The engine advances every in-flight schedule whenever any collective request
 * of that worker is tested or waited on, so several collectives can be in flight and waiting on
 * one never starves another (which other ranks may be blocked on).
 *
 * Tags: space tag_space::collectives; the 56 value bits hold communicator id (14), sequence
 * number of the collective on that communicator (14), algorithm step (14) and sender rank (14).
 * A receive names its sender by tag (UCP receives are not per endpoint).
 *
 * CUDA buffers (coll/gpu.hpp): when a collective's buffers are device memory, its schedule gets
 * the engine's gpu::lane for that CUDA context: scratch is device memory and local actions are
 * copies/kernels on the lane's stream.  Transfers of device memory are staged through pinned host
 * segments when UCX cannot move CUDA memory (engine_options::staging; Debian's UCX packages have
 * no CUDA transports): a send is cut into segments, each copied device -> pinned host on the D2H
 * stream and posted as soon as its copy completed (the copy of segment k+1 overlaps the send of
 * segment k); a receive posts one receive per segment into pinned blocks and copies each to the
 * device as soon as it arrived (nobody waits for that copy: the round's local action and later
 * copies queue behind it on the stream).  A send of exactly the bytes a segment of the previous
 * round received, with no local action between (ring allgather), sends that pinned block as it
 * is instead of copying the bytes back.  Segments of one transfer share its tag: UCP matches
 * messages between two endpoints in order.  Without staging, device buffers go to UCX directly
 * and the stream is drained before each round is posted.  Either way a GPU collective completes
 * only once its stream has drained, so the caller's buffers are final when the request is done.
 * Its buffers must be ready when it is issued (synchronise the stream that wrote them first).
 *
 * Connections: the engine gets every rank's worker address at bootstrap but creates the endpoint
 * (ucp_ep, and with it the transport connection: one RC QP a peer over gdr_rc) to a rank only
 * when a collective first sends to or receives from it, so a rank holds endpoints to the peers
 * its algorithms talk to (ring: 2; recursive doubling: log2 P), not to all P - 1 ranks.
 * engine::connected_peers() counts them.  The first collective with a new peer pays UCP's wireup
 * (one round trip on the aux lane for gdr_rc); later ones only test a pointer.  Endpoints are
 * created by whichever thread progresses the collectives (one at a time, as for everything of an
 * engine), and live until the engine goes (or a failure closes them all).
 *
 * Failure: endpoints are created with UCP_ERR_HANDLING_MODE_PEER.  When UCX reports a peer failed
 * (or a transfer fails, or ranks disagree on a count), the collective fails and so does the
 * engine: all its endpoints are closed by force, which purges every outstanding transfer before
 * the failure is reported, so no buffer is touched afterwards; every in-flight and later
 * collective on any communicator of this worker fails with the first reason (errors are fatal
 * to the communicators, as MPI's default error handler has it).  Before its forced closes, an
 * engine that failed sends a failure notice to every rank it can reach, so that ranks waiting on
 * somebody else end too.  The notices and the hellos (each rank's process identity, sent when it
 * first connects to a rank) travel on the control channel: tags of the last communicator id,
 * which no communicator gets, with one receive always posted.  UCX's shared-memory transports
 * report no dead peer: a collective that waits on a rank of the same host with nothing moving
 * looks its process up in /proc (coll/process.hpp).
 */
#pragma once

#include <ucp_cpp/coll/gpu.hpp>
#include <ucp_cpp/coll/process.hpp>
#include <ucp_cpp/coll/types.hpp>
#include <ucp_cpp/endpoint.hpp>
#include <ucp_cpp/request.hpp>
#include <ucp_cpp/tag.hpp>
#include <ucp_cpp/worker.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ucp_cpp::coll::detail {

inline constexpr unsigned field_bits = 14;
inline constexpr uint64_t field_mask = (uint64_t(1) << field_bits) - 1;
inline constexpr int max_ranks       = int(field_mask) + 1;
/// Communicator ids are 0 .. max_comm_ids - 1; the last id of the field is the engine's
/// control channel (control_kind), which no communicator gets.
inline constexpr uint32_t max_comm_ids    = uint32_t(field_mask);
inline constexpr uint32_t control_comm_id = uint32_t(field_mask);

/// What a message on the control channel says (its tag's step field).
enum class control_kind : uint32_t {
    hello  = 1,  ///< the sender's process_identity: sent once, when it connects to a rank
    failed = 2  ///< failure_notice: the sender's engine failed, and why
};

/// A rank's engine failed: every rank it could reach is told, so that ranks that wait on
/// somebody else (who will never send) end too, with the first cause.
struct failure_notice {
    int32_t status   = 0;  ///< the ucs_status_t of the failure
    char reason[500] = {};  ///< its description, NUL-terminated (cut to fit)
};

inline ucp_tag_t make_tag(uint32_t comm_id, uint32_t sequence, uint32_t step, int sender)
{
    uint64_t value = (uint64_t(comm_id & field_mask) << (3 * field_bits)) |
                     (uint64_t(sequence & field_mask) << (2 * field_bits)) |
                     (uint64_t(step & field_mask) << field_bits) | (uint64_t(sender) & field_mask);
    return tag_space::make(tag_space::collectives, value);
}

/// Sender (world rank) and kind of a control message from its tag.
inline int control_sender(ucp_tag_t tag)
{
    return int(tag & field_mask);
}
inline uint32_t control_step(ucp_tag_t tag)
{
    return uint32_t((tag >> field_bits) & field_mask);
}

/// One tagged transfer with a peer (a rank of the collective's communicator).
struct transfer {
    bool is_send;
    int peer;
    void *buffer;
    size_t bytes;
    uint32_t step;  ///< same number on both sides of a message; unique per (sender, receiver)
    /// The buffer is host memory also in a collective of CUDA buffers (a control message of
    /// the direct allreduce): never staged.
    bool host = false;
    /// A receive of a block the peer forwards (rings): the block whose count sized it, named
    /// when the length disagrees; -1: the peer's own.
    int block = -1;
};

struct round {
    std::vector<transfer> transfers;
    std::function<void()> then;  ///< runs after every transfer of the round completed
    /// Asked when the round is due: true passes over it (nothing posted, `then` not run).  How
    /// a schedule holds two paths and takes one after a round decided (coll/direct.hpp).
    std::function<bool()> skip;
    /// The collective's stream must drain after `then` before the next round is posted, also
    /// when transfers are staged (the next round tells the peers that `then`'s work is done).
    bool drain = false;
};

/// What a round's `then` and the prologue use for their copies and reductions, so that the same
/// schedule works on host and device buffers.  A cheap value: capture it by copy.
struct local_actions {
    device_actions *device = nullptr;  ///< null: host memory (memmove / reduction::apply)
    datatype type          = datatype::uint8;

    void copy(void *dst, const void *src, size_t bytes) const
    {
        if (dst == src || bytes == 0)
            return;
        if (device) {
            device->copy(dst, src, bytes);
        } else {
            std::memmove(dst, src, bytes);
        }
    }
    /// inout = op(inout, in) over @p count elements of the collective's datatype.
    void reduce(const reduction &op, const void *in, void *inout, size_t count) const
    {
        if (count == 0)
            return;
        if (device) {
            device->reduce(op, type, in, inout, count);
        } else {
            op.apply(type, in, inout, count);
        }
    }
};

struct schedule {
    std::function<void()> prologue;  ///< local work before the first round (copies)
    std::vector<round> rounds;
    std::vector<std::unique_ptr<std::byte[]>> scratch;
    std::vector<std::shared_ptr<std::byte>> device_scratch;
    std::vector<std::shared_ptr<const void>> keep_alive;  ///< e.g. the reduction the rounds use
    /// Set (before the builders run) when the collective's buffers are device memory: scratch
    /// then lives on the device and local actions run there (see local_actions).
    std::shared_ptr<device_actions> device;
    /// Set by the direct allreduce (coll/direct.hpp) once it reads the peers' buffers.
    bool direct_reads = false;

    /// Scratch in the collective's memory (host, or device when `device` is set).
    std::byte *allocate(size_t bytes)
    {
        if (device) {
            device_scratch.push_back(device->allocate(bytes == 0 ? 1 : bytes));
            return device_scratch.back().get();
        }
        scratch.push_back(std::make_unique<std::byte[]>(bytes == 0 ? 1 : bytes));
        return scratch.back().get();
    }
    round &add_round()
    {
        rounds.emplace_back();
        return rounds.back();
    }
};

class engine;

struct operation;

/// What identifies a compiled schedule of host buffers: a call with the same key can run the
/// same schedule again (its closures hold the buffers, the scratch and the reduction).
struct plan_key {
    collective which = collective::barrier;
    algorithm chosen = algorithm::automatic;
    datatype type    = datatype::uint8;
    op_kind op       = op_kind::sum;
    bool has_op      = false;
    int root         = 0;
    size_t count     = 0;
    const void *send = nullptr;
    const void *recv = nullptr;
    bool operator==(const plan_key &o) const
    {
        return which == o.which && chosen == o.chosen && type == o.type && has_op == o.has_op &&
               (!has_op || op == o.op) && root == o.root && count == o.count && send == o.send &&
               recv == o.recv;
    }
};

/// A schedule kept for later calls with the same key (communicator::issue).
struct cached_plan {
    plan_key key;
    std::shared_ptr<operation> op;
    uint64_t last_use = 0;
};

/// The part of a communicator that in-flight operations need.  Not the engine: the engine
/// holds its operations in flight, and an operation holding the engine would keep both alive
/// for good once nobody waits for it (a collective abandoned after a timeout).
struct comm_state {
    std::vector<int> world_ranks;  ///< communicator rank -> world rank (index into endpoints)
    int rank               = 0;
    uint32_t id            = 0;
    uint32_t next_sequence = 0;
    int size() const { return int(world_ranks.size()); }
};

/// Compiled schedules of a communicator's host-buffer calls, the least recently used evicted
/// beyond config::plan_cache() entries.  Held by the communicator (its copies share it), not by
/// comm_state: the operations hold their comm_state.
struct plan_cache {
    std::vector<cached_plan> entries;
    uint64_t clock = 0;
};

/// One segment of a staged transfer (device memory through a pinned host block).
struct staged_segment {
    bool is_send;
    int peer;  ///< communicator rank
    int block;  ///< transfer::block
    ucp_tag_t tag;
    std::byte *device;
    size_t bytes;
    void *host          = nullptr;  ///< pinned block of the lane
    gpu::CUevent copied = nullptr;  ///< send: D2H done; receive: H2D done
    /// A send forwarding the block a receive of the previous round brought (no D2H): the H2D
    /// copy that may still read the block.
    gpu::CUevent forwarded = nullptr;
    ucp_cpp::request req;
    bool posted = false;  ///< send: tag_send posted; receive: H2D queued
    bool done   = false;
};

/// A received segment whose pinned block still holds what its H2D copy writes to `device`: a
/// send of exactly those bytes in the next round can send the block (no local action between).
struct received_segment {
    std::byte *device;
    size_t bytes;
    void *host;
    gpu::CUevent h2d;
};

struct operation {
    schedule plan;
    std::shared_ptr<gpu::lane> lane;  ///< CUDA buffers: the engine's lane for their context
    bool staged        = false;  ///< transfers go through pinned host segments
    gpu::CUevent fence = nullptr;  ///< waiting for the stream before posting / completing
    std::vector<staged_segment> segments;
    std::vector<received_segment> received;  ///< this round's received segments
    std::vector<received_segment> forward;  ///< the previous round's, while posting this one
    std::shared_ptr<comm_state> comm;
    coll::algorithm chosen = coll::algorithm::automatic;  ///< what the schedule implements
    uint32_t sequence      = 0;
    size_t next_round      = 0;
    std::vector<ucp_cpp::request> pending;
    std::vector<size_t> expected_lengths;  ///< per pending entry; SIZE_MAX for sends
    std::vector<int> pending_peers;  ///< per pending entry: the communicator rank
    std::vector<int> pending_blocks;  ///< per pending entry: transfer::block
    ucs_status_t status = UCS_INPROGRESS;
    std::string error;

    /// Makes a finished host-memory operation runnable again with the same schedule (a
    /// cached plan, a persistent collective).  Keeps the vectors' capacity: no allocation.
    void rearm()
    {
        next_round = 0;
        status     = UCS_INPROGRESS;
        error.clear();
        pending.clear();
        expected_lengths.clear();
        pending_peers.clear();
        pending_blocks.clear();
    }
};

/// How an engine treats CUDA buffers (coll::config carries them; these are the defaults).
struct gpu_options {
    /// automatic: stage unless the UCP context reports CUDA memory support.
    gpu::staging staging = gpu::staging::automatic;
    /// Pipeline segment of staged transfers: the size of a pinned block.
    size_t segment_bytes = size_t(1) << 20;
    /// Whether an allreduce reads the peers' buffers directly (coll/direct.hpp).
    gpu::direct direct = gpu::direct::automatic;
};

class engine : public std::enable_shared_from_this<engine> {
    struct private_tag {};

public:
    static std::shared_ptr<engine> create(std::shared_ptr<worker> owner, int world_rank,
                                          const std::vector<worker_address> &addresses,
                                          bool peer_error_handling, const gpu_options &gpu = {})
    {
        return std::make_shared<engine>(private_tag{}, std::move(owner), world_rank, addresses,
                                        peer_error_handling, gpu);
    }

    engine(private_tag, std::shared_ptr<worker> owner, int world_rank,
           const std::vector<worker_address> &addresses, bool peer_error_handling,
           const gpu_options &gpu = {})
        : worker_(std::move(owner)),
          world_rank_(world_rank),
          peer_status_(std::make_shared<std::vector<ucs_status_t>>(addresses.size(), UCS_OK)),
          gpu_(gpu),
          addresses_(addresses),
          peer_error_handling_(peer_error_handling),
          endpoints_(addresses.size()),
          own_identity_(own_process_identity()),
          identities_(addresses.size()),
          gone_(addresses.size(), 0)
    {
        post_control_receive();
    }

    /**
     * A collective still in flight when the last communicator of this worker goes (its caller
     * gave up after a timeout, or dropped the request) fails here as a peer failure would:
     * every endpoint is closed by force, which purges its outstanding transfers, so none of
     * the collective's buffers is touched afterwards.  A graceful close instead would wait for
     * peers that may never answer (a frozen rank), and UCX 1.13 loses the endpoints' state when
     * the worker is destroyed with such a close pending.  The forced closes are finished here,
     * all of them within close_wait.
     */
    ~engine()
    {
        for (auto &op : active_) {
            if (op->status == UCS_INPROGRESS) {
                // Not a failure the peers need to hear of: this rank gave up (after its own
                // timeout, say); they keep their own bounds.
                fail(*op, UCS_ERR_CANCELED,
                     "the communicator was destroyed while the collective was in flight",
                     /*tell_peers=*/false);
            }
        }
        control_recv_.cancel();
        for (auto &op : active_) {  // drop the rest while the worker is alive
            if (op->lane)
                op->lane->synchronize();
        }
        active_.clear();
        // One bound for all of them, not one each: a worker of many peers tears down in
        // close_wait at most.  What is still open then, the worker's destructor frees.
        const auto deadline = std::chrono::steady_clock::now() + close_wait;
        try {
            for (ucp_cpp::request &close : closing_) {
                const auto left = deadline - std::chrono::steady_clock::now();
                if (left <= std::chrono::steady_clock::duration::zero() ||
                    !close.wait_for(std::chrono::duration_cast<std::chrono::nanoseconds>(left))) {
                    break;
                }
            }
        } catch (const ucx_error &) {
            // progress failed: the worker's destructor frees what is left
        }
    }

    const std::shared_ptr<worker> &owner() const { return worker_; }
    int world_rank() const { return world_rank_; }
    int world_size() const { return int(endpoints_.size()); }
    uint32_t &next_comm_id() { return next_comm_id_; }

    /**
     * @brief Diagnostic: how many ranks of the world this engine holds an endpoint to.
     *
     * Endpoints are created on the first transfer with a peer, so this is the number of distinct
     * peers the collectives issued so far talked to (2 after ring collectives on 3 or more
     * ranks), not size() - 1.  Endpoints closed by a failure still count.
     * @return in [0, world_size() - 1]
     */
    [[nodiscard]] int connected_peers() const
    {
        return int(std::count_if(endpoints_.begin(), endpoints_.end(),
                                 [](const auto &ep) { return ep != nullptr; }));
    }

    /// UCS_OK or the failure UCX reported for the endpoint to @p world_rank.
    ucs_status_t peer_status(int world_rank) const { return (*peer_status_)[size_t(world_rank)]; }

    /// The lane (stream, pinned pool...) for device buffers at @p where; created on first use.
    const std::shared_ptr<gpu::lane> &lane_for(const gpu::location &where)
    {
        auto &slot = lanes_[{where.context, where.ordinal}];
        if (!slot)
            slot = std::make_shared<gpu::lane>(where, gpu_.segment_bytes);
        return slot;
    }

    /// Whether transfers of CUDA buffers are staged through pinned host memory.
    bool stages_gpu_transfers()
    {
        if (staged_ < 0) {
            switch (gpu_.staging) {
            case gpu::staging::always:
                staged_ = 1;
                break;
            case gpu::staging::never:
                staged_ = 0;
                break;
            default:
                staged_ = worker_->ctx()->supports_memory_type(UCS_MEMORY_TYPE_CUDA) ? 0 : 1;
                break;
            }
        }
        return staged_ == 1;
    }

    /// Starts @p op (its prologue and first round) and keeps it until complete.
    void start(const std::shared_ptr<operation> &op)
    {
        try {
            if (op->plan.prologue)
                op->plan.prologue();
        } catch (const std::exception &e) {
            fail_local(*op, e);
            return;
        }
        if (!advance(*op))
            active_.push_back(op);
    }

    /// One progress round of the worker, then every in-flight schedule moves as far as it can.
    /// @return true if anything happened.
    bool progress()
    {
        bool busy = worker_->progress() != 0;
        if (control_recv_.done()) {
            on_control_message();
            busy = true;
        }
        // The clock is read every 64 idle rounds only: wait() spins before it sleeps, and
        // idle() checks on every sleep.
        if (!busy && !active_.empty() && (++idle_rounds_ & 63) == 0)
            check_awaited_processes();
        for (size_t i = 0; i < active_.size();) {
            if (advance(*active_[i])) {
                active_[i] = std::move(active_.back());
                active_.pop_back();
                busy = true;
            } else {
                ++i;
            }
        }
        return busy;
    }

    /// For a timeout's message: the ranks @p op still waits on ("rank 2 (world rank 5), ...").
    std::string awaited(operation &op)
    {
        std::vector<int> ranks;
        for_each_awaited(op, [&](int r) { ranks.push_back(r); });
        std::sort(ranks.begin(), ranks.end());
        ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
        std::string text;
        for (int r : ranks) {
            text += (text.empty() ? "rank " : ", rank ") + std::to_string(r) + " (world rank " +
                    std::to_string(op.comm->world_ranks[size_t(r)]) + ")";
        }
        return text.empty() ? "no transfer (a local step or the GPU stream)" : text;
    }

    /**
     * @brief Waits, without using the CPU, until the worker may have something to progress or
     *        @p limit passed: sleeps on the worker's event fd (ucp_worker_arm + poll) when the
     *        context has UCP_FEATURE_WAKEUP and every collective in flight waits on the network
     *        only; otherwise gives the CPU away once (sched_yield).  A CUDA stream that drains
     *        signals no fd, hence the yield while a staged transfer is in flight.
     * @param limit the longest sleep.
     */
    void idle(std::chrono::nanoseconds limit)
    {
        check_awaited_processes();
        const bool device_work = std::any_of(active_.begin(), active_.end(),
                                             [](const auto &op) { return op->lane != nullptr; });
        if (worker_->has_wakeup() && !device_work) {
            (void)worker_->wait_for_events(limit);
        } else {
            std::this_thread::yield();
        }
    }

private:
    /// Moves @p op forward; true once it finished (successfully or not).
    bool advance(operation &op)
    {
        try {
            return advance_or_throw(op);
        } catch (const std::exception &e) {  // a CUDA call of a staged transfer
            fail_local(op, e);
            return true;
        }
    }

    void fail_local(operation &op, const std::exception &e)
    {
        fail(op, UCS_ERR_IO_ERROR, std::string("local step failed: ") + e.what());
    }

    bool advance_or_throw(operation &op)
    {
        if (broken_status_ != UCS_OK && op.status == UCS_INPROGRESS) {
            abandon(op, broken_status_, "the communicator failed earlier: " + broken_reason_);
        }
        while (op.status == UCS_INPROGRESS) {
            if (op.fence != nullptr) {
                // The lane's stream must drain first (before posting direct device transfers,
                // or before reporting completion).
                if (!op.lane->passed(op.fence)) {
                    check_members(op);
                    return op.status != UCS_INPROGRESS;
                }
                op.lane->release(op.fence);
                op.fence = nullptr;
                if (!finish_or_post(op))
                    return true;
                continue;
            }
            if (!op.segments.empty()) {
                if (!progress_segments(op)) {
                    check_members(op);
                    return op.status != UCS_INPROGRESS;
                }
                if (op.status != UCS_INPROGRESS)
                    return true;
            }
            for (size_t i = 0; i < op.pending.size(); ++i) {
                ucp_cpp::request &req = op.pending[i];
                if (!req.done()) {
                    check_awaited(op);
                    return op.status != UCS_INPROGRESS;
                }
                const bool sent = op.expected_lengths[i] == SIZE_MAX;
                if (!sent && req.status() == UCS_ERR_MESSAGE_TRUNCATED) {
                    fail(op, UCS_ERR_MESSAGE_TRUNCATED,
                         count_mismatch(op, op.pending_peers[i], more_than_expected,
                                        op.expected_lengths[i], op.pending_blocks[i]));
                    return true;
                }
                if (req.status() != UCS_OK) {
                    fail(op, req.status(),
                         transfer_failed(op, sent, op.pending_peers[i], req.status()));
                    return true;
                }
                if (!sent && req.length() != op.expected_lengths[i]) {
                    fail(op, UCS_ERR_MESSAGE_TRUNCATED,
                         count_mismatch(op, op.pending_peers[i], req.length(),
                                        op.expected_lengths[i], op.pending_blocks[i]));
                    return true;
                }
            }
            op.pending.clear();
            op.expected_lengths.clear();
            op.pending_peers.clear();
            op.pending_blocks.clear();
            op.segments.clear();
            if (op.next_round > 0) {
                auto &then = op.plan.rounds[op.next_round - 1].then;
                if (op.staged) {
                    // A local action may change what the blocks hold a copy of.
                    op.forward.swap(op.received);
                    if (then)
                        release_blocks(op, op.forward);
                    release_blocks(op, op.received);
                }
                if (then) {
                    try {
                        then();
                    } catch (const ucx_error &e) {  // e.g. the direct allreduce cannot run
                        fail(op, e.status(), std::string("local step failed: ") + e.what());
                        return true;
                    } catch (const std::exception &e) {
                        fail(op, UCS_ERR_INVALID_PARAM,
                             std::string("local step failed: ") + e.what());
                        return true;
                    }
                }
            }
            const bool drain = op.next_round > 0 && op.plan.rounds[op.next_round - 1].drain;
            if (op.lane && (!op.staged || drain || op.next_round == op.plan.rounds.size())) {
                op.fence = op.lane->record();
                continue;
            }
            if (!finish_or_post(op))
                return true;
        }
        return true;
    }

    /// After a round (and its local action): completes @p op or posts its next round.
    /// false once the operation finished (either way).
    bool finish_or_post(operation &op)
    {
        while (op.next_round < op.plan.rounds.size() && op.plan.rounds[op.next_round].skip &&
               op.plan.rounds[op.next_round].skip()) {
            ++op.next_round;
        }
        if (op.next_round == op.plan.rounds.size()) {
            if (op.staged)
                release_blocks(op, op.forward);
            op.status = UCS_OK;
            return false;
        }
        // No check of the members here: the round's receives from a failed rank fail it
        // once posted (check_awaited), its sends to one fail by themselves.
        if (!post(op, op.plan.rounds[op.next_round++]))
            return false;
        if (op.staged)
            release_blocks(op, op.forward);  // those no send of this round forwards
        return true;
    }

    /// Returns the pinned blocks of received segments to the lane once their H2D copies are done.
    void release_blocks(operation &op, std::vector<received_segment> &blocks)
    {
        for (received_segment &b : blocks)
            op.lane->give_pinned_after(b.host, b.h2d);
        blocks.clear();
    }

    /// Moves the staged segments of the current round; true once all of them are done.
    bool progress_segments(operation &op)
    {
        gpu::lane &lane        = *op.lane;
        const comm_state &comm = *op.comm;
        bool all_done = true, send_blocked = false;
        for (staged_segment &s : op.segments) {
            if (s.done)
                continue;
            if (s.is_send) {
                if (!s.posted) {
                    // D2H copies complete in queue order: post sends in that order too.
                    if (send_blocked || (s.copied != nullptr && !lane.passed(s.copied))) {
                        send_blocked = true;
                        all_done     = false;
                        continue;
                    }
                    if (s.copied != nullptr)
                        lane.release(s.copied);
                    s.copied             = nullptr;
                    const int world_peer = comm.world_ranks[size_t(s.peer)];
                    s.req    = endpoints_[size_t(world_peer)]->tag_send(s.host, s.bytes, s.tag);
                    s.posted = true;
                }
                if (!s.req.done()) {
                    all_done = false;
                    continue;
                }
                if (s.req.status() != UCS_OK) {
                    fail(op, s.req.status(), transfer_failed(op, true, s.peer, s.req.status()));
                    return true;
                }
                if (s.forwarded != nullptr) {
                    lane.give_pinned_after(s.host, s.forwarded);
                } else {
                    lane.give_pinned(s.host);
                }
                s.forwarded = nullptr;
                s.host      = nullptr;
                s.done      = true;
            } else {
                if (!s.posted) {
                    if (!s.req.done()) {
                        all_done = false;
                        continue;
                    }
                    if (s.req.status() == UCS_ERR_MESSAGE_TRUNCATED) {
                        fail(op, UCS_ERR_MESSAGE_TRUNCATED,
                             count_mismatch(op, s.peer, more_than_expected, s.bytes, s.block));
                        return true;
                    }
                    if (s.req.status() != UCS_OK) {
                        fail(op, s.req.status(),
                             transfer_failed(op, false, s.peer, s.req.status()));
                        return true;
                    }
                    if (s.req.length() != s.bytes) {
                        fail(op, UCS_ERR_MESSAGE_TRUNCATED,
                             count_mismatch(op, s.peer, s.req.length(), s.bytes, s.block));
                        return true;
                    }
                    // The round's local action and the next round's copies queue behind this
                    // copy on the stream: no need to wait for it here.  The block stays with
                    // the operation (forwardable) and goes back to the lane once copied.
                    lane.h2d(s.device, s.host, s.bytes);
                    op.received.push_back(
                        received_segment{s.device, s.bytes, s.host, lane.record()});
                    s.host   = nullptr;
                    s.posted = true;
                }
                s.done = true;
            }
        }
        return all_done;
    }

    /// Posts the transfers of @p r; false if connecting to one of its peers failed (then @p op
    /// and the engine failed, see fail()).
    bool post(operation &op, const round &r)
    {
        const comm_state &comm = *op.comm;
        for (const transfer &t : r.transfers) {
            const int sender     = t.is_send ? comm.rank : t.peer;
            const ucp_tag_t tag  = make_tag(comm.id, op.sequence, t.step, sender);
            const int world_peer = comm.world_ranks[size_t(t.peer)];
            // Receives connect too: the endpoint is what reports the peer's failure to the
            // collectives waiting on it (UCP receives name no endpoint).
            if (!connected(op, t.peer, world_peer))
                return false;
            if (op.staged && t.bytes != 0 && !t.host) {
                stage(op, t, tag);
                continue;
            }
            op.pending_peers.push_back(t.peer);
            op.pending_blocks.push_back(t.block);
            if (t.is_send) {
                op.pending.push_back(
                    endpoints_[size_t(world_peer)]->tag_send(t.buffer, t.bytes, tag));
                op.expected_lengths.push_back(SIZE_MAX);
            } else {
                // The builder gets the received length also for an immediate completion (an
                // unexpected eager message; see request::builder), so a count mismatch is
                // always caught.
                ucp_cpp::request::builder receive(ucp_cpp::request::kind::tag_recv, op_options{});
                op.pending.push_back(
                    receive.finish(worker_,
                                   ucp_tag_recv_nbx(worker_->handle(), t.buffer, t.bytes, tag,
                                                    tag_space::full_mask, receive.param()),
                                   0));
                op.expected_lengths.push_back(t.bytes);
            }
        }
        return true;
    }

    /**
     * Makes sure there is an endpoint to @p world_peer (communicator rank @p peer of @p op),
     * creating it on the first transfer with that peer: a rank holds endpoints, and so transport
     * connections (an RC QP each on gdr_rc), only to the peers its algorithms talk to, not to
     * every rank of the world.  The hot path is one pointer test.  False when UCX refused the
     * endpoint: @p op has failed then.
     */
    bool connected(operation &op, int peer, int world_peer)
    {
        std::shared_ptr<endpoint> &slot = endpoints_[size_t(world_peer)];
        if (slot) [[likely]]
            return true;
        try {
            slot = connect(world_peer);
        } catch (const ucx_error &e) {
            fail(op, e.status(),
                 "connecting to rank " + std::to_string(peer) + " (world rank " +
                     std::to_string(world_peer) + ") failed: " + e.what());
            return false;
        }
        // Who this rank is, for the peer's liveness checks (check_awaited_processes()).
        if (own_identity_.known() && world_peer != world_rank_) {
            send_control(*slot, control_kind::hello, &own_identity_, sizeof(own_identity_));
        }
        return true;
    }

    /// A new endpoint to @p world_peer; throws ucx_error when UCX refuses it.
    std::shared_ptr<endpoint> connect(int world_peer)
    {
        endpoint_params params;
        params.name                = "ucp_cpp.coll";
        params.peer_error_handling = peer_error_handling_;
        // Capture the status table, not the engine: the handler may run after the engine is
        // gone.
        params.on_error = [table = peer_status_, world_peer](ucs_status_t status) {
            (*table)[size_t(world_peer)] = status;
        };
        return endpoint::connect(worker_, addresses_[size_t(world_peer)], params);
    }

    // ------------------------------------------------------------------ control channel
    // One receive is always posted for messages tagged with control_comm_id (any kind, any
    // sender): hellos carry a peer's process_identity, failure notices a peer's failure.

    void post_control_receive()
    {
        ucp_cpp::request::builder receive(ucp_cpp::request::kind::tag_recv, op_options{});
        const ucp_tag_t any_kind_any_sender = tag_space::full_mask &
                                              ~((field_mask << field_bits) | field_mask);
        control_recv_ = receive.finish(worker_,
                                       ucp_tag_recv_nbx(worker_->handle(), control_buffer_,
                                                        sizeof(control_buffer_),
                                                        make_tag(control_comm_id, 0, 0, 0),
                                                        any_kind_any_sender, receive.param()),
                                       0);
    }

    void on_control_message()
    {
        const ucp_cpp::completion got = control_recv_.result();
        if (got.status == UCS_ERR_CANCELED)
            return;  // the engine is going
        const int sender = control_sender(got.sender_tag);
        if (got.status == UCS_OK && sender >= 0 && sender < world_size()) {
            switch (control_kind(control_step(got.sender_tag))) {
            case control_kind::hello:
                if (got.length == sizeof(process_identity))
                    std::memcpy(&identities_[size_t(sender)], control_buffer_, got.length);
                break;
            case control_kind::failed:
                if (got.length == sizeof(failure_notice) && broken_status_ == UCS_OK) {
                    failure_notice notice;
                    std::memcpy(&notice, control_buffer_, sizeof(notice));
                    notice.reason[sizeof(notice.reason) - 1] = '\0';
                    const ucs_status_t status = notice.status < 0 ? ucs_status_t(notice.status)
                                                                  : UCS_ERR_CONNECTION_RESET;
                    break_engine(status,
                                 "world rank " + std::to_string(sender) +
                                     " failed: " + notice.reason,
                                 nullptr, /*tell_peers=*/false);
                }
                break;
            }
        }
        post_control_receive();
    }

    void send_control(endpoint &ep, control_kind kind, const void *bytes, size_t length)
    {
        // Sends that completed are dropped here, so the list holds only those in flight.
        control_sends_.erase(std::remove_if(control_sends_.begin(), control_sends_.end(),
                                            [](ucp_cpp::request &r) { return r.done(); }),
                             control_sends_.end());
        try {
            control_sends_.push_back(
                ep.tag_send(bytes, length,
                            make_tag(control_comm_id, 0, uint32_t(kind), world_rank_)));
        } catch (const ucx_error &) {
            // the endpoint failed: its error callback tells the collectives
        }
    }

    /// Tells every rank it can still reach that this engine failed, and why; waits a bounded
    /// moment for the notices to leave (the forced closes that follow would purge them).
    void tell_peers(ucs_status_t status, const std::string &why)
    {
        outgoing_notice_.status = int32_t(status);
        std::snprintf(outgoing_notice_.reason, sizeof(outgoing_notice_.reason), "%s", why.c_str());
        for (int w = 0; w < world_size(); ++w) {
            if (w == world_rank_ || peer_status(w) != UCS_OK)
                continue;
            std::shared_ptr<endpoint> &slot = endpoints_[size_t(w)];
            if (!slot) {
                try {
                    slot = connect(w);
                } catch (const ucx_error &) {
                    continue;
                }
            }
            send_control(*slot, control_kind::failed, &outgoing_notice_, sizeof(outgoing_notice_));
        }
        const auto deadline = std::chrono::steady_clock::now() + notice_wait;
        try {
            while (std::any_of(control_sends_.begin(), control_sends_.end(),
                               [](ucp_cpp::request &r) { return !r.done(); }) &&
                   std::chrono::steady_clock::now() < deadline) {
                worker_->progress();
            }
        } catch (const ucx_error &) {
            // progress failed: the notices that left, left
        }
    }

    /// While collectives wait and nothing moves (at most every liveness_period): a rank they
    /// wait on whose process, on this host, has ended is failed as UCX would fail it.
    void check_awaited_processes()
    {
        const auto now = std::chrono::steady_clock::now();
        if (now < next_liveness_check_ || !own_identity_.known())
            return;
        next_liveness_check_ = now + liveness_period;
        for (const auto &op : active_) {
            for_each_awaited(*op, [&](int r) { judge_process(op->comm->world_ranks[size_t(r)]); });
        }
    }

    /// Calls @p f with the communicator rank of every transfer of @p op's current round that
    /// has not completed (a rank once per transfer).
    template <class F> static void for_each_awaited(operation &op, F &&f)
    {
        for (size_t i = 0; i < op.pending.size(); ++i) {
            if (!op.pending[i].done())
                f(op.pending_peers[i]);
        }
        for (const staged_segment &segment : op.segments) {
            if (!segment.done)
                f(segment.peer);
        }
    }

    void judge_process(int world_peer)
    {
        const process_identity &peer = identities_[size_t(world_peer)];
        if (peer_status(world_peer) != UCS_OK || !own_identity_.shares_pids_with(peer) ||
            !process_gone(peer)) {
            return;
        }
        (*peer_status_)[size_t(world_peer)] = UCS_ERR_CONNECTION_RESET;
        gone_[size_t(world_peer)]           = 1;
    }

    /// Cuts a device-memory transfer into pinned segments (see the file comment).
    void stage(operation &op, const transfer &t, ucp_tag_t tag)
    {
        gpu::lane &lane = *op.lane;
        // At least 2 segments per transfer (so copies overlap the transfer) down to 64 KiB,
        // at most the configured segment (the pinned block size).  Not more: each segment
        // costs several microseconds of CUDA and UCP calls (on the H200, 1 MiB transfers went
        // faster in two segments than in four, slower in eight or sixteen).
        const size_t half_in_pages = (t.bytes / 2 + 4095) & ~size_t(4095);
        const size_t segment       = std::min(lane.segment_bytes(),
                                              std::max<size_t>(size_t(64) << 10, half_in_pages));
        bool first_send            = true;
        for (size_t offset = 0; offset < t.bytes; offset += segment) {
            staged_segment s;
            s.is_send = t.is_send;
            s.peer    = t.peer;
            s.block   = t.block;
            s.tag     = tag;
            s.device  = static_cast<std::byte *>(t.buffer) + offset;
            s.bytes   = std::min(segment, t.bytes - offset);
            if (t.is_send) {
                auto fwd = std::find_if(op.forward.begin(), op.forward.end(),
                                        [&](const received_segment &r) {
                                            return r.device == s.device && r.bytes == s.bytes;
                                        });
                if (fwd != op.forward.end()) {
                    // The block received last round holds these bytes: send it as it is.
                    s.host      = fwd->host;
                    s.forwarded = fwd->h2d;
                    *fwd        = op.forward.back();
                    op.forward.pop_back();
                } else {
                    // After the local actions queued so far (the D2H stream waits for them once).
                    s.host = lane.take_pinned();
                    lane.d2h_after_main(s.host, s.device, s.bytes, first_send);
                    s.copied   = lane.record(/*on_d2h_stream=*/true);
                    first_send = false;
                }
            } else {
                s.host = lane.take_pinned();
                // See post() for the builder.
                ucp_cpp::request::builder receive(ucp_cpp::request::kind::tag_recv, op_options{});
                s.req = receive.finish(worker_,
                                       ucp_tag_recv_nbx(worker_->handle(), s.host, s.bytes, tag,
                                                        tag_space::full_mask, receive.param()),
                                       0);
            }
            op.segments.push_back(std::move(s));
        }
    }

    /// Fails @p op when a rank one of its incomplete transfers waits on failed.  Only those:
    /// a rank that has done its part and left (after the last barrier of a job, the others may
    /// still be completing theirs) fails nobody who needs nothing more from it.
    void check_awaited(operation &op)
    {
        for (size_t i = 0; i < op.pending.size(); ++i) {
            if (op.pending[i].done())
                continue;
            if (failed_member(op, size_t(op.pending_peers[i])))
                return;
        }
    }

    /// "sending to rank 2 of the communicator (world rank 5) failed: Endpoint timeout".
    static std::string transfer_failed(const operation &op, bool sent, int peer,
                                       ucs_status_t status)
    {
        return std::string(sent ? "sending to" : "receiving from") + " rank " +
               std::to_string(peer) + " of the communicator (world rank " +
               std::to_string(op.comm->world_ranks[size_t(peer)]) +
               ") failed: " + ucs_status_string(status);
    }

    /// "rank 3 sent 64 bytes where rank 0 (this rank) expected 32: ...": both ranks named, since
    /// one message cannot tell which of the two called with the count the others used.
    /// @p got: the bytes that came, or more_than_expected (UCP truncated the message).
    /// @p block: the block (rank) whose count sized the receive when the sender forwards it
    /// (rings), else -1.
    static std::string count_mismatch(const operation &op, int sender, size_t got, size_t expected,
                                      int block)
    {
        const std::string me = "rank " + std::to_string(op.comm->rank) + " (this rank)";
        return "rank " + std::to_string(sender) + " sent " +
               (got == more_than_expected
                    ? "more than the " + std::to_string(expected) + " bytes " + me + " expected"
                    : std::to_string(got) + " bytes where " + me + " expected " +
                          std::to_string(expected)) +
               (block >= 0 ? " (for block " + std::to_string(block) + ", which it forwards)" : "") +
               ": the ranks called the collective with different counts";
    }
    static constexpr size_t more_than_expected = SIZE_MAX;

    /// Fails @p op if communicator rank @p r failed; true then.
    bool failed_member(operation &op, size_t r)
    {
        const ucs_status_t status = peer_status(op.comm->world_ranks[r]);
        if (status == UCS_OK)
            return false;
        const int world = op.comm->world_ranks[r];
        fail(op, UCS_ERR_CONNECTION_RESET,
             "rank " + std::to_string(r) + " of the communicator (world rank " +
                 std::to_string(world) + ") failed: " +
                 (gone_[size_t(world)]
                      ? "its process (pid " + std::to_string(identities_[size_t(world)].pid) +
                            ") on this host has ended"
                      : std::string(ucs_status_string(status))));
        return true;
    }

    /// Fails @p op when any member failed: for staged GPU transfers and stream fences, whose
    /// waits name no peer.
    void check_members(operation &op)
    {
        for (size_t r = 0; r < op.comm->world_ranks.size(); ++r) {
            if (failed_member(op, r))
                return;
        }
    }

    /// Fails @p op and, with it, the whole engine: every endpoint is closed by force, which
    /// makes UCX purge all outstanding transfers on it (matched rendezvous receives included)
    /// before this returns, so no collective buffer (scratch or the caller's) is read or written
    /// after a collective reported failure.  Unmatched receives are cancelled.  Every other
    /// collective in flight, and every later one, fails with the same reason.
    /// Unless @p tell_peers is false, every rank this one can reach is told first (a failure
    /// notice on the control channel), so ranks waiting on somebody else end too.
    void fail(operation &op, ucs_status_t status, const std::string &why, bool tell_peers = true)
    {
        if (broken_status_ == UCS_OK)
            break_engine(status, why, &op, tell_peers);
        abandon(op, status, why);
    }

    /// The engine fails for @p why: endpoints closed by force, every collective in flight but
    /// @p cause abandoned, every later one failed at once.
    void break_engine(ucs_status_t status, const std::string &why, const operation *cause,
                      bool tell_peers)
    {
        broken_status_ = status;
        broken_reason_ = why;
        if (tell_peers)
            this->tell_peers(status, why);
        for (auto &ep : endpoints_) {
            if (!ep)
                continue;
            try {
                closing_.push_back(ep->close(/*force=*/true));
            } catch (const ucx_error &) {
                // already closed
            }
        }
        for (auto &other : active_) {
            if (other.get() != cause) {
                abandon(*other, status, cause ? "failed with an earlier collective: " + why : why);
            }
        }
    }

    void abandon(operation &op, ucs_status_t status, const std::string &why)
    {
        if (op.status != UCS_INPROGRESS)
            return;
        op.status = status;
        op.error  = why;
        for (ucp_cpp::request &req : op.pending)
            req.cancel();
        for (staged_segment &s : op.segments)
            s.req.cancel();
        op.pending.clear();  // frees them; nothing of theirs runs after the forced closes
        op.expected_lengths.clear();
        op.pending_peers.clear();
        op.pending_blocks.clear();
        if (op.lane) {
            // Copies in flight may still use pinned blocks and scratch: drain before freeing.
            op.lane->synchronize();
            op.segments.clear();  // pinned blocks of abandoned segments are not reused
            op.received.clear();
            op.forward.clear();
            if (op.fence != nullptr)
                op.lane->release(op.fence);
            op.fence = nullptr;
        }
    }

    std::shared_ptr<worker> worker_;
    int world_rank_;
    std::shared_ptr<std::vector<ucs_status_t>> peer_status_;
    gpu_options gpu_;
    int staged_ = -1;  ///< stages_gpu_transfers(), decided on first use
    std::map<std::pair<gpu::CUcontext, int>, std::shared_ptr<gpu::lane>> lanes_;
    /// Every rank's worker address, from the bootstrap: an endpoint is created from it on the
    /// first transfer with that rank (connected()).  Addresses are cheap, endpoints are not.
    std::vector<worker_address> addresses_;
    bool peer_error_handling_;
    /// Indexed by world rank; null until the first transfer with that rank.
    std::vector<std::shared_ptr<endpoint>> endpoints_;
    std::vector<std::shared_ptr<operation>> active_;
    std::vector<ucp_cpp::request> closing_;  ///< forced endpoint closes after a failure
    /// Bound on finishing all the forced closes in the destructor (each takes a few progress
    /// calls)
    static constexpr std::chrono::seconds close_wait{2};
    ucs_status_t broken_status_ = UCS_OK;
    std::string broken_reason_;
    uint32_t next_comm_id_ = 1;  // 0 is the world communicator

    process_identity own_identity_;
    /// Indexed by world rank: from the rank's hello; unknown until it connected to this one.
    std::vector<process_identity> identities_;
    /// Indexed by world rank: 1 once check_awaited_processes() found its process ended.
    std::vector<char> gone_;
    std::chrono::steady_clock::time_point next_liveness_check_{};
    unsigned idle_rounds_ = 0;  ///< progress() calls that moved nothing
    /// How often waiting collectives look for ended processes on this host.
    static constexpr std::chrono::milliseconds liveness_period{100};
    /// Bound on the failure notices' leaving (tell_peers()).
    static constexpr std::chrono::milliseconds notice_wait{1000};
    alignas(8) std::byte control_buffer_[sizeof(failure_notice)];
    ucp_cpp::request control_recv_;
    std::vector<ucp_cpp::request> control_sends_;
    failure_notice outgoing_notice_;
};

}  // namespace ucp_cpp::coll::detail

namespace ucp_cpp::coll {

/**
 * @brief A collective in flight, as communicator::i<collective>() returns it.
 *
 * test() and wait() progress the worker and every collective in flight on it, so waiting on one
 * never starves another that a peer is blocked on.
 *
 * Lifetime: a cheap handle (copies refer to the same collective) that keeps the engine and the
 * worker alive.  Dropping it does not stop the collective (the other ranks depend on it): it
 * keeps running whenever the worker's collectives are progressed, so its buffers must stay valid
 * until it completes.
 *
 * Threading: like the communicator: one thread at a time for all the collectives of a worker.
 */
class [[nodiscard]] request {
public:
    /// A request of nothing: done, status UCS_OK.
    request() = default;
    /**
     * @brief Internal: what communicator returns for @p op.
     * @param owner the engine that progresses @p op
     * @param op the collective's state
     */
    request(std::shared_ptr<detail::engine> owner, std::shared_ptr<detail::operation> op)
        : engine_(std::move(owner)), op_(std::move(op))
    {}

    /// @brief Where the collective stands; does not progress.
    /// @return UCS_INPROGRESS, UCS_OK or the error
    [[nodiscard]] ucs_status_t status() const { return op_ ? op_->status : UCS_OK; }
    /// @brief Whether the collective completed; does not progress.
    /// @return true once it completed, successfully or not
    [[nodiscard]] bool done() const { return status() != UCS_INPROGRESS; }

    /// @brief Progresses the worker and its collectives once.
    /// @return true once the collective completed, successfully or not
    bool test()
    {
        if (!done())
            engine_->progress();
        return done();
    }

    /**
     * @brief Progresses until the collective completed.
     * @param timeout bound on the wait; nanoseconds::max() waits forever
     * @throws ucx_error the collective's failure, or UCS_ERR_TIMED_OUT (the collective keeps
     *         running: wait again or drop the communicator)
     */
    void wait(std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max())
    {
        using clock         = std::chrono::steady_clock;
        const auto deadline = timeout == std::chrono::nanoseconds::max() ? clock::time_point::max()
                                                                         : clock::now() + timeout;
        unsigned idle       = 0;
        while (!done()) {
            if (engine_->progress()) {
                idle = 0;
                continue;
            }
            if (clock::now() >= deadline) {
                throw ucx_error(UCS_ERR_TIMED_OUT,
                                "coll: collective still incomplete after the timeout, waiting "
                                "on " +
                                    engine_->awaited(*op_));
            }
            // Spin a little (latency), then leave the CPU to the ranks that work: on an
            // oversubscribed host a spinning waiter delays the very peer it waits for.  The
            // sleep is sliced so that a missed wake-up costs one slice, never a hang.
            if (++idle > idle_spins) {
                engine_->idle(std::min<std::chrono::nanoseconds>(deadline - clock::now(),
                                                                 std::chrono::milliseconds(10)));
            }
        }
        if (op_->status != UCS_OK) {
            throw ucx_error(op_->status, "coll: " + op_->error);
        }
    }

    /// @brief Why the collective failed.
    /// @return the failure description; "" while running or on success
    [[nodiscard]] const std::string &error() const
    {
        static const std::string none;
        return op_ ? op_->error : none;
    }

    /// @brief The algorithm the collective runs: the one the call or the communicator's config
    ///        asked for, else the automatic choice for its size (never algorithm::automatic
    ///        for an issued collective).
    /// @return its id
    [[nodiscard]] coll::algorithm algorithm() const
    {
        return op_ ? op_->chosen : coll::algorithm::automatic;
    }

    /// @brief Whether the collective read the other ranks' CUDA buffers directly (the direct
    ///        allreduce, coll/direct.hpp) instead of running algorithm()'s schedule; known once
    ///        its first round completed.
    /// @return true when it did
    [[nodiscard]] bool gpu_direct() const { return op_ && op_->plan.direct_reads; }

private:
    /// Empty progress rounds before wait() sleeps.
    static constexpr unsigned idle_spins = 64;

    std::shared_ptr<detail::engine> engine_;
    std::shared_ptr<detail::operation> op_;
};

}  // namespace ucp_cpp::coll
