// ucp_cpp::coll in a few lines: every rank contributes a vector, all get the element-wise sum,
// then the even and odd ranks each build a sub-communicator and gather their ranks.
//
//   srun -n n ucp_cpp_coll_allreduce                           (Slurm: PMIx, PMI2 or plain)
//   mpirun -np n ucp_cpp_coll_allreduce                        (Open MPI: PMIx)
//   RANK=r WORLD_SIZE=n MASTER_ADDR=host MASTER_PORT=port ucp_cpp_coll_allreduce   (one per rank)
//   ucp_cpp_coll_allreduce                      (no launcher: forks 4 ranks on 127.0.0.1)
// (docs/launching.md)
// Exits non-zero if any result is wrong.
#include <ucp_cpp/coll/coll.hpp>
#include <ucp_cpp/ucp_cpp.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace coll = ucp_cpp::coll;

/// A loopback port nobody listens on now, picked by the kernel. (A port made from the pid can
/// be one another process listens on; the ranks would meet that process and wait out the
/// bootstrap's timeout.)
static uint16_t free_loopback_port()
{
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family      = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length        = sizeof(address);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0) {
        throw std::runtime_error("no free loopback port");
    }
    ::close(fd);
    return ntohs(address.sin_port);
}

static int run_rank(const coll::bootstrap_params &params)
{
    // WAKEUP: a rank waiting for its peers sleeps on the worker's event fd instead of polling,
    // so more ranks than cores (srun -n 32 on a laptop) still finish.
    ucp_cpp::context_params features;
    features.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    auto worker       = ucp_cpp::worker::create(ucp_cpp::context::create(features));
    auto world        = coll::communicator::bootstrap(worker, params);
    const int rank = world.rank(), size = world.size();

    std::vector<double> mine(1000), total(1000);
    for (size_t i = 0; i < mine.size(); ++i)
        mine[i] = rank + 0.001 * double(i);
    world.allreduce(mine.data(), total.data(), total.size(), coll::sum);

    auto parity = world.split(rank % 2, rank);  // ranks 0,2,4.. and 1,3,5..
    std::vector<int32_t> members(size_t(parity.size()));
    const int32_t me = rank;
    parity.allgather(&me, members.data(), 1);

    bool ok = true;
    for (size_t i = 0; i < total.size(); ++i) {
        const double expected = size * (size - 1) / 2.0 + size * 0.001 * double(i);
        ok                    = ok && std::abs(total[i] - expected) < 1e-9 * size;
    }
    for (int k = 0; k < parity.size(); ++k)
        ok = ok && members[size_t(k)] == 2 * k + rank % 2;
    // Leave together (as MPI_Finalize does): a rank that exits closes its endpoints, which the
    // ranks still inside a collective on another communicator would see as a failed peer.
    world.barrier();
    std::printf("rank %d/%d: sum[999] = %.3f, my parity group has %d ranks: %s\n", rank, size,
                total[999], parity.size(), ok ? "ok" : "WRONG");
    std::fflush(stdout);  // forked ranks leave through _exit()
    return ok ? 0 : 1;
}

int main()
{
    try {
        if (!coll::bootstrap_params::launchers_in_environment().empty()) {
            return run_rank(coll::bootstrap_params::from_environment());
        }
        const int size      = 4;
        const uint16_t port = free_loopback_port();
        for (int r = 1; r < size; ++r) {
            if (fork() == 0) {
                coll::bootstrap_params params{r, size, "127.0.0.1", port};
                _exit(run_rank(params));
            }
        }
        int failures = run_rank(coll::bootstrap_params{0, size, "127.0.0.1", port});
        for (int r = 1; r < size; ++r) {
            int status = 0;
            wait(&status);
            failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        return failures == 0 ? 0 : 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "coll_allreduce: %s\n", e.what());
        return 1;
    }
}
