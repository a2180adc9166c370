/* For the test programs whose report must count an exact number of blocks: a thread that holds
 * a mutex lets go only once another thread sleeps on it.  A fixed sleep before the unlock made
 * the count depend on scheduling: on two busy cores (ctest runs these beside the stress tests)
 * a descheduled waiter arrived after the unlock, found the mutex free, and a block went
 * missing (heap_locks: count 2 against 3). */
#ifndef PS_HOLD_H
#define PS_HOLD_H
#include <pthread.h>
#include <unistd.h>

/* glibc marks a normal mutex's lock word 2 ("waiters") before the futex wait; 5 s at most, so
 * a program whose waiter never comes still ends and its count shows what happened. */
static inline void ps_hold_until_waited(pthread_mutex_t *m) {
  for (int ms = 0; ms < 5000 && __atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) != 2; ms++)
    usleep(1000);
}
#endif
