#include "peer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace uctest {

namespace {

bool send_address(int fd, const Entity::Address &a)
{
    return write_blob(fd, a.device) && write_blob(fd, a.iface) && write_blob(fd, a.ep);
}

bool recv_address(int fd, Entity::Address *a)
{
    return read_blob(fd, &a->device) && read_blob(fd, &a->iface) && read_blob(fd, &a->ep);
}

/// Creates `self`'s endpoint toward the peer whose address arrives on `in`, sending ours on `out`
/// first (both sides send before they receive, so the pipes never deadlock).
bool exchange_and_connect(Entity &self, int in, int out, uct_ep_h *ep)
{
    Entity::Address mine, theirs;
    const bool to_ep = self.has_flag(UCT_IFACE_FLAG_CONNECT_TO_EP);
    if (to_ep) {
        *ep = self.create_ep(&mine);
    } else {
        mine = self.address();
    }
    if (!send_address(out, mine) || !recv_address(in, &theirs)) {
        return false;
    }
    if (to_ep) {
        self.connect(*ep, theirs);
    } else {
        *ep = self.create_ep_to_iface(theirs);
    }
    return true;
}

}  // namespace

int run_peer(int in, int out)
{
    uint8_t ok = 0;
    try {
        auto found = target_resource();
        if (!found.first) {
            write_full(out, &ok, 1);
            write_blob(out, Bytes(found.second.begin(), found.second.end()));
            return 2;
        }
        Entity self(*found.first);
        RegisteredBuffer buffer(self.md(), PeerProcess::kBufferSize);
        buffer.fill_pattern(PeerProcess::kSeed);
        ok               = 1;
        uint64_t address = buffer.address();
        uct_ep_h ep      = nullptr;
        if (!write_full(out, &ok, 1) || !write_full(out, &address, sizeof(address)) ||
            !write_blob(out, buffer.registration().packed_rkey()) ||
            !exchange_and_connect(self, in, out, &ep)) {
            return 3;
        }
        uint8_t ready = 1;
        write_full(out, &ready, 1);
        // serve until the parent writes or closes the pipe (or kills us)
        for (;;) {
            self.progress();
            pollfd p{in, POLLIN, 0};
            if (poll(&p, 1, 0) != 0) {
                return 0;
            }
        }
    } catch (const std::exception &e) {
        std::string msg = std::string("peer: ") + e.what();
        if (!ok) {
            write_full(out, &ok, 1);
            write_blob(out, Bytes(msg.begin(), msg.end()));
        }
        std::fprintf(stderr, "%s\n", msg.c_str());
        return 4;
    }
}

PeerProcess::PeerProcess()
{
    int down[2], up[2];
    if (pipe2(down, O_CLOEXEC) != 0 || pipe2(up, O_CLOEXEC) != 0) {
        throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    }
    // argv is built before fork: between fork and exec only async-signal-safe calls
    int child_in = down[0], child_out = up[1];
    std::string in_s = std::to_string(child_in), out_s = std::to_string(child_out);
    char exe[]   = "/proc/self/exe";
    char *argv[] = {exe, const_cast<char *>(kPeerFlag), in_s.data(), out_s.data(), nullptr};
    pid_         = fork();
    if (pid_ < 0) {
        throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid_ == 0) {
        // die with the parent: a test that crashes must not leave peers spinning
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        // keep the child's two ends open across exec (clear CLOEXEC on them only)
        fcntl(child_in, F_SETFD, 0);
        fcntl(child_out, F_SETFD, 0);
        execv(exe, argv);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    to_child_   = down[1];
    from_child_ = up[0];
}

PeerProcess::~PeerProcess()
{
    kill_and_reap();
    if (to_child_ >= 0) {
        close(to_child_);
    }
    if (from_child_ >= 0) {
        close(from_child_);
    }
}

bool PeerProcess::connect(Entity &self, uct_ep_h *ep, std::string *why)
{
    uint8_t ok = 0, ready = 0;
    if (!read_full(from_child_, &ok, 1)) {
        *why = "peer exited before reporting";
        return false;
    }
    if (!ok) {
        Bytes msg;
        read_blob(from_child_, &msg);
        *why = std::string(msg.begin(), msg.end());
        return false;
    }
    if (!read_full(from_child_, &remote_address, sizeof(remote_address)) ||
        !read_blob(from_child_, &packed_rkey) ||
        !exchange_and_connect(self, from_child_, to_child_, ep) ||
        !read_full(from_child_, &ready, 1)) {
        *why = "address exchange with the peer failed";
        return false;
    }
    return true;
}

void PeerProcess::kill_and_reap()
{
    if (pid_ <= 0) {
        return;
    }
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

}  // namespace uctest
