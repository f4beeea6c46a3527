/**
 * @file coll/bootstrap.hpp
 * @brief Out-of-band exchange of UCP worker addresses over a TCP rendezvous at the root.
 *
 * With bootstrap_params::store (srun, mpirun: see from_environment()) the addresses go through
 * the job's key-value store instead, and no rendezvous address is needed.
 *
 * Protocol: rank 0 listens at root_host:root_port; every other rank connects (retrying while the
 * root is not up yet), sends {magic, rank, size, address}; once all size-1 ranks registered the
 * root sends every rank the whole address table and closes.  Every step is bounded by
 * bootstrap_params::timeout: an unreachable root, a missing rank, a duplicate rank or a size
 * mismatch end with ucx_error (UCS_ERR_TIMED_OUT / UCS_ERR_UNREACHABLE / UCS_ERR_INVALID_PARAM)
 * whose message names the problem, never with a hang.  Nothing read from the socket is trusted:
 * a foreign or garbled message (bad magic, rank or size out of range, an address length above
 * detail::max_address_length on either side) is refused with UCS_ERR_INVALID_PARAM.
 *
 * Threading: the functions block the calling thread; they touch no UCX state.
 */
#pragma once

#include <ucp_cpp/coll/environment.hpp>
#include <ucp_cpp/coll/launch/pmi2.hpp>
#include <ucp_cpp/coll/launch/pmix.hpp>
#include <ucp_cpp/coll/launch/slurm.hpp>
#include <ucp_cpp/error.hpp>
#include <ucp_cpp/worker.hpp>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ucp_cpp::coll {

/// Where and how the ranks meet to exchange their worker addresses.
struct bootstrap_params {
    int rank              = 0;  ///< this rank, in [0, size)
    int size              = 1;  ///< the number of ranks
    std::string root_host = "127.0.0.1";  ///< where rank 0 listens (name or address)
    uint16_t root_port    = 29500;  ///< the TCP port rank 0 listens on
    /// Rank 0 only: a socket already listening on root_port, used instead of binding one.  A
    /// launcher that picks a free port keeps it this way, so that no other process can take the
    /// port between the pick and rank 0's bind.  Borrowed: the rendezvous never closes it (a
    /// second bootstrap in the process accepts on it again).  From the environment:
    /// UCP_CPP_COLL_ROOT_LISTENER_FD (an inherited descriptor; `gdr_perftest -N` sets it).
    int root_listener = -1;
    /// Bound on the whole rendezvous (connect retries, waiting for the other ranks, the table).
    /// A store's fence is bounded by its process manager instead (Slurm: PMIxTimeout, 300 s).
    std::chrono::milliseconds timeout{30000};
    /// The job's key-value store (PMIx, PMI2): when set, the addresses go through it (put,
    /// fence, get) and root_host/root_port are not used.  Shared: copies of the parameters use
    /// the same store, which stays initialized while one of them lives.
    std::shared_ptr<launch::kvs> store;
    /// Where from_environment() found the parameters (a UCP_CPP_COLL_LAUNCHER name); empty when they
    /// were set in code.
    std::string launcher;

    /**
     * @brief The launchers whose variables are in the environment, in the order
     *        from_environment() tries them (UCP_CPP_COLL_LAUNCHER=auto):
     *  1. environment: RANK and WORLD_SIZE (torchrun style, or set by hand): explicit
     *     settings win, also inside an srun or mpirun job (a launcher started under srun sets
     *     them for its children, which inherit the step's SLURM_ and PMIx variables);
     *  2. pmix: PMIX_RANK (srun --mpi=pmix, Open MPI's mpirun);
     *  3. pmi2: PMI_FD (srun --mpi=pmi2);
     *  4. slurm: SLURM_PROCID and SLURM_NTASKS (srun --mpi=none): TCP rendezvous at the step's
     *     first node;
     *  5. mpirun: OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE with MASTER_ADDR/MASTER_PORT.
     * @return their names; empty when no launcher's variables are set
     */
    [[nodiscard]] static std::vector<std::string> launchers_in_environment()
    {
        using detail::environment_value;
        std::vector<std::string> found;
        if (environment_value("RANK") && environment_value("WORLD_SIZE"))
            found.emplace_back("environment");
        if (environment_value("PMIX_RANK"))
            found.emplace_back("pmix");
        if (environment_value("PMI_FD"))
            found.emplace_back("pmi2");
        if (environment_value("SLURM_PROCID") && environment_value("SLURM_NTASKS"))
            found.emplace_back("slurm");
        if (environment_value("OMPI_COMM_WORLD_RANK") && environment_value("OMPI_COMM_WORLD_SIZE"))
            found.emplace_back("mpirun");
        return found;
    }

