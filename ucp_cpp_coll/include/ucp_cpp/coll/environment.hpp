/**
 * @file coll/environment.hpp
 * @brief Strict readers of environment variables for ucp_cpp::coll: a value that is not one of
 *        the accepted ones is an error that names the variable, the value and what is accepted.
 *
 * Everything here is internal (namespace detail): coll::config (coll/config.hpp) and
 * bootstrap_params::from_environment (coll/bootstrap.hpp) read the environment through it.
 *
 * Threading: reading the environment races with setenv()/putenv() on another thread (a POSIX
 * rule); read it before starting such threads.
 */
#pragma once

#include <ucp_cpp/error.hpp>

#include <unistd.h>  // environ

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ucp_cpp::coll::detail {

/// Throws the error every malformed variable gives:
/// "NAME=value: problem (accepted: ...)", UCS_ERR_INVALID_PARAM.
[[noreturn]] inline void reject_variable(std::string_view name, std::string_view value,
                                         std::string_view problem, std::string_view accepted)
{
    throw ucx_error(UCS_ERR_INVALID_PARAM, std::string(name) + "=" + std::string(value) + ": " +
                                               std::string(problem) +
                                               " (accepted: " + std::string(accepted) + ")");
}

/// The value of @p name; nullopt when it is unset or empty (empty means "not set", as in UCX).
[[nodiscard]] inline std::optional<std::string> environment_value(const char *name)
{
    const char *value = std::getenv(name);
    if (value == nullptr || *value == '\0')
        return std::nullopt;
    return std::string(value);
}

/// Every (name, value) of the environment whose name starts with @p prefix, in environ order.
[[nodiscard]] inline std::vector<std::pair<std::string, std::string>> environment_with_prefix(
    std::string_view prefix)
{
    std::vector<std::pair<std::string, std::string>> found;
    for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        const size_t equals = text.find('=');
        if (equals == std::string_view::npos || text.substr(0, prefix.size()) != prefix)
            continue;
        found.emplace_back(text.substr(0, equals), text.substr(equals + 1));
    }
    return found;
}

/// A decimal integer in [low, high], the whole of @p text; nullopt otherwise.
[[nodiscard]] inline std::optional<long long> parse_integer(const std::string &text, long long low,
                                                            long long high)
{
    if (text.empty() || text.find_first_not_of("+-0123456789") != std::string::npos) {
        return std::nullopt;
    }
    char *end             = nullptr;
    errno                 = 0;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || value < low || value > high)
        return std::nullopt;
    return value;
}

/// A byte count: digits with an optional binary suffix K, M or G (either case), the way UCX
/// writes sizes ("64K", "1M"); nullopt otherwise.
[[nodiscard]] inline std::optional<size_t> parse_bytes(const std::string &text)
{
    const size_t digits = text.find_first_not_of("0123456789");
    if (digits == 0 || text.empty())
        return std::nullopt;
    unsigned shift = 0;
    if (digits != std::string::npos) {
        if (digits + 1 != text.size())
            return std::nullopt;
        switch (text[digits]) {
        case 'k':
        case 'K':
            shift = 10;
            break;
        case 'm':
        case 'M':
            shift = 20;
            break;
        case 'g':
        case 'G':
            shift = 30;
            break;
        default:
            return std::nullopt;
        }
    }
    errno                           = 0;
    const unsigned long long number = std::strtoull(text.substr(0, digits).c_str(), nullptr, 10);
    if (errno != 0 || number > (std::numeric_limits<size_t>::max() >> shift))
        return std::nullopt;
    return size_t(number) << shift;
}

/// What parse_seconds() accepts, as messages say it.
inline constexpr const char *accepted_seconds = "a positive number of seconds";

/// A positive, finite decimal number of seconds ("30", "0.5"); nullopt otherwise.
[[nodiscard]] inline std::optional<std::chrono::nanoseconds> parse_seconds(const std::string &text)
{
    if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos) {
        return std::nullopt;
    }
    char *end            = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    // Below a nanosecond rounds to 0, which no timeout means; above ~292 years overflows.
    if (*end != '\0' || !(seconds >= 1e-9) || seconds > 9e9)
        return std::nullopt;
    return std::chrono::nanoseconds(int64_t(std::llround(seconds * 1e9)));
}

/// The accepted spellings of an on/off variable.
inline constexpr const char *switch_values = "on, yes or 1; off, no or 0";

/// on/yes/1 -> true, off/no/0 -> false; nullopt otherwise.
[[nodiscard]] inline std::optional<bool> parse_switch(const std::string &text)
{
    if (text == "on" || text == "yes" || text == "1")
        return true;
    if (text == "off" || text == "no" || text == "0")
        return false;
    return std::nullopt;
}

/// What UCP_CPP_COLL_LAUNCHER accepts (bootstrap_params::from_environment), as messages say it.
inline constexpr const char *accepted_launchers = "auto, environment, pmix, pmi2, slurm, mpirun";

/// Whether @p text is one of accepted_launchers.
[[nodiscard]] inline bool is_launcher_name(std::string_view text)
{
    for (std::string_view name : {"auto", "environment", "pmix", "pmi2", "slurm", "mpirun"}) {
        if (text == name)
            return true;
    }
    return false;
}

/// The number of single-character edits between @p a and @p b (Levenshtein).
[[nodiscard]] inline size_t edit_distance(std::string_view a, std::string_view b)
{
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0]          = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            diagonal                = row[j];
            row[j]                  = std::min({row[j] + 1, row[j - 1] + 1, substitute});
        }
    }
    return row[b.size()];
}

/// Prints @p message on stderr the first time this process reports @p key (a variable name):
/// a job that creates many communicators hears of each problem once.
inline void warn_once(const std::string &key, const std::string &message)
{
    static std::mutex lock;
    static std::set<std::string> reported;
    const std::lock_guard<std::mutex> guard(lock);
    if (reported.insert(key).second)
        std::fprintf(stderr, "%s\n", message.c_str());
}

}  // namespace ucp_cpp::coll::detail
