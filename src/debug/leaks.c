/* Leak check at exit: blocks still allocated that no pointer reaches, grouped by allocation
 * stack, largest groups first.
 *
 * Reachability is conservative, like LeakSanitizer's: every aligned word of every writable
 * mapping that is not heap memory (globals, thread stacks and TLS, ld.so's data) is a root; a
 * word that points into a live block's user bytes (start or interior) marks it, and marked
 * blocks are scanned in turn.  What stays unmarked is leaked: "direct" if nothing points to it,
 * "indirect" if only other leaked blocks do.
 *
 * Invariants
 *   - runs once, from the library's destructor, with mthd_tls.busy raised: no report or stack
 *     capture from malloc calls it might trigger, and the snapshot array, mark stack and maps
 *     text live in mmap'd memory that is excluded from the roots (it holds block addresses);
 *   - this library's own writable data (.data, .bss: the allocator's and this checker's
 *     statics, which hold block addresses such as the lowest live block's) is never a root,
 *     found exactly from its program headers, so a neighbouring mapping is still scanned;
 *   - heap memory is never a root: 64 KiB slices the core owns are skipped, and untouched
 *     (non-resident) anonymous pages are skipped via mincore, so a 1 GiB reservation costs
 *     little;
 *   - dead memory is not a root: the stacks glibc keeps cached for threads that exited (found
 *     by the thread descriptor at the top of the mapping, whose tid the kernel cleared), and,
 *     once main has returned, main's finished frames (start.c knows where they began); blocks
 *     that only such memory points to are leaks, and the report says how many there were;
 *   - other threads are not stopped: a block whose only pointer is in another thread's
 *     registers at that instant can be reported (documented limitation).
 */
#include "mthd.h"

#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
  uintptr_t start, end;   /* user bytes; end > start even for size 0 */
  mthd_hdr_t *h;
  uint32_t stack;
  uint8_t mark;           /* 0 unreached, 1 reachable, 2 indirectly leaked */
} lblk_t;

enum { UNREACHED = 0, REACHED = 1, INDIRECT = 2, STALE = 3 };

static lblk_t *blk;
static size_t nblk;
static uint32_t *work;
static size_t nwork;
static uintptr_t lo_addr, hi_addr;

static void *map(size_t n) {
  void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* heapsort: qsort may allocate, and the heap is what we are looking at */
static void sift(lblk_t *a, size_t i, size_t n) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && a[c + 1].start > a[c].start) c++;
    if (a[c].start <= a[i].start) return;
    lblk_t t = a[i];
    a[i] = a[c];
    a[c] = t;
    i = c;
  }
}

static void sort_blocks(lblk_t *a, size_t n) {
  for (size_t i = n / 2; i-- > 0;) sift(a, i, n);
  for (size_t k = n; k-- > 1;) {
    lblk_t t = a[0];
    a[0] = a[k];
    a[k] = t;
    sift(a, 0, k);
  }
}

static lblk_t *lookup(uintptr_t w) {
  if (w < lo_addr || w >= hi_addr) return NULL;
  size_t lo = 0, hi = nblk;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (blk[mid].end <= w) lo = mid + 1;
    else hi = mid;
  }
  return lo < nblk && blk[lo].start <= w ? &blk[lo] : NULL;
}

static void scan_words(uintptr_t from, uintptr_t to, uint8_t from_mark, uint8_t to_mark) {
  from = (from + 7) & ~(uintptr_t)7;
  for (uintptr_t a = from; a + 8 <= to; a += 8) {
    lblk_t *b = lookup(*(const uintptr_t *)a);
    if (b && b->mark == from_mark) {
      b->mark = to_mark;
      work[nwork++] = (uint32_t)(b - blk);
    }
  }
}

static void drain(uint8_t from_mark, uint8_t to_mark) {
  while (nwork) {
    lblk_t *b = &blk[work[--nwork]];
    scan_words(b->start, b->end, from_mark, to_mark);
  }
}

typedef struct { uintptr_t lo, hi; } range_t;

/* The writable PT_LOAD segments of the object holding this file's statics. */
typedef struct { range_t *out; int n, cap; } own_data_t;

static int own_data_phdr(struct dl_phdr_info *info, size_t size, void *arg) {
  own_data_t *od = arg;
  uintptr_t me = (uintptr_t)&lo_addr;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && me >= a && me < a + ph->p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum && od->n < od->cap; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W))
      od->out[od->n++] = (range_t){info->dlpi_addr + ph->p_vaddr,
                                   info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
  }
  return 1;
}