    /**
     * @brief The parameters a launcher put in the environment; no MASTER_ADDR is needed under
     *        srun or mpirun.
     *
     * UCP_CPP_COLL_LAUNCHER (default auto) names the launcher; auto takes the first of
     * launchers_in_environment(), and passes over a PMIx or PMI2 store whose library cannot be
     * loaded or initialized (once, on stderr) to the next one.  Per launcher:
     *  - environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
     *  - pmix / pmi2: rank, size and the address exchange from the job's store (store is set);
     *  - slurm: SLURM_PROCID, SLURM_NTASKS; the root is MASTER_ADDR, else the first host of
     *    SLURM_STEP_NODELIST (Slurm's hostlist syntax), the port MASTER_PORT, else one derived
     *    from SLURM_JOB_ID and SLURM_STEP_ID (launch::slurm::rendezvous_port);
     *  - mpirun: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
     * UCP_CPP_COLL_BOOTSTRAP_TIMEOUT (seconds) overrides the timeout.
     * @return the parameters
     * @throws ucx_error UCS_ERR_INVALID_PARAM naming a missing variable, or one whose value is
     *         not accepted (with the value and what is accepted); UCS_ERR_UNSUPPORTED when the
     *         launcher named is a store that cannot be used (why), or no launcher's store can
     */
    [[nodiscard]] static bootstrap_params from_environment()
    {
        const std::string chosen =
            detail::environment_value("UCP_CPP_COLL_LAUNCHER").value_or("auto");
        std::vector<std::string> candidates;
        if (chosen == "auto") {
            candidates = launchers_in_environment();
            if (candidates.empty()) {
                throw ucx_error(UCS_ERR_INVALID_PARAM,
                                "coll::bootstrap: no launcher in the environment: run under srun "
                                "or mpirun, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT");
            }
        } else if (detail::is_launcher_name(chosen)) {
            candidates = {chosen};
        } else {
            detail::reject_variable("UCP_CPP_COLL_LAUNCHER", chosen, "unknown launcher",
                                    detail::accepted_launchers);
        }
        std::string passed_over;
        for (const std::string &name : candidates) {
            try {
                bootstrap_params params = from_launcher(name);
                params.timeout          = timeout_from_environment(params.timeout);
                if (!passed_over.empty()) {
                    detail::warn_once("UCP_CPP_COLL_LAUNCHER",
                                      "coll::bootstrap: " + passed_over + "; using " + name);
                }
                return params;
            } catch (const ucx_error &e) {
                // Only an unusable store is passed over: a malformed variable is the user's
                // to fix, and the next launcher would hide it.
                if (e.status() != UCS_ERR_UNSUPPORTED || name == candidates.back())
                    throw;
                passed_over += (passed_over.empty() ? "" : "; ") + std::string(e.what());
            }
        }
        throw ucx_error(UCS_ERR_UNSUPPORTED, "coll::bootstrap: unreachable");
    }

private:
    static bootstrap_params from_launcher(const std::string &name)
    {
        bootstrap_params params;
        params.launcher = name;
        if (name == "pmix" || name == "pmi2") {
            if (name == "pmix")
                params.store = std::make_shared<launch::pmix>();
            else
                params.store = std::make_shared<launch::pmi2>();
            params.size = params.store->size();
            params.rank = params.store->rank();
            if (params.size < 1 || params.rank < 0 || params.rank >= params.size) {
                throw ucx_error(UCS_ERR_INVALID_PARAM, "coll::bootstrap: " + name + " says rank " +
                                                           std::to_string(params.rank) + " of " +
                                                           std::to_string(params.size));
            }
            return params;
        }
        const char *rank_variable = name == "environment" ? "RANK"
                                    : name == "slurm"     ? "SLURM_PROCID"
                                                          : "OMPI_COMM_WORLD_RANK";
        const char *size_variable = name == "environment" ? "WORLD_SIZE"
                                    : name == "slurm"     ? "SLURM_NTASKS"
                                                          : "OMPI_COMM_WORLD_SIZE";
        require(rank_variable, name);
        require(size_variable, name);
        params.size = int(integer_variable(size_variable, 1, INT_MAX));
        params.rank = int(integer_variable(rank_variable, 0, params.size - 1));
        if (name == "slurm" && !detail::environment_value("MASTER_ADDR")) {
            const char *list = detail::environment_value("SLURM_STEP_NODELIST")
                                   ? "SLURM_STEP_NODELIST"
                                   : "SLURM_JOB_NODELIST";
            require(list, name);
            params.root_host =
                launch::slurm::expand_hostlist(*detail::environment_value(list)).front();
        } else {
            require("MASTER_ADDR", name);
            params.root_host = *detail::environment_value("MASTER_ADDR");
        }
        if (name == "slurm" && !detail::environment_value("MASTER_PORT")) {
            require("SLURM_JOB_ID", name);
            require("SLURM_STEP_ID", name);
            params.root_port = launch::slurm::rendezvous_port(
                uint64_t(integer_variable("SLURM_JOB_ID", 0, LLONG_MAX)),
                uint64_t(integer_variable("SLURM_STEP_ID", 0, LLONG_MAX)));
        } else {
            require("MASTER_PORT", name);
            params.root_port = uint16_t(integer_variable("MASTER_PORT", 1, 65535));
        }
        if (params.rank == 0 && detail::environment_value("UCP_CPP_COLL_ROOT_LISTENER_FD")) {
            params.root_listener = int(
                integer_variable("UCP_CPP_COLL_ROOT_LISTENER_FD", 0, INT_MAX));
        }
        return params;
    }

