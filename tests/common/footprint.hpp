// What a process holds that a leak makes grow: open file descriptors and resident memory
// (the leak tests of tests/uct and tests/ucp_cpp compare them before and after 1000 cycles).
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>

namespace gdr_test {

/// Entries of /proc/self/fd, less the one the listing itself opens.
inline size_t open_fds()
{
    size_t n = 0;
    if (DIR *d = opendir("/proc/self/fd")) {
        while (dirent *e = readdir(d))
            n += e->d_name[0] != '.';
        closedir(d);
    }
    return n - 1;
}

/// Resident set size in KiB (/proc/self/statm), or a negative number when unreadable.
inline long rss_kib()
{
    long pages = 0, resident = -1;
    if (FILE *f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = -1;
        std::fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/// RSS growth a leak-free run of 1000 cycles stays under: allocator and cache noise (a leak of
/// 4 KiB a cycle would be 4 MiB).
inline constexpr long kRssNoiseKib = 2048;

}  // namespace gdr_test
