/* fuzz_api.h: the fuzzer's one entry point, shared by the replay program and libFuzzer. */
#ifndef MTFZ_FUZZ_API_H
#define MTFZ_FUZZ_API_H
#include <stddef.h>
#include <stdint.h>

/* Runs the byte string as a program of allocator operations against the shadow model; aborts
 * with one line on stderr at the first wrong answer.  allow_fork: the FORK operation may fork
 * (not under libFuzzer, whose process must not be duplicated). */
int mtfz_run(const uint8_t *data, size_t size, int allow_fork);

/* Operations executed by every mtfz_run of this process so far (docs/RELIABILITY.md quotes it). */
uint64_t mtfz_ops(void);

#endif