    /// Throws the error of a launcher whose variable @p variable is not set.
    static void require(const char *variable, const std::string &launcher)
    {
        if (!detail::environment_value(variable)) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            "coll::bootstrap: launcher " + launcher + " needs " + variable +
                                " (MASTER_ADDR/MASTER_PORT: the root's rendezvous address)");
        }
    }

    static std::chrono::milliseconds timeout_from_environment(std::chrono::milliseconds fallback)
    {
        const auto seconds = detail::environment_value("UCP_CPP_COLL_BOOTSTRAP_TIMEOUT");
        if (!seconds)
            return fallback;
        const auto bound = detail::parse_seconds(*seconds);
        if (!bound) {
            detail::reject_variable("UCP_CPP_COLL_BOOTSTRAP_TIMEOUT", *seconds, "not accepted",
                                    detail::accepted_seconds);
        }
        return std::chrono::ceil<std::chrono::milliseconds>(*bound);
    }

    /// The integer in variable @p name (set), from @p low to @p high; else its error.
    static long long integer_variable(const char *name, long long low, long long high)
    {
        const std::string value = *detail::environment_value(name);
        const auto number       = detail::parse_integer(value, low, high);
        if (!number) {
            detail::reject_variable(name, value, "not accepted",
                                    "an integer from " + std::to_string(low) + " to " +
                                        std::to_string(high));
        }
        return *number;
    }
};

namespace detail {

using clock = std::chrono::steady_clock;

class socket_fd {
public:
    explicit socket_fd(int fd = -1) : fd_(fd) {}
    socket_fd(socket_fd &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    socket_fd &operator=(socket_fd &&other) noexcept
    {
        std::swap(fd_, other.fd_);
        return *this;
    }
    ~socket_fd()
    {
        if (fd_ >= 0)
            ::close(fd_);
    }
    int get() const { return fd_; }

private:
    int fd_;
};

inline int remaining_ms(clock::time_point deadline)
{
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    return left > 0 ? int(left) : 0;
}

inline void send_all(int fd, const void *data, size_t length, clock::time_point deadline,
                     const char *what)
{
    const char *p = static_cast<const char *>(data);
    while (length > 0) {
        pollfd pfd{fd, POLLOUT, 0};
        if (::poll(&pfd, 1, remaining_ms(deadline)) <= 0) {
            throw ucx_error(UCS_ERR_TIMED_OUT,
                            std::string("coll::bootstrap: timed out sending ") + what);
        }
        ssize_t n = ::send(fd, p, length, MSG_NOSIGNAL);
        if (n <= 0) {
            throw ucx_error(UCS_ERR_CONNECTION_RESET,
                            std::string("coll::bootstrap: connection lost sending ") + what);
        }
        p += n;
        length -= size_t(n);
    }
}

inline void recv_all(int fd, void *data, size_t length, clock::time_point deadline,
                     const std::string &what)
{
    char *p = static_cast<char *>(data);
    while (length > 0) {
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, remaining_ms(deadline)) <= 0) {
            throw ucx_error(UCS_ERR_TIMED_OUT, "coll::bootstrap: timed out waiting for " + what);
        }
        ssize_t n = ::recv(fd, p, length, 0);
        if (n <= 0) {
            throw ucx_error(UCS_ERR_CONNECTION_RESET,
                            "coll::bootstrap: connection closed while waiting for " + what);
        }
        p += n;
        length -= size_t(n);
    }
}

