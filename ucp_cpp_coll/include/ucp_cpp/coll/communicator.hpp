/**
 * @file coll/communicator.hpp
 * @brief ucp_cpp::coll::communicator: ranks, bootstrap, split/dup, the nine collectives and
 *        their v-variants (per-rank counts).
 *
 * @code
 *   namespace coll = ucp_cpp::coll;
 *   auto ctx   = ucp_cpp::context::create();
 *   auto wrk   = ucp_cpp::worker::create(ctx);
 *   auto world = coll::communicator::bootstrap(wrk, coll::bootstrap_params::from_environment());
 *   world.allreduce(send.data(), recv.data(), n, coll::sum);        // blocking
 *   auto req = world.iallgather(mine.data(), all.data(), n);         // nonblocking
 *   req.wait(10s);
 * @endcode
 *
 * Buffers are pointers + element counts with the element type deduced (int8..int64,
 * uint8..uint64, float, double, half_t, bfloat16_t), on the host or on a GPU.  In-place variants
 * are selected by aliasing, as documented per call (e.g. allreduce(buf, buf, n, op)).  Every
 * rank must issue the same collectives on a communicator in the same order with matching counts
 * and roots (a count mismatch is detected and fails the collective).
 *
 * Algorithm selection: call_options::algo, else the communicator's config (coll/config.hpp:
 * config::use() in code, or UCP_CPP_COLL_<COLLECTIVE>_ALGORITHM read when the communicator was
 * constructed), else the automatic choice by message and communicator size (coll::thresholds).
 *
 * Lifetime: a communicator is a cheap copyable handle; copies share the sequence numbering (they
 * are the same communicator; use dup() for an independent one).  The communicator keeps its
 * worker alive.  Buffers must stay valid until the collective completes, or until the last
 * handle to the worker's collectives is gone (every communicator of the worker, split and dup
 * included, and every coll::request): a collective still in flight then fails, and the
 * endpoints to the other ranks are closed by force, which purges their outstanding transfers,
 * so nothing reads or writes its buffers afterwards.  That is how a caller abandons a
 * collective that timed out.
 *
 * Connections: endpoints to the other ranks are created on demand, by the first collective that
 * sends to or receives from each (connected_peers() counts them); the bootstrap only exchanges
 * worker addresses.
 *
 * Threading: a communicator and every communicator derived from it (split/dup) share the worker
 * and its engine (endpoints created on demand included): use them from one thread at a time.  Ranks in the same process (threads) need
 * one worker each.
 */
#pragma once

#include <ucp_cpp/coll/algorithms.hpp>
#include <ucp_cpp/coll/bootstrap.hpp>
#include <ucp_cpp/coll/config.hpp>
#include <ucp_cpp/coll/direct.hpp>
#include <ucp_cpp/coll/engine.hpp>
#include <ucp_cpp/coll/types.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ucp_cpp::coll {

/// Options of one collective call.
struct call_options {
    /// The algorithm of this call; automatic: the communicator's config decides.
    algorithm algo = algorithm::automatic;
    /// Bound of the blocking variants; zero: the config's (config::timeout, default forever).
    std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero();
};

/// How a communicator connects to its peers, and its collectives' settings.
struct communicator_params {
    /// UCP_ERR_HANDLING_MODE_PEER: a dead rank fails the collectives instead of hanging them.
    /// UCX's shared-memory transports posix/sysv/xpmem cannot detect dead peers and refuse this
    /// mode (in every release unless UCX_MM_ERROR_HANDLING=y; detail/ucx_compat.hpp): set it
    /// false to run over them (then only timeouts bound a failure).
    bool peer_error_handling = true;
    /// The collectives' settings; empty: config::from_environment(), read when the
    /// communicator is constructed.  Start from config::from_environment() to override only
    /// some of the environment's settings in code.
    std::optional<coll::config> config;
};

/// Defined where communicator has persistent collectives (allreduce_init() and the like, coll::persistent).
#define UCP_CPP_PERSISTENT_COLLECTIVES 1

/**
 * @brief A persistent collective, as MPI 4's MPI_Allreduce_init: made once by a
 *        communicator's allreduce_init() or another *_init() (algorithm chosen, schedule compiled, scratch
 *        allocated), then started any number of times.
 *
 * @code
 *   auto step = world.allreduce_init(grad.data(), grad.data(), n, coll::sum);
 *   for (...) { fill(grad); step.start().wait(); }
 * @endcode
 *
 * Every rank makes and starts the same persistent collectives in the same order, as with the
 * ordinary calls (each start takes a sequence number of the communicator, in order with its
 * other collectives).  The buffers and counts are bound at init: they must stay valid as long
 * as the persistent collective is started, and hold the input whenever it starts.  On host
 * buffers a start allocates nothing and builds nothing.  On CUDA buffers each start issues the
 * collective anew (same algorithm), as the ordinary call does.
 *
 * Lifetime: a cheap handle; it keeps the communicator's state and engine alive.  The request
 * start() returns refers to the persistent collective: after the next start it reports that
 * one.  Threading: as its communicator.
 */
class persistent {
public:
    /// Not a persistent collective (valid() false).
    persistent() = default;

    /// @brief Whether this is a persistent collective made by an *_init() of a communicator.
    /// @return true when start() can be called
    [[nodiscard]] bool valid() const noexcept { return op_ != nullptr || reissue_ != nullptr; }

    /**
     * @brief Starts the collective once more.
     * @return the collective in flight (wait() or test() it, as any request)
     * @throws ucx_error UCS_ERR_BUSY: the previous start has not completed;
     *         UCS_ERR_INVALID_PARAM: not a persistent collective
     */
    [[nodiscard]] request start()
    {
        if (op_) {
            if (op_->status == UCS_INPROGRESS) {
                throw ucx_error(UCS_ERR_BUSY,
                                std::string("coll::persistent::start: the previous ") +
                                    name_of(which_) + " has not completed (wait for it first)");
            }
            op_->rearm();
            op_->sequence = state_->next_sequence++;
            engine_->start(op_);
            return request(engine_, op_);
        }
        if (reissue_)
            return reissue_();
        throw ucx_error(UCS_ERR_INVALID_PARAM,
                        "coll::persistent::start: not a persistent collective");
    }

    /// @brief The collective it runs. @return its id
    [[nodiscard]] collective which() const noexcept { return which_; }
    /// @brief The algorithm it runs (chosen at init, never automatic). @return its id
    [[nodiscard]] coll::algorithm algorithm() const noexcept { return chosen_; }

private:
    friend class communicator;
    std::shared_ptr<detail::engine> engine_;
    std::shared_ptr<detail::comm_state> state_;
    std::shared_ptr<detail::operation> op_;  ///< host buffers: the schedule, rearmed per start
    std::function<request()> reissue_;  ///< CUDA buffers: the call, issued anew per start
    collective which_       = collective::barrier;
    coll::algorithm chosen_ = coll::algorithm::automatic;
};

/**
 * @brief A group of ranks that run collectives together (MPI's communicator).
 *
 * Lifetime and threading: see the file comment.
 */
