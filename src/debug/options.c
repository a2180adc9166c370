/* MTHEAP_DEBUG: which checks the debug library performs.  Read once, at the first allocation.
 *
 * Invariants
 *   - the options never change after mthd_options_init(): a block's layout (header or not)
 *     depends on them, and a block must be freed with the layout it was allocated with;
 *   - parsing never allocates (it runs inside the first malloc, maybe before libc's
 *     constructors, when environ may not be set yet: then /proc/self/environ is read);
 *   - a word we cannot parse is reported once on stderr and ignored, never silently.
 *
 * Syntax (docs/DEBUG.md has the table): a comma-separated list of items.
 *   features   full guards patterns quarantine[=SIZE] audit leaks sample=N guardpage   ("-x"/"no-x" removes)
 *   modifiers  continue qblocks=N qmax=SIZE fill=SIZE depth=N unwind=cfi|libgcc|fp lines=0|1
 *              sample_slots=N sample_max=SIZE sample_align=N sample_side=after|before|random
 *              sample_mprotect leaks_exitcode=N
 *              leaks_max=N exitcode=N
 *              verbose
 * When no item names a feature (unset, empty, or modifiers only), the features are "full".
 */
#include "mthd.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

MTHD_HIDDEN mthd_options_t mthd_opt;

static void opt_warn(const char *item, const char *why) {
  mthd_out_t o;
  mthd_out_init(&o);
  mthd_printf(&o, "==%d== mtheap-debug: warning: MTHEAP_DEBUG item '%s' %s; ignored\n", (int)getpid(), item, why);
  mthd_flush(&o);
}

/* A size with an optional K/M/G suffix (powers of 1024). */
static bool parse_size(const char *v, size_t *out) {
  if (!*v) return false;
  size_t x = 0;
  const char *p = v;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (x > (SIZE_MAX - 9) / 10) return false;
    x = x * 10 + (size_t)(*p - '0');
  }
  if (p == v) return false;
  size_t mult = 1;
  if (*p == 'k' || *p == 'K') mult = (size_t)1 << 10, p++;
  else if (*p == 'm' || *p == 'M') mult = (size_t)1 << 20, p++;
  else if (*p == 'g' || *p == 'G') mult = (size_t)1 << 30, p++;
  if (*p == 'i' || *p == 'I') p++;
  if (*p == 'b' || *p == 'B') p++;
  if (*p) return false;
  if (mult > 1 && x > SIZE_MAX / mult) return false;
  *out = x * mult;
  return true;
}

static bool parse_bool(const char *v, bool *out) {
  if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "true")) return *out = true, true;
  if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "false")) return *out = false, true;
  return false;
}

/* The value of MTHEAP_DEBUG copied into buf, or NULL when it is not set. */
static const char *read_env(char *buf, size_t cap) {
  extern char **environ;
  const char *v = NULL;
  if (environ) {
    v = getenv("MTHEAP_DEBUG");
    if (!v) return NULL;
    size_t n = strlen(v);
    if (n >= cap) n = cap - 1;
    memcpy(buf, v, n);
    buf[n] = 0;
    return buf;
  }
  /* too early for environ: the kernel's copy has it */
  static char raw[32768];
  int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  size_t n = 0;
  for (;;) {
    ssize_t k = read(fd, raw + n, sizeof raw - 1 - n);
    if (k <= 0) break;
    n += (size_t)k;
  }
  close(fd);
  raw[n] = 0;
  for (size_t i = 0; i < n; i += strlen(raw + i) + 1) {
    if (!strncmp(raw + i, "MTHEAP_DEBUG=", 13)) {
      size_t m = strlen(raw + i + 13);
      if (m >= cap) m = cap - 1;
      memcpy(buf, raw + i + 13, m);
      buf[m] = 0;
      return buf;
    }
  }
  return NULL;
}

