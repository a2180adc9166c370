/* Error reports: formatting, hex dumps, symbolized stacks, and what happens after (abort, or
 * keep going with `continue`).
 *
 * Invariants
 *   - no malloc, no stdio: output is formatted here and written with write(2) to stderr, so a
 *     report works with a corrupt heap and inside a signal handler;
 *   - one report at a time: mthd_report_begin takes the report lock (re-entrant for the owning
 *     thread) and raises mthd_tls.busy, so allocations made while reporting (none are expected)
 *     would get internal blocks and never a nested report;
 *   - symbols come from the shared symbolizer (src/plockstat/symbolize.c, mmap-only, no libdw);
 *     source lines from binutils' addr2line, spawned with vfork+execve at report time only
 *     (the SIGSEGV handler's reports included: each step is async-signal-safe), and only for
 *     objects that carry .debug_line.
 */
#include "mthd.h"

#include <elf.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize.h"

MTHD_HIDDEN _Atomic int mthd_errors;
static _Atomic uint32_t report_owner;
static int report_depth;

/* ---- formatting ---- */

void mthd_out_init(mthd_out_t *o) {
  o->n = 0;
  o->fd = STDERR_FILENO;
}

void mthd_flush(mthd_out_t *o) {
  size_t off = 0;
  while (off < o->n) {
    ssize_t k = write(o->fd, o->buf + off, o->n - off);
    if (k <= 0) break;
    off += (size_t)k;
  }
  o->n = 0;
}

static void put(mthd_out_t *o, char c) {
  if (o->n == sizeof o->buf) mthd_flush(o);
  o->buf[o->n++] = c;
}

static void puts_(mthd_out_t *o, const char *s) {
  while (*s) put(o, *s++);
}

static void putnum(mthd_out_t *o, unsigned long long v, unsigned base, int width, char pad, bool neg) {
  char tmp[32];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  if (neg) tmp[n++] = '-';
  while (n < width) tmp[n++] = pad;
  while (n) put(o, tmp[--n]);
}

void mthd_vprintf(mthd_out_t *o, const char *fmt, va_list ap) {
  for (const char *f = fmt; *f; f++) {
    if (*f != '%') {
      put(o, *f);
      continue;
    }
    f++;
    char pad = ' ';
    int width = 0, lng = 0;
    if (*f == '0') pad = '0', f++;
    while (*f >= '0' && *f <= '9') width = width * 10 + (*f++ - '0');
    while (*f == 'l' || *f == 'z') lng++, f++;
    switch (*f) {
      case 'd': case 'i': {
        long long v = lng ? va_arg(ap, long long) : va_arg(ap, int);
        putnum(o, v < 0 ? (unsigned long long)-v : (unsigned long long)v, 10, width, pad, v < 0);
        break;
      }
      case 'u': putnum(o, lng ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned), 10, width, pad, false); break;
      case 'x': putnum(o, lng ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned), 16, width, pad, false); break;
      case 'p': puts_(o, "0x"); putnum(o, (uintptr_t)va_arg(ap, void *), 16, width ? width : 1, '0', false); break;
      case 's': {
        const char *s = va_arg(ap, const char *);
        size_t len = s ? strlen(s) : 6;
        puts_(o, s ? s : "(null)");
        for (; (int)len < width; len++) put(o, ' ');
        break;
      }
      case 'c': put(o, (char)va_arg(ap, int)); break;
      case '%': put(o, '%'); break;
      default: put(o, '%'); put(o, *f); if (!*f) return; break;
    }
  }
}

void mthd_printf(mthd_out_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mthd_vprintf(o, fmt, ap);
  va_end(ap);
}

void mthd_hexdump(mthd_out_t *o, const uint8_t *p, size_t n, uint8_t expect) {
  for (size_t i = 0; i < n; i += 16) {
    mthd_printf(o, "    +%04zx:", i);
    for (size_t j = i; j < i + 16 && j < n; j++) mthd_printf(o, "%c%02x", p[j] == expect ? ' ' : '*', p[j]);
    puts_(o, "   |");
    for (size_t j = i; j < i + 16 && j < n; j++) put(o, p[j] >= 32 && p[j] < 127 ? (char)p[j] : '.');
    puts_(o, "|\n");
  }
  mthd_printf(o, "    (expected %02x everywhere; '*' marks the bytes that differ)\n", expect);
}

