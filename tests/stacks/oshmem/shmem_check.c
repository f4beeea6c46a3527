/*
 * shmem_check: OpenSHMEM over Open MPI's oshmem (spml ucx, atomic ucx), one verdict line per
 * check and PE, every value checked exactly (tests/stacks/oshmem/run turns the lines into cases).
 *
 *   shmem_check [--iters N] [--only NAME,...] [--timeout S]   (under oshrun, 2 to 16 PEs)
 *   shmem_check --list              (the check names, one a line; no shmem_init)
 *
 * Output: PE 0 prints "BEGIN <name> <seconds since shmem_init>" before a check (the driver
 * names the check a crash happened in and times each one), then every PE prints
 * "CHECK <name> <pe> ok|FAIL <detail>", and "DONE <pe> <failures>" after the last one.  A check
 * still running after --timeout seconds (default 60) makes the PE print "TIMEOUT <name>" and
 * exit 124: the driver goes on with the checks after it in a new job.
 * Exit status: 0 when every check passed on this PE, 1 otherwise, 2 on a usage error, 124 on a
 * check's timeout.
 *
 * The atomics run from every PE on one word of PE 0, 32-bit (shmem_int_*) and 64-bit
 * (shmem_long_*) alike.  The word sits between two guard words, and its start value makes the
 * arithmetic carry across the 32-bit boundary: a 32-bit atomic done as a 64-bit one (or a
 * 64-bit one done on 32 bits) changes a guard or the final value.  Collectives run through
 * whatever scoll component oshrun selected (the driver picks scoll basic: RMA and atomics over
 * UCP, not the MPI layer).
 */
#include <shmem.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    MAX_PES    = 16,
    NBI_CHUNKS = 64,
    NBI_CHUNK  = 4096,
    RED_N      = 1000,
    LARGE      = 2 << 20
};

static int me, npes, iters = 64, failures;
static const char *only;
static const char *volatile current = "init";
static int timeout_s                = 60;

