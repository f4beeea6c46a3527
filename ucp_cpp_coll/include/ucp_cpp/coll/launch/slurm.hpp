/**
 * @file coll/launch/slurm.hpp
 * @brief What a Slurm job step says about itself without PMI: its hostlist and a rendezvous
 *        port that every task of the step derives alike.
 *
 * Used by bootstrap_params::from_environment() when srun runs without a PMI plugin
 * (--mpi=none): the tasks then know only SLURM_PROCID, SLURM_NTASKS and SLURM_STEP_NODELIST,
 * and meet over the TCP rendezvous at the step's first node (task 0 runs there under the
 * default block and cyclic distributions; MASTER_ADDR overrides it for the others).
 *
 * Threading: pure functions.
 */
#pragma once

#include <ucp_cpp/error.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ucp_cpp::coll::launch::slurm {

/// Hostlists longer than this are refused (a typo such as node[1-99999999] would exhaust memory).
inline constexpr size_t max_hosts = size_t(1) << 20;

namespace detail {

[[noreturn]] inline void malformed(const std::string &list, const std::string &why)
{
    throw ucx_error(UCS_ERR_INVALID_PARAM,
                    "coll::launch::slurm: hostlist '" + list + "': " + why +
                        " (accepted: Slurm's syntax, e.g. node[01-04,7],gpu[1-2]-ib)");
}

/// A decimal number of at most 9 digits (a host index), the whole of @p text.
inline unsigned long number(const std::string &list, const std::string &text)
{
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != text.npos)
        malformed(list, "'" + text + "' is no host index");
    return std::stoul(text);
}

/// Appends to @p out every name @p item (one comma-free host expression) expands to.
inline void expand_item(const std::string &list, const std::string &item, std::string prefix,
                        std::vector<std::string> &out)
{
    const size_t open = item.find('[');
    if (open == item.npos) {
        if (item.find(']') != item.npos)
            malformed(list, "']' without '['");
        if (out.size() >= max_hosts)
            malformed(list, "more than " + std::to_string(max_hosts) + " hosts");
        out.push_back(prefix + item);
        return;
    }
    const size_t close = item.find(']', open);
    if (close == item.npos || item.find('[', open + 1) < close)
        malformed(list, "unbalanced '['");
    prefix += item.substr(0, open);
    const std::string rest   = item.substr(close + 1);
    const std::string ranges = item.substr(open + 1, close - open - 1);
    size_t start             = 0;
    do {
        size_t comma = ranges.find(',', start);
        if (comma == ranges.npos)
            comma = ranges.size();
        const std::string range = ranges.substr(start, comma - start);
        const size_t dash       = range.find('-');
        const std::string low   = range.substr(0, dash);
        const unsigned long lo  = number(list, low);
        const unsigned long hi  = dash == range.npos ? lo : number(list, range.substr(dash + 1));
        if (hi < lo)
            malformed(list, "range " + range + " runs backwards");
        // Slurm pads to the width of the lower bound as written: node[08-10] -> node08..node10.
        for (unsigned long i = lo; i <= hi; ++i) {
            std::string index = std::to_string(i);
            if (index.size() < low.size())
                index.insert(0, low.size() - index.size(), '0');
            expand_item(list, rest, prefix + index, out);
        }
        start = comma + 1;
    } while (start <= ranges.size());
}

}  // namespace detail

/**
 * @brief Expands a Slurm hostlist ("node[01-03,7],login1") into its host names, in order.
 * @param list the hostlist, as in SLURM_STEP_NODELIST / SLURM_JOB_NODELIST
 * @return the names; several bracket groups in one name expand as their product
 * @throws ucx_error(UCS_ERR_INVALID_PARAM) naming the list and the problem: an empty name,
 *         unbalanced brackets, a bad index, a backward range, more than max_hosts names
 */
[[nodiscard]] inline std::vector<std::string> expand_hostlist(const std::string &list)
{
    std::vector<std::string> hosts;
    size_t start = 0, depth = 0;
    for (size_t i = 0; i <= list.size(); ++i) {
        const char c = i < list.size() ? list[i] : ',';
        if (c == '[' && ++depth > 1)
            detail::malformed(list, "nested '['");
        if (c == ']' && depth-- == 0)
            detail::malformed(list, "']' without '['");
        if (c != ',' || depth != 0)
            continue;
        const std::string item = list.substr(start, i - start);
        if (item.empty())
            detail::malformed(list, "an empty host name");
        detail::expand_item(list, item, "", hosts);
        start = i + 1;
    }
    if (depth != 0)
        detail::malformed(list, "unbalanced '['");
    return hosts;
}

/**
 * @brief The TCP port the tasks of job step @p job_id.@p step_id meet at: every task computes
 *        the same one, different steps (also concurrent ones on one node) almost always differ.
 * @param job_id  SLURM_JOB_ID
 * @param step_id SLURM_STEP_ID
 * @return a port in [20000, 30000): below Linux's ephemeral range (32768-60999), so that no
 *         outgoing connection holds it
 */
[[nodiscard]] inline uint16_t rendezvous_port(uint64_t job_id, uint64_t step_id)
{
    return uint16_t(20000 + (job_id * 64 + step_id) % 10000);
}

}  // namespace ucp_cpp::coll::launch::slurm
