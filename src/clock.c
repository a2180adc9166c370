/* The clock: the purge deadlines (ms) and the lock wait times (ns), read from the kernel's vDSO
 * directly rather than through libc's clock_gettime.
 *
 * Why: libc's clock_gettime is a small wrapper, but it lives among libc's time functions, a
 * part of libc's text that few programs touch.  Its first call faults that page in, and the
 * kernel maps the file pages around it too (fault-around, 64 KiB): `sort /dev/null` with
 * libmtheap preloaded had 32 more pages of libc resident than with glibc's malloc, 1878 KiB of
 * peak RSS against 1740 with the vDSO called directly (glibc's own malloc: 1668).  A small
 * program's RSS is mostly such pages, so this is the largest share of what libmtheap added to
 * it.  The vDSO page is mapped into every process anyway.
 *
 * How: the vDSO is an ELF image the kernel maps and names in the aux vector
 * (AT_SYSINFO_EHDR); its dynamic symbol table has __vdso_clock_gettime (arm64:
 * __kernel_clock_gettime), which is what libc calls too.  Looked up once, on the first read.
 * Without a vDSO, its symbol table or the symbol, and on 32-bit targets (two time_t ABIs),
 * libc's clock_gettime serves: correct, only the pages above are back.
 *
 * Invariants:
 *   - mth_vdso_gettime is NULL until the lookup ran, then either the vDSO's function or
 *     libc's clock_gettime, never changed again; racing first readers store the same value.
 */
#include "internal.h"

#include <elf.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

typedef int (*mth_gettime_fn)(clockid_t, struct timespec *);

static _Atomic(mth_gettime_fn) mth_vdso_gettime;

#if defined(__x86_64__) || defined(__aarch64__)
#if defined(__x86_64__)
#define MTH_VDSO_GETTIME "__vdso_clock_gettime"
#else
#define MTH_VDSO_GETTIME "__kernel_clock_gettime"
#endif

/* The vDSO's clock_gettime, or NULL.  The symbol count comes from DT_HASH (its nchain): the
 * vDSOs Linux builds for x86-64 and arm64 have one. */
static mth_gettime_fn mth_vdso_lookup(void) {
  const uint8_t *base = (const uint8_t *)(uintptr_t)getauxval(AT_SYSINFO_EHDR);
  if (!base) return NULL;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) return NULL;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
  uintptr_t bias = 0;
  const Elf64_Dyn *dyn = NULL;
  bool have_load = false;
  for (size_t i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type == PT_LOAD && !have_load) {
      bias = (uintptr_t)base + ph[i].p_offset - ph[i].p_vaddr;
      have_load = true;
    } else if (ph[i].p_type == PT_DYNAMIC) {
      dyn = (const Elf64_Dyn *)(base + ph[i].p_offset);
    }
  }
  if (!have_load || !dyn) return NULL;
  const Elf64_Sym *symtab = NULL;
  const char *strtab = NULL;
  const uint32_t *hash = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB) symtab = (const Elf64_Sym *)(bias + dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_STRTAB) strtab = (const char *)(bias + dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_HASH) hash = (const uint32_t *)(bias + dyn->d_un.d_ptr);
  }
  if (!symtab || !strtab || !hash) return NULL;
  for (uint32_t i = 0; i < hash[1]; i++) {
    const Elf64_Sym *s = &symtab[i];
    if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF) continue;
    if (strcmp(strtab + s->st_name, MTH_VDSO_GETTIME) == 0) return (mth_gettime_fn)(bias + s->st_value);
  }
  return NULL;
}
#else
static mth_gettime_fn mth_vdso_lookup(void) { return NULL; }   /* 32-bit: two time_t ABIs */
#endif

/* Slow path of the first read only. */
static __attribute__((noinline)) mth_gettime_fn mth_clock_setup(void) {
  mth_gettime_fn f = mth_vdso_lookup();
  if (!f) f = clock_gettime;
  atomic_store_explicit(&mth_vdso_gettime, f, memory_order_relaxed);
  return f;
}

static inline void mth_clock_read(clockid_t id, struct timespec *ts) {
  mth_gettime_fn f = atomic_load_explicit(&mth_vdso_gettime, memory_order_relaxed);
  if (MTH_UNLIKELY(!f)) f = mth_clock_setup();
  if (f(id, ts) != 0) clock_gettime(id, ts);   /* a clock the vDSO cannot read: the syscall */
}

uint64_t mth_clock_ns(void) {
  struct timespec ts;
  mth_clock_read(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t mth_clock_ms(void) {
  struct timespec ts;
  mth_clock_read(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
