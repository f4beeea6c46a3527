/**
 * gdr_uct.h - the gdr component (md "gdr", tl "gdr_rc"): its names, and the bottom of the
 * glue's headers.
 *
 * The glue is C against UCX's internal headers of exactly the release it is built for
 * (build-aux/ucx-internal.sh); gdr_abi.c refuses to register in any other one.  Every
 * difference between UCX releases lives in compat/ (compat/gdr_compat.h), the seam at the
 * bottom that knows nothing of gdr's objects: the glue implements version-neutral entry
 * points and calls compat's shims; the component at the top (gdr_component.c) builds UCX's
 * ops tables from those entry points with compat's table shapes and hands them to the md and
 * iface constructors.  No file outside compat/ tests a GDR_UCX_HAVE_* macro.
 *
 * Each header builds on the one before it and never includes one after it:
 *   gdr_uct.h    names, the valgrind hook (this file)
 *   gdr_md.h     md "gdr": registrations, rkeys, the md resources
 *   gdr_iface.h  iface "gdr_rc": configuration, queues, pools, descriptors
 *   gdr_ep.h     endpoints: the RC QP per peer, the UCT data path
 *   gdr_ep.inl   (private to gdr_ep*.c) the inline helpers every operation posts through
 */
#ifndef GDR_UCT_H_
#define GDR_UCT_H_

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>

#include "compat/gdr_compat.h"

#define GDR_COMPONENT_NAME "gdr"
#define GDR_TL_NAME        "gdr_rc"
#define GDR_CONFIG_PREFIX  "GDR_"

/*
 * gdr_valgrind.c: what the HCA writes -- receive buffers, get and atomic results -- valgrind
 * cannot see (rxe writes from the kernel), so memcheck would call it uninitialised.  UCX's ib
 * transports mark it defined with ucs/sys/checker.h's macros, which Debian's UCX compiles
 * away (NVALGRIND in its config.h); the glue tells memcheck itself, only when running under
 * memcheck: one load and a branch otherwise, natively and under the other valgrind tools
 * (callgrind, which counts perf/compare's cost rows, included).
 */
extern int gdr_under_memcheck;
void gdr_valgrind_make_defined(const void *address, size_t length);

#define GDR_HCA_WROTE(_address, _length)                  \
    do {                                                  \
        if (ucs_unlikely(gdr_under_memcheck)) {           \
            gdr_valgrind_make_defined(_address, _length); \
        }                                                 \
    } while (0)

#endif
