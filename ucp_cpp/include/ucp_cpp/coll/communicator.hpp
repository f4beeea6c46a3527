/**
 * @file coll/communicator.hpp
 * @brief ucp_cpp::coll::communicator: ranks, bootstrap, split/dup and the nine collectives.
 *
 * @code
 *   auto ctx    = ucp_cpp::context::create();
 *   auto wrk    = ucp_cpp::worker::create(ctx);
 *   auto world  = ucp_cpp::coll::communicator::bootstrap(wrk, ucp_cpp::coll::bootstrap_params::from_environment());
 *   world.allreduce(send.data(), recv.data(), n, ucp_cpp::coll::sum);        // blocking
 *   auto req = world.iallgather(mine.data(), all.data(), n);                   // nonblocking
 *   req.wait(10s);
 * @endcode
 *
 * Buffers are pointers + element counts with the element type deduced (int8..int64,
 * uint8..uint64, float, double).  In-place variants are selected by aliasing, as documented per
 * call (e.g. allreduce(buf, buf, n, op)).  Every rank must issue the same collectives on a
 * communicator in the same order with matching counts and roots (a count mismatch is detected
 * and fails the collective).
 *
 * Lifetime: a communicator is a cheap copyable handle; copies share the sequence numbering (they
 * are the same communicator; use dup() for an independent one).  The communicator keeps its worker
 * alive.  Buffers must stay valid until the collective completes.
 *
 * Threading: a communicator and every communicator derived from it (split/dup) share the worker
 * and its engine: use them from one thread at a time.  Ranks in the same process (threads) need
 * one worker each.
 *
 * Algorithm selection: call_options::algo, else the environment variable
 * UCP_CPP_COLL_<COLLECTIVE>_ALGORITHM (e.g. UCP_CPP_COLL_ALLREDUCE_ALGORITHM=ring), else by
 * message and communicator size (see docs/collectives.md for the thresholds).
 */
#pragma once

#include <ucp_cpp/coll/algorithms.hpp>
#include <ucp_cpp/coll/bootstrap.hpp>
#include <ucp_cpp/coll/engine.hpp>
#include <ucp_cpp/coll/types.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace ucp_cpp::coll {

enum class algorithm {
    automatic,
    recursive_doubling,  ///< allreduce, allgather (allgather: power-of-two sizes)
    ring,                ///< allreduce, allgather, reduce_scatter
    binomial,            ///< bcast, reduce, gather, scatter
    scatter_allgather,   ///< bcast (van de Geijn)
    reduce_scatter_gather,  ///< reduce (ring reduce-scatter + gather at the root)
    bruck,               ///< allgather
    pairwise,            ///< alltoall
    dissemination,       ///< barrier
    knomial,             ///< allreduce (recursive k-ing, radix UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX)
    rabenseifner,        ///< allreduce (recursive-halving reduce-scatter + recursive-doubling allgather)
};

inline const char *name_of(algorithm a)
{
    static const char *const names[] = {"automatic", "recursive_doubling", "ring", "binomial",
                                        "scatter_allgather", "reduce_scatter_gather", "bruck",
                                        "pairwise", "dissemination", "knomial", "rabenseifner"};
    return names[static_cast<int>(a)];
}

/// Per-call options.
struct call_options {
    algorithm algo = algorithm::automatic;
    /// Bound for the blocking variants; default: UCP_CPP_COLL_TIMEOUT (seconds) or forever.
    std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero();
};

