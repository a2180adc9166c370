/* Where main's frames begin: libmtheap-debug.so defines __libc_start_main, so the program's
 * _start calls it first (a preloaded library, or one linked before libc), and it hands glibc's
 * __libc_start_main a main of its own that calls the program's.  That wrapper's frame marks the
 * boundary: main and everything it called run below it.
 *
 * The leak check needs this: it runs in a destructor, after main has returned, on frames that
 * reuse the memory main's frames held, and words left there by main (a local that pointed to a
 * block it then leaked) would make a leak look reachable.  Once main has returned, the check
 * scans the main thread's stack only above the boundary.  When main has not returned (exit()
 * called from inside the program), its frames are live and are scanned as before.
 *
 * Invariants
 *   - the program's main is always called, with its own arguments, and its return value goes
 *     to glibc unchanged; if glibc's __libc_start_main cannot be found, the process stops with
 *     one line saying so (it cannot start without it);
 *   - mthd_main_frame is 0 until main is called; mthd_main_returned is set only after it
 *     returned, so the leak check never skips live frames.
 */
#define _GNU_SOURCE
#include "mthd.h"

#include <dlfcn.h>
#include <unistd.h>

MTHD_HIDDEN uintptr_t mthd_main_frame;
MTHD_HIDDEN volatile int mthd_main_returned;

typedef int (*mthd_main_fn)(int, char **, char **);
typedef int (*mthd_start_fn)(mthd_main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static mthd_main_fn mthd_real_main;

__attribute__((noinline)) static int mthd_main_wrapper(int argc, char **argv, char **envp) {
  mthd_main_frame = (uintptr_t)__builtin_frame_address(0);
  int r = mthd_real_main(argc, argv, envp);
  mthd_main_returned = 1;
  return r;
}

__attribute__((visibility("default"))) int __libc_start_main(mthd_main_fn main, int argc, char **argv,
                                                             void (*init)(void), void (*fini)(void),
                                                             void (*rtld_fini)(void), void *stack_end) {
  mthd_start_fn real = (mthd_start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
  if (!real) {
    static const char msg[] = "mtheap-debug: cannot find glibc's __libc_start_main\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(127);
  }
  mthd_real_main = main;
  return real(mthd_main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}
