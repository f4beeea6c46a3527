// What the kernel's RDMA resource tracker (`rdma -j res show qp|mr`, iproute2) records for one
// process: shared by perf/bench/gdr_ep_scale and the tests that count a process's QPs
// (tests/collectives: the collectives connect on demand).  Counting from the kernel, not from
// UCX, is the point: it sees every QP the process holds, whoever created it.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace gdr_bench {

/// The objects of `rdma -j res show WHAT` that belong to process @p pid (the resource tracker
/// records the pid of every user-space QP and MR). Flat JSON objects, one per resource.
/// @throws std::runtime_error when the tool cannot run or reports nothing (no verbs device)
inline std::vector<std::string> rdma_resources(const char *what, pid_t pid = getpid())
{
    const std::string cmd = std::string("rdma -j res show ") + what + " 2>/dev/null";
    FILE *pipe            = popen(cmd.c_str(), "r");
    if (pipe == nullptr) {
        throw std::runtime_error("cannot run '" + cmd + "'");
    }
    std::string text;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) {
        text.append(buf, n);
    }
    if (pclose(pipe) != 0 || text.empty()) {
        throw std::runtime_error(
            "'" + cmd +
            "' failed: is iproute2's rdma tool installed, and is there a verbs device?");
    }
    static const std::regex object("\\{[^{}]*\\}");
    const std::regex mine("\"pid\":" + std::to_string(pid) + "[,}]");
    std::vector<std::string> out;
    for (std::sregex_iterator it(text.begin(), text.end(), object), end; it != end; ++it) {
        if (std::regex_search(it->str(), mine)) {
            out.push_back(it->str());
        }
    }
    return out;
}

/// The RC QPs process @p pid holds. @throws std::runtime_error as rdma_resources()
inline long rc_qps(pid_t pid = getpid())
{
    long n = 0;
    for (const auto &qp : rdma_resources("qp", pid))
        n += qp.find("\"type\":\"RC\"") != std::string::npos;
    return n;
}

}  // namespace gdr_bench
