/* A plugin for test_unwind.c, built twice with different frame sizes (PLUGIN_FRAME) and the
 * same instruction lengths, so that after dlclose of one and dlopen of the other the same
 * return address belongs to a frame of another size: a cached rule from the first would walk
 * the second wrongly. */
#include <stddef.h>

#ifndef PLUGIN_FRAME
#error "build with -DPLUGIN_FRAME=N (N in 1000..4000: the same instruction lengths)"
#endif

typedef void (*plugin_cb_t)(void);

__attribute__((noinline, visibility("default"))) void plugin_call(plugin_cb_t cb) {
  volatile char pad[PLUGIN_FRAME];
  /* zeroed: a walk with the other plugin's rule reads a return address of 0 and stops */
  for (int i = 0; i < PLUGIN_FRAME; i++) pad[i] = 0;
  cb();
  __asm__ volatile("" ::: "memory");
}
