// The replaced global operator new of alloc_failures.hpp.  (operator new[] and the nothrow forms
// call this one in libstdc++; delete frees what malloc gave.)
#include "alloc_failures.hpp"

#include <cstdlib>
#include <new>

namespace {

// Allocations of this thread left before the injected std::bad_alloc; -1: none is injected
thread_local long g_allocs_before_failure = -1;

}  // namespace

namespace gdr_test {

void fail_allocation(long n)
{
    g_allocs_before_failure = n;
}

bool allocation_failure_pending()
{
    return g_allocs_before_failure >= 0;
}

}  // namespace gdr_test

void *operator new(std::size_t size)
{
    if (g_allocs_before_failure == 0) {
        g_allocs_before_failure = -1;
        throw std::bad_alloc();
    }
    if (g_allocs_before_failure > 0) {
        --g_allocs_before_failure;
    }
    if (void *p = std::malloc(size ? size : 1)) {
        return p;
    }
    throw std::bad_alloc();
}

void operator delete(void *p) noexcept
{
    std::free(p);
}

void operator delete(void *p, std::size_t) noexcept
{
    std::free(p);
}
