/*
 * fuzz_check.h: what every fuzz harness (tests/fuzz/fuzz_*.c*) shares.
 *
 * A harness is one LLVMFuzzerTestOneInput() over the bytes a parser gets from
 * outside the process; two drivers run it: libFuzzer (tests/fuzz/libfuzzer,
 * clang) and the seeded randomized gtest replay.cpp (any compiler).  A
 * property that does not hold aborts, which both drivers report with the input.
 */
#ifndef GDR_FUZZ_CHECK_H
#define GDR_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef __cplusplus
}
#endif

/* abort() with the broken property: the drivers print the input that did it */
#define FUZZ_CHECK(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

#endif