class communicator {
public:
    /// An invalid communicator (what split() returns to ranks that passed a negative color).
    communicator() = default;

    /**
     * @brief Bootstrap (a): rendezvous at params.root_host:root_port (coll/bootstrap.hpp), then
     *        connect to every rank.
     * @param owner the worker of this rank (UCP_FEATURE_TAG)
     * @param params rank, size, root address and the bound of the rendezvous
     * @param options connection and collective settings
     * @return the communicator of all params.size ranks
     * @throws ucx_error naming the failure: the rendezvous (bounded by params.timeout), a
     *         config value the environment gives and the config does not accept (read before
     *         the rendezvous), or UCX
     */
    [[nodiscard]] static communicator bootstrap(std::shared_ptr<worker> owner,
                                                const bootstrap_params &params,
                                                const communicator_params &options = {})
    {
        // Read before the rendezvous: a bad value fails this rank at once, not its peers later.
        communicator_params resolved = options;
        if (!resolved.config)
            resolved.config = coll::config::from_environment();
        auto table = exchange_addresses(params, owner->address());
        return from_addresses(std::move(owner), params.rank, table, resolved);
    }

    /**
     * @brief Bootstrap (b): the caller already exchanged the worker addresses.
     * @param owner the worker of this rank (UCP_FEATURE_TAG)
     * @param rank this rank, in [0, addresses.size())
     * @param addresses every rank's worker::address(), indexed by rank
     * @param options connection and collective settings
     * @return the communicator of all addresses.size() ranks
     * @throws ucx_error UCS_ERR_INVALID_PARAM for a rank or size out of range or a config value
     *         the environment gives and the config does not accept.  Connects to nobody: the
     *         endpoint to a rank is created by the first collective that talks to it (UCX's
     *         errors connecting fail that collective).
     */
    [[nodiscard]] static communicator from_addresses(std::shared_ptr<worker> owner, int rank,
                                                     const std::vector<worker_address> &addresses,
                                                     const communicator_params &options = {})
    {
        const int size = int(addresses.size());
        if (size < 1 || size > detail::max_ranks || rank < 0 || rank >= size) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            "coll::communicator: rank " + std::to_string(rank) + " / size " +
                                std::to_string(size) + " out of range (size <= " +
                                std::to_string(detail::max_ranks) + ")");
        }
        owner->ctx()->require_features(UCP_FEATURE_TAG, "coll::communicator");
        auto settings = std::make_shared<const coll::config>(
            options.config ? *options.config : coll::config::from_environment());
        auto engine = detail::engine::create(std::move(owner), rank, addresses,
                                             options.peer_error_handling,
                                             detail::gpu_options{settings->gpu_staging(),
                                                                 settings->gpu_segment_bytes()});
        auto state  = std::make_shared<detail::comm_state>();
        state->rank = rank;
        state->id   = 0;
        for (int r = 0; r < size; ++r)
            state->world_ranks.push_back(r);
        return communicator(std::move(engine), std::move(state), std::move(settings));
    }

    /// @brief Whether this is a communicator (not default-constructed or split away).
    /// @return true for a valid communicator
    [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
    /// @brief This rank. @return in [0, size()) @throws ucx_error on an invalid communicator
    [[nodiscard]] int rank() const { return live().rank; }
    /// @brief The number of ranks. @return >= 1 @throws ucx_error on an invalid communicator
    [[nodiscard]] int size() const { return live().size(); }
    /**
     * @brief The rank of communicator rank @p r in the bootstrap (world) communicator.
     * @param r a rank of this communicator
     * @return its world rank
     * @throws std::out_of_range for a rank out of range; ucx_error on an invalid communicator
     */
    [[nodiscard]] int world_rank(int r) const { return live().world_ranks.at(size_t(r)); }
    /**
     * @brief Diagnostic: how many other ranks this rank's worker holds an endpoint (a transport
     *        connection: an RC QP over gdr_rc) to, over all communicators of the worker.
     *
     * Endpoints are created on the first collective transfer with a rank, so this counts the
     * peers the algorithms run so far talked to: 2 after ring collectives on 3 or more ranks,
     * log2 P after recursive doubling on a power of two, never P - 1 unless an algorithm (or
     * several together) talked to every rank.
     * @return in [0, world size - 1] @throws ucx_error on an invalid communicator
     */
    [[nodiscard]] int connected_peers() const { return live_engine().connected_peers(); }
    /// @brief The worker the collectives run on.
    /// @return it @throws ucx_error on an invalid communicator
    [[nodiscard]] const std::shared_ptr<worker> &owner() const { return live_engine().owner(); }
    /// @brief The settings of the collectives, fixed when the communicator (or the one it was
    ///        split from) was constructed.
    /// @return them @throws ucx_error on an invalid communicator
    [[nodiscard]] const coll::config &config() const
    {
        live();
        return *config_;
    }

    /**
     * @brief Collective over this communicator: ranks with the same @p color form a new
     *        communicator, ordered by (@p key, old rank), with this one's config.
     * @param color the group; negative: this rank joins none
     * @param key the order within the group
     * @return the new communicator; invalid for a negative color
     * @throws ucx_error a failure of the allgather it runs; UCS_ERR_EXCEEDS_LIMIT when the
     *         worker ran out of communicator ids
     */
    [[nodiscard]] communicator split(int color, int key) const
    {
        const detail::comm_state &self = live();
        // Everybody contributes (color, key, next free communicator id); the new id is the
        // maximum over the parent, so it is free in every member process (MPI's context-id
        // argument).
        int64_t mine[3] = {color, key, int64_t(engine_->next_comm_id())};
        std::vector<int64_t> all(size_t(3 * size()));
        allgather(mine, all.data(), 3);
        uint32_t id = 0;
        for (int r = 0; r < size(); ++r)
            id = std::max(id, uint32_t(all[size_t(3 * r + 2)]));
        if (id >= detail::max_comm_ids) {
            throw ucx_error(UCS_ERR_EXCEEDS_LIMIT,
                            "coll::communicator::split: out of communicator ids");
        }
        engine_->next_comm_id() = id + 1;
        if (color < 0)
            return communicator();
        std::vector<std::tuple<int64_t, int, int>> members;  // key, old rank, world rank
        for (int r = 0; r < size(); ++r) {
            if (all[size_t(3 * r)] == color) {
                members.emplace_back(all[size_t(3 * r + 1)], r, self.world_ranks[size_t(r)]);
            }
        }
        std::sort(members.begin(), members.end());
        auto state = std::make_shared<detail::comm_state>();
        state->id  = id;
        for (const auto &[member_key, old_rank, world] : members) {
            if (old_rank == self.rank)
                state->rank = int(state->world_ranks.size());
            state->world_ranks.push_back(world);
        }
        return communicator(engine_, std::move(state), config_);
    }

    /**
     * @brief Collective: the same ranks in an independent tag space (collectives on the two
     *        never match each other), with this one's config.
     * @return the new communicator
     * @throws ucx_error as split()
     */
    [[nodiscard]] communicator dup() const { return split(0, rank()); }

    // ------------------------------------------------------------------ barrier

    /**
     * @brief Starts a barrier: it completes once every rank entered it.
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: an algorithm that does not implement it
     */
    [[nodiscard]] request ibarrier(const call_options &options = {}) const
    {
        return issue<uint8_t>(collective::barrier, options, nullptr, nullptr, 0);
    }
    /// @brief Blocking ibarrier(). @param options algorithm and timeout
    /// @throws ucx_error as ibarrier(), the collective's failure or UCS_ERR_TIMED_OUT
    void barrier(const call_options &options = {}) const { finish(ibarrier(options), options); }

    // ------------------------------------------------------------------ broadcast

    /**
     * @brief Starts a broadcast of the root's @p buffer to every rank's (always in place).
     * @param buffer @p count elements: the input at the root, the output elsewhere
     * @param count number of elements
     * @param root the rank that holds the input
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a bad root or an algorithm that does not
     *         implement it; UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request ibcast(T *buffer, size_t count, int root,
                                 const call_options &options = {}) const
    {
        check_root(root, collective::bcast);
        return issue<T>(collective::bcast, options, nullptr, buffer, count, nullptr, root);
    }
    /// @brief Blocking ibcast(). @param buffer see ibcast() @param count see ibcast()
    /// @param root see ibcast() @param options see ibcast()
    /// @throws ucx_error as ibcast(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void bcast(T *buffer, size_t count, int root, const call_options &options = {}) const
    {
        finish(ibcast(buffer, count, root, options), options);
    }

    // ------------------------------------------------------------------ reduce

    /**
     * @brief Starts a reduction to the root: recv = op over all ranks' send, at the root.
     * @param send @p count elements of this rank; in place at the root: send == recv
     * @param recv @p count elements at the root (ignored elsewhere)
     * @param count number of elements
     * @param op the reduction
     * @param root the rank that gets the result
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a bad root, a custom op of another type or an
     *         algorithm that does not implement it; UCS_ERR_UNSUPPORTED: host and CUDA buffers
     *         mixed
     */
    template <class T>
    [[nodiscard]] request ireduce(const T *send, T *recv, size_t count, const reduction &op,
                                  int root, const call_options &options = {}) const
    {
        check_root(root, collective::reduce);
        return issue(collective::reduce, options, send, recv, count, &op, root);
    }
    /// @brief Blocking ireduce(). @param send see ireduce() @param recv see ireduce()
    /// @param count see ireduce() @param op see ireduce() @param root see ireduce()
    /// @param options see ireduce()
    /// @throws ucx_error as ireduce(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void reduce(const T *send, T *recv, size_t count, const reduction &op, int root,
                const call_options &options = {}) const
    {
        finish(ireduce(send, recv, count, op, root, options), options);
    }

    // ------------------------------------------------------------------ allreduce

    /**
     * @brief Starts an allreduce: recv = op over all ranks' send, on every rank.
     * @param send @p count elements of this rank; in place: send == recv
     * @param recv @p count elements
     * @param count number of elements
     * @param op the reduction
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a custom op of another type or an algorithm that
     *         does not implement it; UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request iallreduce(const T *send, T *recv, size_t count, const reduction &op,
                                     const call_options &options = {}) const
    {
        return issue(collective::allreduce, options, send, recv, count, &op);
    }
    /// @brief Blocking iallreduce(). @param send see iallreduce() @param recv see iallreduce()
    /// @param count see iallreduce() @param op see iallreduce() @param options see iallreduce()
    /// @throws ucx_error as iallreduce(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void allreduce(const T *send, T *recv, size_t count, const reduction &op,
                   const call_options &options = {}) const
    {
        finish(iallreduce(send, recv, count, op, options), options);
    }
    /// @brief Blocking in-place allreduce: buffer = op over all ranks' buffer.
    /// @param buffer @p count elements @param count number of elements @param op the reduction
    /// @param options algorithm and timeout
    /// @throws ucx_error as iallreduce(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void allreduce(T *buffer, size_t count, const reduction &op,
                   const call_options &options = {}) const
    {
        allreduce(buffer, buffer, count, op, options);
    }

    // ------------------------------------------------------------------ allgather

    /**
     * @brief Starts an allgather: block i of recv = rank i's send, on every rank.
     * @param send @p count elements; in place: send == recv + rank() * count
     * @param recv size() * count elements
     * @param count elements per rank
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: an algorithm that does not implement it;
     *         UCS_ERR_UNSUPPORTED: recursive_doubling on a size that is no power of two, or
     *         host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request iallgather(const T *send, T *recv, size_t count,
                                     const call_options &options = {}) const
    {
        return issue(collective::allgather, options, send, recv, count);
    }
    /// @brief Blocking iallgather(). @param send see iallgather() @param recv see iallgather()
    /// @param count see iallgather() @param options see iallgather()
    /// @throws ucx_error as iallgather(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void allgather(const T *send, T *recv, size_t count, const call_options &options = {}) const
    {
        finish(iallgather(send, recv, count, options), options);
    }

    // ------------------------------------------------------------------ reduce_scatter

    /**
     * @brief Starts a block reduce-scatter (MPI_Reduce_scatter_block): recv = block rank() of
     *        op over all ranks' send.
     * @param send size() * count elements; in place: send == recv (the buffer holds the
     *        input, block 0 the result)
     * @param recv @p count elements
     * @param count elements per block
     * @param op the reduction
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a custom op of another type or an algorithm that
     *         does not implement it; UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request ireduce_scatter(const T *send, T *recv, size_t count, const reduction &op,
                                          const call_options &options = {}) const
    {
        return issue(collective::reduce_scatter, options, send, recv, count, &op);
    }
    /// @brief Blocking ireduce_scatter(). @param send see ireduce_scatter()
    /// @param recv see ireduce_scatter() @param count see ireduce_scatter()
    /// @param op see ireduce_scatter() @param options see ireduce_scatter()
    /// @throws ucx_error as ireduce_scatter(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void reduce_scatter(const T *send, T *recv, size_t count, const reduction &op,
                        const call_options &options = {}) const
    {
        finish(ireduce_scatter(send, recv, count, op, options), options);
    }

    // ------------------------------------------------------------------ alltoall

    /**
     * @brief Starts an alltoall: block i of recv = block rank() of rank i's send.
     * @param send size() * count elements; in place: send == recv
     * @param recv size() * count elements
     * @param count elements per block
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: an algorithm that does not implement it;
     *         UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request ialltoall(const T *send, T *recv, size_t count,
                                    const call_options &options = {}) const
    {
        return issue(collective::alltoall, options, send, recv, count);
    }
    /// @brief Blocking ialltoall(). @param send see ialltoall() @param recv see ialltoall()
    /// @param count see ialltoall() @param options see ialltoall()
    /// @throws ucx_error as ialltoall(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void alltoall(const T *send, T *recv, size_t count, const call_options &options = {}) const
    {
        finish(ialltoall(send, recv, count, options), options);
    }

    // ------------------------------------------------------------------ gather / scatter

    /**
     * @brief Starts a gather: block i of recv at the root = rank i's send.
     * @param send @p count elements; in place at the root: send == recv + root * count
     * @param recv size() * count elements at the root (ignored elsewhere)
     * @param count elements per rank
     * @param root the rank that gets the blocks
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a bad root or an algorithm that does not
     *         implement it; UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request igather(const T *send, T *recv, size_t count, int root,
                                  const call_options &options = {}) const
    {
        check_root(root, collective::gather);
        return issue(collective::gather, options, send, recv, count, nullptr, root);
    }
    /// @brief Blocking igather(). @param send see igather() @param recv see igather()
    /// @param count see igather() @param root see igather() @param options see igather()
    /// @throws ucx_error as igather(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void gather(const T *send, T *recv, size_t count, int root,
                const call_options &options = {}) const
    {
        finish(igather(send, recv, count, root, options), options);
    }

    /**
     * @brief Starts a scatter: recv = block rank() of the root's send.
     * @param send size() * count elements at the root (ignored elsewhere)
     * @param recv @p count elements; in place at the root: recv == send + root * count
     * @param count elements per rank
     * @param root the rank that holds the blocks
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a bad root or an algorithm that does not
     *         implement it; UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request iscatter(const T *send, T *recv, size_t count, int root,
                                   const call_options &options = {}) const
    {
        check_root(root, collective::scatter);
        return issue(collective::scatter, options, send, recv, count, nullptr, root);
    }
    /// @brief Blocking iscatter(). @param send see iscatter() @param recv see iscatter()
    /// @param count see iscatter() @param root see iscatter() @param options see iscatter()
    /// @throws ucx_error as iscatter(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void scatter(const T *send, T *recv, size_t count, int root,
                 const call_options &options = {}) const
    {
        finish(iscatter(send, recv, count, root, options), options);
    }

    // ------------------------------------------------------------------ v-variants

    /**
     * @name Collectives with per-rank counts (MPI's v-variants)
     * Counts and displacements are in elements, one per rank, as coll::counts_view: a
     * std::vector<size_t>, a std::array, a braced list, or a pointer and a length.  They are
     * copied when the call is issued.  Displacements may leave gaps, which are neither read nor
     * written (blocks must not overlap); an empty displacements view means packed (the
     * exclusive prefix sum of the counts).  Every rank's counts must agree with the ranks it
     * exchanges blocks with: a rank that receives a block of another size than its counts say
     * fails the collective with UCS_ERR_MESSAGE_TRUNCATED naming the rank (and the engine, as
     * every failure does), also when one side's count is 0.  This rank's own count given twice
     * (e.g. allgatherv's send_count and recv_counts[rank()]) must agree: checked at the call.
     * The data buffers, unlike the counts, must stay valid until the collective completes (see
     * the file comment); threading as every call of a communicator.
     * @{
     */

    /**
     * @brief Starts an allgatherv (MPI_Allgatherv): block i of recv, recv_counts[i] elements
     *        from recv + displs[i], = rank i's send, on every rank.
     * @param send @p send_count elements; in place: send == recv + displs[rank()]
     * @param send_count elements of this rank's block: recv_counts[rank()]
     * @param recv the blocks of every rank (the gaps between them untouched)
     * @param recv_counts elements of each rank's block, one per rank, alike on every rank
     * @param displs where block i starts in recv, in elements; empty: packed
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: not one count or displacement per rank,
     *         send_count other than recv_counts[rank()], or an algorithm that does not implement
     *         it; UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request iallgatherv(const T *send, size_t send_count, T *recv,
                                      counts_view recv_counts, counts_view displs,
                                      const call_options &options = {}) const
    {
        const detail::v_arguments v = allgatherv_arguments(send_count, recv_counts, displs);
        return issue(collective::allgatherv, options, send, recv, send_count, nullptr, 0, &v);
    }
    /// @brief Blocking iallgatherv(). @param send see iallgatherv()
    /// @param send_count see iallgatherv() @param recv see iallgatherv()
    /// @param recv_counts see iallgatherv() @param displs see iallgatherv()
    /// @param options see iallgatherv()
    /// @throws ucx_error as iallgatherv(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void allgatherv(const T *send, size_t send_count, T *recv, counts_view recv_counts,
                    counts_view displs, const call_options &options = {}) const
    {
        finish(iallgatherv(send, send_count, recv, recv_counts, displs, options), options);
    }

    /**
     * @brief Starts an alltoallv (MPI_Alltoallv): block j of this rank's send goes to rank j,
     *        block i of recv comes from rank i.
     * @param send the blocks to send: block j is send_counts[j] elements from
     *        send + send_displs[j]; in place: send == recv (the blocks to send are where
     *        recv_counts and recv_displs say, and are replaced by the ones received)
     * @param send_counts elements this rank sends to each rank; in place: ignored (may be empty)
     * @param send_displs where block j starts in send, in elements; empty: packed; in place:
     *        ignored
     * @param recv the blocks received: block i is recv_counts[i] elements from
     *        recv + recv_displs[i] (the gaps untouched)
     * @param recv_counts elements this rank receives from each rank: rank i's send_counts[rank()]
     * @param recv_displs where block i starts in recv, in elements; empty: packed
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: not one count or displacement per rank,
     *         send_counts[rank()] other than recv_counts[rank()], or an algorithm that does not
     *         implement it; UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request ialltoallv(const T *send, counts_view send_counts,
                                     counts_view send_displs, T *recv, counts_view recv_counts,
                                     counts_view recv_displs,
                                     const call_options &options = {}) const
    {
        const detail::v_arguments v = alltoallv_arguments(send == recv, send_counts, send_displs,
                                                          recv_counts, recv_displs);
        return issue(collective::alltoallv, options, send, recv, 0, nullptr, 0, &v);
    }
    /// @brief Blocking ialltoallv(). @param send see ialltoallv()
    /// @param send_counts see ialltoallv() @param send_displs see ialltoallv()
    /// @param recv see ialltoallv() @param recv_counts see ialltoallv()
    /// @param recv_displs see ialltoallv() @param options see ialltoallv()
    /// @throws ucx_error as ialltoallv(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void alltoallv(const T *send, counts_view send_counts, counts_view send_displs, T *recv,
                   counts_view recv_counts, counts_view recv_displs,
                   const call_options &options = {}) const
    {
        finish(ialltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs, options),
               options);
    }

    /**
     * @brief Starts a gatherv (MPI_Gatherv): block i of recv at the root, recv_counts[i]
     *        elements from recv + displs[i], = rank i's send.
     * @param send @p send_count elements; in place at the root: send == recv + displs[root]
     * @param send_count elements of this rank's block (the root's recv_counts[rank()])
     * @param recv at the root: the blocks (the gaps untouched); ignored elsewhere
     * @param recv_counts at the root: elements of each rank's block; ignored elsewhere (may be
     *        empty)
     * @param displs at the root: where block i starts in recv, in elements (empty: packed);
     *        ignored elsewhere
     * @param root the rank that gets the blocks
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a bad root, at the root not one count or
     *         displacement per rank or send_count other than recv_counts[root], or an algorithm
     *         that does not implement it; UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request igatherv(const T *send, size_t send_count, T *recv,
                                   counts_view recv_counts, counts_view displs, int root,
                                   const call_options &options = {}) const
    {
        const detail::v_arguments v = gatherv_arguments(send_count, recv_counts, displs, root);
        return issue(collective::gatherv, options, send, rank() == root ? recv : nullptr,
                     send_count, nullptr, root, &v);
    }
    /// @brief Blocking igatherv(). @param send see igatherv() @param send_count see igatherv()
    /// @param recv see igatherv() @param recv_counts see igatherv() @param displs see igatherv()
    /// @param root see igatherv() @param options see igatherv()
    /// @throws ucx_error as igatherv(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void gatherv(const T *send, size_t send_count, T *recv, counts_view recv_counts,
                 counts_view displs, int root, const call_options &options = {}) const
    {
        finish(igatherv(send, send_count, recv, recv_counts, displs, root, options), options);
    }

    /**
     * @brief Starts a scatterv (MPI_Scatterv): recv = block rank() of the root's send,
     *        send_counts[rank()] elements from send + displs[rank()].
     * @param send at the root: the blocks; ignored elsewhere
     * @param send_counts at the root: elements of each rank's block; ignored elsewhere (may be
     *        empty)
     * @param displs at the root: where block i starts in send, in elements (empty: packed);
     *        ignored elsewhere
     * @param recv @p recv_count elements; in place at the root: recv == send + displs[root]
     * @param recv_count elements of this rank's block (the root's send_counts[rank()])
     * @param root the rank that holds the blocks
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a bad root, at the root not one count or
     *         displacement per rank or recv_count other than send_counts[root], or an algorithm
     *         that does not implement it; UCS_ERR_UNSUPPORTED: host and CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request iscatterv(const T *send, counts_view send_counts, counts_view displs,
                                    T *recv, size_t recv_count, int root,
                                    const call_options &options = {}) const
    {
        const detail::v_arguments v = scatterv_arguments(send_counts, displs, recv_count, root);
        return issue(collective::scatterv, options, rank() == root ? send : nullptr, recv,
                     recv_count, nullptr, root, &v);
    }
    /// @brief Blocking iscatterv(). @param send see iscatterv()
    /// @param send_counts see iscatterv() @param displs see iscatterv()
    /// @param recv see iscatterv() @param recv_count see iscatterv()
    /// @param root see iscatterv() @param options see iscatterv()
    /// @throws ucx_error as iscatterv(), the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void scatterv(const T *send, counts_view send_counts, counts_view displs, T *recv,
                  size_t recv_count, int root, const call_options &options = {}) const
    {
        finish(iscatterv(send, send_counts, displs, recv, recv_count, root, options), options);
    }

    /**
     * @brief Starts a reduce-scatter with per-rank counts (MPI_Reduce_scatter): recv = block
     *        rank() of op over all ranks' send, where block i is recv_counts[i] elements.
     * @param send the sum of recv_counts elements, the blocks packed in rank order; in place:
     *        send == recv (the buffer holds the input, its start the result)
     * @param recv recv_counts[rank()] elements
     * @param recv_counts elements of each rank's block, one per rank, alike on every rank
     * @param op the reduction
     * @param options algorithm and timeout
     * @return the collective in flight
     * @throws ucx_error UCS_ERR_INVALID_PARAM: not one count per rank, a custom op of another
     *         type or an algorithm that does not implement it; UCS_ERR_UNSUPPORTED: host and
     *         CUDA buffers mixed
     */
    template <class T>
    [[nodiscard]] request ireduce_scatter(const T *send, T *recv, counts_view recv_counts,
                                          const reduction &op,
                                          const call_options &options = {}) const
    {
        const detail::v_arguments v = reduce_scatterv_arguments(recv_counts);
        return issue(collective::reduce_scatterv, options, send, recv,
                     v.recv_counts[size_t(rank())], &op, 0, &v);
    }
    /// @brief Blocking ireduce_scatter() with per-rank counts.
    /// @param send see ireduce_scatter(const T *, T *, counts_view, const reduction &, const call_options &) const
    /// @param recv see there @param recv_counts see there @param op see there
    /// @param options see there
    /// @throws ucx_error as there, the collective's failure or UCS_ERR_TIMED_OUT
    template <class T>
    void reduce_scatter(const T *send, T *recv, counts_view recv_counts, const reduction &op,
                        const call_options &options = {}) const
    {
        finish(ireduce_scatter(send, recv, recv_counts, op, options), options);
    }
    /// @}

    // ------------------------------------------------------------------ persistent

    /**
     * @name Persistent collectives (MPI 4's MPI_<Collective>_init)
     * Each takes the arguments of its collective, chooses the algorithm and compiles the
     * schedule once, and returns a coll::persistent whose start() runs it (see there).  Every
     * rank must make the same persistent collectives in the same order, as with the ordinary
     * calls (making one takes no sequence number; each start takes one).
     * @throws ucx_error as the collective's nonblocking call
     * @{
     */
    /// @brief Persistent ibarrier(). @param options algorithm (the timeout is not used)
    /// @return the persistent collective
    [[nodiscard]] persistent barrier_init(const call_options &options = {}) const
    {
        return make_persistent<uint8_t>(collective::barrier, options, nullptr, nullptr, 0);
    }
    /// @brief Persistent ibcast(). @param buffer see ibcast() @param count see ibcast()
    /// @param root see ibcast() @param options see ibcast() @return the persistent collective
    template <class T>
    [[nodiscard]] persistent bcast_init(T *buffer, size_t count, int root,
                                        const call_options &options = {}) const
    {
        check_root(root, collective::bcast);
        return make_persistent<T>(collective::bcast, options, nullptr, buffer, count, nullptr,
                                  root);
    }
    /// @brief Persistent ireduce(). @param send see ireduce() @param recv see ireduce()
    /// @param count see ireduce() @param op see ireduce() (copied) @param root see ireduce()
    /// @param options see ireduce() @return the persistent collective
    template <class T>
    [[nodiscard]] persistent reduce_init(const T *send, T *recv, size_t count, const reduction &op,
                                         int root, const call_options &options = {}) const
    {
        check_root(root, collective::reduce);
        return make_persistent(collective::reduce, options, send, recv, count, &op, root);
    }
    /// @brief Persistent iallreduce(). @param send see iallreduce() @param recv see iallreduce()
    /// @param count see iallreduce() @param op see iallreduce() (copied)
    /// @param options see iallreduce() @return the persistent collective
    template <class T>
    [[nodiscard]] persistent allreduce_init(const T *send, T *recv, size_t count,
                                            const reduction &op,
                                            const call_options &options = {}) const
    {
        return make_persistent(collective::allreduce, options, send, recv, count, &op);
    }
    /// @brief Persistent iallgather(). @param send see iallgather() @param recv see iallgather()
    /// @param count see iallgather() @param options see iallgather()
    /// @return the persistent collective
    template <class T>
    [[nodiscard]] persistent allgather_init(const T *send, T *recv, size_t count,
                                            const call_options &options = {}) const
    {
        return make_persistent(collective::allgather, options, send, recv, count);
    }
    /// @brief Persistent ireduce_scatter(). @param send see ireduce_scatter()
    /// @param recv see ireduce_scatter() @param count see ireduce_scatter()
    /// @param op see ireduce_scatter() (copied) @param options see ireduce_scatter()
    /// @return the persistent collective
    template <class T>
    [[nodiscard]] persistent reduce_scatter_init(const T *send, T *recv, size_t count,
                                                 const reduction &op,
                                                 const call_options &options = {}) const
    {
        return make_persistent(collective::reduce_scatter, options, send, recv, count, &op);
    }
    /// @brief Persistent ialltoall(). @param send see ialltoall() @param recv see ialltoall()
    /// @param count see ialltoall() @param options see ialltoall()
    /// @return the persistent collective
    template <class T>
    [[nodiscard]] persistent alltoall_init(const T *send, T *recv, size_t count,
                                           const call_options &options = {}) const
    {
        return make_persistent(collective::alltoall, options, send, recv, count);
    }
    /// @brief Persistent igather(). @param send see igather() @param recv see igather()
    /// @param count see igather() @param root see igather() @param options see igather()
    /// @return the persistent collective
    template <class T>
    [[nodiscard]] persistent gather_init(const T *send, T *recv, size_t count, int root,
                                         const call_options &options = {}) const
    {
        check_root(root, collective::gather);
        return make_persistent(collective::gather, options, send, recv, count, nullptr, root);
    }
    /// @brief Persistent iscatter(). @param send see iscatter() @param recv see iscatter()
    /// @param count see iscatter() @param root see iscatter() @param options see iscatter()
    /// @return the persistent collective
    template <class T>
    [[nodiscard]] persistent scatter_init(const T *send, T *recv, size_t count, int root,
                                          const call_options &options = {}) const
    {
        check_root(root, collective::scatter);
        return make_persistent(collective::scatter, options, send, recv, count, nullptr, root);
    }
    /// @brief Persistent iallgatherv(). @param send see iallgatherv()
    /// @param send_count see iallgatherv() @param recv see iallgatherv()
    /// @param recv_counts see iallgatherv() (copied) @param displs see iallgatherv() (copied)
    /// @param options see iallgatherv() @return the persistent collective
    template <class T>
    [[nodiscard]] persistent allgatherv_init(const T *send, size_t send_count, T *recv,
                                             counts_view recv_counts, counts_view displs,
                                             const call_options &options = {}) const
    {
        auto v = std::make_shared<const detail::v_arguments>(
            allgatherv_arguments(send_count, recv_counts, displs));
        return make_persistent(collective::allgatherv, options, send, recv, send_count, nullptr, 0,
                               std::move(v));
    }
    /// @brief Persistent ialltoallv(). @param send see ialltoallv()
    /// @param send_counts see ialltoallv() (copied) @param send_displs see ialltoallv() (copied)
    /// @param recv see ialltoallv() @param recv_counts see ialltoallv() (copied)
    /// @param recv_displs see ialltoallv() (copied) @param options see ialltoallv()
    /// @return the persistent collective
    template <class T>
    [[nodiscard]] persistent alltoallv_init(const T *send, counts_view send_counts,
                                            counts_view send_displs, T *recv,
                                            counts_view recv_counts, counts_view recv_displs,
                                            const call_options &options = {}) const
    {
        auto v = std::make_shared<const detail::v_arguments>(
            alltoallv_arguments(send == recv, send_counts, send_displs, recv_counts, recv_displs));
        return make_persistent(collective::alltoallv, options, send, recv, 0, nullptr, 0,
                               std::move(v));
    }
    /// @brief Persistent igatherv(). @param send see igatherv() @param send_count see igatherv()
    /// @param recv see igatherv() @param recv_counts see igatherv() (copied)
    /// @param displs see igatherv() (copied) @param root see igatherv()
    /// @param options see igatherv() @return the persistent collective
    template <class T>
    [[nodiscard]] persistent gatherv_init(const T *send, size_t send_count, T *recv,
                                          counts_view recv_counts, counts_view displs, int root,
                                          const call_options &options = {}) const
    {
        auto v = std::make_shared<const detail::v_arguments>(
            gatherv_arguments(send_count, recv_counts, displs, root));
        return make_persistent(collective::gatherv, options, send, rank() == root ? recv : nullptr,
                               send_count, nullptr, root, std::move(v));
    }
    /// @brief Persistent iscatterv(). @param send see iscatterv()
    /// @param send_counts see iscatterv() (copied) @param displs see iscatterv() (copied)
    /// @param recv see iscatterv() @param recv_count see iscatterv() @param root see iscatterv()
    /// @param options see iscatterv() @return the persistent collective
    template <class T>
    [[nodiscard]] persistent scatterv_init(const T *send, counts_view send_counts,
                                           counts_view displs, T *recv, size_t recv_count, int root,
                                           const call_options &options = {}) const
    {
        auto v = std::make_shared<const detail::v_arguments>(
            scatterv_arguments(send_counts, displs, recv_count, root));
        return make_persistent(collective::scatterv, options, rank() == root ? send : nullptr, recv,
                               recv_count, nullptr, root, std::move(v));
    }
    /// @brief Persistent ireduce_scatter() with per-rank counts.
    /// @param send see ireduce_scatter(const T *, T *, counts_view, const reduction &, const call_options &) const
    /// @param recv see there @param recv_counts see there (copied) @param op see there (copied)
    /// @param options see there @return the persistent collective
    template <class T>
    [[nodiscard]] persistent reduce_scatter_init(const T *send, T *recv, counts_view recv_counts,
                                                 const reduction &op,
                                                 const call_options &options = {}) const
    {
        auto v = std::make_shared<const detail::v_arguments>(
            reduce_scatterv_arguments(recv_counts));
        const size_t mine = v->recv_counts[size_t(rank())];
        return make_persistent(collective::reduce_scatterv, options, send, recv, mine, &op, 0,
                               std::move(v));
    }
    /// @}