/// Message-size thresholds of the automatic selection, in bytes (see docs/collectives.md).
struct thresholds {
    /// allreduce over p ranks, bytes = n * sizeof(T) (the alpha-beta cost model behind these:
    /// docs/collectives.md, "Allreduce selection").  Below this, or n < p, latency rules:
    /// recursive doubling for powers of two below allreduce_knomial_ranks, k-nomial otherwise.
    static constexpr size_t allreduce_rabenseifner = 16 * 1024;
    static constexpr int allreduce_knomial_ranks = 16;  ///< powers of two from here: k-nomial
    static constexpr int allreduce_knomial_radix = 4;   ///< default k (UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX)
    /// alpha/beta: the message size whose transfer time equals one latency (~2 us at ~8 GB/s).
    static constexpr size_t allreduce_alpha_beta = 16 * 1024;
    /// From allreduce_rabenseifner (and n >= p) up: ring at or above this, Rabenseifner below.
    /// Powers of two (both move 2n(p-1)/p; the ring has 2(p-1-log2 p) more latencies, n/p
    /// scratch and neighbour-only traffic): once those latencies are <= 1/16 of its transfer
    /// time, 16 (p-1-log2 p) alpha/beta: p 4: 256 KiB, 8: 1 MiB, 16: 2.75 MiB.  Other sizes
    /// (Rabenseifner's fold adds ~2 whole-vector transfers, the ring 2(p-2-floor(log2 p))
    /// latencies): (p-2-floor(log2 p)) alpha/beta: p 3: always, 5: 16 KiB, 6: 32 KiB, 12: 112 KiB.
    static constexpr size_t allreduce_ring(int p)
    {
        int log2p = 0;
        while ((2 << log2p) <= p) ++log2p;
        if ((p & (p - 1)) == 0) return 16 * size_t(p - 1 - log2p) * allreduce_alpha_beta;
        return size_t(p - 2 - log2p) * allreduce_alpha_beta;
    }
    static constexpr size_t bcast_scatter_allgather = 128 * 1024;
    static constexpr size_t reduce_scatter_gather = 64 * 1024;
    static constexpr size_t allgather_ring = 64 * 1024;       ///< total gathered bytes
};

/// How a communicator connects to its peers.
struct communicator_params {
    /// UCP_ERR_HANDLING_MODE_PEER: a dead rank fails the collectives instead of hanging them.
    /// UCX's shared-memory transports posix/sysv/xpmem cannot detect dead peers and refuse this
    /// mode (in every release unless UCX_MM_ERROR_HANDLING=y; detail/ucx_compat.hpp): set it
    /// false to run over them (then only timeouts bound a failure).
    bool peer_error_handling = true;
    /// CUDA buffers: staging through pinned host memory and its segment size (coll/engine.hpp).
    detail::gpu_options gpu;
};

class communicator {
public:
    /// An invalid communicator (what split() returns to ranks that passed a negative color).
    communicator() = default;

    /**
     * Bootstrap (a): rendezvous at params.root_host:root_port (see bootstrap.hpp), then connect to
     * every rank.  Bounded by params.timeout; throws ucx_error naming the failure.
     */
    static communicator bootstrap(std::shared_ptr<worker> owner, const bootstrap_params &params,
                                  const communicator_params &options = {})
    {
        auto table = exchange_addresses(params, owner->address());
        return from_addresses(std::move(owner), params.rank, table, options);
    }

