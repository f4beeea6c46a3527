/*
 * gdr_status.hpp -- the C++ side of gdr_status.h: an exception that carries a ucs_status_t, and
 * gdr_guard(), the wrapper every `extern "C"` entry point of the sub-libraries runs its body in.
 *
 *   extern "C" ucs_status_t gdr_topo_something(..., gdr_reason_t *reason)
 *   {
 *       return gdr::guard(reason, [&] {
 *           ...                                   // may throw gdr::error, std::bad_alloc, ...
 *           return UCS_OK;
 *       });
 *   }
 *
 * UCX calls these from C frames that have no unwind tables for C++ (and from progress, where
 * an unwinding exception would abort the process): nothing may escape.
 */
#ifndef GDR_STATUS_HPP
#define GDR_STATUS_HPP

#include "gdr_status.h"

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace gdr {

/** An error with the status the C API reports for it; what() is the reason line. */
class error : public std::runtime_error {
public:
    error(ucs_status_t status, const std::string &reason)
        : std::runtime_error(reason), status_(status)
    {}
    [[nodiscard]] ucs_status_t status() const noexcept { return status_; }

private:
    ucs_status_t status_;
};

/** Copies `text` into `reason` (if not NULL), cut to GDR_REASON_MAX - 1 bytes; a cut line ends
 *  in "..." so that a reader knows it was cut. */
inline void set_reason(gdr_reason_t *reason, const char *text) noexcept
{
    constexpr size_t capacity = sizeof(reason->text);
    if (reason == nullptr) {
        return;
    }
    std::strncpy(reason->text, text, capacity - 1);
    reason->text[capacity - 1] = '\0';
    if (std::strlen(text) >= capacity) {
        std::memcpy(reason->text + capacity - 4, "...", 3);
    }
}

/**
 * Runs `body` (returning ucs_status_t) and stops every exception at this frame:
 * gdr::error -> its status; std::bad_alloc -> UCS_ERR_NO_MEMORY; any other -> UCS_ERR_IO_ERROR;
 * the exception's what() becomes the reason.  `reason` is cleared first.
 */
template <typename Body>
[[nodiscard]] ucs_status_t guard(gdr_reason_t *reason, Body &&body) noexcept
{
    gdr_reason_clear(reason);
    try {
        return std::forward<Body>(body)();
    } catch (const error &e) {
        set_reason(reason, e.what());
        return e.status();
    } catch (const std::bad_alloc &) {
        set_reason(reason, "out of memory");
        return UCS_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        set_reason(reason, e.what());
        return UCS_ERR_IO_ERROR;
    } catch (...) {
        set_reason(reason, "unknown C++ exception");
        return UCS_ERR_IO_ERROR;
    }
}

}  // namespace gdr

#endif  // GDR_STATUS_HPP
