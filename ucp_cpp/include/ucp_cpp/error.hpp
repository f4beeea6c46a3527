/**
 * @file error.hpp
 * @brief ucp_cpp::ucx_error: UCX status codes as C++ exceptions.
 *
 * Synchronous UCX failures (object creation, immediate errors of blocking helpers) throw
 * ucx_error.  Nonblocking operations never throw for a transfer error: the failure is the
 * request's status (request::status()), and only request::wait() turns it into ucx_error.
 */
#pragma once

#include <ucs/type/status.h>

#include <stdexcept>
#include <string>

namespace ucp_cpp {

/// Exception carrying a UCX status code and a message that says which call failed and why.
class ucx_error : public std::runtime_error {
public:
    ucx_error(ucs_status_t status, const std::string &what)
        : std::runtime_error(what + ": " + ucs_status_string(status)), status_(status) {}

    /// The UCX status code (never UCS_OK or UCS_INPROGRESS).
    ucs_status_t status() const noexcept { return status_; }

private:
    ucs_status_t status_;
};

/// Throws ucx_error(status, what) unless status is UCS_OK.
inline void check_status(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        throw ucx_error(status, what);
    }
}

}  // namespace ucp_cpp
