/**
 * @file coll/config.hpp
 * @brief coll::config: what a communicator's collectives are set to do (algorithm per
 *        collective, k-nomial radix, timeout, cut-overs of the automatic choice, CUDA buffer
 *        transfers), read once from the environment or given in code.
 *
 * @code
 *   coll::communicator_params params;
 *   params.config = coll::config::from_environment()                 // UCP_CPP_COLL_*, then:
 *                       .use(coll::collective::allreduce, coll::algorithm::ring)
 *                       .timeout(std::chrono::seconds(30));
 *   auto world = coll::communicator::bootstrap(wrk, bootstrap_params::from_environment(), params);
 * @endcode
 *
 * A communicator takes its config when it is constructed: communicator_params::config, or
 * config::from_environment() when that is empty; split() and dup() pass it on.  Nothing reads
 * the environment per call.  The variables (docs/collectives.md has the table):
 *
 *   UCP_CPP_COLL_<COLLECTIVE>_ALGORITHM   automatic or an algorithm that implements it
 *   UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX  UCP_CPP_COLL_TIMEOUT
 *   UCP_CPP_COLL_GPU_STAGING              UCP_CPP_COLL_GPU_SEGMENT
 *   UCP_CPP_COLL_PLAN_CACHE
 *   the cut-overs of coll::thresholds     (UCP_CPP_COLL_ALLREDUCE_RABENSEIFNER_THRESH, ...)
 *   process-wide, only checked here:      UCP_CPP_COLL_GPU, UCP_CPP_COLL_NVRTC (the CUDA
 *                                         layer reads them once), UCP_CPP_COLL_BOOTSTRAP_TIMEOUT,
 *                                         UCP_CPP_COLL_LAUNCHER, UCP_CPP_COLL_ROOT_LISTENER_FD
 *
 * A value that is not accepted is an error (ucx_error UCS_ERR_INVALID_PARAM naming the
 * variable, the value and the accepted values): a typo must not silently run another algorithm
 * than the one asked for.  A UCP_CPP_COLL_* name that is none of these is a warning on stderr,
 * once per process and name, with the nearest known name: environments are shared by whole
 * jobs, launchers and other builds of this library (a newer variable meets an older build),
 * so an unknown name is no reason to stop a job, as UCX warns about unused UCX_* variables.
 *
 * Every rank of a communicator must have the same config (the same environment): ranks that
 * choose different algorithms fail, or wait until the timeout.
 *
 * Threading: a config is a value.  from_environment() reads the environment, which races with
 * setenv() on another thread.
 */
#pragma once

#include <ucp_cpp/coll/algorithms.hpp>
#include <ucp_cpp/coll/engine.hpp>
#include <ucp_cpp/coll/environment.hpp>
#include <ucp_cpp/coll/types.hpp>

#include <array>
#include <cctype>
#include <chrono>
#include <climits>
#include <optional>
#include <string>
#include <vector>

namespace ucp_cpp::coll {

namespace detail {
/// "automatic, a, b": the values the algorithm of @p which accepts, for messages.
[[nodiscard]] inline std::string accepted_algorithms(collective which)
{
    std::string names = "automatic";
    for (algorithm a : algorithms_of(which))
        names += std::string(", ") + name_of(a);
    return names;
}
}  // namespace detail

/**
 * @brief The settings of a communicator's collectives.
 *
 * The setters return the config, so that settings chain; each throws ucx_error
 * (UCS_ERR_INVALID_PARAM) on a value it does not accept, naming it.
 */
class config {
public:
    /// The defaults: automatic choice for every collective, k-nomial radix 4, no timeout,
    /// the default thresholds, CUDA staging automatic in 1 MiB segments.
    config() { algorithms_.fill(algorithm::automatic); }

    /**
     * @brief The defaults, overridden by every UCP_CPP_COLL_* variable that is set.
     *
     * Warns once per process on stderr about each UCP_CPP_COLL_* name it does not know.
     * @return the config
     * @throws ucx_error UCS_ERR_INVALID_PARAM naming a variable whose value is not accepted,
     *         the value and the accepted values
     */
    [[nodiscard]] static config from_environment();

