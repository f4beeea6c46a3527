// gdr_perftest: the terminal table (rank 0), CSV and JSON.
#include "perftest.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace gdr_perftest {

double percentile(const std::vector<double> &sorted, double p)
{
    if (sorted.empty())
        return 0;
    size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
    rank        = std::clamp<size_t>(rank, 1, sorted.size());
    return sorted[rank - 1];
}

namespace {

std::string memory_text(const options &opt)
{
    std::string text;
    for (auto kind : opt.memory)
        text += (text.empty() ? "" : ",") + std::string(name_of(kind));
    return text;
}

std::string fmt(const std::optional<double> &v, const char *format)
{
    if (!v)
        return "-";
    char text[64];
    std::snprintf(text, sizeof(text), format, *v);
    return text;
}

/// Who times a bandwidth test, from when to when (the header line of its table).
const char *bandwidth_timing(const std::string &test, bool at_sender)
{
    if (test == "put_bw")
        return "at rank 0 from the first put until the flush completed";
    if (test == "get_bw")
        return "at rank 0 (the receiver) from the first get to the last";
    if (at_sender) {
        return "at rank 0 (the sender) from its first send until the flush completed "
               "(--bw-timing sender)";
    }
    return "at rank 1 (the receiver) from its start signal to the last completion";
}

}  // namespace

void table_printer::begin(const test_info &test, size_t iters, size_t warmup)
{
    if (opt_.quiet)
        return;
    std::printf("# gdr_perftest %s: %s, %d ranks (%s on %s), memory %s, UCX_TLS=%s (%s)\n", version,
                test.name, info_.ranks, info_.launch.c_str(), info_.host.c_str(),
                memory_text(opt_).c_str(), info_.tls.empty() ? "(default)" : info_.tls.c_str(),
                info_.tls_source.c_str());
    const bool coll = test.family == test_family::coll;
    std::printf("# %zu iterations after %zu warm-up; data check: %s\n", iters, warmup,
                opt_.check ? (coll ? "result of every timed call (-c 1)"
                                   : "content of every message (-c 1)")
                           : (coll ? "result of one more, untimed call (-c 0)"
                                   : "length of every message, content of the last (-c 0)"));
    std::printf(
        "# units: size in bytes; times in us (1 us = 10^-6 s); bandwidth in GB/s (1 GB = 10^9 B);"
        " rate in msg/s\n");
    switch (test.family) {
    case test_family::p2p_lat:
        std::printf("# latency: half round trip, measured at rank 0; avg and percentiles over the "
                    "per-iteration "
                    "samples\n");
        std::printf("%12s %8s %10s %10s %10s %10s %16s %6s\n", "size", "iters", "avg_us", "p50_us",
                    "p90_us", "p99_us", "bytes_verified", "check");
        break;
    case test_family::p2p_bw:
        std::printf("# bandwidth: bytes delivered / time %s; avg_us = time per message\n",
                    bandwidth_timing(test.name, opt_.bw_at_sender));
        std::printf("%12s %8s %10s %12s %14s %16s %6s\n", "size", "iters", "avg_us", "bw_GBps",
                    "msg_per_s", "bytes_verified", "check");
        break;
    case test_family::coll:
        if (opt_.library != coll_library::ucp) {
            std::printf("# library: %s%s\n",
                        opt_.library == coll_library::both ? "ucp_cpp::coll and " : "",
                        info_.nccl.c_str());
            std::printf("# NCCL's calls are waited for one by one, as ucp_cpp::coll's blocking "
                        "calls are%s\n",
                        opt_.library == coll_library::both
                            ? "; each size: ucp_cpp::coll, then NCCL, then their ratios"
                            : "");
        }
        std::printf(
            "# time per call, max over ranks (avg: whole timed loop / iters; percentiles: per-call "
            "samples, "
            "max over ranks per call); algbw = size / time, busbw = algbw * factor (nccl-tests)\n");
        if (opt_.library != coll_library::ucp)
            std::printf("%-8s ", "library");
        std::printf("%12s %12s %7s %8s %10s %10s %10s %10s %11s %11s %16s %6s\n", "size", "count",
                    "type", "iters", "time_us", "p50_us", "p90_us", "p99_us", "algbw_GBps",
                    "busbw_GBps", "bytes_verified", "check");
        break;
    }
    std::fflush(stdout);
}