    /// Bootstrap (b): the caller already exchanged the worker addresses (table indexed by rank).
    static communicator from_addresses(std::shared_ptr<worker> owner, int rank,
                                       const std::vector<worker_address> &addresses,
                                       const communicator_params &options = {})
    {
        const int size = int(addresses.size());
        if (size < 1 || size > detail::max_ranks || rank < 0 || rank >= size) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, "coll::communicator: rank " + std::to_string(rank) +
                                                       " / size " + std::to_string(size) + " out of range (size <= " +
                                                       std::to_string(detail::max_ranks) + ")");
        }
        owner->ctx()->require_features(UCP_FEATURE_TAG, "coll::communicator");
        auto state   = std::make_shared<detail::comm_state>();
        state->owner = detail::engine::create(std::move(owner), rank, addresses, options.peer_error_handling,
                                              options.gpu);
        state->rank  = rank;
        state->id    = 0;
        for (int r = 0; r < size; ++r) state->world_ranks.push_back(r);
        return communicator(std::move(state));
    }

    bool valid() const noexcept { return state_ != nullptr; }
    int rank() const { return live().rank; }
    int size() const { return live().size(); }
    /// The rank of communicator rank @p r in the bootstrap (world) communicator.
    int world_rank(int r) const { return live().world_ranks.at(size_t(r)); }
    const std::shared_ptr<worker> &owner() const { return live().owner->owner(); }

    /**
     * Collective over this communicator: ranks with the same @p color form a new communicator,
     * ordered by (@p key, old rank).  A negative color returns an invalid communicator.
     */
    communicator split(int color, int key) const
    {
        const detail::comm_state &self = live();
        // Everybody contributes (color, key, next free communicator id); the new id is the maximum
        // over the parent, so it is free in every member process (MPI's context-id argument).
        int64_t mine[3] = {color, key, int64_t(self.owner->next_comm_id())};
        std::vector<int64_t> all(size_t(3 * size()));
        allgather(mine, all.data(), 3);
        uint32_t id = 0;
        for (int r = 0; r < size(); ++r) id = std::max(id, uint32_t(all[size_t(3 * r + 2)]));
        if (id >= detail::max_comm_ids) {
            throw ucx_error(UCS_ERR_EXCEEDS_LIMIT, "coll::communicator::split: out of communicator ids");
        }
        self.owner->next_comm_id() = id + 1;
        if (color < 0) return communicator();
        std::vector<std::tuple<int64_t, int, int>> members;  // key, old rank, world rank
        for (int r = 0; r < size(); ++r) {
            if (all[size_t(3 * r)] == color) members.emplace_back(all[size_t(3 * r + 1)], r, self.world_ranks[size_t(r)]);
        }
        std::sort(members.begin(), members.end());
        auto state   = std::make_shared<detail::comm_state>();
        state->owner = self.owner;
        state->id    = id;
        for (const auto &[member_key, old_rank, world] : members) {
            if (old_rank == self.rank) state->rank = int(state->world_ranks.size());
            state->world_ranks.push_back(world);
        }
        return communicator(std::move(state));
    }

    /// Same ranks, independent tag space (collectives on the two never match each other).
    communicator dup() const { return split(0, rank()); }

    // ------------------------------------------------------------------ barrier

    request ibarrier(const call_options &options = {}) const
    {
        return issue("barrier", options, [&](detail::context &c, algorithm) { detail::barrier_dissemination(c); },
                     datatype::uint8, {algorithm::dissemination}, false, {});
    }
    void barrier(const call_options &options = {}) const { finish(ibarrier(options), options); }

    // ------------------------------------------------------------------ broadcast (always in place)

    template <class T>
    request ibcast(T *buffer, size_t count, int root, const call_options &options = {}) const
    {
        check_root(root, "bcast");
        auto *buf = reinterpret_cast<std::byte *>(buffer);
        return issue("bcast", options, [&](detail::context &c, algorithm a) {
            if (a == algorithm::scatter_allgather) {
                detail::bcast_scatter_allgather(c, buf, count, root);
            } else {
                detail::bcast_binomial(c, buf, count * sizeof(T), root);
            }
        }, datatype_of<T>(), {algorithm::binomial, algorithm::scatter_allgather}, count == 0, {buffer},
                     [&] {
                         return count * sizeof(T) >= thresholds::bcast_scatter_allgather && count >= size_t(size()) &&
                                        size() > 2
                                    ? algorithm::scatter_allgather
                                    : algorithm::binomial;
                     });
    }
    template <class T>
    void bcast(T *buffer, size_t count, int root, const call_options &options = {}) const
    {
        finish(ibcast(buffer, count, root, options), options);
    }

    // ------------------------------------------------------------------ reduce

    /// Result at @p root in @p recv (ignored elsewhere).  In place at the root: send == recv.
    template <class T>
    request ireduce(const T *send, T *recv, size_t count, const reduction &op, int root,
                    const call_options &options = {}) const
    {
        check_root(root, "reduce");
        op.check(datatype_of<T>());
        const size_t bytes = count * sizeof(T);
        return issue("reduce", options, [&](detail::context &c, algorithm a) {
            const reduction &kept = keep(c, op);
            // The root accumulates in recv; the others in scratch (recv is not theirs to write).
            std::byte *acc = rank() == root ? reinterpret_cast<std::byte *>(recv) : c.plan.allocate(bytes);
            c.plan.prologue = [x = c.actions(), acc, send, bytes] { x.copy(acc, send, bytes); };
            if (a == algorithm::reduce_scatter_gather) {
                detail::reduce_scatter_gather(c, acc, count, kept, root);
            } else {
                detail::reduce_binomial(c, acc, count, kept, root);
            }
        }, datatype_of<T>(), {algorithm::binomial, algorithm::reduce_scatter_gather}, count == 0, {send, recv},
                     [&] {
                         return bytes >= thresholds::reduce_scatter_gather && count >= size_t(size())
                                    ? algorithm::reduce_scatter_gather
                                    : algorithm::binomial;
                     });
    }
    template <class T>
    void reduce(const T *send, T *recv, size_t count, const reduction &op, int root,
                const call_options &options = {}) const
    {
        finish(ireduce(send, recv, count, op, root, options), options);
    }

    // ------------------------------------------------------------------ allreduce

    /// recv = op over all ranks' send.  In place: send == recv.
    template <class T>
    request iallreduce(const T *send, T *recv, size_t count, const reduction &op,
                       const call_options &options = {}) const
    {
        op.check(datatype_of<T>());
        const size_t bytes = count * sizeof(T);
        auto *buf = reinterpret_cast<std::byte *>(recv);
        return issue("allreduce", options, [&](detail::context &c, algorithm a) {
            const reduction &kept = keep(c, op);
            c.plan.prologue = [x = c.actions(), buf, send, bytes] { x.copy(buf, send, bytes); };
            if (a == algorithm::ring) {
                detail::allreduce_ring(c, buf, count, kept);
            } else if (a == algorithm::rabenseifner) {
                detail::allreduce_rabenseifner(c, buf, count, kept);
            } else if (a == algorithm::knomial) {
                detail::allreduce_knomial(c, buf, count, kept, knomial_radix_from_environment());
            } else {
                detail::allreduce_recursive_doubling(c, buf, count, kept);
            }
        }, datatype_of<T>(),
                     {algorithm::recursive_doubling, algorithm::ring, algorithm::knomial, algorithm::rabenseifner},
                     count == 0, {send, recv}, [&] {
                         const int p = size();
                         const bool pof2 = (p & (p - 1)) == 0;
                         if (bytes < thresholds::allreduce_rabenseifner || count < size_t(p)) {
                             return pof2 && p < thresholds::allreduce_knomial_ranks ? algorithm::recursive_doubling
                                                                                    : algorithm::knomial;
                         }
                         return bytes >= thresholds::allreduce_ring(p) ? algorithm::ring : algorithm::rabenseifner;
                     });
    }
    template <class T>
    void allreduce(const T *send, T *recv, size_t count, const reduction &op, const call_options &options = {}) const
    {
        finish(iallreduce(send, recv, count, op, options), options);
    }
    /// In-place shorthand: buffer = op over all ranks' buffer.
    template <class T>
    void allreduce(T *buffer, size_t count, const reduction &op, const call_options &options = {}) const
    {
        allreduce(buffer, buffer, count, op, options);
    }

    // ------------------------------------------------------------------ allgather

    /// recv[i*count ..] = rank i's send (recv holds size()*count).  In place: send == recv + rank()*count.
    template <class T>
    request iallgather(const T *send, T *recv, size_t count, const call_options &options = {}) const
    {
        const size_t block = count * sizeof(T);
        auto *buf = reinterpret_cast<std::byte *>(recv);
        const bool pof2 = (size() & (size() - 1)) == 0;
        return issue("allgather", options, [&](detail::context &c, algorithm a) {
            std::byte *own = buf + size_t(rank()) * block;
            c.plan.prologue = [x = c.actions(), own, send, block] { x.copy(own, send, block); };
            const auto layout = detail::equal_blocks(count, size(), sizeof(T));
            if (a == algorithm::recursive_doubling) {
                if (!pof2) {
                    throw ucx_error(UCS_ERR_UNSUPPORTED, "coll::allgather: recursive_doubling needs a "
                                                         "power-of-two communicator size (use bruck)");
                }
                detail::allgather_recursive_doubling(c, buf, layout);
            } else if (a == algorithm::bruck) {
                detail::allgather_bruck(c, buf, block);
            } else {
                detail::ring_allgather(c, buf, layout, rank(), 0);
            }
        }, datatype_of<T>(), {algorithm::ring, algorithm::recursive_doubling, algorithm::bruck}, count == 0,
                     {send, recv},
                     [&] {
                         if (block * size_t(size()) >= thresholds::allgather_ring) return algorithm::ring;
                         return pof2 ? algorithm::recursive_doubling : algorithm::bruck;
                     });
    }
    template <class T>
    void allgather(const T *send, T *recv, size_t count, const call_options &options = {}) const
    {
        finish(iallgather(send, recv, count, options), options);
    }

    // ------------------------------------------------------------------ reduce_scatter

    /// Block reduce-scatter: send holds size()*count elements; recv (count) gets block rank() of
    /// the reduction.  In place: send == recv (the buffer holds the input, block 0 the result).
    template <class T>
    request ireduce_scatter(const T *send, T *recv, size_t count, const reduction &op,
                            const call_options &options = {}) const
    {
        op.check(datatype_of<T>());
        const size_t total = count * size_t(size()) * sizeof(T);
        return issue("reduce_scatter", options, [&](detail::context &c, algorithm) {
            const reduction &kept = keep(c, op);
            std::byte *work = c.plan.allocate(total);
            c.plan.prologue = [x = c.actions(), work, send, total] { x.copy(work, send, total); };
            const auto layout = detail::equal_blocks(count, size(), sizeof(T));
            detail::ring_reduce_scatter(c, work, layout, rank(), kept, 0);
            auto *out = reinterpret_cast<std::byte *>(recv);
            auto deliver = [x = c.actions(), out, mine = work + layout.offset(rank()), bytes = layout.bytes(rank())] {
                x.copy(out, mine, bytes);
            };
            if (c.plan.rounds.empty()) {
                c.plan.prologue = [prologue = c.plan.prologue, deliver] { prologue(); deliver(); };
            } else {
                c.plan.rounds.back().then = [then = c.plan.rounds.back().then, deliver] { then(); deliver(); };
            }
        }, datatype_of<T>(), {algorithm::ring}, count == 0, {send, recv});
    }
    template <class T>
    void reduce_scatter(const T *send, T *recv, size_t count, const reduction &op,
                        const call_options &options = {}) const
    {
        finish(ireduce_scatter(send, recv, count, op, options), options);
    }

    // ------------------------------------------------------------------ alltoall

    /// recv block i = rank i's send block rank() (count elements per block).  In place: send == recv.
    template <class T>
    request ialltoall(const T *send, T *recv, size_t count, const call_options &options = {}) const
    {
        return issue("alltoall", options, [&](detail::context &c, algorithm) {
            detail::alltoall_pairwise(c, reinterpret_cast<const std::byte *>(send),
                                      reinterpret_cast<std::byte *>(recv), count * sizeof(T));
        }, datatype_of<T>(), {algorithm::pairwise}, count == 0, {send, recv});
    }
    template <class T>
    void alltoall(const T *send, T *recv, size_t count, const call_options &options = {}) const
    {
        finish(ialltoall(send, recv, count, options), options);
    }

    // ------------------------------------------------------------------ gather / scatter

    /// recv (at root, size()*count) block i = rank i's send.  In place at the root:
    /// send == recv + root*count.
    template <class T>
    request igather(const T *send, T *recv, size_t count, int root, const call_options &options = {}) const
    {
        check_root(root, "gather");
        return issue("gather", options, [&](detail::context &c, algorithm) {
            detail::gather_binomial(c, reinterpret_cast<const std::byte *>(send), reinterpret_cast<std::byte *>(recv),
                                    count * sizeof(T), root);
        }, datatype_of<T>(), {algorithm::binomial}, count == 0, {send, recv});
    }
    template <class T>
    void gather(const T *send, T *recv, size_t count, int root, const call_options &options = {}) const
    {
        finish(igather(send, recv, count, root, options), options);
    }

    /// recv (count) = block rank() of the root's send (size()*count).  In place at the root:
    /// recv == send + root*count.
    template <class T>
    request iscatter(const T *send, T *recv, size_t count, int root, const call_options &options = {}) const
    {
        check_root(root, "scatter");
        return issue("scatter", options, [&](detail::context &c, algorithm) {
            detail::scatter_binomial(c, reinterpret_cast<const std::byte *>(send), reinterpret_cast<std::byte *>(recv),
                                     count * sizeof(T), root);
        }, datatype_of<T>(), {algorithm::binomial}, count == 0, {send, recv});
    }
    template <class T>
    void scatter(const T *send, T *recv, size_t count, int root, const call_options &options = {}) const
    {
        finish(iscatter(send, recv, count, root, options), options);
    }

