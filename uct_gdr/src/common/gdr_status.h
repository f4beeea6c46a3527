/*
 * gdr_status.h -- the one error convention of ucx-gdr's C++ sub-libraries (verbs, cuda, topo).
 *
 * Every entry point of their C APIs returns a ucs_status_t and, where it can fail for a reason a
 * user must read, takes a `gdr_reason_t *` (which may be NULL) that receives one line saying why.
 * The glue (src/ucx) turns that line into one ucs_error/ucs_diag of its own; the libraries never
 * log.  No C++ exception crosses an `extern "C"` entry point: each is wrapped in gdr::guard()
 * (gdr_status.hpp), which turns an escaping exception into a status and its what() into the reason;
 * the few that return no status (lookups, conversions) are declared GDR_NOEXCEPT, so that a throw
 * in one would terminate at its frame instead of unwinding into C.
 *
 * Why ucs_status_t and not a status of our own: UCX is the only caller that matters, the enum is
 * a public, header-only part of every UCX release (1.13 to 1.22 agree on the values used here),
 * and one vocabulary means no mapping table between layers.
 */
#ifndef GDR_STATUS_H
#define GDR_STATUS_H

#include <ucs/type/status.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
#define GDR_NOEXCEPT noexcept
#else
#define GDR_NOEXCEPT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Room for the longest reason: the CUDA probe's line about 8 GPUs (longer lines are cut). */
#define GDR_REASON_MAX 2048

/** Why a call failed (or why a probe chose what it chose): one line, NUL-terminated. */
typedef struct gdr_reason {
    char text[GDR_REASON_MAX];
} gdr_reason_t;

/** Writes a printf-style line into `reason` (if not NULL); returns `status`, so that a failing path
 *  reads `return gdr_reason_set(reason, UCS_ERR_UNSUPPORTED, "...", ...);`. */
static inline ucs_status_t gdr_reason_set(gdr_reason_t *reason, ucs_status_t status,
                                          const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static inline ucs_status_t gdr_reason_set(gdr_reason_t *reason, ucs_status_t status,
                                          const char *fmt, ...)
{
    va_list ap;

    if (reason != NULL) {
        va_start(ap, fmt);
        vsnprintf(reason->text, sizeof(reason->text), fmt, ap);
        va_end(ap);
    }
    return status;
}

/** Empties `reason` (if not NULL): entry points do this first, so a success leaves "" behind. */
static inline void gdr_reason_clear(gdr_reason_t *reason)
{
    if (reason != NULL) {
        reason->text[0] = '\0';
    }
}

#ifdef __cplusplus
}
#endif

#endif /* GDR_STATUS_H */
