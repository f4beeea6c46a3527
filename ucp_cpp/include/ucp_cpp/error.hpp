/**
 * @file error.hpp
 * @brief ucp_cpp::ucx_error: UCX status codes as C++ exceptions.
 *
 * Synchronous UCX failures (object creation, immediate errors of blocking helpers) throw
 * ucx_error.  Nonblocking operations never throw for a transfer error: the failure is the
 * request's status (request::status()), and only request::wait() turns it into ucx_error.
 *
 * Layer: bottom (needs nothing of ucp_cpp).
 */
#pragma once

#include <ucs/type/status.h>

#include <stdexcept>
#include <string>

namespace ucp_cpp {

/**
 * @brief Exception carrying a UCX status code and a message that says which call failed and why.
 *
 * what() is the message, ": ", and UCX's text for the status (ucs_status_string()), unless the
 * message already contains that text (then it is not repeated).
 * Threading: an immutable value; safe to read from any thread.
 */
class ucx_error : public std::runtime_error {
public:
    /**
     * @brief Makes the exception for @p status.
     * @param status the UCX status code (an error, never UCS_OK or UCS_INPROGRESS).
     * @param what   which call failed and why, e.g. "ucp_init" or "endpoint::put: ...".
     */
    ucx_error(ucs_status_t status, const std::string &what)
        : std::runtime_error(with_status(status, what)), status_(status)
    {}

    /**
     * @brief The UCX status code.
     * @return the status given to the constructor (never UCS_OK or UCS_INPROGRESS).
     */
    ucs_status_t status() const noexcept { return status_; }

private:
    /// @p what + ": " + the status text, unless @p what names the status already (a caller
    /// that formatted it itself would otherwise get "...: Destination is unreachable:
    /// Destination is unreachable").
    static std::string with_status(ucs_status_t status, const std::string &what)
    {
        const char *text = ucs_status_string(status);
        if (what.find(text) != std::string::npos) {
            return what;
        }
        return what.empty() ? std::string(text) : what + ": " + text;
    }

    ucs_status_t status_;
};

/**
 * @brief Turns a UCX status into an exception.
 * @param status the status a UCX call returned.
 * @param what   the call, for the message (see ucx_error).
 * @throws ucx_error(status, what) unless @p status is UCS_OK.
 */
inline void check_status(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        throw ucx_error(status, what);
    }
}

}  // namespace ucp_cpp