void mthd_options_init(void) {
  mthd_options_t *o = &mthd_opt;
  o->cont = false;
  o->lines = true;
  o->unwind = MTHD_UNWIND_CFI;
  o->depth = 16;
  o->quarantine_bytes = (size_t)16 << 20;
  o->quarantine_blocks = (size_t)1 << 18;
  o->quarantine_max_block = 0;  /* derived below */
  o->fill_max = (size_t)64 << 10;
  o->sample = 0;
  o->sample_slots = 256;
  o->sample_max = (size_t)16 << 10;
  o->sample_align = 16;
  o->sample_mprotect = false;
  o->sample_side = MTHD_SIDE_AFTER;
  o->leaks_exitcode = 0;
  o->leaks_max = 20;
  o->error_exitcode = 0;

  bool guards = false, patterns = false, quarantine = false, audit = false, leaks = false;
  bool named = false, guardpage = false, slots_set = false, max_set = false;
  bool features_named = false;  /* an item that sets guards/patterns/quarantine/audit/leaks */
  char buf[4096];
  const char *env = read_env(buf, sizeof buf);
  char *s = env ? buf : NULL;
  while (s && *s) {
    char *item = s;
    char *comma = strchr(s, ',');
    if (comma) *comma = 0;
    s = comma ? comma + 1 : NULL;
    while (*item == ' ') item++;
    if (!*item) continue;
    bool off = false;
    if (item[0] == '-') off = true, item++;
    else if (!strncmp(item, "no-", 3)) off = true, item += 3;
    char *val = strchr(item, '=');
    if (val) *val++ = 0;
    bool on = !off;
    size_t z;
    bool b;
#define FEATURE(name, var) else if (!strcmp(item, name)) { var = on; named = features_named = true; if (val) opt_warn(name, "takes no value"); }
    if (!strcmp(item, "full") || !strcmp(item, "all")) {
      guards = patterns = quarantine = audit = leaks = on;
      named = features_named = true;
    } else if (!strcmp(item, "none") || !strcmp(item, "off")) {
      guards = patterns = quarantine = audit = leaks = false;
      o->sample = 0;
      named = features_named = true;
    }
    FEATURE("guards", guards)
    FEATURE("patterns", patterns)
    FEATURE("audit", audit)
    FEATURE("leaks", leaks)
    else if (!strcmp(item, "quarantine")) {
      quarantine = on;
      named = features_named = true;
      if (val && !parse_size(val, &o->quarantine_bytes)) opt_warn("quarantine", "needs a size (e.g. quarantine=64M)");
      if (val && o->quarantine_bytes == 0) quarantine = false;
    } else if (!strcmp(item, "sample")) {
      named = true;
      if (off) o->sample = 0;
      else if (!val || !parse_size(val, &z) || z == 0 || z > (size_t)1 << 40) opt_warn("sample", "needs a count N >= 1 (one allocation in N)");
      else o->sample = (long)z;
    } else if (!strcmp(item, "guardpage")) {
      /* the guard-page mode for test suites: every block against a guard page while slots last */
      guardpage = on;
      named = true;
      if (val) opt_warn("guardpage", "takes no value (sample_slots=N and sample_max=SIZE size it)");
    } else if (!strcmp(item, "continue")) {
      o->cont = on;
    } else if (!strcmp(item, "verbose")) {
      o->verbose = on;
    } else if (!strcmp(item, "qblocks") && val && parse_size(val, &z)) {
      o->quarantine_blocks = z;
    } else if (!strcmp(item, "qmax") && val && parse_size(val, &z)) {
      o->quarantine_max_block = z;
    } else if (!strcmp(item, "fill") && val && parse_size(val, &z)) {
      o->fill_max = z;
    } else if (!strcmp(item, "depth") && val && parse_size(val, &z) && z >= 1 && z <= MTHD_MAX_DEPTH) {
      o->depth = (int)z;
    } else if (!strcmp(item, "unwind") && val && (!strcmp(val, "fp") || !strcmp(val, "cfi") || !strcmp(val, "libgcc"))) {
      o->unwind = !strcmp(val, "fp") ? MTHD_UNWIND_FP : !strcmp(val, "cfi") ? MTHD_UNWIND_CFI : MTHD_UNWIND_LIBGCC;
    } else if (!strcmp(item, "lines") && (!val || parse_bool(val, &b))) {
      o->lines = val ? b && on : on;
    } else if (!strcmp(item, "sample_slots") && val && parse_size(val, &z) && z >= 1 && z <= ((size_t)1 << 20)) {
      o->sample_slots = z;
      slots_set = true;
    } else if (!strcmp(item, "sample_max") && val && parse_size(val, &z) && z >= 1 && z <= ((size_t)1 << 30)) {
      o->sample_max = z;
      max_set = true;
    } else if (!strcmp(item, "sample_align") && val && parse_size(val, &z) && z >= 1 && z <= 16 && !(z & (z - 1))) {
      o->sample_align = z;
    } else if (!strcmp(item, "sample_side") && val &&
               (!strcmp(val, "after") || !strcmp(val, "before") || !strcmp(val, "random"))) {
      o->sample_side = !strcmp(val, "after") ? MTHD_SIDE_AFTER : !strcmp(val, "before") ? MTHD_SIDE_BEFORE : MTHD_SIDE_RANDOM;
    } else if (!strcmp(item, "sample_mprotect")) {
      o->sample_mprotect = on;
    } else if (!strcmp(item, "leaks_exitcode") && val && parse_size(val, &z) && z <= 255) {
      o->leaks_exitcode = (int)z;
    } else if (!strcmp(item, "leaks_max") && val && parse_size(val, &z) && z <= 100000) {
      o->leaks_max = (int)z;
    } else if (!strcmp(item, "exitcode") && val && parse_size(val, &z) && z <= 255) {
      o->error_exitcode = (int)z;
    } else {
      opt_warn(item, val ? "is unknown or has a bad value" : "is unknown");
    }
#undef FEATURE
  }
  if (!named) guards = patterns = quarantine = audit = leaks = true;
  /* guardpage alone: the blocks that get no slot (beyond the slots, larger than their size)
   * are checked the way full checks every block, less the leak check (which would see only
   * them): a double free, an overflow or a write after free of those is found too */
  if (guardpage && !features_named) guards = patterns = quarantine = audit = true;
  if (guardpage) {
    o->sample = 1;
    if (!slots_set) o->sample_slots = MTHD_GUARDPAGE_SLOTS;
    if (!max_set) o->sample_max = MTHD_GUARDPAGE_MAX;
  }
  o->guards = guards;
  o->patterns = patterns;
  o->quarantine = quarantine;
  o->audit = audit;
  o->leaks = leaks;
  o->headers = guards || patterns || quarantine || audit || leaks;
  if (o->quarantine_max_block == 0) o->quarantine_max_block = o->quarantine_bytes / 4;
}
