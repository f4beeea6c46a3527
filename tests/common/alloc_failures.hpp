// Allocation failures on demand, for the tests that no C++ exception crosses a C API's entry point
// (uct_gdr/src/common/gdr_status.h).  alloc_failures.cpp, compiled into the test binary, replaces
// the global operator new: after fail_allocation(n) the n-th allocation of this thread from then on
// (0: the next) throws std::bad_alloc, once.
#pragma once

#include "gdr_status.h"

#include <gtest/gtest.h>

namespace gdr_test {

/// Arms the n-th allocation of this thread from now to throw; -1 disarms.
void fail_allocation(long n);

/// Armed and not yet thrown (the call under test allocated fewer times than that).
bool allocation_failure_pending();

/// Runs `call(reason)` once per allocation it makes, failing each in turn: every run must return
/// UCS_ERR_NO_MEMORY with "out of memory" in the reason, until a run allocates all it needs and
/// returns UCS_OK.  `cleanup()` undoes whatever a run left (called after every run).
template <typename Call, typename Cleanup>
void every_allocation_fails_in_turn(const char *what, Call call, Cleanup cleanup)
{
    long failures = 0;
    for (long n = 0;; ++n) {
        gdr_reason_t why;
        fail_allocation(n);
        ucs_status_t status = call(&why);
        bool injected       = !allocation_failure_pending();
        fail_allocation(-1);
        cleanup();
        if (!injected) {
            ASSERT_EQ(status, UCS_OK) << what << " with every allocation succeeding: " << why.text;
            break;
        }
        ASSERT_EQ(status, UCS_ERR_NO_MEMORY) << what << ", allocation " << n << " failed";
        EXPECT_STREQ(why.text, "out of memory") << what << ", allocation " << n;
        ++failures;
    }
    EXPECT_GT(failures, 0) << what << " allocates nothing?";
}

template <typename Call> void every_allocation_fails_in_turn(const char *what, Call call)
{
    every_allocation_fails_in_turn(what, call, [] {});
}

}  // namespace gdr_test
