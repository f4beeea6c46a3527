// What the benchmarks of perf/bench share: the plugin they load by default, and how they stop on
// an error (one line on stderr naming the tool, the step and UCX's status).
#pragma once

#include <ucs/type/status.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#ifndef GDR_PLUGIN_DEFAULT
#define GDR_PLUGIN_DEFAULT "libuct_gdr.so"
#endif

namespace gdr_bench {

/// Prints "TOOL: WHAT[: STATUS]" and exits with @p exit_code.
[[noreturn]] inline void die(const char *tool, int exit_code, const std::string &what,
                             ucs_status_t status = UCS_OK)
{
    std::fprintf(stderr, "%s: %s%s%s\n", tool, what.c_str(), status != UCS_OK ? ": " : "",
                 status != UCS_OK ? ucs_status_string(status) : "");
    std::exit(exit_code);
}

}  // namespace gdr_bench
