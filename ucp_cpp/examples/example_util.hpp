// Shared by the examples: run as "server [port]", "client <host> <port>", or with no arguments
// as both (the program forks its server and passes it the listening port through a pipe).
#pragma once

#include <ucp_cpp/ucp_cpp.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>

namespace example {

/// A worker on a fresh context with the UCP features the example needs.
inline std::shared_ptr<ucp_cpp::worker> make_worker(uint64_t features)
{
    ucp_cpp::context_params params;
    params.features = features;
    return ucp_cpp::worker::create(ucp_cpp::context::create(params));
}

/// Server side: listens on an ephemeral port, reports it, accepts one client (30 s at most).
inline std::shared_ptr<ucp_cpp::endpoint> accept_one(
    const std::shared_ptr<ucp_cpp::worker> &worker,
    const std::function<void(uint16_t)> &report_port)
{
    auto listener = ucp_cpp::listener::create(worker, "0.0.0.0", 0);
    report_port(listener->port());
    auto conn = listener->wait_connection(std::chrono::seconds(30));
    if (!conn) {
        throw std::runtime_error("no client connected within 30 s");
    }
    return ucp_cpp::endpoint::accept(worker, std::move(*conn));
}

/// server(report_port) must call report_port(port) once it listens; client(host, port) runs.
inline int run(int argc, char **argv,
               const std::function<int(std::function<void(uint16_t)>)> &server,
               const std::function<int(const std::string &, uint16_t)> &client)
{
    try {
        if (argc >= 2 && std::strcmp(argv[1], "server") == 0) {
            return server([](uint16_t port) {
                std::printf("listening on port %u\n", port);
                std::fflush(stdout);
            });
        }
        if (argc >= 4 && std::strcmp(argv[1], "client") == 0) {
            return client(argv[2], uint16_t(std::atoi(argv[3])));
        }
        if (argc != 1) {
            std::fprintf(stderr, "usage: %s [server | client <host> <port>]\n", argv[0]);
            return 2;
        }
        int fds[2];
        if (pipe(fds) != 0) {
            return 1;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            alarm(60);
            int rc = server([&](uint16_t port) {
                if (write(fds[1], &port, sizeof(port)) != sizeof(port)) {
                    _exit(1);
                }
            });
            std::fflush(nullptr);
            _exit(rc);
        }
        close(fds[1]);
        uint16_t port = 0;
        if (read(fds[0], &port, sizeof(port)) != sizeof(port)) {
            std::fprintf(stderr, "server failed to start\n");
            return 1;
        }
        int rc     = client("127.0.0.1", port);
        int status = 0;
        waitpid(pid, &status, 0);
        int server_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        std::printf("client %s, server %s\n", rc == 0 ? "ok" : "FAILED",
                    server_rc == 0 ? "ok" : "FAILED");
        return rc != 0 ? rc : server_rc;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace example