inline constexpr uint32_t bootstrap_magic = 0x55434f4c;  // "UCOL"

struct hello {
    uint32_t magic;
    int32_t rank;
    int32_t size;
    uint32_t address_length;
};

inline void send_blob(int fd, const std::vector<uint8_t> &bytes, clock::time_point deadline)
{
    uint32_t length = uint32_t(bytes.size());
    send_all(fd, &length, sizeof(length), deadline, "an address");
    send_all(fd, bytes.data(), bytes.size(), deadline, "an address");
}

/// Longest worker address either side accepts from the wire (UCP's are well under 4 KiB even
/// with every transport): a length above it is a foreign or broken peer, and trusting it would
/// allocate up to 4 GiB before the first byte of the address arrived.
inline constexpr uint32_t max_address_length = 1u << 20;

/// Refuses an address length read from the wire that is above max_address_length.
inline void check_address_length(uint32_t length, const std::string &what)
{
    if (length > max_address_length) {
        throw ucx_error(UCS_ERR_INVALID_PARAM,
                        "coll::bootstrap: implausible address length " + std::to_string(length) +
                            " (at most " + std::to_string(max_address_length) + ") from " + what);
    }
}

inline std::vector<uint8_t> recv_blob(int fd, clock::time_point deadline, const std::string &what)
{
    uint32_t length = 0;
    recv_all(fd, &length, sizeof(length), deadline, what);
    check_address_length(length, what);
    std::vector<uint8_t> bytes(length);
    recv_all(fd, bytes.data(), length, deadline, what);
    return bytes;
}

/**
 * The root's side of one rank's registration on @p fd: reads the hello and the address that
 * follows into @p table; every field from the wire is checked before it is used (magic, size,
 * rank in [1, size) and not yet registered in @p peers, address length).
 * @return the rank that registered
 * @throws ucx_error UCS_ERR_INVALID_PARAM naming what is wrong; UCS_ERR_TIMED_OUT or
 *         UCS_ERR_CONNECTION_RESET when the message is cut short
 */
inline int receive_registration(int fd, const bootstrap_params &params,
                                std::vector<worker_address> &table,
                                const std::vector<socket_fd> &peers, clock::time_point deadline)
{
    hello h{};
    recv_all(fd, &h, sizeof(h), deadline, "a rank's registration");
    if (h.magic != bootstrap_magic || h.size != params.size || h.rank <= 0 ||
        h.rank >= params.size || peers[size_t(h.rank)].get() >= 0) {
        throw ucx_error(UCS_ERR_INVALID_PARAM,
                        "coll::bootstrap: bad registration (rank " + std::to_string(h.rank) +
                            ", size " + std::to_string(h.size) + ", root expects size " +
                            std::to_string(params.size) + "; duplicate rank or foreign client?)");
    }
    const std::string what = "rank " + std::to_string(h.rank) + "'s address";
    check_address_length(h.address_length, what);
    table[size_t(h.rank)].bytes.resize(h.address_length);
    recv_all(fd, table[size_t(h.rank)].bytes.data(), h.address_length, deadline, what);
    return h.rank;
}