    /**
     * @brief Runs @p which with @p how (algorithm::automatic: chosen per call by size).
     * @param which a collective
     * @param how an algorithm that implements it, or automatic
     * @return this config
     * @throws ucx_error UCS_ERR_INVALID_PARAM: @p how does not implement @p which
     */
    config &use(collective which, algorithm how)
    {
        if (!implements(how, which)) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            std::string("coll::config::use: ") + name_of(how) +
                                " does not implement " + name_of(which) +
                                " (accepted: " + detail::accepted_algorithms(which) + ")");
        }
        algorithms_[size_t(which)] = how;
        return *this;
    }
    /// @brief The algorithm @p which is set to. @param which a collective
    /// @return the algorithm, or automatic (chosen per call)
    [[nodiscard]] algorithm algorithm_for(collective which) const noexcept
    {
        return algorithms_[size_t(which)];
    }

    /**
     * @brief The radix k of the k-nomial allreduce (a radix above the rank count acts as it).
     * @param radix k, from 2 to detail::max_ranks
     * @return this config
     * @throws ucx_error UCS_ERR_INVALID_PARAM: @p radix out of range
     */
    config &knomial_radix(int radix)
    {
        if (radix < 2 || radix > detail::max_ranks) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            "coll::config::knomial_radix: " + std::to_string(radix) +
                                " is not from 2 to " + std::to_string(detail::max_ranks));
        }
        knomial_radix_ = radix;
        return *this;
    }
    /// @brief The radix of the k-nomial allreduce. @return k
    [[nodiscard]] int knomial_radix() const noexcept { return knomial_radix_; }

    /**
     * @brief Bounds the blocking collectives (call_options::timeout overrides per call).
     * @param bound > 0; nanoseconds::max() waits forever (the default)
     * @return this config
     * @throws ucx_error UCS_ERR_INVALID_PARAM: @p bound is not positive
     */
    config &timeout(std::chrono::nanoseconds bound)
    {
        if (bound <= std::chrono::nanoseconds::zero()) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            "coll::config::timeout: " + std::to_string(bound.count()) +
                                " ns is not positive");
        }
        timeout_ = bound;
        return *this;
    }
    /// @brief The bound of the blocking collectives. @return it; nanoseconds::max(): forever
    [[nodiscard]] std::chrono::nanoseconds timeout() const noexcept { return timeout_; }

    /**
     * @brief The cut-overs of the automatic choice.
     * @param cut every cut-over (start from thresholds() to change one)
     * @return this config
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a negative allreduce_knomial_ranks
     */
    config &thresholds(const coll::thresholds &cut)
    {
        if (cut.allreduce_knomial_ranks < 0) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            "coll::config::thresholds: allreduce_knomial_ranks " +
                                std::to_string(cut.allreduce_knomial_ranks) + " is negative");
        }
        thresholds_ = cut;
        return *this;
    }
    /// @brief The cut-overs of the automatic choice. @return them
    [[nodiscard]] const coll::thresholds &thresholds() const noexcept { return thresholds_; }

    /**
     * @brief How transfers of CUDA buffers travel.
     * @param how automatic (stage unless the UCP context reports CUDA memory support), always
     *        (through pinned host memory) or never (device pointers to UCX)
     * @return this config
     */
    config &gpu_staging(gpu::staging how)
    {
        gpu_.staging = how;
        return *this;
    }
    /**
     * @brief How many compiled schedules of host-buffer calls a communicator keeps.
     *
     * A call with the same collective, algorithm, element type, count, reduction, root and
     * buffers as a kept one runs that schedule again (scratch included): nothing is allocated
     * or rebuilt.  The least recently used one goes when a new one would exceed the bound.
     * Custom reductions and CUDA buffers are never kept.
     * @param plans the bound; 0: every call builds its schedule
     * @return this config
     */
    config &plan_cache(size_t plans)
    {
        plan_cache_ = plans;
        return *this;
    }
    /// @brief How many schedules a communicator keeps. @return the bound (0: none)
    [[nodiscard]] size_t plan_cache() const noexcept { return plan_cache_; }

    /// @brief How transfers of CUDA buffers travel. @return automatic, always or never
    [[nodiscard]] gpu::staging gpu_staging() const noexcept { return gpu_.staging; }

    /**
     * @brief The pipeline segment of staged CUDA transfers (the pinned block size).
     * @param bytes >= 4096
     * @return this config
     * @throws ucx_error UCS_ERR_INVALID_PARAM: @p bytes below 4096
     */
    config &gpu_segment_bytes(size_t bytes)
    {
        if (bytes < 4096) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, "coll::config::gpu_segment_bytes: " +
                                                       std::to_string(bytes) + " is below 4096");
        }
        gpu_.segment_bytes = bytes;
        return *this;
    }
    /// @brief The pipeline segment of staged CUDA transfers. @return bytes
    [[nodiscard]] size_t gpu_segment_bytes() const noexcept { return gpu_.segment_bytes; }

    /**
     * @brief Whether an allreduce of CUDA buffers reads the other ranks' buffers directly
     *        (coll/direct.hpp: every rank reduces its block from all ranks' inputs, then copies
     *        the other blocks from their outputs).
     * @param how automatic (when every rank's buffers can be mapped, i.e. ranks on one node and
     *        one device, and neither the call nor this config names an allreduce algorithm),
     *        always (a call where it cannot run fails with UCS_ERR_UNSUPPORTED on every rank),
     *        or never
     * @return this config
     */
    config &gpu_direct(gpu::direct how)
    {
        gpu_.direct = how;
        return *this;
    }
    /// @brief Whether an allreduce of CUDA buffers reads the peers' buffers directly.
    /// @return automatic, always or never
    [[nodiscard]] gpu::direct gpu_direct() const noexcept { return gpu_.direct; }