/* SIGALRM: the check in progress outlived --timeout (only async-signal-safe calls here). */
static void on_alarm(int sig)
{
    char line[128] = "TIMEOUT ";
    size_t n       = strlen(line);
    for (const char *p = current; *p != '\0' && n < sizeof(line) - 2; ++p) {
        line[n++] = *p;
    }
    line[n++] = '\n';
    (void)sig;
    (void)!write(STDOUT_FILENO, line, n);
    _exit(124);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Symmetric objects (static storage is symmetric in OpenSHMEM). */
static int a32[3];
static long a64[3];
static int s32[MAX_PES + 2];
static long s64[MAX_PES + 2];
static int flag32, cnt32;
static long cnt64, lock_word, lock_count, lock_inside;
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
static long
    psync[MAX2(SHMEM_REDUCE_SYNC_SIZE, MAX2(SHMEM_BCAST_SYNC_SIZE, SHMEM_COLLECT_SYNC_SIZE))];
static int ired_src[RED_N], ired_dst[RED_N], ired_wrk[RED_N / 2 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long lred_src[RED_N], lred_dst[RED_N], lred_wrk[RED_N / 2 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];

/* Symmetric heap objects (shmem_malloc, set up in main). */
static unsigned char *big_src, *big_dst;
static long *gather;

static void verdict(const char *name, int ok, const char *fmt, ...)
{
    va_list ap;
    printf("CHECK %s %d %s ", name, me, ok ? "ok" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    failures += !ok;
}

static void reset_psync(void)
{
    for (size_t i = 0; i < sizeof(psync) / sizeof(psync[0]); ++i) {
        psync[i] = SHMEM_SYNC_VALUE;
    }
    shmem_barrier_all();
}

/* Byte pattern that depends on the writer, the size and the offset: a misplaced or stale
 * byte is caught. */
static unsigned char pattern(int pe, size_t size, size_t i)
{
    return (unsigned char)(pe * 31 + size * 7 + i * 13 + (i >> 8));
}

static size_t first_bad(const unsigned char *buf, int pe, size_t size)
{
    for (size_t i = 0; i < size; ++i) {
        if (buf[i] != pattern(pe, size, i)) {
            return i;
        }
    }
    return size;
}

/* --- RMA ------------------------------------------------------------------------------- */

static void rma_put(const char *name, const size_t *sizes, int n)
{
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes, ok = 1;
    char why[160] = "";
    for (int s = 0; s < n && ok; ++s) {
        size_t size = sizes[s], bad;
        for (size_t i = 0; i < size; ++i) {
            big_src[i] = pattern(me, size, i);
        }
        memset(big_dst, 0xee, size);
        shmem_barrier_all();
        shmem_putmem(big_dst, big_src, size, next);
        shmem_barrier_all();
        if ((bad = first_bad(big_dst, prev, size)) != size) {
            snprintf(why, sizeof(why), "%zu B from PE %d: byte %zu is 0x%02x, expected 0x%02x",
                     size, prev, bad, big_dst[bad], pattern(prev, size, bad));
            ok = 0;
        }
        shmem_barrier_all();
    }
    verdict(name, ok, ok ? "%d sizes up to %zu B" : "%s", ok ? n : 0, ok ? sizes[n - 1] : 0, why);
}

static void rma_get(const char *name, const size_t *sizes, int n)
{
    int next = (me + 1) % npes, ok = 1;
    char why[160] = "";
    for (int s = 0; s < n && ok; ++s) {
        size_t size = sizes[s], bad;
        for (size_t i = 0; i < size; ++i) {
            big_src[i] = pattern(me, size, i);
        }
        memset(big_dst, 0xee, size);
        shmem_barrier_all();
        shmem_getmem(big_dst, big_src, size, next);
        if ((bad = first_bad(big_dst, next, size)) != size) {
            snprintf(why, sizeof(why), "%zu B from PE %d: byte %zu is 0x%02x, expected 0x%02x",
                     size, next, bad, big_dst[bad], pattern(next, size, bad));
            ok = 0;
        }
        shmem_barrier_all();
    }
    verdict(name, ok, ok ? "%d sizes up to %zu B" : "%s", ok ? n : 0, ok ? sizes[n - 1] : 0, why);
}

static void check_put(const char *name)
{
    static const size_t sizes[] = {1, 8, 200, 4096, 65536};
    rma_put(name, sizes, 5);
}

static void check_get(const char *name)
{
    static const size_t sizes[] = {1, 8, 200, 4096, 65536};
    rma_get(name, sizes, 5);
}

static void check_put_large(const char *name)
{
    static const size_t sizes[] = {LARGE};
    rma_put(name, sizes, 1);
}

static void check_get_large(const char *name)
{
    static const size_t sizes[] = {LARGE};
    rma_get(name, sizes, 1);
}

/* NBI_CHUNKS non-blocking puts, shmem_quiet, then a flag put: after the target sees the flag,
 * every chunk must be there (quiet completed them before the flag was sent). */
static void check_put_nbi(const char *name)
{
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    size_t size = (size_t)NBI_CHUNKS * NBI_CHUNK, bad;
    for (size_t i = 0; i < size; ++i) {
        big_src[i] = pattern(me, size, i);
    }
    memset(big_dst, 0xee, size);
    flag32 = 0;
    shmem_barrier_all();
    for (int c = NBI_CHUNKS - 1; c >= 0; --c) {
        shmem_putmem_nbi(big_dst + (size_t)c * NBI_CHUNK, big_src + (size_t)c * NBI_CHUNK,
                         NBI_CHUNK, next);
    }
    shmem_quiet();
    shmem_int_p(&flag32, 1, next);
    shmem_int_wait_until(&flag32, SHMEM_CMP_EQ, 1);
    bad = first_bad(big_dst, prev, size);
    verdict(name, bad == size, "%d x %d B from PE %d%s%zu", NBI_CHUNKS, NBI_CHUNK, prev,
            bad == size ? "" : ": first wrong byte at ", bad == size ? (size_t)0 : bad);
    shmem_barrier_all();
}

static void check_get_nbi(const char *name)
{
    int next    = (me + 1) % npes;
    size_t size = (size_t)NBI_CHUNKS * NBI_CHUNK, bad;
    for (size_t i = 0; i < size; ++i) {
        big_src[i] = pattern(me, size, i);
    }
    memset(big_dst, 0xee, size);
    shmem_barrier_all();
    for (int c = 0; c < NBI_CHUNKS; ++c) {
        shmem_getmem_nbi(big_dst + (size_t)c * NBI_CHUNK, big_src + (size_t)c * NBI_CHUNK,
                         NBI_CHUNK, next);
    }
    shmem_quiet();
    bad = first_bad(big_dst, next, size);
    verdict(name, bad == size, "%d x %d B from PE %d%s%zu", NBI_CHUNKS, NBI_CHUNK, next,
            bad == size ? "" : ": first wrong byte at ", bad == size ? (size_t)0 : bad);
    shmem_barrier_all();
}

/* Single elements (shmem_int_p/g, shmem_long_p/g) into a word between guards. */
static void check_p_g(const char *name)
{
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes, ok;
    int iv  = (int)(0x70000000u | (unsigned)prev << 8);
    long lv = (long)(0x0102030405060708ul ^ (unsigned long)prev << 40);
    s32[0] = s32[2] = 0x5a5a5a5a;
    s64[0] = s64[2] = 0x5a5a5a5a5a5a5a5al;
    shmem_barrier_all();
    shmem_int_p(&s32[1], (int)(0x70000000u | (unsigned)me << 8), next);
    shmem_long_p(&s64[1], (long)(0x0102030405060708ul ^ (unsigned long)me << 40), next);
    shmem_barrier_all();
    ok = s32[1] == iv && s64[1] == lv && s32[0] == 0x5a5a5a5a && s32[2] == 0x5a5a5a5a &&
         s64[0] == 0x5a5a5a5a5a5a5a5al && s64[2] == 0x5a5a5a5a5a5a5a5al;
    ok = ok && shmem_int_g(&s32[1], next) == (int)(0x70000000u | (unsigned)me << 8) &&
         shmem_long_g(&s64[1], next) == (long)(0x0102030405060708ul ^ (unsigned long)me << 40);
    verdict(name, ok, "int 0x%x long 0x%lx (guards 0x%x 0x%x)", s32[1], s64[1], s32[0], s32[2]);
    shmem_barrier_all();
}

/* Strided put and get (shmem_long_iput/iget): every third element of the target. */
static void check_iput_iget(const char *name)
{
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes, ok = 1;
    long *dst = (long *)big_dst, *src = (long *)big_src, back[100];
    for (int i = 0; i < 300; ++i) {
        dst[i] = -1;
    }
    for (int i = 0; i < 100; ++i) {
        src[i] = (long)me << 32 | i;
    }
    shmem_barrier_all();
    shmem_long_iput(dst, src, 3, 1, 100, next);
    shmem_barrier_all();
    for (int i = 0; i < 300 && ok; ++i) {
        ok = dst[i] == (i % 3 ? -1 : (long)prev << 32 | i / 3);
    }
    shmem_long_iget(back, dst, 1, 3, 100, next);
    for (int i = 0; i < 100 && ok; ++i) {
        ok = back[i] == ((long)me << 32 | i);
    }
    verdict(name, ok, "100 longs, stride 3");
    shmem_barrier_all();
}

/* --- atomics: one word on PE 0, both widths ----------------------------------------------- */

enum amo_op {
    FADD,
    ADD,
    INC,
    FINC,
    FETCH,
    SET,
    SWAP,
    CSWAP,
    AND,
    OR,
    XOR,
    FAND,
    FOR,
    FXOR
};

/* The atomic `op` with OpenSHMEM's routines of one width, shmem_<NAME>_atomic_* (int: 32 bits,
 * long: 64), on word w with value x and condition c; a fetched value comes back as the unsigned
 * TYPE of that width, 0 from a routine that fetches nothing.  Written once for both widths:
 * each op calls the same routine at 32 and at 64 bits, by construction. */
#define AMO_OF_WIDTH(NAME, TYPE, op, w, x, c)                        \
    switch (op) {                                                    \
    case FADD:                                                       \
        return (TYPE)shmem_##NAME##_atomic_fetch_add(w, x, 0);       \
    case ADD:                                                        \
        return (shmem_##NAME##_atomic_add(w, x, 0), 0);              \
    case INC:                                                        \
        return (shmem_##NAME##_atomic_inc(w, 0), 0);                 \
    case FINC:                                                       \
        return (TYPE)shmem_##NAME##_atomic_fetch_inc(w, 0);          \
    case FETCH:                                                      \
        return (TYPE)shmem_##NAME##_atomic_fetch(w, 0);              \
    case SET:                                                        \
        return (shmem_##NAME##_atomic_set(w, x, 0), 0);              \
    case SWAP:                                                       \
        return (TYPE)shmem_##NAME##_atomic_swap(w, x, 0);            \
    case CSWAP:                                                      \
        return (TYPE)shmem_##NAME##_atomic_compare_swap(w, c, x, 0); \
    case AND:                                                        \
        return (shmem_##NAME##_atomic_and(w, x, 0), 0);              \
    case OR:                                                         \
        return (shmem_##NAME##_atomic_or(w, x, 0), 0);               \
    case XOR:                                                        \
        return (shmem_##NAME##_atomic_xor(w, x, 0), 0);              \
    case FAND:                                                       \
        return (TYPE)shmem_##NAME##_atomic_fetch_and(w, x, 0);       \
    case FOR:                                                        \
        return (TYPE)shmem_##NAME##_atomic_fetch_or(w, x, 0);        \
    case FXOR:                                                       \
        return (TYPE)shmem_##NAME##_atomic_fetch_xor(w, x, 0);       \
    }

/* One atomic on the word (slot 1 of a32/a64, or slot `slot` of s32/s64) of PE 0, width bits,
 * values as unsigned 64-bit (the 32-bit ones modulo 2^32). */
static uint64_t amo(int bits, enum amo_op op, uint64_t v, uint64_t cond, int slot)
{
    if (bits == 32) {
        int *w = slot ? &s32[slot] : &a32[1], x = (int)(uint32_t)v, c = (int)(uint32_t)cond;
        AMO_OF_WIDTH(int, uint32_t, op, w, x, c)
    } else {
        long *w = slot ? &s64[slot] : &a64[1], x = (long)v, c = (long)cond;
        AMO_OF_WIDTH(long, uint64_t, op, w, x, c)
    }
    abort();
}

static uint64_t mask_of(int bits)
{
    return bits == 32 ? 0xffffffffu : ~(uint64_t)0;
}

#define GUARD32 0x5a5a5a5au
#define GUARD64 0x5a5a5a5a5a5a5a5aul
/* 2^32 - 16: additions carry across bit 31 (into the guard for a 32-bit word done as a 64-bit
 * one, into bit 32 for a 64-bit one). */
#define START 0xfffffff0ul
/* Full-width patterns for fetch/set/xor. */
#define PAT32 0x89abcdefu
#define PAT64 0x0123456789abcdeful

/* PE 0 sets the word and its guards; everybody waits for it. */
static void amo_reset(int bits, uint64_t v)
{
    shmem_barrier_all();
    if (me == 0) {
        a32[0] = a32[2] = (int)GUARD32;
        a64[0] = a64[2] = (long)GUARD64;
        if (bits == 32) {
            a32[1] = (int)(uint32_t)v;
        } else {
            a64[1] = (long)v;
        }
    }
    shmem_barrier_all();
}

/* After every PE's atomics (barrier: complete everywhere), PE 0 reads the word and the guards. */
static int amo_final(int bits, uint64_t expect, uint64_t *got, char *why, size_t len)
{
    uint64_t g0, g2;
    shmem_barrier_all();
    if (me != 0) {
        *got = expect;
        return 1;
    }
    if (bits == 32) {
        *got = (uint32_t)((volatile int *)a32)[1];
        g0 = (uint32_t)((volatile int *)a32)[0], g2 = (uint32_t)((volatile int *)a32)[2];
    } else {
        *got = (uint64_t)((volatile long *)a64)[1];
        g0 = (uint64_t)((volatile long *)a64)[0], g2 = (uint64_t)((volatile long *)a64)[2];
    }
    if (*got != (expect & mask_of(bits))) {
        snprintf(why, len, "final 0x%llx, expected 0x%llx", (unsigned long long)*got,
                 (unsigned long long)(expect & mask_of(bits)));
        return 0;
    }
    if (g0 != (bits == 32 ? GUARD32 : GUARD64) || g2 != (bits == 32 ? GUARD32 : GUARD64)) {
        snprintf(why, len, "guard words changed: 0x%llx 0x%llx", (unsigned long long)g0,
                 (unsigned long long)g2);
        return 0;
    }
    return 1;
}

static void amo_verdict(const char *name, int local_ok, const char *local_why, int final_ok,
                        const char *final_why, uint64_t got)
{
    if (!local_ok) {
        verdict(name, 0, "%s", local_why);
    } else if (!final_ok) {
        verdict(name, 0, "%s", final_why);
    } else if (me == 0) {
        verdict(name, 1, "final 0x%llx after %d PEs x %d ops", (unsigned long long)got, npes,
                iters);
    } else {
        verdict(name, 1, "%d ops", iters);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every PE's fetched values into PE 0's gather array (RMA puts), then a barrier. */
static void gather_values(const uint64_t *vals, int n)
{
    shmem_putmem(gather + (size_t)me * n, vals, (size_t)n * sizeof(*vals), 0);
    shmem_barrier_all();
}

static void check_amo(const char *name, int bits, enum amo_op op)
{
    uint64_t mask = mask_of(bits), got = 0, expect = 0, own;
    uint64_t *vals = malloc(sizeof(*vals) * (size_t)iters);
    int half = bits / 2, ok = 1, fok;
    char why[200] = "", fwhy[200] = "";
    own              = (uint64_t)1 << me | (uint64_t)1 << (half + me);
    uint64_t all_own = 0;
    for (int p = 0; p < npes; ++p) {
        all_own |= (uint64_t)1 << p | (uint64_t)1 << (half + p);
    }

    switch (op) {
    case FADD:
    case FINC: {
        /* fetched values, relative to START, rise strictly on each PE and stay below the total */
        uint64_t total = op == FADD ? (uint64_t)iters * npes * (npes + 1) / 2
                                    : (uint64_t)iters * npes;
        amo_reset(bits, START);
        for (int k = 0; k < iters; ++k) {
            vals[k] = (amo(bits, op, (uint64_t)me + 1, 0, 0) - START) & mask;
            if (ok && (vals[k] >= total || (k && vals[k] <= vals[k - 1]))) {
                snprintf(why, sizeof(why), "op %d fetched START+%llu after START+%llu", k,
                         (unsigned long long)vals[k], (unsigned long long)(k ? vals[k - 1] : 0));
                ok = 0;
            }
        }
        expect = START + total;
        if (op == FINC) {
            /* fetch_inc: the fetched values of all PEs are exactly 0 .. total-1 */
            gather_values(vals, iters);
            if (me == 0) {
                qsort(gather, total, sizeof(*gather), cmp_u64);
                for (uint64_t i = 0; i < total && ok; ++i) {
                    if ((uint64_t)gather[i] != i) {
                        snprintf(why, sizeof(why), "fetched values are not 0..%llu: %llu at %llu",
                                 (unsigned long long)total - 1, (unsigned long long)gather[i],
                                 (unsigned long long)i);
                        ok = 0;
                    }
                }
            }
        }
        break;
    }
    case ADD:
    case INC:
        amo_reset(bits, START);
        for (int k = 0; k < iters; ++k) {
            amo(bits, op, (uint64_t)me + 1, 0, 0);
        }
        expect = START +
                 (op == ADD ? (uint64_t)iters * npes * (npes + 1) / 2 : (uint64_t)iters * npes);
        break;
    case FETCH: {
        uint64_t pat = bits == 32 ? PAT32 : PAT64;
        amo_reset(bits, pat);
        for (int k = 0; k < iters && ok; ++k) {
            uint64_t v = amo(bits, FETCH, 0, 0, 0);
            if (v != pat) {
                snprintf(why, sizeof(why), "fetched 0x%llx, expected 0x%llx", (unsigned long long)v,
                         (unsigned long long)pat);
                ok = 0;
            }
        }
        expect = pat;
        break;
    }
    case SET: {
        /* every PE sets its own slot of s32/s64 on PE 0 (guards on either side), then all of
         * them set the one word: the last value of some PE must win */
        uint64_t pat = bits == 32 ? PAT32 : PAT64;
        shmem_barrier_all();
        if (me == 0) {
            for (int i = 0; i < MAX_PES + 2; ++i) {
                s32[i] = (int)GUARD32;
                s64[i] = (long)GUARD64;
            }
        }
        amo_reset(bits, 0);
        for (int k = 0; k < iters; ++k) {
            amo(bits, SET, (pat ^ ((uint64_t)me << 4)) + k, 0, 1 + me);
            amo(bits, SET, (uint64_t)(me + 1) << (bits - 8) | (uint64_t)k, 0, 0);
        }
        shmem_barrier_all();
        if (me == 0) {
            for (int i = 0; i < npes + 2 && ok; ++i) {
                uint64_t want = i == 0 || i > npes ? (bits == 32 ? GUARD32 : GUARD64)
                                                   : (pat ^ ((uint64_t)(i - 1) << 4)) + iters - 1;
                uint64_t have = bits == 32 ? (uint32_t)s32[i] : (uint64_t)s64[i];
                if (have != (want & mask)) {
                    snprintf(why, sizeof(why), "slot %d is 0x%llx, expected 0x%llx", i,
                             (unsigned long long)have, (unsigned long long)(want & mask));
                    ok = 0;
                }
            }
            uint64_t w      = bits == 32 ? (uint32_t)a32[1] : (uint64_t)a64[1];
            uint64_t winner = w >> (bits - 8);
            expect          = winner >= 1 && winner <= (uint64_t)npes
                                  ? winner << (bits - 8) | (uint64_t)(iters - 1)
                                  : ~w;
        }
        break;
    }
    case SWAP: {
        /* the old values and the final value are, as a multiset, the start value and every
         * value swapped in */
        uint64_t pat = bits == 32 ? PAT32 : PAT64;
        amo_reset(bits, pat);
        for (int k = 0; k < iters; ++k) {
            vals[k] = amo(bits, SWAP, ((uint64_t)(me + 1) << (bits - 8) | (uint64_t)k) & mask, 0,
                          0);
        }
        gather_values(vals, iters);
        if (me == 0) {
            size_t n       = (size_t)iters * npes;
            uint64_t *want = malloc(sizeof(*want) * (n + 1)),
                     *have = malloc(sizeof(*have) * (n + 1));
            memcpy(have, gather, sizeof(*have) * n);
            have[n] = bits == 32 ? (uint32_t)a32[1] : (uint64_t)a64[1];
            want[0] = pat;
            for (int p = 0; p < npes; ++p) {
                for (int k = 0; k < iters; ++k) {
                    want[1 + (size_t)p * iters + k] = ((uint64_t)(p + 1) << (bits - 8) |
                                                       (uint64_t)k) &
                                                      mask;
                }
            }
            qsort(have, n + 1, sizeof(*have), cmp_u64);
            qsort(want, n + 1, sizeof(*want), cmp_u64);
            for (size_t i = 0; i <= n && ok; ++i) {
                if (have[i] != want[i]) {
                    snprintf(why, sizeof(why), "swapped-out values differ at %zu: 0x%llx vs 0x%llx",
                             i, (unsigned long long)have[i], (unsigned long long)want[i]);
                    ok = 0;
                }
            }
            expect = bits == 32 ? (uint32_t)a32[1] : (uint64_t)a64[1];
            free(want);
            free(have);
        }
        break;
    }
    case CSWAP: {
        /* a counter incremented only by compare-and-swap; a compare that must fail (the value
         * only rises from START) first */
        int retries = 0;
        amo_reset(bits, START);
        uint64_t bogus = (START - 1 - (uint64_t)me) & mask;
        uint64_t old   = amo(bits, CSWAP, 0x1234, bogus, 0);
        if (old == bogus) {
            snprintf(why, sizeof(why), "compare with 0x%llx matched", (unsigned long long)bogus);
            ok = 0;
        }
        for (int k = 0; k < iters; ++k) {
            uint64_t v = amo(bits, FETCH, 0, 0, 0);
            while ((old = amo(bits, CSWAP, (v + 1) & mask, v, 0)) != v) {
                v = old;
                ++retries;
            }
        }
        expect = START + (uint64_t)iters * npes;
        if (me != 0 && ok) {
            snprintf(why, sizeof(why), "%d retries", retries);
        }
        break;
    }
    case AND:
    case OR:
    case XOR: {
        /* every PE clears (sets, toggles 3 times) its two bits, one in each half */
        uint64_t start = op == AND ? mask : op == OR ? 0 : (bits == 32 ? PAT32 : PAT64);
        amo_reset(bits, start);
        for (int k = 0; k < (op == XOR ? 3 : 1); ++k) {
            amo(bits, op, op == AND ? ~own & mask : own, 0, 0);
        }
        expect = op == AND ? ~all_own : op == OR ? all_own : start ^ all_own;
        break;
    }
    case FAND:
    case FOR:
    case FXOR: {
        /* only this PE touches its bits: what it fetches of them is known exactly
         * (fetch_or then fetch_and: 0 then 1; fetch_xor: 0, 1, 0, ...) */
        uint64_t start = (bits == 32 ? PAT32 : PAT64) & ~all_own & mask;
        amo_reset(bits, start);
        for (int k = 0; k < iters && ok; ++k) {
            uint64_t v, want;
            if (op == FXOR) {
                v    = amo(bits, FXOR, own, 0, 0) & own;
                want = k % 2 ? own : 0;
            } else if (k % 2 == 0) {
                v = amo(bits, FOR, own, 0, 0) & own, want = 0;
            } else {
                v = amo(bits, FAND, ~own & mask, 0, 0) & own, want = own;
            }
            if (v != want) {
                snprintf(why, sizeof(why), "op %d fetched own bits 0x%llx, expected 0x%llx", k,
                         (unsigned long long)v, (unsigned long long)want);
                ok = 0;
            }
        }
        expect = start | (iters % 2 ? all_own : 0);
        break;
    }
    }
    fok = amo_final(bits, expect, &got, fwhy, sizeof(fwhy));
    if (ok && op == CSWAP && me != 0) {
        verdict(name, fok, "%s", why);
    } else {
        amo_verdict(name, ok, why, fok, fwhy, got);
    }
    free(vals);
    shmem_barrier_all();
}

/* --- synchronisation ------------------------------------------------------------------------- */

/* A ring: data put, shmem_fence, flag put; the target waits on the flag and must then see the
 * data (fence orders them). */
static void check_wait_until(const char *name)
{
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes, ok = 1, rounds = 8;
    size_t size = 8192, bad = size;
    flag32 = 0;
    shmem_barrier_all();
    for (int r = 1; r <= rounds && ok; ++r) {
        for (size_t i = 0; i < size; ++i) {
            big_src[i] = pattern(me + r, size, i);
        }
        shmem_putmem(big_dst, big_src, size, next);
        shmem_fence();
        shmem_int_p(&flag32, r, next);
        shmem_int_wait_until(&flag32, SHMEM_CMP_EQ, r);
        bad = first_bad(big_dst, prev + r, size);
        ok  = bad == size;
        shmem_barrier_all(); /* the next round overwrites big_dst */
    }
    verdict(name, ok, ok ? "%d rounds" : "round data wrong at byte %zu", ok ? rounds : 0, bad);
    shmem_barrier_all();
}

/* PE 0 waits (shmem_wait_until, GE) for a counter the others increment with atomics: with
 * software atomics PE 0 must progress them while it waits. */
static void check_wait_until_amo(const char *name)
{
    int ok = 1;
    cnt32 = 0, cnt64 = 0;
    shmem_barrier_all();
    if (me == 0) {
        shmem_int_wait_until(&cnt32, SHMEM_CMP_GE, (npes - 1) * iters);
        shmem_long_wait_until(&cnt64, SHMEM_CMP_GE, (long)(npes - 1) * iters);
        ok = cnt32 == (npes - 1) * iters && cnt64 == (long)(npes - 1) * iters;
    } else {
        for (int k = 0; k < iters; ++k) {
            shmem_int_atomic_inc(&cnt32, 0);
            shmem_long_atomic_add(&cnt64, 1, 0);
        }
        shmem_quiet();
    }
    verdict(name, ok, "counters %d %ld", me == 0 ? cnt32 : 0, me == 0 ? cnt64 : 0L);
    shmem_barrier_all();
}

/* Rounds of: an atomic increment on PE 0, a put of the round to the next PE, barrier_all;
 * afterwards everybody must see the whole round done. */
static void check_barrier_all(const char *name)
{
    int prev = (me + npes - 1) % npes, ok = 1, rounds = 16;
    long seen = 0;
    cnt64     = 0;
    shmem_barrier_all();
    for (int r = 1; r <= rounds && ok; ++r) {
        shmem_long_atomic_inc(&cnt64, 0);
        shmem_long_p(&s64[1], (long)r << 8 | me, (me + 1) % npes);
        shmem_barrier_all();
        seen = shmem_long_atomic_fetch(&cnt64, 0);
        ok   = seen == (long)r * npes && s64[1] == ((long)r << 8 | prev);
        shmem_barrier_all();
    }
    verdict(name, ok, "%d rounds (counter %ld, slot 0x%lx)", rounds, seen, s64[1]);
    shmem_barrier_all();
}

/* --- collectives (scoll) ------------------------------------------------------------------- */

static void check_reduce(const char *name, int is_long, int is_max)
{
    int ok = 1, bad = -1;
    for (int j = 0; j < RED_N; ++j) {
        /* long values above 2^32: a reduction done on 32 bits loses them */
        ired_src[j] = is_max ? ((me + j) % npes) * 1000 + j : (me + 1) * (j + 1);
        lred_src[j] = (1l << 40) * (is_max ? (me + j) % npes : me + 1) + j;
        ired_dst[j] = -1, lred_dst[j] = -1;
    }
    reset_psync();
    if (is_long) {
        (is_max ? shmem_long_max_to_all : shmem_long_sum_to_all)(lred_dst, lred_src, RED_N, 0, 0,
                                                                 npes, lred_wrk, psync);
    } else {
        (is_max ? shmem_int_max_to_all : shmem_int_sum_to_all)(ired_dst, ired_src, RED_N, 0, 0,
                                                               npes, ired_wrk, psync);
    }
    for (int j = 0; j < RED_N && ok; ++j) {
        long sum_pes = (long)npes * (npes + 1) / 2;
        long want    = is_long ? (is_max ? (1l << 40) * (npes - 1) + j
                                         : (1l << 40) * sum_pes + (long)npes * j)
                               : (is_max ? (npes - 1) * 1000 + j : sum_pes * (j + 1));
        long have    = is_long ? lred_dst[j] : ired_dst[j];
        if (have != want) {
            ok = 0, bad = j;
        }
    }
    if (ok) {
        verdict(name, 1, "%d elements", RED_N);
    } else {
        verdict(name, 0, "element %d is %ld", bad, is_long ? lred_dst[bad] : (long)ired_dst[bad]);
    }
    shmem_barrier_all();
}

static void check_reduce_int_sum(const char *name)
{
    check_reduce(name, 0, 0);
}
static void check_reduce_int_max(const char *name)
{
    check_reduce(name, 0, 1);
}
static void check_reduce_long_sum(const char *name)
{
    check_reduce(name, 1, 0);
}
static void check_reduce_long_max(const char *name)
{
    check_reduce(name, 1, 1);
}

static void check_broadcast(const char *name)
{
    int ok = 1, root = npes - 1;
    for (int j = 0; j < RED_N; ++j) {
        lred_src[j] = (long)me << 32 | j;
        lred_dst[j] = -1;
    }
    reset_psync();
    shmem_broadcast64(lred_dst, lred_src, RED_N, root, 0, 0, npes, psync);
    shmem_barrier_all();
    for (int j = 0; j < RED_N && ok && me != root; ++j) {
        ok = lred_dst[j] == ((long)root << 32 | j);
    }
    verdict(name, ok, "%d longs from PE %d", RED_N, root);
    shmem_barrier_all();
}

static void check_fcollect(const char *name)
{
    int ok = 1, n = 100;
    long *dst = (long *)big_dst;
    for (int j = 0; j < n; ++j) {
        lred_src[j] = (long)me << 32 | j;
    }
    reset_psync();
    shmem_fcollect64(dst, lred_src, n, 0, 0, npes, psync);
    for (int p = 0; p < npes && ok; ++p) {
        for (int j = 0; j < n && ok; ++j) {
            ok = dst[p * n + j] == ((long)p << 32 | j);
        }
    }
    verdict(name, ok, "%d x %d longs", npes, n);
    shmem_barrier_all();
}

/* --- locks ------------------------------------------------------------------------------------ */

/* Inside shmem_set_lock/clear_lock: a non-atomic read-modify-write of a counter on PE 0 (g,
 * p, quiet) and an occupancy count (fetch_add): any overlap loses an increment or shows a
 * second holder.  test: shmem_test_lock in a loop instead of shmem_set_lock. */
static void lock_run(const char *name, int test)
{
    int ok = 1, tries = 0;
    long holders = 0;
    lock_word = 0, lock_count = 0, lock_inside = 0;
    shmem_barrier_all();
    for (int k = 0; k < iters; ++k) {
        if (test) {
            while (shmem_test_lock(&lock_word)) {
                ++tries;
            }
        } else {
            shmem_set_lock(&lock_word);
        }
        holders = shmem_long_atomic_fetch_add(&lock_inside, 1, 0);
        if (holders != 0 && ok) {
            ok = 0;
        }
        long v = shmem_long_g(&lock_count, 0);
        shmem_long_p(&lock_count, v + 1, 0);
        shmem_quiet();
        shmem_long_atomic_add(&lock_inside, -1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock_word);
    }
    shmem_barrier_all();
    if (me == 0 && ok) {
        ok = lock_count == (long)iters * npes && lock_inside == 0;
    }
    verdict(name, ok, "counter %ld of %ld, %s", me == 0 ? lock_count : (long)iters * npes,
            (long)iters * npes, ok ? "one holder at a time" : "overlap or lost update");
    (void)tries;
    shmem_barrier_all();
}

static void check_lock(const char *name)
{
    lock_run(name, 0);
}
static void check_test_lock(const char *name)
{
    lock_run(name, 1);
}

/* --- table ------------------------------------------------------------------------------------ */

#define AMO_CHECK(bits, op, opname)                          \
    static void check_amo##bits##_##opname(const char *name) \
    {                                                        \
        check_amo(name, bits, op);                           \
    }
#define AMO_CHECKS(bits)                 \
    AMO_CHECK(bits, FADD, fetch_add)     \
    AMO_CHECK(bits, ADD, add)            \
    AMO_CHECK(bits, INC, inc)            \
    AMO_CHECK(bits, FINC, fetch_inc)     \
    AMO_CHECK(bits, FETCH, fetch)        \
    AMO_CHECK(bits, SET, set)            \
    AMO_CHECK(bits, SWAP, swap)          \
    AMO_CHECK(bits, CSWAP, compare_swap) \
    AMO_CHECK(bits, AND, and)            \
    AMO_CHECK(bits, OR, or)              \
    AMO_CHECK(bits, XOR, xor)            \
    AMO_CHECK(bits, FOR, fetch_or_and)   \
    AMO_CHECK(bits, FXOR, fetch_xor)
AMO_CHECKS(32)
AMO_CHECKS(64)

#define AMO_ENTRIES(bits)                                                                         \
    {"amo" #bits "_fetch_add", check_amo##bits##_fetch_add},                                      \
        {"amo" #bits "_add", check_amo##bits##_add}, {"amo" #bits "_inc", check_amo##bits##_inc}, \
        {"amo" #bits "_fetch_inc", check_amo##bits##_fetch_inc},                                  \
        {"amo" #bits "_fetch", check_amo##bits##_fetch},                                          \
        {"amo" #bits "_set", check_amo##bits##_set},                                              \
        {"amo" #bits "_swap", check_amo##bits##_swap},                                            \
        {"amo" #bits "_compare_swap", check_amo##bits##_compare_swap},                            \
        {"amo" #bits "_and", check_amo##bits##_and}, {"amo" #bits "_or", check_amo##bits##_or},   \
        {"amo" #bits "_xor", check_amo##bits##_xor},                                              \
        {"amo" #bits "_fetch_or_and", check_amo##bits##_fetch_or_and},                            \
    {                                                                                             \
        "amo" #bits "_fetch_xor", check_amo##bits##_fetch_xor                                     \
    }

static const struct {
    const char *name;
    void (*fn)(const char *name);
} checks[] = {
    {"put", check_put},
    {"get", check_get},
    {"put_large", check_put_large},
    {"get_large", check_get_large},
    {"put_nbi", check_put_nbi},
    {"get_nbi", check_get_nbi},
    {"p_g", check_p_g},
    {"iput_iget", check_iput_iget},
    AMO_ENTRIES(32),
    AMO_ENTRIES(64),
    {"wait_until", check_wait_until},
    {"wait_until_amo", check_wait_until_amo},
    {"barrier_all", check_barrier_all},
    {"reduce_int_sum", check_reduce_int_sum},
    {"reduce_int_max", check_reduce_int_max},
    {"reduce_long_sum", check_reduce_long_sum},
    {"reduce_long_max", check_reduce_long_max},
    {"broadcast64", check_broadcast},
    {"fcollect64", check_fcollect},
    {"lock", check_lock},
    {"test_lock", check_test_lock},
};

static int selected(const char *name)
{
    size_t n = strlen(name);
    if (only == NULL) {
        return 1;
    }
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += n) {
        if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    const size_t nchecks = sizeof(checks) / sizeof(checks[0]);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--list")) {
            for (size_t c = 0; c < nchecks; ++c) {
                printf("%s\n", checks[c].name);
            }
            return 0;
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            timeout_s = atoi(argv[++i]);
        } else {
            fprintf(stderr,
                    "usage: shmem_check [--list] [--iters N] [--only NAME,...] [--timeout S]\n");
            return 2;
        }
    }
    if (iters < 2 || iters > 100000 || timeout_s < 1) {
        fprintf(stderr, "shmem_check: --iters between 2 and 100000, --timeout at least 1\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm((unsigned)timeout_s);
    shmem_init();
    double t0 = now_s();
    me = shmem_my_pe(), npes = shmem_n_pes();
    if (npes < 2 || npes > MAX_PES) {
        if (me == 0) {
            fprintf(stderr, "shmem_check: 2 to %d PEs, not %d\n", MAX_PES, npes);
        }
        shmem_global_exit(2);
    }
    big_src = shmem_malloc(LARGE);
    big_dst = shmem_malloc(LARGE);
    gather  = shmem_malloc(sizeof(*gather) * (size_t)iters * npes);
    if (big_src == NULL || big_dst == NULL || gather == NULL) {
        fprintf(stderr, "shmem_check: shmem_malloc failed on PE %d\n", me);
        shmem_global_exit(2);
    }
    for (size_t c = 0; c < nchecks; ++c) {
        if (!selected(checks[c].name)) {
            continue;
        }
        if (me == 0) {
            printf("BEGIN %s %.3f\n", checks[c].name, now_s() - t0);
            fflush(stdout);
        }
        current = checks[c].name;
        alarm((unsigned)timeout_s);
        checks[c].fn(checks[c].name);
    }
    current = "finalize";
    alarm((unsigned)timeout_s);
    shmem_barrier_all();
    if (me == 0) {
        printf("BEGIN finalize %.3f\n", now_s() - t0);
    }
    printf("DONE %d %d\n", me, failures);
    fflush(stdout);
    shmem_free(gather);
    shmem_free(big_dst);
    shmem_free(big_src);
    shmem_finalize();
    return failures != 0;
}
