// What a process holds that a leak makes grow: open file descriptors and resident memory
// (the leak tests of tests/uct and tests/ucp_cpp compare them before and after 1000 cycles).
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>

#if defined(__SANITIZE_ADDRESS__)
#define GDR_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GDR_TEST_ASAN 1
#endif
#endif
#ifdef GDR_TEST_ASAN
// sanitizer/allocator_interface.h (compiler-rt), which GCC does not install: drains the
// quarantine and releases the allocator's free memory to the OS
extern "C" void __sanitizer_purge_allocator(void);
#endif

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

/// Under AddressSanitizer, the memory that the cycles freed goes back to use and to the OS
/// (a no-op in a plain build).  ASan keeps freed blocks in its quarantine (256 MiB by default,
/// to catch a use after free), so without this every cycle allocates at fresh addresses and
/// their shadow pages stay resident: +2 MiB over 50 md cycles, +4.6 MiB over 50 endpoint pairs,
/// +130 MiB over 50 ifaces, none of it a leak.  A use after free within the cycles since the
/// last call is still caught, and what a leak holds stays allocated (LeakSanitizer reports it
/// at exit too).
inline void release_freed_memory()
{
#ifdef GDR_TEST_ASAN
    __sanitizer_purge_allocator();
#endif
}

/// Called by a leak loop after each cycle: release_freed_memory().  Even so, under ASan the
/// RSS after 20 iface cycles was once flat and once +8.7 MiB (VM): other threads' allocator
/// caches and UCX's pools are not purged.  So a sanitized build prints the RSS but checks no
/// bound on it (kAsan); LeakSanitizer checks for leaks exactly, at exit, and fds and verbs
/// objects are counted as in the plain build, whose RSS bound stays.
inline void after_cycle()
{
    release_freed_memory();
}

/// Whether this is a sanitized (ASan) build.
#ifdef GDR_TEST_ASAN
inline constexpr bool kAsan = true;
#else
inline constexpr bool kAsan = false;
#endif

/// Resident set size in KiB (/proc/self/statm), or a negative number when unreadable.
inline long rss_kib()
{
    release_freed_memory();
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
