// The transports of a UCP endpoint's lanes, read from ucp_ep_print_info() (the lines UCP also
// logs as its ep configuration), and the check the UCP-level rdma suites make with them: every
// lane is on the transport under test. Without it an overridden UCX_TLS (tcp, or a gdr_rc that
// UCP stopped selecting) passes the suite over another transport. tests/ucx_tools checks the
// same lines of UCX's own tools (check_lanes in common.sh).
#pragma once

#include <ucp/api/ucp.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace gdr_test {

/// A lane: "lane[1]:  3:gdr_rc/rxe0:1.0 md[2] -> ... rma_bw#0 am" as tl "gdr_rc", dev "rxe0:1"
/// and the rest of the line (its roles). A connection-manager lane ("lane[0]: cm rdmacm") is
/// not one: it carries no data.
struct UcpLane {
    std::string tl, dev, line;
};

/// The lanes of `ep`; empty when UCP printed none (a failure for the caller to report).
inline std::vector<UcpLane> ucp_ep_lanes(ucp_ep_h ep)
{
    char *text   = nullptr;
    size_t size  = 0;
    FILE *stream = open_memstream(&text, &size);
    if (stream == nullptr) {
        return {};
    }
    ucp_ep_print_info(ep, stream);
    std::fclose(stream);
    std::istringstream lines(std::string(text, size));
    std::free(text);

    static const std::regex lane(R"(lane\[\d+\]:\s*\d+:([^/\s]+)/(\S+)\.\d+\s+md.*)");
    std::vector<UcpLane> lanes;
    std::smatch m;
    for (std::string line; std::getline(lines, line);) {
        if (std::regex_search(line, m, lane)) {
            lanes.push_back({m[1], m[2], m[0]});
        }
    }
    return lanes;
}

/// Success when `ep` has lanes and every one is on transport `tl`.
inline ::testing::AssertionResult ucp_lanes_all_on(ucp_ep_h ep, const std::string &tl)
{
    const std::vector<UcpLane> lanes = ucp_ep_lanes(ep);
    if (lanes.empty()) {
        return ::testing::AssertionFailure() << "ucp_ep_print_info printed no lane";
    }
    std::ostringstream others;
    for (const UcpLane &l : lanes) {
        if (l.tl != tl) {
            others << "\n  " << l.line;
        }
    }
    if (!others.str().empty()) {
        return ::testing::AssertionFailure()
               << "lanes not on " << tl
               << " (UCX_TLS overridden, or UCP chose another transport):" << others.str();
    }
    return ::testing::AssertionSuccess() << lanes.size() << " lanes on " << tl;
}

}  // namespace gdr_test
