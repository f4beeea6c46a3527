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
#define RUNNING_ON_VALGRIND 0
#define VALGRIND_MAKE_MEM_DEFINED(_addr, _length) \
    ((void)(_addr), (void)(_length))
#endif

int gdr_under_valgrind;

__attribute__((constructor)) static void gdr_valgrind_init(void)
{
    gdr_under_valgrind = RUNNING_ON_VALGRIND;
}

void gdr_valgrind_make_defined(const void *address, size_t length)
{
    VALGRIND_MAKE_MEM_DEFINED(address, length);
}
