// Leaks of the communicator: two ranks' communicators opened on the same two
// workers, a barrier through them (so that their endpoints are wired up and used), closed;
// COLL_TEST_LEAK_CYCLES times (default 1000) over tcp,self.  Open file descriptors and RSS must
// stay flat.  (The other wrapper objects: tests/ucp_cpp/test_leaks.cpp.)
#include "coll_harness.hpp"

#include "../common/leak_loop.hpp"

using namespace coll_test;

namespace {

TEST(CollLeaks, CommunicatorOpenBarrierClose)
{
    local_world world(2);
    world.close_communicators();
    gdr_test::expect_flat(
        "communicator pair open + barrier + close", gdr_test::leak_cycles("COLL_TEST_LEAK_CYCLES"),
        [&] {
            world.open_communicators();
            world.run([&](int r) { return world.comm(r).ibarrier(); });
            world.close_communicators();
        },
        [&] { world.close_communicators(); });  // progresses the workers
}

}  // namespace
