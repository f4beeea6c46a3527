// A second process holding the other end of an endpoint, for tests that kill the peer.
//
// The test binary re-executes itself (/proc/self/exe --uctest-peer <rfd> <wfd>): the peer is a
// fresh process (no fork of an initialised UCX/verbs context), opens an Entity of the same
// target, exchanges addresses over two pipes and then just progresses until told to quit or killed.
#pragma once

#include "uct_harness.h"

#include <sys/types.h>

namespace uctest {

constexpr const char *kPeerFlag = "--uctest-peer";

/// Child side; returns the process exit code.
int run_peer(int read_fd, int write_fd);

/// Parent side. Not copyable; the destructor kills and reaps a still-running peer.
class PeerProcess {
public:
    PeerProcess();
    ~PeerProcess();
    PeerProcess(const PeerProcess &)            = delete;
    PeerProcess &operator=(const PeerProcess &) = delete;

    /// Creates self's endpoint to the peer and connects both sides; fills remote_address/rkey
    /// with the peer's registered buffer (kBufferSize bytes of pattern kSeed). Returns false
    /// with a reason when the peer failed.
    bool connect(Entity &self, uct_ep_h *ep, std::string *why);
    /// SIGKILL and wait until the process is gone (so its QPs are destroyed by the kernel).
    void kill_and_reap();

    static constexpr size_t kBufferSize = 256 << 10;
    static constexpr uint32_t kSeed     = 77;
    uint64_t remote_address             = 0;
    Bytes packed_rkey;
    pid_t pid() const { return pid_; }

private:
    pid_t pid_    = -1;
    int to_child_ = -1, from_child_ = -1;
};

}  // namespace uctest
