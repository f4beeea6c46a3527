// gdr_perftest -N: start N ranks of this program on this host (fork + exec of /proc/self/exe with
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), wait for them, and make sure that one failing rank
// fails the job: the others get a grace period to notice by themselves (peer failure or their
// own timeouts), then are killed.  Never waits unbounded.
#include "perftest.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace gdr_perftest {

namespace {

volatile sig_atomic_t interrupted = 0;
void on_signal(int sig)
{
    interrupted = sig;
}

/// A socket listening on a free loopback port, for rank 0's bootstrap.  Rank 0 inherits it
/// (UCP_CPP_COLL_ROOT_LISTENER_FD) instead of binding the port again: a port picked, closed and
/// bound later can be taken in between (by any connect() on the host: the free ports are the
/// ephemeral ones), which failed rank 0 with "Address already in use" under a parallel ctest.
/// Close-on-exec: only rank 0 clears the flag.
int listening_socket(int &port)
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family      = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port        = htons(uint16_t(port));
    socklen_t length        = sizeof(address);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) != 0 ||
        ::listen(fd, SOMAXCONN) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0) {
        const std::string reason = std::strerror(errno);
        if (fd >= 0)
            ::close(fd);
        throw std::runtime_error("-N: cannot listen on a loopback TCP port for the bootstrap" +
                                 (port ? " (-p " + std::to_string(port) + ")" : std::string()) +
                                 ": " + reason);
    }
    port = ntohs(address.sin_port);
    return fd;
}

std::string describe(int status)
{
    if (WIFEXITED(status))
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ")";
    }
    return "ended with wait status " + std::to_string(status);
}

}  // namespace

int launch_local(const options &opt, int argc, char **argv)
{
    const int n        = opt.nranks > 0 ? opt.nranks : 2;
    int port           = opt.port > 0 ? opt.port : 0;
    const int listener = listening_socket(port);
    char self[4096];
    ssize_t len = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0)
        throw std::runtime_error("-N: cannot find my own executable (/proc/self/exe)");
    self[len] = '\0';

    struct sigaction sa{};
    sa.sa_handler = on_signal;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);

    std::vector<pid_t> pids(size_t(n), -1);
    std::fflush(nullptr);
    for (int r = 0; r < n; ++r) {
        pid_t pid = ::fork();
        if (pid < 0)
            throw std::runtime_error(std::string("-N: fork failed: ") + std::strerror(errno));
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the launcher
            ::setenv("RANK", std::to_string(r).c_str(), 1);
            ::setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
            ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
            ::setenv("MASTER_ADDR", "127.0.0.1", 1);
            ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
            if (r == 0) {
                ::fcntl(listener, F_SETFD, 0);
                ::setenv("UCP_CPP_COLL_ROOT_LISTENER_FD", std::to_string(listener).c_str(), 1);
            } else {
                ::unsetenv("UCP_CPP_COLL_ROOT_LISTENER_FD");
            }
            ::setenv("GDR_PERFTEST_LAUNCH", "local (-N)", 1);
            std::vector<char *> args(argv, argv + argc);
            args.push_back(nullptr);
            ::execv(self, args.data());
            std::fprintf(stderr, "gdr_perftest: rank %d: exec %s: %s\n", r, self,
                         std::strerror(errno));
            ::_exit(exit_error);
        }
        pids[size_t(r)] = pid;
    }
    ::close(listener);  // rank 0 holds it

    // Grace period for the survivors of a failed rank: they normally notice within a second (peer
    // failure); a rank stuck elsewhere (e.g. still waiting in the bootstrap) is killed after it.
    const auto grace = std::chrono::duration<double>(std::min(opt.timeout_s + 2, 10.0));
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    int code = exit_ok, running = n;
    while (running > 0) {
        int status = 0;
        pid_t pid  = ::waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            int r = int(std::find(pids.begin(), pids.end(), pid) - pids.begin());
            if (r >= n)
                continue;
            pids[size_t(r)] = -1;
            --running;
            const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            if (failed) {
                std::fprintf(stderr, "gdr_perftest: rank %d %s\n", r, describe(status).c_str());
                if (code == exit_ok) {
                    code = WIFEXITED(status) ? WEXITSTATUS(status) : exit_error;
                }
                if (!kill_at) {
                    kill_at = std::chrono::steady_clock::now() +
                              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  grace);
                }
            }
            continue;
        }
        if (pid < 0 && errno != EINTR)
            break;
        if (interrupted) {
            for (pid_t p : pids)
                if (p > 0)
                    ::kill(p, int(interrupted));
            if (!kill_at)
                kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            if (code == exit_ok)
                code = exit_error;
            interrupted = 0;
        }
        if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
            for (int r = 0; r < n; ++r) {
                if (pids[size_t(r)] > 0) {
                    std::fprintf(
                        stderr,
                        "gdr_perftest: rank %d still running %.0f s after a failure: killing it\n",
                        r, grace.count());
                    ::kill(pids[size_t(r)], SIGKILL);
                }
            }
            kill_at = std::chrono::steady_clock::time_point::max();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (code != exit_ok) {
        std::fprintf(stderr, "gdr_perftest: FAILED (%d ranks, exit status %d)\n", n, code);
    }
    return code;
}

}  // namespace gdr_perftest
