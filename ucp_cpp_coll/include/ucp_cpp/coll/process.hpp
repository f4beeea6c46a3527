/**
 * @file coll/process.hpp
 * @brief Which process a rank is, and whether that process still exists: how a collective finds
 *        out that a rank on the same host died when no transport will say so.
 *
 * UCX's shared-memory transports report no peer failure (posix, sysv and xpmem refuse
 * UCP_ERR_HANDLING_MODE_PEER unless UCX_MM_ERROR_HANDLING=y, and even then UCP's keepalive does
 * not fail their endpoints to a killed process), so a rank waiting for a message from a dead
 * neighbour on its own host would wait forever.  The engine learns each peer's identity when it
 * first connects to it (a hello on its control channel, coll/engine.hpp) and, while a collective
 * waits on a peer of the same host and PID namespace, asks the kernel whether that process still
 * exists.  Linux only (/proc); elsewhere no identity is read and nothing is ever judged gone.
 */
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ucp_cpp::coll::detail {

/// A process, as its peers see it; trivially copyable (it travels as bytes).
struct process_identity {
    static constexpr uint32_t expected_magic = 0x55504944;  // "UPID"
    uint32_t magic                           = 0;  ///< expected_magic once read: zero means unknown
    int32_t pid                              = 0;  ///< in pid_namespace
    uint64_t host          = 0;  ///< hash of the kernel's boot_id: equal on one host (one boot)
    uint64_t pid_namespace = 0;  ///< inode of /proc/self/ns/pid
    uint64_t start_time    = 0;  ///< clock ticks after boot (field 22 of /proc/PID/stat)

    bool known() const { return magic == expected_magic && host != 0; }
    /// Whether @p other's process can be looked up from this one (same host, same PID space).
    bool shares_pids_with(const process_identity &other) const
    {
        return known() && other.known() && host == other.host &&
               pid_namespace == other.pid_namespace;
    }
};

/// Reads up to @p size - 1 bytes of @p path into @p buffer (NUL-terminated); -1 with errno set.
/// No allocation: called while collectives wait (their allocation count is tested).
inline ssize_t read_small_file(const char *path, char *buffer, size_t size)
{
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    const ssize_t n = ::read(fd, buffer, size - 1);
    const int saved = errno;
    ::close(fd);
    errno = saved;
    if (n >= 0)
        buffer[n] = '\0';
    return n;
}

/// What read_process_stat() found.
enum class stat_result {
    found,  ///< state and start time read
    no_entry,  ///< the kernel has no such process
    unknown  ///< could not tell (no /proc, an unexpected format)
};

/// State and start time of process @p pid from /proc/PID/stat.
inline stat_result read_process_stat(int pid, char &state, uint64_t &start_time)
{
    char path[48];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    char text[1024];
    const ssize_t n = read_small_file(path, text, sizeof(text));
    if (n < 0)
        return errno == ENOENT || errno == ESRCH ? stat_result::no_entry : stat_result::unknown;
    if (n == 0)
        return stat_result::unknown;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the
    // last ')'.  Then state is field 3 and starttime field 22.
    const char *p = std::strrchr(text, ')');
    if (p == nullptr || p[1] != ' ')
        return stat_result::unknown;
    state = p[2];
    p += 2;
    for (int field = 3; field < 22; ++field) {
        p = std::strchr(p, ' ');
        if (p == nullptr)
            return stat_result::unknown;
        ++p;
    }
    start_time = std::strtoull(p, nullptr, 10);
    return stat_result::found;
}

/// This process's identity; unknown (known() false) where /proc does not tell.
inline process_identity own_process_identity()
{
    process_identity id;
    char boot_id[64];
    struct stat ns{};
    char state = 0;
    if (read_small_file("/proc/sys/kernel/random/boot_id", boot_id, sizeof(boot_id)) <= 0 ||
        ::stat("/proc/self/ns/pid", &ns) != 0 ||
        read_process_stat(int(::getpid()), state, id.start_time) != stat_result::found) {
        return id;
    }
    uint64_t hash = 14695981039346656037ull;  // FNV-1a of the boot id's text
    for (const char *c = boot_id; *c != '\0' && *c != '\n'; ++c)
        hash = (hash ^ uint8_t(*c)) * 1099511628211ull;
    id.host          = hash == 0 ? 1 : hash;
    id.pid           = int32_t(::getpid());
    id.pid_namespace = uint64_t(ns.st_ino);
    id.magic         = process_identity::expected_magic;
    return id;
}

/**
 * Whether the process @p peer names has ended, as seen from a process of the same host and PID
 * namespace: no /proc entry, a zombie (killed, not yet reaped by its parent), or a different
 * process under a reused PID (another start time).  False when it cannot tell.
 */
inline bool process_gone(const process_identity &peer)
{
    char state          = 0;
    uint64_t start_time = 0;
    switch (read_process_stat(peer.pid, state, start_time)) {
    case stat_result::no_entry:
        return true;
    case stat_result::unknown:
        return false;
    case stat_result::found:
        break;
    }
    return state == 'Z' || state == 'X' || start_time != peer.start_time;
}

}  // namespace ucp_cpp::coll::detail