private:
    std::array<algorithm, detail::collective_count> algorithms_;
    int knomial_radix_                = 4;
    size_t plan_cache_                = 16;
    std::chrono::nanoseconds timeout_ = std::chrono::nanoseconds::max();
    coll::thresholds thresholds_;
    detail::gpu_options gpu_;
};

}  // namespace ucp_cpp::coll

namespace ucp_cpp::coll::detail {

/// A UCP_CPP_COLL_* variable other than the per-collective algorithms.
struct config_variable {
    const char *name;
    const char *accepted;  ///< what the error message and docs/collectives.md say it accepts
    /// Sets @p into from @p value; false (or a setter's ucx_error) when it is not accepted.
    bool (*read)(config &into, const std::string &value);
};

/// Calls @p set with the parsed value, if there is one; returns whether there was.
template <class T, class Set> bool read_parsed(const std::optional<T> &parsed, Set &&set)
{
    if (parsed)
        set(*parsed);
    return parsed.has_value();
}

/// Reads a byte cut-over of coll::thresholds.
template <size_t thresholds::*member> bool read_threshold(config &into, const std::string &value)
{
    return read_parsed(parse_bytes(value), [&](size_t bytes) {
        coll::thresholds cut = into.thresholds();
        cut.*member          = bytes;
        into.thresholds(cut);
    });
}

inline constexpr const char *accepted_bytes = "bytes, with an optional K, M or G suffix";

/// Reads `auto` or a switch into a setting of automatic / always / never (gpu::staging,
/// gpu::direct); false when @p value is neither.
template <class Setting, class Set> bool read_three_way(const std::string &value, Set &&set)
{
    if (value == "auto") {
        set(Setting::automatic);
        return true;
    }
    return read_parsed(parse_switch(value),
                       [&](bool on) { set(on ? Setting::always : Setting::never); });
}

/// Every UCP_CPP_COLL_* variable but UCP_CPP_COLL_<COLLECTIVE>_ALGORITHM (see the collective
/// table); docs/collectives.md lists the same (a test compares them).
inline constexpr config_variable config_variables[] = {
    {"UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX", "an integer from 2 to 16384",
     [](config &into, const std::string &value) {
         return read_parsed(parse_integer(value, INT_MIN, INT_MAX),
                            [&](long long radix) { into.knomial_radix(int(radix)); });
     }},
    {"UCP_CPP_COLL_TIMEOUT", accepted_seconds,
     [](config &into, const std::string &value) {
         return read_parsed(parse_seconds(value),
                            [&](std::chrono::nanoseconds bound) { into.timeout(bound); });
     }},
    {"UCP_CPP_COLL_GPU_STAGING", "auto; yes, on or 1; no, off or 0",
     [](config &into, const std::string &value) {
         return read_three_way<gpu::staging>(value,
                                             [&](gpu::staging how) { into.gpu_staging(how); });
     }},
    {"UCP_CPP_COLL_GPU_DIRECT", "auto; yes, on or 1; no, off or 0",
     [](config &into, const std::string &value) {
         return read_three_way<gpu::direct>(value, [&](gpu::direct how) { into.gpu_direct(how); });
     }},
    {"UCP_CPP_COLL_GPU_SEGMENT", "bytes >= 4096, with an optional K, M or G suffix",
     [](config &into, const std::string &value) {
         return read_parsed(parse_bytes(value),
                            [&](size_t bytes) { into.gpu_segment_bytes(bytes); });
     }},
    {"UCP_CPP_COLL_ALLREDUCE_RABENSEIFNER_THRESH", accepted_bytes,
     read_threshold<&thresholds::allreduce_rabenseifner>},
    {"UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RANKS", "an integer >= 0",
     [](config &into, const std::string &value) {
         return read_parsed(parse_integer(value, 0, INT_MAX), [&](long long ranks) {
             coll::thresholds cut        = into.thresholds();
             cut.allreduce_knomial_ranks = int(ranks);
             into.thresholds(cut);
         });
     }},
    {"UCP_CPP_COLL_ALLREDUCE_ALPHA_BETA", accepted_bytes,
     read_threshold<&thresholds::allreduce_alpha_beta>},
    {"UCP_CPP_COLL_BCAST_SCATTER_ALLGATHER_THRESH", accepted_bytes,
     read_threshold<&thresholds::bcast_scatter_allgather>},
    {"UCP_CPP_COLL_REDUCE_SCATTER_GATHER_THRESH", accepted_bytes,
     read_threshold<&thresholds::reduce_scatter_gather>},
    {"UCP_CPP_COLL_ALLGATHER_RING_THRESH", accepted_bytes,
     read_threshold<&thresholds::allgather_ring>},
    {"UCP_CPP_COLL_REDUCE_SCATTER_RING_THRESH", accepted_bytes,
     read_threshold<&thresholds::reduce_scatter_ring>},
    {"UCP_CPP_COLL_ALLTOALL_PAIRWISE_THRESH", accepted_bytes,
     read_threshold<&thresholds::alltoall_pairwise>},
    {"UCP_CPP_COLL_GATHER_LINEAR_THRESH", accepted_bytes,
     read_threshold<&thresholds::gather_linear>},
    {"UCP_CPP_COLL_SCATTER_LINEAR_THRESH", accepted_bytes,
     read_threshold<&thresholds::scatter_linear>},
    {"UCP_CPP_COLL_PLAN_CACHE", "an integer from 0 (no cache) to 4096",
     [](config &into, const std::string &value) {
         return read_parsed(parse_integer(value, 0, 4096),
                            [&](long long plans) { into.plan_cache(size_t(plans)); });
     }},
    // Process-wide: the CUDA layer (coll/gpu.hpp) and bootstrap_params::from_environment()
    // read these themselves; checked here so that a bad value fails every communicator alike.
    {"UCP_CPP_COLL_GPU", switch_values,
     [](config &, const std::string &value) { return parse_switch(value).has_value(); }},
    {"UCP_CPP_COLL_NVRTC", "the path of libnvrtc.so",
     [](config &, const std::string &) { return true; }},
    {"UCP_CPP_COLL_BOOTSTRAP_TIMEOUT", accepted_seconds,
     [](config &, const std::string &value) { return parse_seconds(value).has_value(); }},
    {"UCP_CPP_COLL_LAUNCHER", accepted_launchers,
     [](config &, const std::string &value) { return is_launcher_name(value); }},
    {"UCP_CPP_COLL_ROOT_LISTENER_FD",
     "a descriptor number (set by a launcher such as gdr_perftest -N)",
     [](config &, const std::string &value) {
         return parse_integer(value, 0, INT_MAX).has_value();
     }},
};

/// The variable that selects the algorithm of @p which: UCP_CPP_COLL_<NAME>_ALGORITHM.
[[nodiscard]] inline std::string algorithm_variable(collective which)
{
    std::string name = "UCP_CPP_COLL_";
    for (const char *c = name_of(which); *c != '\0'; ++c) {
        name += char(std::toupper(static_cast<unsigned char>(*c)));
    }
    return name + "_ALGORITHM";
}

/// Every variable config::from_environment() knows.
[[nodiscard]] inline std::vector<std::string> config_variable_names()
{
    std::vector<std::string> names;
    for (const collective_row &row : collective_table)
        names.push_back(algorithm_variable(row.id));
    for (const config_variable &variable : config_variables)
        names.emplace_back(variable.name);
    return names;
}

/// Sets the algorithm of @p which from its variable @p name = @p value (empty: not set).
inline void read_algorithm(config &into, collective which, const std::string &name,
                           const std::string &value)
{
    if (value.empty())
        return;
    const std::optional<algorithm> named = algorithm_named(value);
    const std::string accepted           = accepted_algorithms(which);
    if (!named)
        reject_variable(name, value, "unknown algorithm", accepted);
    if (!implements(*named, which)) {
        reject_variable(name, value, value + " does not implement " + name_of(which), accepted);
    }
    into.use(which, *named);
}

/// Applies NAME=value to @p into; false when no variable has that name.  Throws the
/// variable's error when the value is not accepted.
inline bool read_variable(config &into, const std::string &name, const std::string &value)
{
    for (const collective_row &row : collective_table) {
        if (name == algorithm_variable(row.id)) {
            read_algorithm(into, row.id, name, value);
            return true;
        }
    }
    for (const config_variable &variable : config_variables) {
        if (name != variable.name)
            continue;
        bool accepted = false;
        try {
            accepted = value.empty() || variable.read(into, value);  // empty: not set
        } catch (const ucx_error &) {
            accepted = false;  // a setter's range check: reported as the variable's error
        }
        if (!accepted)
            reject_variable(name, value, "not accepted", variable.accepted);
        return true;
    }
    return false;
}

/// The known variable nearest to @p unknown, if it is a likely typo of it (<= 3 edits).
[[nodiscard]] inline std::optional<std::string> nearest_variable(const std::string &unknown)
{
    std::optional<std::string> nearest;
    size_t best = 4;
    for (const std::string &known : config_variable_names()) {
        const size_t distance = edit_distance(unknown, known);
        if (distance < best) {
            best    = distance;
            nearest = known;
        }
    }
    return nearest;
}

}  // namespace ucp_cpp::coll::detail

namespace ucp_cpp::coll {

inline config config::from_environment()
{
    config read;
    for (const auto &[name, value] : detail::environment_with_prefix("UCP_CPP_COLL_")) {
        if (detail::read_variable(read, name, value))
            continue;
        const std::optional<std::string> nearest = detail::nearest_variable(name);
        detail::warn_once(name, "ucp_cpp::coll WARN unknown environment variable " + name +
                                    " is ignored" +
                                    (nearest ? " (maybe: " + *nearest + "?)" : std::string()) +
                                    "; docs/collectives.md lists the known ones");
    }
    return read;
}

}  // namespace ucp_cpp::coll
