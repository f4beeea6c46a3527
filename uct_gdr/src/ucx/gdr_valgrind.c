/**
 * gdr_valgrind.c - memcheck's view of what the HCA wrote (GDR_HCA_WROTE in gdr_uct.h).
 *
 * No UCX header here: UCX's config.h defines NVALGRIND where UCX was built without valgrind
 * (Debian's), which would turn valgrind's client requests into nothing.
 */
#include <stddef.h>

#ifdef GDR_HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#else
#define VALGRIND_GET_VBITS(_addr, _vbits, _length) \
    ((void)(_addr), (void)(_vbits), (void)(_length), 0u)
#define VALGRIND_MAKE_MEM_DEFINED(_addr, _length) \
    ((void)(_addr), (void)(_length))
#endif

int gdr_under_memcheck;

/*
 * Only memcheck tracks definedness, so only memcheck needs to be told; under the other tools
 * (callgrind counting the hot path for perf/compare's cost section, cachegrind, helgrind...) the
 * call would be pure overhead on every received fragment, which rc_verbs does not pay. RUNNING_ON_VALGRIND is true under every tool, so it cannot decide. Asking
 * memcheck itself can: VALGRIND_GET_VBITS is a memcheck request whose return memcheck.h documents
 * (1: success, 0: not running on valgrind); a tool that does not handle a request leaves the
 * caller's default, 0, so exactly memcheck answers 1. It copies the validity bits of one defined
 * byte into another and changes nothing (valgrind 3.19: 1 under memcheck; 0 natively and under
 * callgrind, cachegrind, helgrind, drd, massif, dhat and none). Looking for vgpreload_memcheck-*.so
 * in LD_PRELOAD or /proc/self/maps instead would depend on valgrind's file names and on an
 * environment the application may have rewritten; the request depends on neither, and costs one
 * client request at load time.
 */
__attribute__((constructor)) static void gdr_valgrind_init(void)
{
    static const char probe = 0;
    static char vbits;

    gdr_under_memcheck = (VALGRIND_GET_VBITS(&probe, &vbits, 1) == 1);
}

void gdr_valgrind_make_defined(const void *address, size_t length)
{
    VALGRIND_MAKE_MEM_DEFINED(address, length);
}
