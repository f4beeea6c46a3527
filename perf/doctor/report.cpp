#include "report.hpp"

#include <algorithm>
#include <sstream>

namespace gdr::doctor {

const char *status_name(Status status)
{
    switch (status) {
    case Status::Ok:
        return "ok";
    case Status::Info:
        return "info";
    case Status::Unknown:
        return "unknown";
    case Status::Warn:
        return "warn";
    case Status::Fail:
        return "fail";
    }
    return "unknown";
}

const char *status_symbol(Status status)
{
    switch (status) {
    case Status::Ok:
        return "\u2714";  // ✔
    case Status::Info:
        return "\u2139";  // ℹ
    case Status::Unknown:
        return "?";
    case Status::Warn:
        return "\u26a0";  // ⚠
    case Status::Fail:
        return "\u2718";  // ✘
    }
    return "?";
}

Section &Report::section(const std::string &id, const std::string &title)
{
    for (auto &s : sections) {
        if (s.id == id) {
            return s;
        }
    }
    sections.push_back(Section{id, title, {}});
    return sections.back();
}

void Report::add(Finding finding)
{
    findings.push_back(std::move(finding));
}

int Report::exit_status() const
{
    int status = kReady;
    for (const auto &f : findings) {
        if (f.status == Status::Fail) {
            status = kNotReady;
        } else if (f.status == Status::Warn && status == kReady) {
            status = kDegraded;
        }
    }
    return status;
}

const char *Report::verdict() const
{
    switch (exit_status()) {
    case kReady:
        return "ready";
    case kDegraded:
        return "degraded";
    default:
        return "not ready";
    }
}

std::string Report::human() const
{
    std::ostringstream out;
    for (const auto &s : sections) {
        out << (&s == &sections.front() ? "" : "\n") << s.title << "\n";
        for (const auto &line : s.lines) {
            out << line << "\n";
        }
        for (const auto &f : findings) {
            if (f.section != s.id) {
                continue;
            }
            out << "  " << status_symbol(f.status) << " "
                << (f.subject.empty() ? "" : f.subject + ": ") << f.message << "\n";
            if (!f.fix.empty()) {
                out << "      fix: " << f.fix << "\n";
            }
        }
    }
    int counts[5] = {};
    for (const auto &f : findings) {
        ++counts[static_cast<int>(f.status)];
    }
    out << "\nVerdict: " << verdict() << " (exit " << exit_status()
        << "): " << counts[static_cast<int>(Status::Fail)] << " failed, "
        << counts[static_cast<int>(Status::Warn)] << " warnings, "
        << counts[static_cast<int>(Status::Ok)] << " ok, "
        << counts[static_cast<int>(Status::Unknown)] << " not readable\n";
    return out.str();
}

std::string Report::json() const
{
    Json doc  = data;
    Json list = Json::array();
    for (const auto &f : findings) {
        Json item       = Json::object();
        item["check"]   = f.check;
        item["subject"] = f.subject;
        item["status"]  = status_name(f.status);
        item["message"] = f.message;
        item["fix"]     = f.fix.empty() ? Json() : Json(f.fix);
        list.push(std::move(item));
    }
    doc["findings"]    = std::move(list);
    doc["verdict"]     = verdict();
    doc["exit_status"] = exit_status();
    return doc.dump(2);
}

std::vector<std::string> format_table(const std::vector<std::vector<std::string>> &rows, int indent)
{
    std::vector<size_t> width;
    for (const auto &row : rows) {
        width.resize(std::max(width.size(), row.size()));
        for (size_t c = 0; c < row.size(); ++c) {
            width[c] = std::max(width[c], row[c].size());
        }
    }
    std::vector<std::string> lines;
    for (const auto &row : rows) {
        std::string line(static_cast<size_t>(indent), ' ');
        for (size_t c = 0; c < row.size(); ++c) {
            line += row[c];
            if (c + 1 < row.size()) {
                line.append(width[c] - row[c].size() + 2, ' ');
            }
        }
        lines.push_back(line);
    }
    return lines;
}

}  // namespace gdr::doctor
