/* The one lock type inside mtheap: a three-state futex mutex (0 free, 1 held, 2 held with
 * waiters).  It guards only rare operations (reserving address space, huge blocks, the heap
 * lists), and every wait is counted and timed so the statistics show whether it ever matters. */
#include "internal.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static void mth_futex_wait(_Atomic int *addr, int val) {
  syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
static void mth_futex_wake(_Atomic int *addr) {
  syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void mth_lock_slow(mth_lock_t *l) {
  uint64_t t0 = mth_clock_ns();
  /* spin a little: the critical sections are short */
  for (int i = 0; i < 100; i++) {
    int z = 0;
    if (atomic_load_explicit(&l->state, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_weak_explicit(&l->state, &z, 1, memory_order_acquire,
                                              memory_order_relaxed))
      goto done;
    __builtin_ia32_pause();
  }
  while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0)
    mth_futex_wait(&l->state, 2);
done:
  atomic_fetch_add_explicit(&mth_gstats.lock_waits, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mth_gstats.lock_wait_ns, mth_clock_ns() - t0, memory_order_relaxed);
}

void mth_unlock_slow(mth_lock_t *l) { mth_futex_wake(&l->state); }
