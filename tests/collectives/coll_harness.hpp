// Collectives test harness: N ranks as N workers in one process, all driven by the test thread
// through the nonblocking API (no oversubscription on a 2-core CI box), plus deterministic
// inputs and independently computed references.
#pragma once

#include <ucp_cpp/coll/coll.hpp>
#include <ucp_cpp/ucp_cpp.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace coll_test {

namespace coll = ucp_cpp::coll;
using namespace std::chrono_literals;

/// Transports of the tests: tcp is the one host transport with peer-failure detection, which
/// the communicators use by default.  COLL_TEST_TLS overrides (the rdma label sets gdr_rc,...).
inline std::string test_tls()
{
    const char *tls = std::getenv("COLL_TEST_TLS");
    return tls ? tls : "tcp,self";
}

inline std::shared_ptr<ucp_cpp::context> make_context(
    std::map<std::string, std::string> extra_config = {})
{
    ucp_cpp::context_params params;
    params.config            = std::move(extra_config);
    params.features          = UCP_FEATURE_TAG;
    params.config["TLS"]     = test_tls();
    params.name              = "coll_test";
    params.mt_workers_shared = true;  // split/dup tests run one thread per rank
    return ucp_cpp::context::create(params);
}

/// `size` ranks in this process, one worker each, connected by from_addresses(), with
/// @p settings (nullopt: the communicators read the environment).
class local_world {
public:
    explicit local_world(int size, std::optional<coll::config> settings = std::nullopt)
        : context_(make_context()), settings_(std::move(settings))
    {
        for (int r = 0; r < size; ++r) {
            ucp_cpp::worker_params params;
            params.close_timeout = 300ms;  // bounded teardown if a close still needs a peer
            workers_.push_back(ucp_cpp::worker::create(context_, params));
            addresses_.push_back(workers_.back()->address());
        }
        open_communicators();
    }

    ~local_world() { close_communicators(); }

    /// A communicator per worker, connected by from_addresses() (the constructor's; again after
    /// close_communicators(): the leak test cycles them on the same workers).
    void open_communicators()
    {
        coll::communicator_params params;
        params.config = settings_;
        for (size_t r = 0; r < workers_.size(); ++r) {
            comms_.push_back(
                coll::communicator::from_addresses(workers_[r], int(r), addresses_, params));
        }
    }

    /// Closes the communicators with all workers progressing together (an endpoint close needs
    /// its peer), so no worker destructor waits out its close timeout on a peer nobody drives.
    void close_communicators()
    {
        comms_.clear();
        unsigned quiet_rounds = 0;
        const auto deadline   = std::chrono::steady_clock::now() + 2s;
        while (quiet_rounds < 100 && std::chrono::steady_clock::now() < deadline) {
            unsigned events = 0;
            for (auto &w : workers_)
                events += w->progress();
            quiet_rounds = events == 0 ? quiet_rounds + 1 : 0;
        }
    }
    local_world(const local_world &) = delete;

    int size() const { return int(workers_.size()); }
    coll::communicator &comm(int r) { return comms_[size_t(r)]; }
    std::vector<coll::communicator> &comms() { return comms_; }

    /// Issues @p issue(rank) on every rank, then drives all requests to completion; throws the
    /// first failure (ucx_error) or fails on timeout.  ran() says what algorithms ran.
    void run(const std::function<coll::request(int rank)> &issue,
             std::chrono::seconds timeout = 60s)
    {
        std::vector<coll::request> requests;
        for (int r = 0; r < size(); ++r)
            requests.push_back(issue(r));
        ran_.clear();
        for (const auto &req : requests)
            ran_.push_back(req.algorithm());
        drive(requests, timeout);
    }

    /// The algorithm of every rank's request of the last run().
    const std::vector<coll::algorithm> &ran() const { return ran_; }

