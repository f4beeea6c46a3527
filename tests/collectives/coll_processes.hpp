// Ranks as forked processes (tests/ucp_cpp/peer_harness.hpp) that meet through the TCP
// rendezvous bootstrap on the loopback: shared by the host tests over tcp and the rdma tests.
#pragma once

#include "../ucp_cpp/peer_harness.hpp"
#include "coll_harness.hpp"

#include <map>
#include <string>

namespace coll_test {

/// Bootstrap parameters of rank @p rank of @p size, the root listening on 127.0.0.1:@p port.
inline coll::bootstrap_params rendezvous(int rank, int size, uint16_t port,
                                         std::chrono::milliseconds timeout = 20s)
{
    coll::bootstrap_params params;
    params.rank      = rank;
    params.size      = size;
    params.root_host = "127.0.0.1";
    params.root_port = port;
    params.timeout   = timeout;
    return params;
}

/// The world communicator of a fresh worker (make_context() with @p extra_config) of this
/// process, bootstrapped with @p params.  COLL_TEST_PEER_ERRORS=0 opens its endpoints without
/// peer error handling, as UCX's shared-memory transports need.
inline coll::communicator join(const coll::bootstrap_params &params,
                               std::map<std::string, std::string> extra_config = {})
{
    auto worker = ucp_cpp::worker::create(make_context(std::move(extra_config)));
    coll::communicator_params options;
    const char *peer_errors     = std::getenv("COLL_TEST_PEER_ERRORS");
    options.peer_error_handling = !(peer_errors && std::string(peer_errors) == "0");
    return coll::communicator::bootstrap(worker, params, options);
}

}  // namespace coll_test