void table_printer::row(const test_info &test, const result_row &r)
{
    if (opt_.quiet)
        return;
    const char *check = r.ok() ? "ok" : (r.data_ok ? "COUNT" : "WRONG");
    switch (test.family) {
    case test_family::p2p_lat:
        std::printf("%12zu %8zu %10s %10s %10s %10s %16llu %6s\n", r.size, r.iters,
                    fmt(r.avg_us, "%.2f").c_str(), fmt(r.p50_us, "%.2f").c_str(),
                    fmt(r.p90_us, "%.2f").c_str(), fmt(r.p99_us, "%.2f").c_str(),
                    (unsigned long long)r.bytes_verified, check);
        break;
    case test_family::p2p_bw:
        std::printf("%12zu %8zu %10s %12s %14s %16llu %6s\n", r.size, r.iters,
                    fmt(r.avg_us, "%.2f").c_str(), fmt(r.bw_GBps, "%.4f").c_str(),
                    fmt(r.msg_rate, "%.0f").c_str(), (unsigned long long)r.bytes_verified, check);
        break;
    case test_family::coll:
        if (opt_.library != coll_library::ucp)
            std::printf("%-8s ", r.library.c_str());
        std::printf("%12zu %12zu %7s %8zu %10s %10s %10s %10s %11s %11s %16llu %6s\n", r.size,
                    r.count, r.dtype.c_str(), r.iters, fmt(r.avg_us, "%.2f").c_str(),
                    fmt(r.p50_us, "%.2f").c_str(), fmt(r.p90_us, "%.2f").c_str(),
                    fmt(r.p99_us, "%.2f").c_str(), fmt(r.algbw_GBps, "%.4f").c_str(),
                    fmt(r.busbw_GBps, "%.4f").c_str(), (unsigned long long)r.bytes_verified, check);
        break;
    }
    std::fflush(stdout);
}

void table_printer::ratio(const result_row &ours, const result_row &nccl)
{
    if (opt_.quiet)
        return;
    auto quotient = [](const std::optional<double> &a, const std::optional<double> &b) {
        return a && b && *b > 0 ? std::optional<double>(*a / *b) : std::nullopt;
    };
    // time: > 1 is slower than NCCL; busbw: < 1 is slower
    std::printf("%-8s %12zu %12s %7s %8s %10s %10s %10s %10s %11s %11s\n", "ratio", ours.size, "",
                "", "", fmt(quotient(ours.avg_us, nccl.avg_us), "%.3f").c_str(),
                fmt(quotient(ours.p50_us, nccl.p50_us), "%.3f").c_str(),
                fmt(quotient(ours.p90_us, nccl.p90_us), "%.3f").c_str(),
                fmt(quotient(ours.p99_us, nccl.p99_us), "%.3f").c_str(),
                fmt(quotient(ours.algbw_GBps, nccl.algbw_GBps), "%.3f").c_str(),
                fmt(quotient(ours.busbw_GBps, nccl.busbw_GBps), "%.3f").c_str());
    std::fflush(stdout);
}

namespace {

const char *const csv_fields[] = {"test",           "size",           "count",      "dtype",
                                  "iters",          "warmup",         "ranks",      "memory",
                                  "avg_us",         "p50_us",         "p90_us",     "p99_us",
                                  "bw_GBps",        "msg_rate",       "algbw_GBps", "busbw_GBps",
                                  "bytes_expected", "bytes_verified", "data_ok",    "check",
                                  "library"};

std::string number(const std::optional<double> &v, bool json)
{
    if (!v || !std::isfinite(*v))
        return json ? "null" : "";
    char text[64];
    std::snprintf(text, sizeof(text), "%.6g", *v);
    return text;
}

std::string json_string(const std::string &s)
{
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"' || ch == '\\')
            out += '\\';
        if (static_cast<unsigned char>(ch) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof(esc), "\\u%04x", ch);
            out += esc;
            continue;
        }
        out += ch;
    }
    return out + "\"";
}

