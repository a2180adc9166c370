/* Options from the environment, read once at process start.
 * Every variable is documented in the README's option table; a value we cannot parse gets one
 * warning line naming the variable and the default kept, never a silent misconfiguration. */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

MTH_HIDDEN mth_options_t mth_opt = {
    .purge_delay_ms = 1000,
    .stats_at_exit = false,
    .verbose = false,
    .thp = false,
    .abort_on_invalid = true,
    .bcache = true,
    .region_size = MTH_REGION_SIZE,
};

/* stderr through write(2): no stdio, no malloc, usable from any state of the heap. */
static void mth_vmessage(const char *prefix, const char *fmt, va_list ap) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "mtheap: %s", prefix);
  if (n < 0) n = 0;
  int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  size_t len = (size_t)n + (m > 0 ? (size_t)m : 0);
  if (len >= sizeof buf - 1) len = sizeof buf - 2;
  if (len == 0 || buf[len - 1] != '\n') buf[len++] = '\n';
  ssize_t w = write(STDERR_FILENO, buf, len);
  (void)w;
}

void mth_message(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mth_vmessage("", fmt, ap);
  va_end(ap);
}

void mth_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mth_vmessage("error: ", fmt, ap);
  va_end(ap);
  abort();
}

static bool mth_parse_bool(const char *name, const char *v, bool dflt) {
  if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"))
    return true;
  if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off"))
    return false;
  mth_message("warning: %s=%s is not a boolean (use 1 or 0); using the default %d", name, v, dflt);
  return dflt;
}

/* An integer with an optional K/M/G suffix (powers of 1024) when scale is true. */
static bool mth_parse_long(const char *v, long *out, bool scale) {
  errno = 0;
  char *end;
  long x = strtol(v, &end, 10);
  if (errno || end == v) return false;
  if (scale && *end) {
    long mult = 1;
    switch (*end) {
      case 'k': case 'K': mult = 1L << 10; break;
      case 'm': case 'M': mult = 1L << 20; break;
      case 'g': case 'G': mult = 1L << 30; break;
      default: return false;
    }
    if (x > (long)(~0UL >> 1) / mult) return false;
    x *= mult;
    end++;
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'b' || *end == 'B') end++;
  }
  if (*end) return false;
  *out = x;
  return true;
}

void mth_options_init(void) {
  const char *v;
  if ((v = getenv("MTHEAP_STATS")) && *v) mth_opt.stats_at_exit = mth_parse_bool("MTHEAP_STATS", v, false);
  if ((v = getenv("MTHEAP_VERBOSE")) && *v) mth_opt.verbose = mth_parse_bool("MTHEAP_VERBOSE", v, false);
  if ((v = getenv("MTHEAP_THP")) && *v) mth_opt.thp = mth_parse_bool("MTHEAP_THP", v, false);
  if ((v = getenv("MTHEAP_BCACHE")) && *v) mth_opt.bcache = mth_parse_bool("MTHEAP_BCACHE", v, true);
  if ((v = getenv("MTHEAP_ABORT_ON_INVALID")) && *v)
    mth_opt.abort_on_invalid = mth_parse_bool("MTHEAP_ABORT_ON_INVALID", v, true);
  if ((v = getenv("MTHEAP_PURGE_DELAY_MS")) && *v) {
    long x;
    if (mth_parse_long(v, &x, false) && x >= -1 && x <= 3600L * 1000)
      mth_opt.purge_delay_ms = x;
    else
      mth_message("warning: MTHEAP_PURGE_DELAY_MS=%s is not a number of milliseconds in "
                  "-1..3600000; using the default %ld", v, mth_opt.purge_delay_ms);
  }
  if ((v = getenv("MTHEAP_REGION_SIZE")) && *v) {
    long x;
    if (mth_parse_long(v, &x, true) && x >= (long)MTH_REGION_SIZE && x <= (64L << 30) &&
        (x & (long)(MTH_REGION_SIZE - 1)) == 0)
      mth_opt.region_size = (size_t)x;
    else
      mth_message("warning: MTHEAP_REGION_SIZE=%s is not a multiple of 1G between 1G and 64G; "
                  "using the default 1G", v);
  }
  if (mth_opt.verbose)
    mth_message("options: purge_delay_ms=%ld stats=%d thp=%d abort_on_invalid=%d bcache=%d region_size=%zuM",
                mth_opt.purge_delay_ms, mth_opt.stats_at_exit, mth_opt.thp,
                mth_opt.abort_on_invalid, mth_opt.bcache, mth_opt.region_size >> 20);
}