private:
    communicator(std::shared_ptr<detail::engine> engine, std::shared_ptr<detail::comm_state> state,
                 std::shared_ptr<const coll::config> settings)
        : engine_(std::move(engine)),
          state_(std::move(state)),
          config_(std::move(settings)),
          plans_(std::make_shared<detail::plan_cache>())
    {}

    const detail::comm_state &live() const
    {
        if (!state_) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, "coll::communicator: not a valid communicator");
        }
        return *state_;
    }

    detail::engine &live_engine() const
    {
        live();
        return *engine_;
    }

    void check_root(int root, collective which) const
    {
        if (root < 0 || root >= size()) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, std::string("coll::") + name_of(which) +
                                                       ": root " + std::to_string(root) +
                                                       " is not a rank of a communicator of size " +
                                                       std::to_string(size()));
        }
    }

    /// A counts or displacements argument of a v-variant: one value per rank, copied.
    std::vector<size_t> per_rank(collective which, const char *what, counts_view values) const
    {
        if (values.size() != size_t(size())) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, std::string("coll::") + name_of(which) + ": " +
                                                       what + " has " +
                                                       std::to_string(values.size()) +
                                                       " values for a communicator of size " +
                                                       std::to_string(size()) + " (one per rank)");
        }
        return values.copy();
    }

    /// Displacements of a v-variant: @p displs, or packed (the exclusive prefix sum of
    /// @p counts) when empty.
    std::vector<size_t> displacements(collective which, const char *what, counts_view displs,
                                      const std::vector<size_t> &counts) const
    {
        if (!displs.empty())
            return per_rank(which, what, displs);
        std::vector<size_t> packed(counts.size());
        size_t at = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
            packed[i] = at;
            at += counts[i];
        }
        return packed;
    }

    /// This rank's own block, counted by two arguments: they must agree (a local error, before
    /// the call takes a sequence number).
    void check_own_block(collective which, const char *one, size_t one_count, const char *other,
                         size_t other_count) const
    {
        if (one_count != other_count) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            std::string("coll::") + name_of(which) + ": " + one + " = " +
                                std::to_string(one_count) + " differs from " + other + "[" +
                                std::to_string(rank()) + "] = " + std::to_string(other_count) +
                                " (both count rank " + std::to_string(rank()) + "'s own block)");
        }
    }

    /// allgatherv's (and gatherv's, at the root) counts and displacements.
    detail::v_arguments allgatherv_arguments(size_t send_count, counts_view recv_counts,
                                             counts_view displs,
                                             collective which = collective::allgatherv) const
    {
        detail::v_arguments v;
        v.recv_counts = per_rank(which, "recv_counts", recv_counts);
        v.recv_displs = displacements(which, "displs", displs, v.recv_counts);
        check_own_block(which, "send_count", send_count, "recv_counts",
                        v.recv_counts[size_t(rank())]);
        for (size_t n : v.recv_counts)
            v.total += n;
        return v;
    }

    detail::v_arguments alltoallv_arguments(bool in_place, counts_view send_counts,
                                            counts_view send_displs, counts_view recv_counts,
                                            counts_view recv_displs) const
    {
        const collective which = collective::alltoallv;
        detail::v_arguments v;
        v.recv_counts = per_rank(which, "recv_counts", recv_counts);
        v.recv_displs = displacements(which, "recv_displs", recv_displs, v.recv_counts);
        if (in_place) {  // MPI_IN_PLACE: the blocks to send are the receive blocks
            v.send_counts = v.recv_counts;
            v.send_displs = v.recv_displs;
            return v;
        }
        v.send_counts = per_rank(which, "send_counts", send_counts);
        v.send_displs = displacements(which, "send_displs", send_displs, v.send_counts);
        check_own_block(which, "send_counts[rank]", v.send_counts[size_t(rank())], "recv_counts",
                        v.recv_counts[size_t(rank())]);
        return v;
    }

    /// gatherv's: the root's counts and displacements (none elsewhere: ignored there).
    detail::v_arguments gatherv_arguments(size_t send_count, counts_view recv_counts,
                                          counts_view displs, int root) const
    {
        check_root(root, collective::gatherv);
        if (rank() != root)
            return {};
        return allgatherv_arguments(send_count, recv_counts, displs, collective::gatherv);
    }

    /// scatterv's: the root's counts and displacements (none elsewhere: ignored there).
    detail::v_arguments scatterv_arguments(counts_view send_counts, counts_view displs,
                                           size_t recv_count, int root) const
    {
        const collective which = collective::scatterv;
        check_root(root, which);
        detail::v_arguments v;
        if (rank() != root)
            return v;
        v.send_counts = per_rank(which, "send_counts", send_counts);
        v.send_displs = displacements(which, "displs", displs, v.send_counts);
        check_own_block(which, "recv_count", recv_count, "send_counts",
                        v.send_counts[size_t(rank())]);
        return v;
    }

    /// reduce_scatter with counts: the blocks of send are packed.
    detail::v_arguments reduce_scatterv_arguments(counts_view recv_counts) const
    {
        const collective which = collective::reduce_scatterv;
        detail::v_arguments v;
        v.recv_counts = per_rank(which, "recv_counts", recv_counts);
        v.recv_displs = displacements(which, "", {}, v.recv_counts);
        for (size_t n : v.recv_counts)
            v.total += n;
        return v;
    }

    /// A copy of @p op owned by the schedule (the caller's may be a temporary).
    static const reduction &keep(detail::context &c, const reduction &op)
    {
        auto copy = std::make_shared<reduction>(op);
        c.plan.keep_alive.push_back(copy);
        return *copy;
    }

    /// The algorithm of a call: @p asked, else the config's, else the automatic choice.
    algorithm choose(collective which, algorithm asked, size_t count, size_t elem) const
    {
        const algorithm chosen = asked != algorithm::automatic ? asked
                                                               : config_->algorithm_for(which);
        if (chosen == algorithm::automatic) {
            return detail::row_of(which).automatic(config_->thresholds(), count, elem, size());
        }
        if (!implements(chosen, which)) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, std::string("coll::") + name_of(which) +
                                                       ": algorithm " + name_of(chosen) +
                                                       " does not implement it");
        }
        return chosen;
    }

    /// CUDA buffers: gives @p op the engine's GPU lane (device scratch, local actions on its
    /// stream, staged transfers).  Host buffers: nothing (one flag test without libcuda).
    void place(detail::operation &op, collective which,
               std::initializer_list<const void *> buffers) const
    {
        const void *device_buffer = nullptr, *host_buffer = nullptr;
        gpu::location where;
        for (const void *b : buffers) {
            if (b == nullptr)
                continue;
            const gpu::location at = gpu::locate(b);
            if (!at.device) {
                host_buffer = b;
            } else if (device_buffer == nullptr) {
                device_buffer = b;
                where         = at;
            } else if (at.context != where.context || at.ordinal != where.ordinal) {
                throw ucx_error(UCS_ERR_UNSUPPORTED,
                                std::string("coll::") + name_of(which) +
                                    ": the buffers are on different GPUs (or CUDA contexts)");
            }
        }
        if (device_buffer == nullptr)
            return;
        if (host_buffer != nullptr) {
            throw ucx_error(UCS_ERR_UNSUPPORTED,
                            std::string("coll::") + name_of(which) +
                                ": one buffer is CUDA memory and another host memory; "
                                "pass buffers of one kind");
        }
        detail::engine &owner = live_engine();
        op.lane               = owner.lane_for(where);
        op.staged             = owner.stages_gpu_transfers();
        op.plan.device        = op.lane;
    }

    /// Whether an allreduce of CUDA buffers (@p op placed on a lane) starts with the direct
    /// path (coll/direct.hpp): config::gpu_direct, and in automatic mode only when neither the
    /// call nor the config names an algorithm.  Decided from the call and the config alone, so
    /// that every rank decides alike.
    bool tries_direct(const detail::operation &op, collective which, const call_options &options,
                      const reduction *reduce) const
    {
        const gpu::direct mode = config_->gpu_direct();
        if (which != collective::allreduce || !op.lane || size() < 2 || mode == gpu::direct::never)
            return false;
        if (mode == gpu::direct::automatic) {
            return options.algo == algorithm::automatic &&
                   config_->algorithm_for(which) == algorithm::automatic &&
                   reduce->kind() != op_kind::custom && size() <= detail::max_direct_ranks;
        }
        if (reduce->kind() == op_kind::custom || size() > detail::max_direct_ranks) {
            throw ucx_error(UCS_ERR_UNSUPPORTED,
                            "coll::allreduce: UCP_CPP_COLL_GPU_DIRECT=yes but the direct path "
                            "takes no custom reduction and at most " +
                                std::to_string(detail::max_direct_ranks) + " ranks");
        }
        return true;
    }

    /// Whether none of @p buffers is CUDA memory.
    static bool on_host(std::initializer_list<const void *> buffers)
    {
        for (const void *b : buffers) {
            if (b != nullptr && gpu::locate(b).device)
                return false;
        }
        return true;
    }

    /**
     * The operation of a call, ready to start: a kept schedule of the same key when one is
     * idle (config::plan_cache(): host buffers, no custom reduction), else a newly built one
     * (kept when it may be).  @p cached false: always a new one, kept nowhere (persistent).
     * A call that throws takes no sequence number.  @p send / @p recv: the caller's (null
     * where the collective has none), host or CUDA memory (see place()); @p op: reductions
     * only; @p v: the v-variants only (never kept: the key would be the counts too).
     */
    template <class T>
    std::shared_ptr<detail::operation> prepare(collective which, const call_options &options,
                                               const T *send, T *recv, size_t count,
                                               const reduction *op, int root, bool cached,
                                               const detail::v_arguments *v = nullptr) const
    {
        detail::comm_state &self = const_cast<detail::comm_state &>(live());
        if (op != nullptr)
            op->check(datatype_of<T>());
        const algorithm chosen = choose(which, options.algo, v ? v->total : count, sizeof(T));
        // The barrier moves no data; another collective of no elements only takes its number.
        // A v-variant always runs: its messages of no elements are how a rank whose counts
        // disagree with this rank's learns it (instead of waiting for ever).
        const bool empty = which != collective::barrier && count == 0 && v == nullptr;
        detail::plan_key key;
        bool keep_plan = cached && !empty && v == nullptr && config_->plan_cache() > 0 &&
                         (op == nullptr || op->kind() != op_kind::custom) && on_host({send, recv});
        if (keep_plan) {
            key.which  = which;
            key.chosen = chosen;
            key.type   = datatype_of<T>();
            key.has_op = op != nullptr;
            key.op     = op != nullptr ? op->kind() : op_kind::sum;
            key.root   = root;
            key.count  = count;
            key.send   = send;
            key.recv   = recv;
            for (detail::cached_plan &entry : plans_->entries) {
                if (!(entry.key == key))
                    continue;
                // Idle: held by the cache alone (no request, not in flight).
                if (entry.op.use_count() == 1) {
                    entry.last_use = ++plans_->clock;
                    entry.op->rearm();
                    return entry.op;
                }
                keep_plan = false;  // busy: this call gets a schedule of its own
                break;
            }
        }
        auto started    = std::make_shared<detail::operation>();
        started->comm   = state_;
        started->chosen = chosen;
        if (!empty) {
            place(*started, which, {send, recv});
            detail::context c{started->plan, self.rank, self.size(), datatype_of<T>(), sizeof(T)};
            detail::arguments call;
            call.send                   = reinterpret_cast<const std::byte *>(send);
            call.recv                   = reinterpret_cast<std::byte *>(recv);
            call.count                  = count;
            call.op                     = op != nullptr ? &keep(c, *op) : nullptr;
            call.root                   = root;
            call.knomial_radix          = config_->knomial_radix();
            call.v                      = v;
            const detail::builder build = detail::row_of(chosen).builder_for(which);
            if (tries_direct(*started, which, options, op)) {
                // Rank 0 keeps its mappings of the peers' buffers only where UCX moves no CUDA
                // memory itself (its cuda_ipc cannot map what we hold: coll/direct.hpp).
                detail::build_direct_allreduce(c, call, started->lane,
                                               config_->gpu_direct() == gpu::direct::always,
                                               /*keep_mappings=*/started->staged, build);
                keep_plan = false;
            } else {
                build(c, call);
            }
        }
        if (keep_plan && !started->lane) {
            std::vector<detail::cached_plan> &entries = plans_->entries;
            if (entries.size() >= config_->plan_cache()) {
                auto oldest = std::min_element(entries.begin(), entries.end(),
                                               [](const auto &a, const auto &b) {
                                                   return a.last_use < b.last_use;
                                               });
                *oldest     = detail::cached_plan{key, started, ++plans_->clock};
            } else {
                entries.push_back(detail::cached_plan{key, started, ++plans_->clock});
            }
        }
        return started;
    }

    /// Chooses the algorithm, builds (or finds) the schedule of the call and starts it.  Every
    /// rank consumes a sequence number even for empty collectives, so the numbering stays
    /// aligned.
    template <class T>
    request issue(collective which, const call_options &options, const T *send, T *recv,
                  size_t count, const reduction *op = nullptr, int root = 0,
                  const detail::v_arguments *v = nullptr) const
    {
        auto started      = prepare(which, options, send, recv, count, op, root, true, v);
        started->sequence = state_->next_sequence++;
        engine_->start(started);
        return request(engine_, started);
    }

    /// A persistent collective of the call (see coll::persistent).
    template <class T>
    persistent make_persistent(collective which, const call_options &options, const T *send,
                               T *recv, size_t count, const reduction *op = nullptr, int root = 0,
                               std::shared_ptr<const detail::v_arguments> v = nullptr) const
    {
        persistent made;
        made.engine_ = engine_;
        made.state_  = state_;
        made.which_  = which;
        if (on_host({send, recv})) {
            made.op_         = prepare(which, options, send, recv, count, op, root, false, v.get());
            made.op_->status = UCS_OK;  // not started
            made.chosen_     = made.op_->chosen;
            return made;
        }
        if (op != nullptr)
            op->check(datatype_of<T>());
        made.chosen_ = choose(which, options.algo, v ? v->total : count, sizeof(T));
        std::shared_ptr<const reduction> held = op != nullptr ? std::make_shared<reduction>(*op)
                                                              : nullptr;
        made.reissue_ = [self = *this, which, options, send, recv, count, held, root, v] {
            return self.issue(which, options, send, recv, count, held.get(), root, v.get());
        };
        return made;
    }

    void finish(request req, const call_options &options) const
    {
        const bool per_call = options.timeout != std::chrono::nanoseconds::zero();
        req.wait(per_call ? options.timeout : config_->timeout());
    }

    /// Shared by every communicator of the worker and by their requests in flight
    std::shared_ptr<detail::engine> engine_;
    std::shared_ptr<detail::comm_state> state_;
    std::shared_ptr<const coll::config> config_;
    /// Compiled schedules of host-buffer calls (config::plan_cache()); copies share them.
    std::shared_ptr<detail::plan_cache> plans_;
};

}  // namespace ucp_cpp::coll