private:
    explicit communicator(std::shared_ptr<detail::comm_state> state) : state_(std::move(state)) {}

    const detail::comm_state &live() const
    {
        if (!state_) throw ucx_error(UCS_ERR_INVALID_PARAM, "coll::communicator: not a valid communicator");
        return *state_;
    }

    void check_root(int root, const char *what) const
    {
        if (root < 0 || root >= size()) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, std::string("coll::") + what + ": root " + std::to_string(root) +
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

    static algorithm algorithm_from_environment(const char *collective)
    {
        std::string variable = "UCP_CPP_COLL_";
        for (const char *p = collective; *p; ++p) variable += char(std::toupper(static_cast<unsigned char>(*p)));
        variable += "_ALGORITHM";
        const char *value = std::getenv(variable.c_str());
        if (value == nullptr || *value == '\0') return algorithm::automatic;
        for (int a = 0; a <= int(algorithm::rabenseifner); ++a) {
            if (std::string(value) == name_of(algorithm(a))) return algorithm(a);
        }
        throw ucx_error(UCS_ERR_INVALID_PARAM, variable + "=" + value + ": unknown algorithm");
    }

    /// k of the k-nomial allreduce: UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX (>= 2), else the default.
    static int knomial_radix_from_environment()
    {
        const char *value = std::getenv("UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX");
        if (value == nullptr || *value == '\0') return thresholds::allreduce_knomial_radix;
        char *end = nullptr;
        const long radix = std::strtol(value, &end, 10);
        if (*end != '\0' || radix < 2 || radix > detail::max_ranks) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, std::string("UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX=") + value +
                                                       ": not a radix (an integer >= 2)");
        }
        return int(radix);
    }

    /// CUDA buffers: gives @p op the engine's GPU lane (device scratch, local actions on its
    /// stream, staged transfers).  Host buffers: nothing (one flag test without libcuda).
    void place(detail::operation &op, const char *collective, std::initializer_list<const void *> buffers) const
    {
        const void *device_buffer = nullptr, *host_buffer = nullptr;
        gpu::location where;
        for (const void *b : buffers) {
            if (b == nullptr) continue;
            const gpu::location at = gpu::locate(b);
            if (!at.device) {
                host_buffer = b;
            } else if (device_buffer == nullptr) {
                device_buffer = b;
                where = at;
            } else if (at.context != where.context || at.ordinal != where.ordinal) {
                throw ucx_error(UCS_ERR_UNSUPPORTED, std::string("coll::") + collective +
                                                         ": the buffers are on different GPUs (or CUDA contexts)");
            }
        }
        if (device_buffer == nullptr) return;
        if (host_buffer != nullptr) {
            throw ucx_error(UCS_ERR_UNSUPPORTED, std::string("coll::") + collective +
                                                     ": one buffer is CUDA memory and another host memory; "
                                                     "pass buffers of one kind");
        }
        detail::engine &owner = *live().owner;
        op.lane        = owner.lane_for(where);
        op.staged      = owner.stages_gpu_transfers();
        op.plan.device = op.lane;
    }

    /// Chooses the algorithm, builds the schedule and starts it.  Every rank consumes a sequence
    /// number even for empty collectives, so the numbering stays aligned.  @p buffers: the
    /// caller's (null ones ignored), host or CUDA memory (see place()).
    template <class Build, class Choose = algorithm (*)()>
    request issue(const char *collective, const call_options &options, Build &&build, datatype type,
                  std::initializer_list<algorithm> supported, bool empty,
                  std::initializer_list<const void *> buffers,
                  Choose &&choose = [] { return algorithm::automatic; }) const
    {
        detail::comm_state &self = const_cast<detail::comm_state &>(live());
        algorithm chosen = options.algo != algorithm::automatic ? options.algo : algorithm_from_environment(collective);
        if (chosen != algorithm::automatic &&
            std::find(supported.begin(), supported.end(), chosen) == supported.end()) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, std::string("coll::") + collective + ": algorithm " +
                                                       name_of(chosen) + " does not implement it");
        }
        if (chosen == algorithm::automatic) chosen = choose();
        if (chosen == algorithm::automatic) chosen = *supported.begin();

        auto op      = std::make_shared<detail::operation>();
        op->comm     = state_;
        if (!empty) place(*op, collective, buffers);  // may throw: before taking a sequence number
        op->sequence = self.next_sequence++;
        if (!empty && size() > 1) {
            detail::context c{op->plan, self.rank, self.size(), type, size_of(type)};
            build(c, chosen);
        } else if (!empty) {
            // One rank: the result is the input (copies only; no messages).
            detail::context c{op->plan, 0, 1, type, size_of(type)};
            build(c, chosen);
        }
        self.owner->start(op);
        return request(self.owner, op);
    }

    static void finish(request req, const call_options &options)
    {
        std::chrono::nanoseconds timeout = options.timeout;
        if (timeout == std::chrono::nanoseconds::zero()) {
            const char *seconds = std::getenv("UCP_CPP_COLL_TIMEOUT");
            timeout = seconds ? std::chrono::nanoseconds(int64_t(std::atof(seconds) * 1e9))
                              : std::chrono::nanoseconds::max();
        }
        req.wait(timeout);
    }

    std::shared_ptr<detail::comm_state> state_;
};

}  // namespace ucp_cpp::coll