/* ---- symbols ---- */

static struct psym *sym;
static int sym_users;

void mthd_sym_begin(void) {
  if (sym_users++ == 0) sym = psym_open_self(0);
}

void mthd_sym_end(void) {
  if (--sym_users == 0 && sym) {
    psym_close(sym);
    sym = NULL;
  }
}

/* Is pc inside a function (a symbol of an executable's or library's code)?  For heuristics in
 * the signal handler: mmap-only, like all of the symbolizer. */
bool mthd_sym_is_function(uintptr_t pc) {
  struct psym_info info;
  mthd_sym_begin();
  bool yes = sym && psym_lookup(sym, pc, 1, &info) == 0 && info.symbol != NULL;
  mthd_sym_end();
  return yes;
}

/* Does the object at path carry DWARF line tables?  Cached: a report asks about few files. */
static bool has_lines(const char *path) {
  static struct { char path[256]; bool yes; } cache[32];
  static int ncache;
  for (int i = 0; i < ncache; i++)
    if (!strcmp(cache[i].path, path)) return cache[i].yes;
  bool yes = false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(Elf64_Ehdr)) {
    const uint8_t *b = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (b != MAP_FAILED) {
      const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
      if (!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_shoff &&
          eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= (uint64_t)st.st_size &&
          eh->e_shstrndx < eh->e_shnum) {
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
        const Elf64_Shdr *strs = &sh[eh->e_shstrndx];
        for (int i = 0; i < eh->e_shnum && strs->sh_offset + strs->sh_size <= (uint64_t)st.st_size; i++)
          if (sh[i].sh_name < strs->sh_size && !strcmp((const char *)b + strs->sh_offset + sh[i].sh_name, ".debug_line"))
            yes = true;
      }
      munmap((void *)b, (size_t)st.st_size);
    }
  }
  if (fd >= 0) close(fd);
  if (ncache < 32 && strlen(path) < sizeof cache[0].path) {
    strcpy(cache[ncache].path, path);
    cache[ncache++].yes = yes;
  }
  return yes;
}

typedef struct {
  struct psym_info info;
  int found;
  char func[192];   /* from addr2line: demangled */
  char line[320];   /* file:line from addr2line */
} frame_t;

static frame_t frames[MTHD_MAX_DEPTH + 1];
static char a2l_out[64 * 1024];

