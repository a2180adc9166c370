/* The allocator's clock comes from the vDSO, not from libc's clock_gettime (src/clock.c: the
 * libc call faulted in 128 KiB of libc's time functions, most of what libmtheap added to a small
 * program's RSS), and it is a working clock: the purge delay is kept, neither cut short nor
 * never reached.
 *
 * This program defines clock_gettime itself, so every call libmtheap makes to libc's (through
 * its GOT) lands here and is counted when it comes from libmtheap.  It frees 32 MiB of large
 * blocks and waits for their pages to be purged (default delay, about 1 s), doing a little
 * malloc/free work meanwhile so the deadlines are looked at: the pages must stay resident for
 * most of the delay, be gone within 4 s, and libmtheap must not have called clock_gettime.
 * (linked with libmtheap.so, -rdynamic) */
#include "testutil.h"
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/syscall.h>

static _Atomic int calls_from_mtheap;

int clock_gettime(clockid_t id, struct timespec *ts) {
  Dl_info info;
  if (dladdr(__builtin_return_address(0), &info) && info.dli_fname &&
      strstr(info.dli_fname, "libmtheap"))
    atomic_fetch_add(&calls_from_mtheap, 1);
  return (int)syscall(SYS_clock_gettime, id, ts);
}

static uint64_t now_ms(void) {
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

enum { NB = 64, BS = 512 << 10 };   /* large blocks: spans in span segments */

static size_t resident(void *const *b) {
  unsigned char v[BS / 4096];
  size_t r = 0;
  for (int i = 0; i < NB; i++) {
    /* whole pages inside the block only: its first and last may share a page with neighbours */
    uintptr_t lo = ((uintptr_t)b[i] + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)b[i] + BS) & ~(uintptr_t)4095;
    TCHECK(mincore((void *)lo, hi - lo, v) == 0);
    for (size_t k = 0; k < (hi - lo) / 4096; k++) r += v[k] & 1;
  }
  return r;
}

int main(void) {
  th_require_mtheap_extras();
  void *b[NB];
  for (int i = 0; i < NB; i++) {
    b[i] = malloc(BS);
    TCHECK(b[i] != NULL);
    memset(b[i], 0x5a, BS);
  }
  size_t full = resident(b);
  for (int i = 0; i < NB; i++) free(b[i]);
  uint64_t t0 = now_ms();
  size_t r = resident(b);
  TCHECKF(r * 2 > full, "%zu of %zu pages resident right after the free: purged at once, not after the delay", r, full);
  uint64_t gone = 0;
  while (now_ms() - t0 < 4000) {
    for (int k = 0; k < 64; k++) free(malloc(48 + (size_t)k * 16));
    mtheap_collect(false);
    r = resident(b);
    if (r * 10 < full) {
      gone = now_ms() - t0;
      break;
    }
    th_sleep_ms(10);
  }
  int calls = atomic_load(&calls_from_mtheap);
  printf("freed %zu resident pages; under 10%% after %" PRIu64 " ms; libmtheap called libc's clock_gettime %d times\n",
         full, gone, calls);
  TCHECKF(gone != 0, "%zu of %zu pages still resident 4 s after the free", r, full);
  TCHECKF(gone >= 500, "purged after %" PRIu64 " ms: the delay (1 s) was not kept", gone);
  TCHECKF(calls == 0, "libmtheap called libc's clock_gettime %d times (src/clock.c reads the vDSO)", calls);
  return 0;
}