static void scan_root(uintptr_t lo, uintptr_t hi, bool anon, const range_t *skip, int nskip, uint8_t to_mark) {
  /* residency first, 64 MiB per mincore call: a mostly untouched reservation costs one
   * syscall per 64 MiB, not one per chunk */
  static unsigned char vec[16384];
  const uintptr_t chunk = (uintptr_t)1 << 16, window = (uintptr_t)sizeof vec * 4096;
  for (uintptr_t w = lo; w < hi; w += window) {
    uintptr_t we = hi - w < window ? hi : w + window;
    bool have_vec = anon && mincore((void *)w, we - w, vec) == 0;
    for (uintptr_t c = w; c < we;) {
      uintptr_t ce = (c & ~(chunk - 1)) + chunk;
      if (ce > we) ce = we;
      size_t p0 = (c - w) / 4096, p1 = (ce - w + 4095) / 4096;
      bool any = !have_vec;
      for (size_t i = p0; i < p1 && !any; i++) any = vec[i] & 1;
      /* heap slices are 64 KiB-aligned, so the core's answer holds for the whole chunk; our
       * own buffers are only page-aligned and the kernel may have merged them with a
       * neighbouring mapping, so they are skipped page by page */
      if (any && !mtheap_owns((void *)c)) {
        for (size_t i = p0; i < p1; i++) {
          if (have_vec && !(vec[i] & 1)) continue;
          uintptr_t ps = w + i * 4096, pe = ps + 4096;
          if (ps < c) ps = c;
          if (pe > ce) pe = ce;
          bool mine = false;
          for (int k = 0; k < nskip && !mine; k++) mine = ps < skip[k].hi && pe > skip[k].lo;
          if (!mine) scan_words(ps, pe, UNREACHED, to_mark);
        }
        drain(UNREACHED, to_mark);
      }
      c = ce;
    }
  }
}

/* ---- dead thread stacks ----
 * glibc puts a thread's descriptor (struct pthread) at the top of the stack it maps for it and
 * keeps the mapping cached after the thread exits; the kernel clears the descriptor's tid when
 * the thread dies (glibc may set it to -1).  The descriptor starts with two words that point to
 * itself (tcbhead_t's tcb and self), and its tid sits at a fixed offset that is checked against
 * the calling thread before it is trusted: if the layout is not what we expect, no stack is
 * treated as dead (more blocks reachable, never a false report). */
#define TCB_TID_OFFSET 0x2d0   /* glibc 2.3x, x86-64; verified at run time */

/* The descriptor holds live pointers even for a dead thread (its dtv, which glibc reuses with
 * the stack), and the static TLS right below it may too: those stay roots.  Static TLS has
 * the same offsets below the descriptor in every thread (TLS variant II), so its extent is
 * measured on the calling thread: the lowest TLS block of any module that is within 1 MiB
 * below our own descriptor. */
static int static_tls_phdr(struct dl_phdr_info *info, size_t size, void *arg) {
  uintptr_t *lowest = arg, tp = (uintptr_t)pthread_self(), d = (uintptr_t)info->dlpi_tls_data;
  if (d && d < tp && tp - d < ((uintptr_t)1 << 20) && d < *lowest) *lowest = d;
  return 0;
}

/* Bytes below a descriptor that are its thread's static TLS; 0 when the layout is not the one
 * expected (then no stack is treated as dead). */
static size_t tcb_static_tls(void) {
#if defined(__x86_64__)
  uintptr_t self = (uintptr_t)pthread_self();
  if (*(const uintptr_t *)self != self || *(const uintptr_t *)(self + 16) != self ||
      *(const pid_t *)(self + TCB_TID_OFFSET) != (pid_t)mthd_tid())
    return 0;
  uintptr_t lowest = self;
  dl_iterate_phdr(static_tls_phdr, &lowest);
  return (self - lowest + 63) & ~(size_t)63;
#else
  return 0;
#endif
}

/* The part of [lo, hi) that is dead if it is the cached stack of a thread that exited: a
 * descriptor in its top 16 KiB (64-byte aligned, as glibc aligns it) whose tid is gone; its
 * stack is everything below the descriptor and its static TLS.  0 if not such a stack. */
static uintptr_t dead_thread_stack(uintptr_t lo, uintptr_t hi, size_t tls) {
  uintptr_t from = hi - lo > 16384 ? hi - 16384 : lo;
  unsigned char res[4];   /* residency of the top 16 KiB, one mincore call per mapping */
  if (mincore((void *)from, hi - from, res) != 0) return 0;
  for (uintptr_t p = (hi - TCB_TID_OFFSET - 8) & ~(uintptr_t)63; p >= from && p > lo; p -= 64) {
    if (!(res[(p - from) >> 12] & 1)) continue;
    if (*(const uintptr_t *)p == p && *(const uintptr_t *)(p + 16) == p)
      return *(const pid_t *)(p + TCB_TID_OFFSET) <= 0 && p - tls > lo ? p - tls : 0;
  }
  return 0;
}