std::vector<std::string> values(const result_row &r, bool json)
{
    auto str = [&](const std::string &s) { return json ? json_string(s) : s; };
    return {str(r.test),
            std::to_string(r.size),
            std::to_string(r.count),
            r.dtype.empty() ? (json ? "null" : "") : str(r.dtype),
            std::to_string(r.iters),
            std::to_string(r.warmup),
            std::to_string(r.ranks),
            str(r.memory),
            number(r.avg_us, json),
            number(r.p50_us, json),
            number(r.p90_us, json),
            number(r.p99_us, json),
            number(r.bw_GBps, json),
            number(r.msg_rate, json),
            number(r.algbw_GBps, json),
            number(r.busbw_GBps, json),
            std::to_string(r.bytes_expected),
            std::to_string(r.bytes_verified),
            r.data_ok ? "true" : "false",
            str(r.ok() ? "ok" : "FAILED"),
            str(r.library)};
}

void write_file(const std::string &path, const std::string &text)
{
    std::ofstream out(path);
    out << text;
    out.close();
    if (!out)
        throw std::runtime_error("cannot write " + path);
}

}  // namespace

void write_csv(const std::string &path, const std::vector<result_row> &rows)
{
    std::ostringstream out;
    bool first = true;
    for (const char *f : csv_fields) {
        out << (first ? "" : ",") << f;
        first = false;
    }
    out << "\n";
    for (const auto &r : rows) {
        auto v = values(r, false);
        for (size_t i = 0; i < v.size(); ++i) {
            std::string field = v[i];
            if (field.find_first_of(",\"\n") != std::string::npos) {
                std::string quoted = "\"";
                for (char ch : field)
                    quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
                field = quoted + "\"";
            }
            out << (i ? "," : "") << field;
        }
        out << "\n";
    }
    write_file(path, out.str());
}

void write_json(const std::string &path, const options &opt, const run_info &info,
                const std::vector<result_row> &rows, bool passed)
{
    std::ostringstream out;
    out << "{\n  \"tool\": \"gdr_perftest\",\n  \"version\": " << json_string(version) << ",\n";
    out << "  \"units\": {\"size\": \"bytes\", \"time\": \"us\", \"bandwidth\": \"GB/s (1e9 "
           "bytes/s)\", "
           "\"msg_rate\": \"messages/s\"},\n";
    out << "  \"ranks\": " << info.ranks << ",\n  \"launch\": " << json_string(info.launch)
        << ",\n  \"host\": " << json_string(info.host)
        << ",\n  \"ucx_tls\": " << json_string(info.tls)
        << ",\n  \"ucx_tls_source\": " << json_string(info.tls_source)
        << ",\n  \"nccl\": " << (info.nccl.empty() ? "null" : json_string(info.nccl))
        << ",\n  \"data_check\": " << (opt.check ? 1 : 0) << ",\n  \"window\": " << opt.window
        << ",\n  \"bw_timing\": " << json_string(opt.bw_at_sender ? "sender" : "receiver")
        << ",\n  \"passed\": " << (passed ? "true" : "false") << ",\n  \"results\": [";
    for (size_t i = 0; i < rows.size(); ++i) {
        auto v = values(rows[i], true);
        out << (i ? ",\n" : "\n") << "    {";
        for (size_t k = 0; k < v.size(); ++k)
            out << (k ? ", " : "") << "\"" << csv_fields[k] << "\": " << v[k];
        out << "}";
    }
    out << "\n  ]\n}\n";
    write_file(path, out.str());
}

}  // namespace gdr_perftest
