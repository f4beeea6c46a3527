// diagnose.hpp - every check of gdr-doctor, turning sysfs/procfs facts (through gdr_topo)
// and the live probes into a Report.  Reads only; changes nothing.
#pragma once

#include "report.hpp"

#include <string>
#include <vector>

namespace gdr::doctor {

struct Options {
    std::string root = "/";  ///< sysfs/procfs prefix; not "/" = fixture mode
    std::string plugin;  ///< --plugin PATH ("" = the defaults)
    std::vector<std::string> plugin_defaults;
    int gid_index = -1;  ///< --gid-index N: what gdr_rc would be told
};

/// Runs all checks.  With a root other than "/", the live probes (verbs, CUDA, UCX) are
/// skipped and reported as such: the tree describes another machine.
Report diagnose(const Options &options);

}  // namespace gdr::doctor