    static void drive(std::vector<coll::request> &requests, std::chrono::seconds timeout = 60s)
    {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        bool all_done       = false;
        while (!all_done) {
            all_done = true;
            for (auto &req : requests)
                all_done = req.test() && all_done;
            if (!all_done && std::chrono::steady_clock::now() > deadline) {
                throw ucp_cpp::ucx_error(UCS_ERR_TIMED_OUT,
                                         "coll_test: collectives did not complete");
            }
        }
        for (auto &req : requests)
            req.wait(0s);  // throws the failure, if any
    }

private:
    std::shared_ptr<ucp_cpp::context> context_;
    std::optional<coll::config> settings_;
    std::vector<std::shared_ptr<ucp_cpp::worker>> workers_;
    std::vector<ucp_cpp::worker_address> addresses_;
    std::vector<coll::communicator> comms_;
    std::vector<coll::algorithm> ran_;
};

// ---------------------------------------------------------------- inputs and references

/// Input element i of rank r for reductions with @p op: small values (products stay in
/// range), negative ones for signed types, halves for floating point.
template <class T> T input(int rank, size_t i, coll::op_kind op)
{
    if (op == coll::op_kind::prod)
        return T(1 + int((size_t(rank) + i) % 2));
    int v = int((size_t(rank) * 7 + i * 3) % 23);
    if (std::is_signed_v<T>)
        v -= 11;
    if constexpr (std::is_floating_point_v<T>)
        return T(v) + T(0.5) * T(rank % 2);
    return T(v);
}

/// acc (op) v for the four built-in reductions, in the tests' reference arithmetic (int64 or
/// double); a custom op has no reference and leaves acc as it is.
template <class A> A fold(coll::op_kind op, A acc, A v)
{
    switch (op) {
    case coll::op_kind::sum:
        return acc + v;
    case coll::op_kind::prod:
        return acc * v;
    case coll::op_kind::min:
        return std::min(acc, v);
    case coll::op_kind::max:
        return std::max(acc, v);
    default:
        return acc;
    }
}

/// Reference reduction of element i over ranks [0, size), computed in int64/double.
template <class T> T reference(int size, size_t i, coll::op_kind op)
{
    using wide = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    wide acc   = wide(input<T>(0, i, op));
    for (int r = 1; r < size; ++r) {
        acc = fold(op, acc, wide(input<T>(r, i, op)));
    }
    if constexpr (std::is_integral_v<T>) {
        return T(std::make_unsigned_t<T>(uint64_t(acc)));  // wraps modulo 2^n, like the library
    } else {
        return T(acc);
    }
}

template <class T>
::testing::AssertionResult equal_elements(const T *got, const T *expected, size_t count,
                                          const std::string &what)
{
    for (size_t i = 0; i < count; ++i) {
        bool same;
        if constexpr (std::is_floating_point_v<T>) {
            same = std::fabs(double(got[i]) - double(expected[i])) <=
                   1e-5 * (1.0 + std::fabs(double(expected[i])));
        } else {
            same = got[i] == expected[i];
        }
        if (!same) {
            return ::testing::AssertionFailure()
                   << what << ": element " << i << " is " << double(got[i]) << ", expected "
                   << double(expected[i]);
        }
    }
    return ::testing::AssertionSuccess();
}

/// Rank r's "payload" element i for data-movement collectives (distinct per rank and index).
template <class T> T payload(int rank, size_t i)
{
    return T((size_t(rank) * 131 + i * 7 + 1) % 127);
}

inline const coll::reduction &op_object(coll::op_kind op)
{
    switch (op) {
    case coll::op_kind::sum:
        return coll::sum;
    case coll::op_kind::prod:
        return coll::prod;
    case coll::op_kind::min:
        return coll::min;
    default:
        return coll::max;
    }
}

inline const char *op_name(coll::op_kind op)
{
    static const char *const names[] = {"sum", "prod", "min", "max", "custom"};
    return names[int(op)];
}

}  // namespace coll_test