/// The root's side of the rendezvous on @p listener, a socket listening on params.root_port.
inline std::vector<worker_address> root_rendezvous_on(int listener, const bootstrap_params &params,
                                                      const worker_address &own,
                                                      clock::time_point deadline)
{
    std::vector<worker_address> table(size_t(params.size));
    std::vector<socket_fd> peers(size_t(params.size));
    table[0]       = own;
    int registered = 1;
    while (registered < params.size) {
        pollfd pfd{listener, POLLIN, 0};
        if (::poll(&pfd, 1, remaining_ms(deadline)) <= 0) {
            std::string missing;
            for (int r = 1; r < params.size; ++r) {
                if (peers[size_t(r)].get() < 0) {
                    missing += (missing.empty() ? "" : ",") + std::to_string(r);
                }
            }
            throw ucx_error(UCS_ERR_TIMED_OUT, "coll::bootstrap: root timed out after " +
                                                   std::to_string(params.timeout.count()) +
                                                   " ms; ranks never registered: " + missing);
        }
        socket_fd peer(::accept(listener, nullptr, nullptr));
        if (peer.get() < 0)
            continue;
        const int rank      = receive_registration(peer.get(), params, table, peers, deadline);
        peers[size_t(rank)] = std::move(peer);
        ++registered;
    }
    for (int r = 1; r < params.size; ++r) {
        for (const worker_address &address : table) {
            send_blob(peers[size_t(r)].get(), address.bytes, deadline);
        }
    }
    return table;
}

/// Throws unless @p fd is a TCP socket listening on @p port (an inherited root listener).
inline void check_root_listener(int fd, uint16_t port)
{
    int listening    = 0;
    socklen_t length = sizeof(listening);
    sockaddr_storage bound{};
    socklen_t bound_length = sizeof(bound);
    std::string problem;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0) {
        problem = std::strerror(errno);
    } else if (!listening) {
        problem = "not a listening socket";
    } else if (::getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &bound_length) != 0) {
        problem = std::strerror(errno);
    } else {
        const uint16_t bound_port = ntohs(
            bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6 *>(&bound)->sin6_port
                                        : reinterpret_cast<const sockaddr_in *>(&bound)->sin_port);
        if (bound_port != port) {
            problem = "it listens on port " + std::to_string(bound_port) + ", not " +
                      std::to_string(port);
        }
    }
    if (!problem.empty()) {
        throw ucx_error(UCS_ERR_INVALID_PARAM, "coll::bootstrap: root listener (descriptor " +
                                                   std::to_string(fd) + "): " + problem);
    }
}

