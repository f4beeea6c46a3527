// report.hpp - findings, the verdict and the two renderings (human, JSON) of gdr-doctor.
#pragma once

#include "json.hpp"

#include <deque>
#include <string>
#include <vector>

namespace gdr::doctor {

/// Severity of a finding.  Only Warn and Fail change the verdict: Info is a fact worth
/// knowing, Unknown something that could not be read (never guessed).
enum class Status {
    Ok,
    Info,
    Unknown,
    Warn,
    Fail
};
const char *status_name(Status status);  ///< "ok", "info", "unknown", "warn", "fail"
const char *status_symbol(Status status);  ///< ✔ ℹ ? ⚠ ✘

struct Finding {
    std::string section;  ///< "rdma", "gid", "gpu", "topology", "system", "ucx"
    std::string check;  ///< stable id, e.g. "rdma.port", "topology.acs"
    std::string subject;  ///< what it is about: "mlx5_0:1", "GPU0", "" for the system
    Status status = Status::Info;
    std::string message;
    std::string fix;  ///< non-empty for Warn and Fail
};

/// Exit statuses (documented in docs/doctor.md).
enum ExitStatus : int {
    kReady      = 0,
    kDegraded   = 1,
    kNotReady   = 2,
    kUsageError = 3
};

struct Section {
    std::string id;
    std::string title;
    std::vector<std::string> lines;  ///< pre-formatted tables for the human rendering
};

class Report {
public:
    Json data = Json::object();  ///< the structured facts (devices, GPUs, matrix, ...)
    /// A deque: section() hands out references that must survive later sections being added
    /// (the rdma section's table is filled in after the GID section was added: with a vector,
    /// a write into freed memory that ASan found, test_doctor in tests/sanitize/run)
    std::deque<Section> sections;
    std::vector<Finding> findings;

    Section &section(const std::string &id, const std::string &title);
    void add(Finding finding);

    int exit_status() const;
    const char *verdict() const;  ///< "ready", "degraded", "not ready"
    std::string human() const;
    std::string json() const;
};

/// Left-aligned columns, two spaces apart; `indent` spaces before each line.
std::vector<std::string> format_table(const std::vector<std::vector<std::string>> &rows,
                                      int indent);

}  // namespace gdr::doctor
