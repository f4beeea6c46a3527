/**
 * @file coll/communicator.hpp
 * @brief ucp_cpp::coll::communicator: ranks, bootstrap, split/dup and the nine collectives.
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
     * only.
     */
    template <class T>
    std::shared_ptr<detail::operation> prepare(collective which, const call_options &options,
                                               const T *send, T *recv, size_t count,
                                               const reduction *op, int root, bool cached) const
    {
        detail::comm_state &self = const_cast<detail::comm_state &>(live());
        if (op != nullptr)
            op->check(datatype_of<T>());
        const algorithm chosen = choose(which, options.algo, count, sizeof(T));
        // The barrier moves no data; another collective of no elements only takes its number.
        const bool empty = which != collective::barrier && count == 0;
        detail::plan_key key;
        bool keep_plan = cached && !empty && config_->plan_cache() > 0 &&
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
                  size_t count, const reduction *op = nullptr, int root = 0) const
    {
        auto started      = prepare(which, options, send, recv, count, op, root, true);
        started->sequence = state_->next_sequence++;
        engine_->start(started);
        return request(engine_, started);
    }

    /// A persistent collective of the call (see coll::persistent).
    template <class T>
    persistent make_persistent(collective which, const call_options &options, const T *send,
                               T *recv, size_t count, const reduction *op = nullptr,
                               int root = 0) const
    {
        persistent made;
        made.engine_ = engine_;
        made.state_  = state_;
        made.which_  = which;
        if (on_host({send, recv})) {
            made.op_         = prepare(which, options, send, recv, count, op, root, false);
            made.op_->status = UCS_OK;  // not started
            made.chosen_     = made.op_->chosen;
            return made;
        }
        if (op != nullptr)
            op->check(datatype_of<T>());
        made.chosen_                          = choose(which, options.algo, count, sizeof(T));
        std::shared_ptr<const reduction> held = op != nullptr ? std::make_shared<reduction>(*op)
                                                              : nullptr;
        made.reissue_ = [self = *this, which, options, send, recv, count, held, root] {
            return self.issue(which, options, send, recv, count, held.get(), root);
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