inline std::vector<worker_address> root_rendezvous(const bootstrap_params &params,
                                                   const worker_address &own,
                                                   clock::time_point deadline)
{
    if (params.root_listener >= 0) {
        check_root_listener(params.root_listener, params.root_port);
        return root_rendezvous_on(params.root_listener, params, own, deadline);
    }
    socket_fd listener(::socket(AF_INET6, SOCK_STREAM, 0));
    bool ipv6 = listener.get() >= 0;
    if (!ipv6)
        listener = socket_fd(::socket(AF_INET, SOCK_STREAM, 0));
    int one = 1, zero = 0;
    ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int bound;
    if (ipv6) {
        ::setsockopt(listener.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        sockaddr_in6 any{};
        any.sin6_family = AF_INET6;
        any.sin6_port   = htons(params.root_port);
        any.sin6_addr   = in6addr_any;
        bound           = ::bind(listener.get(), reinterpret_cast<sockaddr *>(&any), sizeof(any));
    } else {
        sockaddr_in any{};
        any.sin_family      = AF_INET;
        any.sin_port        = htons(params.root_port);
        any.sin_addr.s_addr = htonl(INADDR_ANY);
        bound = ::bind(listener.get(), reinterpret_cast<sockaddr *>(&any), sizeof(any));
    }
    if (bound != 0 || ::listen(listener.get(), params.size) != 0) {
        throw ucx_error(UCS_ERR_IO_ERROR, "coll::bootstrap: root cannot listen on port " +
                                              std::to_string(params.root_port) + ": " +
                                              std::strerror(errno));
    }
    return root_rendezvous_on(listener.get(), params, own, deadline);
}

inline std::vector<worker_address> client_rendezvous(const bootstrap_params &params,
                                                     const worker_address &own,
                                                     clock::time_point deadline)
{
    const std::string root = params.root_host + ":" + std::to_string(params.root_port);
    addrinfo hints{};
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found   = nullptr;
    int rc = getaddrinfo(params.root_host.c_str(), std::to_string(params.root_port).c_str(), &hints,
                         &found);
    if (rc != 0) {
        throw ucx_error(UCS_ERR_INVALID_ADDR,
                        "coll::bootstrap: cannot resolve root " + root + ": " + gai_strerror(rc));
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, &freeaddrinfo);
    socket_fd connection;
    std::string last_error = "no attempt";
    // The root may start later than we do: retry refused connections until the deadline.
    while (connection.get() < 0) {
        for (addrinfo *ai = found; ai != nullptr && connection.get() < 0; ai = ai->ai_next) {
            socket_fd attempt(::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0));
            if (attempt.get() < 0)
                continue;
            if (::connect(attempt.get(), ai->ai_addr, ai->ai_addrlen) != 0 &&
                errno != EINPROGRESS) {
                last_error = std::strerror(errno);
                continue;
            }
            pollfd pfd{attempt.get(), POLLOUT, 0};
            int error        = ETIMEDOUT;
            socklen_t length = sizeof(error);
            if (::poll(&pfd, 1, std::min(remaining_ms(deadline), 1000)) > 0) {
                ::getsockopt(attempt.get(), SOL_SOCKET, SO_ERROR, &error, &length);
            }
            if (error == 0) {
                connection = std::move(attempt);
            } else {
                last_error = std::strerror(error);
            }
        }
        if (connection.get() >= 0)
            break;
        if (remaining_ms(deadline) == 0) {
            throw ucx_error(UCS_ERR_UNREACHABLE,
                            "coll::bootstrap: rank " + std::to_string(params.rank) +
                                " cannot reach the root at " + root + " within " +
                                std::to_string(params.timeout.count()) +
                                " ms (last error: " + last_error + ")");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    hello h{bootstrap_magic, params.rank, params.size, uint32_t(own.size())};
    send_all(connection.get(), &h, sizeof(h), deadline, "the registration");
    send_all(connection.get(), own.bytes.data(), own.size(), deadline, "the registration");
    std::vector<worker_address> table(size_t(params.size));
    for (worker_address &address : table) {
        address.bytes = recv_blob(connection.get(), deadline,
                                  "the address table from the root " + root +
                                      " (the root failed, or timed out waiting for another rank)");
    }
    return table;
}

/// The exchange through the job's store: one put, one fence (every rank's address reaches
/// every process from its local server), then the table read locally.
inline std::vector<worker_address> store_exchange(const bootstrap_params &params,
                                                  const worker_address &own)
{
    launch::kvs &store = *params.store;
    if (store.rank() != params.rank || store.size() != params.size) {
        throw ucx_error(UCS_ERR_INVALID_PARAM,
                        std::string("coll::bootstrap: rank ") + std::to_string(params.rank) +
                            " of " + std::to_string(params.size) + " differs from the " +
                            store.name() + " store's rank " + std::to_string(store.rank()) +
                            " of " + std::to_string(store.size()));
    }
    const std::string key = store.next_key("ucpcpp.coll.address");
    store.put(key, own.bytes);
    store.fence();
    std::vector<worker_address> table(size_t(params.size));
    for (int r = 0; r < params.size; ++r)
        table[size_t(r)].bytes = r == params.rank ? own.bytes : store.get(r, key);
    return table;
}

}  // namespace detail

/**
 * @brief Exchanges @p own with all ranks through the rendezvous described by @p params.
 *
 * Blocks at most params.timeout.
 * @param params rank, size, root and bound
 * @param own this rank's worker address
 * @return the address table indexed by rank (entry params.rank is @p own)
 * @throws ucx_error naming the failure (see the file comment)
 */
[[nodiscard]] inline std::vector<worker_address> exchange_addresses(const bootstrap_params &params,
                                                                    const worker_address &own)
{
    if (params.size < 1 || params.rank < 0 || params.rank >= params.size) {
        throw ucx_error(UCS_ERR_INVALID_PARAM,
                        "coll::bootstrap: rank " + std::to_string(params.rank) +
                            " is not in [0, size=" + std::to_string(params.size) + ")");
    }
    if (params.size == 1)
        return {own};
    if (params.store)
        return detail::store_exchange(params, own);
    const auto deadline = detail::clock::now() + params.timeout;
    return params.rank == 0 ? detail::root_rendezvous(params, own, deadline)
                            : detail::client_rendezvous(params, own, deadline);
}

}  // namespace ucp_cpp::coll