typedef struct {
  uint32_t stack;
  size_t count, bytes;
  bool direct;
} group_t;

static void sort_groups(group_t *g, size_t n) {
  /* insertion sort by bytes, descending: few groups */
  for (size_t i = 1; i < n; i++) {
    group_t t = g[i];
    size_t j = i;
    while (j > 0 && (g[j - 1].direct < t.direct || (g[j - 1].direct == t.direct && g[j - 1].bytes < t.bytes))) {
      g[j] = g[j - 1];
      j--;
    }
    g[j] = t;
  }
}

int mthd_leak_check(void) {
  mthd_tls.busy++;
  for (int i = 0; i < MTHD_STRIPES; i++) mthd_lock(&mthd_stripes[i].lock);
  size_t total = 0;
  for (int i = 0; i < MTHD_STRIPES; i++) total += mthd_stripes[i].count;
  size_t blk_bytes = (total + 1) * sizeof(lblk_t), work_bytes = (total + 1) * sizeof(uint32_t);
  blk = map(blk_bytes);
  work = map(work_bytes);
  nblk = 0;
  if (blk && work) {
    for (int i = 0; i < MTHD_STRIPES; i++)
      for (mthd_hdr_t *h = mthd_stripes[i].head; h && nblk < total; h = h->next) {
        if (h->magic != MTHD_MAGIC) break;
        if (h->flags & MTHD_F_INTERNAL) continue;
        uintptr_t u = (uintptr_t)mthd_user_of(h);
        blk[nblk++] = (lblk_t){u, u + (h->size ? h->size : 1), h, h->alloc_stack, UNREACHED};
      }
  }
  for (int i = MTHD_STRIPES - 1; i >= 0; i--) mthd_unlock(&mthd_stripes[i].lock);
  if (!blk || !work || nblk == 0) {
    if (blk) munmap(blk, blk_bytes);
    if (work) munmap(work, work_bytes);
    mthd_tls.busy--;
    return 0;
  }
  sort_blocks(blk, nblk);
  lo_addr = blk[0].start;
  hi_addr = blk[nblk - 1].end;
  for (size_t i = 0; i < nblk; i++)
    if (blk[i].end > hi_addr) hi_addr = blk[i].end;

  /* roots */
  size_t maps_cap = (size_t)4 << 20, maps_len = 0;
  char *maps = map(maps_cap);
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (maps && fd >= 0) {
    for (;;) {
      ssize_t k = read(fd, maps + maps_len, maps_cap - 1 - maps_len);
      if (k <= 0) break;
      maps_len += (size_t)k;
    }
  }
  if (fd >= 0) close(fd);
  range_t skip[12];
  int nskip = 0;
  own_data_t od = {skip, 0, 4};
  dl_iterate_phdr(own_data_phdr, &od);
  nskip = od.n;
  skip[nskip++] = (range_t){(uintptr_t)blk, (uintptr_t)blk + blk_bytes};
  skip[nskip++] = (range_t){(uintptr_t)work, (uintptr_t)work + work_bytes};
  skip[nskip++] = (range_t){(uintptr_t)maps, (uintptr_t)maps + maps_cap};
  uintptr_t ds, de;
  mthd_depot_range(&ds, &de);
  if (ds) skip[nskip++] = (range_t){ds, ds + ((size_t)1 << 30)};
  /* dead memory: scanned after the roots, to count the blocks only it points to */
  range_t dead[64];
  int ndead = 0;
  size_t tls = tcb_static_tls();
  uintptr_t main_hi = mthd_main_returned ? mthd_main_frame : 0;   /* main's finished frames end here */
  if (maps) {
    maps[maps_len] = 0;
    for (char *line = maps; *line;) {
      char *eol = strchr(line, '\n');
      if (eol) *eol = 0;
      char *q = line;
      uintptr_t lo = 0, hi = 0;
      while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')) lo = lo * 16 + (uintptr_t)(*q <= '9' ? *q - '0' : *q - 'a' + 10), q++;
      if (*q == '-') q++;
      while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')) hi = hi * 16 + (uintptr_t)(*q <= '9' ? *q - '0' : *q - 'a' + 10), q++;
      while (*q == ' ') q++;
      bool rw = q[0] == 'r' && q[1] == 'w';
      const char *path = strchr(q, '/');
      const char *bracket = strchr(q, '[');
      bool device = path && !strncmp(path, "/dev/", 5);
      bool special = bracket && (!strncmp(bracket, "[vvar]", 6) || !strncmp(bracket, "[vsyscall]", 10));
      /* our own stack: only the live part (dead frames below hold stale pointers), and not
       * main's frames once main has returned (exit's frames reuse that memory) */
      uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
      bool own_stack = sp >= lo && sp < hi;
      if (own_stack) lo = sp & ~(uintptr_t)7;
      if (own_stack && main_hi > lo && main_hi <= hi) {
        if (ndead < 64) dead[ndead++] = (range_t){lo, main_hi};
        lo = main_hi;
      }
      if (rw && !device && !special && hi > lo) {
        uintptr_t dead_end = !own_stack && path == NULL && tls ? dead_thread_stack(lo, hi, tls) : 0;
        if (dead_end && ndead < 64) {
          dead[ndead++] = (range_t){lo, dead_end};
          lo = dead_end;
        }
        scan_root(lo, hi, path == NULL, skip, nskip, REACHED);
      }
      if (!eol) break;
      line = eol + 1;
    }
  }

  /* blocks that only dead memory points to: counted for the report, leaked all the same */
  size_t stale_blocks = 0;
  for (int k = 0; k < ndead; k++) scan_root(dead[k].lo, dead[k].hi, true, skip, nskip, STALE);
  for (size_t i = 0; i < nblk; i++)
    if (blk[i].mark == STALE) blk[i].mark = UNREACHED, stale_blocks++;

  /* what stays unreached is leaked; what only leaked blocks reach is an indirect leak */
  for (size_t i = 0; i < nblk; i++) {
    if (blk[i].mark != UNREACHED) continue;
    scan_words(blk[i].start, blk[i].end, UNREACHED, INDIRECT);
    /* a block may reach itself: keep it direct */
    for (size_t k = 0; k < nwork; k++)
      if (work[k] == i) blk[i].mark = UNREACHED;
    drain(UNREACHED, INDIRECT);
    if (blk[i].mark == INDIRECT) blk[i].mark = UNREACHED;
  }

  /* group by (stack, direct) with a small open-addressed table */
  size_t gcap = 1;
  while (gcap < 2 * nblk) gcap <<= 1;
  group_t *g = map(gcap * sizeof(group_t));
  size_t ng = 0, leaked_bytes = 0, leaked_blocks = 0, ind_bytes = 0, ind_blocks = 0;
  if (g) {
    memset(g, 0, gcap * sizeof(group_t));
    for (size_t i = 0; i < nblk; i++) {
      if (blk[i].mark == REACHED) continue;
      bool direct = blk[i].mark == UNREACHED;
      size_t size = blk[i].h->size;
      if (direct) leaked_bytes += size, leaked_blocks++;
      else ind_bytes += size, ind_blocks++;
      size_t k = (blk[i].stack * 2654435761u + direct) & (gcap - 1);
      while (g[k].count && !(g[k].stack == blk[i].stack && g[k].direct == direct)) k = (k + 1) & (gcap - 1);
      if (!g[k].count) ng++;
      g[k].stack = blk[i].stack;
      g[k].direct = direct;
      g[k].count++;
      g[k].bytes += size;
    }
    size_t m = 0;
    for (size_t k = 0; k < gcap; k++)
      if (g[k].count) g[m++] = g[k];
    sort_groups(g, m);
  }
  int result = (int)(leaked_blocks + ind_blocks > 0);
  if (result && g) {
    mthd_out_t o;
    mthd_sym_begin();
    mthd_out_init(&o);
    mthd_printf(&o, "==%d== mtheap-debug: memory-leak: %zu bytes in %zu blocks unreachable at exit (%zu groups, largest first)\n",
                (int)getpid(), leaked_bytes + ind_bytes, leaked_blocks + ind_blocks, ng);
    for (size_t k = 0; k < ng; k++) {
      if ((int)k >= mthd_opt.leaks_max) {
        mthd_printf(&o, "  ... %zu more groups (leaks_max=%d)\n", ng - k, mthd_opt.leaks_max);
        break;
      }
      mthd_printf(&o, "\n%s leak of %zu byte%s in %zu block%s allocated at:\n", g[k].direct ? "Direct" : "Indirect",
                  g[k].bytes, g[k].bytes == 1 ? "" : "s", g[k].count, g[k].count == 1 ? "" : "s");
      mthd_print_stack_id(&o, g[k].stack);
    }
    mthd_printf(&o, "\nSUMMARY: mtheap-debug: %zu bytes leaked in %zu blocks (%zu bytes in %zu blocks only reachable from them)\n",
                leaked_bytes, leaked_blocks, ind_bytes, ind_blocks);
    if (stale_blocks)
      mthd_printf(&o, "  (%zu of these blocks were reachable only through dead memory, which is not a root: stacks of\n"
                      "  threads that exited, or main's frames after it returned)\n", stale_blocks);
    mthd_flush(&o);
    mthd_sym_end();
  }
  if (g) munmap(g, gcap * sizeof(group_t));
  if (maps) munmap(maps, maps_cap);
  munmap(blk, blk_bytes);
  munmap(work, work_bytes);
  mthd_tls.busy--;
  return result;
}
