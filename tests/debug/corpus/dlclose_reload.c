/* Expected: heap-buffer-overflow (1 byte past a 40-byte block), allocated in make_reloaded_record
 * called through a plugin that replaced an unloaded one at the same address, with the stack
 * right through the plugin down to load_and_run.
 *
 * The two plugins (tests/debug/unwind/plugin.c, next to this program) have the same code at the
 * same addresses and frames of different sizes: libmtheap-debug's cached unwind rules for the
 * first would walk the second's frame wrongly (the stack would stop inside the plugin) unless
 * its dlclose drops them. */
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *record;

static void make_plain_record(void) { free(malloc(40)); }

static void make_reloaded_record(void) {
  record = malloc(40);
  for (int i = 0; i <= 40; i++) record[i] = 'r'; /* BUG: <= */
}

static void load_and_run(const char *dir, const char *name, void (*cb)(void), int unload) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    exit(2);
  }
  void (*call)(void (*)(void)) = (void (*)(void (*)(void)))dlsym(h, "plugin_call");
  if (!call) exit(2);
  call(cb);
  if (unload) dlclose(h);
}

int main(int argc, char **argv) {
  char self[4096];
  snprintf(self, sizeof self, "%s", argv[0]);
  const char *dir = dirname(self);
  load_and_run(dir, "libmthd_unwind_plugin_a.so", make_plain_record, 1);
  load_and_run(dir, "libmthd_unwind_plugin_b.so", make_reloaded_record, 0);
  free(record);
  return 0;
}