/* Ask addr2line about the frames in one object: one process per object and stack. */
static void lines_for(const char *path, int *idx, int n) {
  static const char *a2l = "/usr/bin/addr2line";
  static int avail = -1;
  if (avail < 0) avail = access(a2l, X_OK) == 0;
  if (!avail || !has_lines(path)) return;
  static char abuf[MTHD_MAX_DEPTH + 1][24];
  const char *argv[MTHD_MAX_DEPTH + 8];
  int a = 0;
  argv[a++] = "addr2line";
  argv[a++] = "-f";
  argv[a++] = "-C";
  argv[a++] = "-e";
  argv[a++] = path;
  for (int i = 0; i < n; i++) {
    uint64_t v = frames[idx[i]].info.file_vaddr;
    char *q = abuf[i];
    *q++ = '0';
    *q++ = 'x';
    char tmp[20];
    int k = 0;
    do tmp[k++] = "0123456789abcdef"[v & 15], v >>= 4; while (v);
    while (k) *q++ = tmp[--k];
    *q = 0;
    argv[a++] = abuf[i];
  }
  argv[a] = NULL;
  static char *const envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) return;
  pid_t pid = vfork();
  if (pid == 0) {
    dup2(pfd[1], 1);
    int dn = open("/dev/null", O_WRONLY);
    if (dn >= 0) dup2(dn, 2);
    execve(a2l, (char *const *)argv, envp);
    _exit(127);
  }
  close(pfd[1]);
  size_t len = 0;
  if (pid > 0) {
    for (;;) {
      ssize_t k = read(pfd[0], a2l_out + len, sizeof a2l_out - 1 - len);
      if (k <= 0) break;
      len += (size_t)k;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  close(pfd[0]);
  a2l_out[len] = 0;
  /* two lines per address: function, file:line */
  char *p = a2l_out;
  for (int i = 0; i < n && *p; i++) {
    char *l1 = p, *e1 = strchr(l1, '\n');
    if (!e1) break;
    *e1 = 0;
    char *l2 = e1 + 1, *e2 = strchr(l2, '\n');
    if (!e2) break;
    *e2 = 0;
    p = e2 + 1;
    frame_t *f = &frames[idx[i]];
    if (strcmp(l1, "??") && strlen(l1) < sizeof f->func) strcpy(f->func, l1);
    char *disc = strstr(l2, " (discriminator");
    if (disc) *disc = 0;
    if (strncmp(l2, "??", 2) && !strstr(l2, ":?") && strcmp(l2 + strlen(l2) - 2, ":0") && strlen(l2) < sizeof f->line)
      strcpy(f->line, l2);
  }
}

/* Symbols from our own reader; file:line from addr2line, run with vfork+execve, which is fine in
 * the SIGSEGV handler as well (no lock, no malloc: pipe, vfork, execve, read, waitpid). */
void mthd_print_stack(mthd_out_t *o, const uintptr_t *pcs, int n, bool fault) {
  if (n <= 0) {
    puts_(o, "    (no stack recorded: add 'audit' to MTHEAP_DEBUG)\n");
    return;
  }
  if (n > MTHD_MAX_DEPTH + 1) n = MTHD_MAX_DEPTH + 1;
  bool own = !sym;
  if (own) mthd_sym_begin();
  for (int i = 0; i < n; i++) {
    frame_t *f = &frames[i];
    f->func[0] = f->line[0] = 0;
    /* return addresses: the call is the byte before (the signal handler's frame 0 is not) */
    f->found = sym && psym_lookup(sym, pcs[i], !(fault && i == 0), &f->info) == 0;
  }
  if (mthd_opt.lines) {
    int done[MTHD_MAX_DEPTH + 1] = {0};
    int idx[MTHD_MAX_DEPTH + 1];
    for (int i = 0; i < n; i++) {
      if (done[i] || !frames[i].found) continue;
      int k = 0;
      for (int j = i; j < n; j++)
        if (!done[j] && frames[j].found && !strcmp(frames[j].info.path, frames[i].info.path)) {
          done[j] = 1;
          /* ask about the call instruction, not the return address (a faulting
           * instruction is asked about itself) */
          if (frames[j].info.file_vaddr && !(fault && j == 0)) frames[j].info.file_vaddr--;
          idx[k++] = j;
        }
      lines_for(frames[i].info.path, idx, k);
      for (int j = 0; j < k; j++)
        if (!(fault && idx[j] == 0)) frames[idx[j]].info.file_vaddr++;
    }
  }
  for (int i = 0; i < n; i++) {
    frame_t *f = &frames[i];
    mthd_printf(o, "    #%d %p", i, (void *)pcs[i]);
    if (!f->found) {
      puts_(o, " (unknown)\n");
      continue;
    }
    if (f->func[0]) mthd_printf(o, " in %s", f->func);
    else if (f->info.symbol) mthd_printf(o, " in %s+0x%lx", f->info.symbol, (unsigned long)f->info.offset);
    if (f->line[0]) mthd_printf(o, " %s", f->line);
    mthd_printf(o, " (%s+0x%lx)\n", f->info.object, (unsigned long)f->info.file_vaddr);
  }
  if (own) mthd_sym_end();
}

void mthd_print_stack_id(mthd_out_t *o, uint32_t id) {
  const uintptr_t *pcs;
  int n = mthd_stack_get(id, &pcs);
  mthd_print_stack(o, pcs, n, false);
}

const char *mthd_family_alloc_name(int family, int flags) {
  bool al = flags & MTHD_F_ALIGNED_NEW;
  switch (family) {
    case MTHD_FAM_NEW: return al ? "operator new(align_val_t)" : "operator new";
    case MTHD_FAM_NEW_ARRAY: return al ? "operator new[](align_val_t)" : "operator new[]";
    case MTHD_FAM_UNKNOWN: return "malloc or another object's operator new";
    default: return "malloc";
  }
}

static void print_thread(mthd_out_t *o, uint32_t tid) {
  if (tid == (uint32_t)getpid()) mthd_printf(o, "thread %u (main)", tid);
  else mthd_printf(o, "thread %u", tid);
}

void mthd_note_writer_unknown(mthd_out_t *o, const char *when, bool underflow) {
  mthd_printf(o, "  the write itself was not seen, only its effect (checked at %s): the stacks below\n"
                 "  say where the block came from and where this was found, not who wrote; MTHEAP_DEBUG=\n"
                 "  %s puts every block against a guard page and stops at the writing instruction\n",
              when, underflow ? "guardpage,sample_side=before" : "guardpage");
}

void mthd_print_block(mthd_out_t *o, const mthd_hdr_t *h) {
  uint8_t *user = mthd_user_of(h);
  mthd_printf(o, "  block %p..%p (%zu bytes, %s) allocated by ", (void *)user, (void *)(user + h->size), (size_t)h->size,
              mthd_family_alloc_name(h->family, h->flags));
  print_thread(o, h->alloc_tid);
  puts_(o, " at:\n");
  mthd_print_stack_id(o, h->alloc_stack);
  if (h->state != MTHD_LIVE && h->free_tid) {
    puts_(o, "  freed by ");
    print_thread(o, h->free_tid);
    puts_(o, " at:\n");
    mthd_print_stack_id(o, h->free_stack);
  }
}

void mthd_report_begin(mthd_out_t *o, const char *kind, const void *addr, const char *fmt, ...) {
  uint32_t me = mthd_tid();
  if (atomic_load(&report_owner) != me) {
    uint32_t z = 0;
    while (!atomic_compare_exchange_weak(&report_owner, &z, me)) {
      z = 0;
      sched_yield();
    }
  }
  report_depth++;
  mthd_tls.busy++;
  mthd_sym_begin();
  mthd_out_init(o);
  mthd_printf(o, "==%d== mtheap-debug: %s on address %p ", (int)getpid(), kind, addr);
  va_list ap;
  va_start(ap, fmt);
  mthd_vprintf(o, fmt, ap);
  va_end(ap);
  put(o, '\n');
}

void mthd_report_end(mthd_out_t *o, uintptr_t caller, const char *where) {
  uintptr_t pcs[MTHD_MAX_DEPTH];
  int n = mthd_unwind(pcs, mthd_opt.depth, caller);
  puts_(o, "  detected in ");
  puts_(o, where);
  if (!strchr(where, ' ') || !strncmp(where, "operator ", 9)) puts_(o, "()");
  puts_(o, " by ");
  print_thread(o, mthd_tid());
  puts_(o, " at:\n");
  mthd_print_stack(o, pcs, n, false);
  atomic_fetch_add(&mthd_errors, 1);
  if (!mthd_opt.cont) {
    mthd_printf(o, "==%d== mtheap-debug: ABORTING (add 'continue' to MTHEAP_DEBUG to report and keep going)\n",
                (int)getpid());
    mthd_flush(o);
    signal(SIGABRT, SIG_DFL);
    abort();
  }
  mthd_printf(o, "==%d== mtheap-debug: continuing ('continue' is set)\n", (int)getpid());
  mthd_flush(o);
  mthd_sym_end();
  mthd_tls.busy--;
  if (--report_depth == 0) atomic_store(&report_owner, 0);
}

/* An address in a file's mapping: the variable it is in, when a symbol covers it (globals and
 * statics, from .symtab or .dynsym), else what the mapping's permissions say it holds. */
static void describe_file_data(mthd_out_t *o, uintptr_t a, const char *path, const char *line, uintptr_t lo,
                               uintptr_t hi) {
  const char *perms = strchr(line, ' ');
  bool writable = perms && perms[2] == 'w', exec = perms && perms[3] == 'x';
  struct psym_info info;
  mthd_sym_begin();
  /* data: only a symbol that holds the address (code: the nearest label will do) */
  bool named = sym && psym_lookup(sym, a, 0, &info) == 0 && info.symbol != NULL && (info.covers || exec);
  if (named)
    mthd_printf(o, "  the address is %zu bytes into %s '%s' of %s, not a heap block\n", (size_t)info.offset,
                exec ? "the function" : writable ? "the global or static variable" : "the constant", info.symbol,
                info.object);
  else
    mthd_printf(o, "  the address is in %s of %s, not a heap block\n",
                exec ? "the code" : writable ? "the writable data (a global or static variable)"
                                  : "the read-only data (a string literal or a constant)", path);
  mthd_sym_end();
  mthd_printf(o, "  (mapping %p-%p)\n", (void *)lo, (void *)hi);
}

/* .bss past the last file page is an anonymous mapping: find the object whose segment holds it */
typedef struct { uintptr_t a; const char *name; } bss_query_t;

static int bss_phdr(struct dl_phdr_info *info, size_t size, void *arg) {
  bss_query_t *q = arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && ph->p_memsz > ph->p_filesz &&
        q->a - (info->dlpi_addr + ph->p_vaddr + ph->p_filesz) < ph->p_memsz - ph->p_filesz) {
      q->name = info->dlpi_name ? info->dlpi_name : "";
      return 1;
    }
  }
  return 0;
}

static bool bss_of(uintptr_t a, const char **name) {
  bss_query_t q = {a, NULL};
  dl_iterate_phdr(bss_phdr, &q);
  *name = q.name;
  return q.name != NULL;
}

/* What lies at an address that is no block: the mapping it is in, and in a file's mapping the
 * variable or the kind of data. */
void mthd_describe_address(mthd_out_t *o, const void *addr) {
  uintptr_t a = (uintptr_t)addr;
  const char *obj;
  char here;
  uintptr_t sp = (uintptr_t)&here;
  if (a == 0) {
    puts_(o, "  the address is NULL+offset: not a heap pointer\n");
    return;
  }
  static char maps[256 * 1024];
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  size_t len = 0;
  if (fd >= 0) {
    for (;;) {
      ssize_t k = read(fd, maps + len, sizeof maps - 1 - len);
      if (k <= 0) break;
      len += (size_t)k;
    }
    close(fd);
  }
  maps[len] = 0;
  for (char *line = maps; *line;) {
    char *eol = strchr(line, '\n');
    if (eol) *eol = 0;
    char *q = line;
    uintptr_t lo = strtoull(q, &q, 16);
    uintptr_t hi = (*q == '-') ? strtoull(q + 1, &q, 16) : 0;
    if (a >= lo && a < hi) {
      const char *name = strchr(line, '/');
      if (!name) name = strchr(line, '[');
      if (a <= sp + (1u << 20) && a + (64u << 10) >= sp && sp >= lo && sp < hi)
        mthd_printf(o, "  the address is on the stack of the calling thread (%p is %zu bytes above its stack pointer)\n",
                    addr, (size_t)(a - sp));
      else if (name && name[0] == '/')
        describe_file_data(o, a, name, line, lo, hi);
      else if (name)
        mthd_printf(o, "  the address is in %s (mapping %p-%p)\n", name, (void *)lo, (void *)hi);
      else if (bss_of(a, &obj))
        mthd_printf(o, "  the address is in the zero-initialized data (a global or static variable) of %s, not a heap "
                       "block\n  (mapping %p-%p)\n", obj[0] ? obj : "the program", (void *)lo, (void *)hi);
      else
        mthd_printf(o, "  the address is in an anonymous mapping %p-%p (another thread's stack, or memory not from malloc)\n",
                    (void *)lo, (void *)hi);
      return;
    }
    if (!eol) break;
    line = eol + 1;
  }
  mthd_printf(o, "  the address is not mapped\n");
}
