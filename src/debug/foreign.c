/* Objects whose C++ operators are not ours: their malloc and free calls.
 *
 * A shared library may bring its own C++ operators and bind its calls to them (-Bsymbolic:
 * libLLVM does, under rustc's linker, Mesa and clang).  Its operator new calls malloc and its
 * operator delete calls free, while the program's other objects use ours.  So a std::string
 * made in the library and destroyed in the program reaches us as malloc + operator delete, and
 * one made in the program and destroyed in the library as operator new + free: legal programs
 * that an exact family check aborts (rust-lld did, on its first string).  Worse, such a library
 * may inline its operators (libLLVM's std::function managers call free directly), so the call
 * can come from anywhere in it.
 *
 * So a malloc or free called from an object whose operators are not ours stands for either
 * family (MTHD_FAM_UNKNOWN), which matches every deallocation: the object defines operator new
 * or delete itself (libLLVM; gcc's cc1, whose exported operators replace everyone's), or it
 * imports them from an object other than libstdc++ (rust-lld imports libLLVM's by version and
 * inlines some).  Telling the operators' own calls from the rest of such an object fails both
 * ways: they are inlined anywhere in it, and a delete that tail-calls free leaves no frame of
 * its own (cc1's, from an exit handler).  Only such objects lose the check, for their own
 * calls; a program that imports libstdc++'s operators gets ours (we come first in the lookup)
 * and keeps it.  Not recognized: operators linked in statically and not exported
 * (-static-libstdc++ beside C++ libraries that use the shared one).
 *
 * Invariants
 *   - a verdict depends on the code at an address only, so it is cached per return address; the
 *     cache is dropped when dlclose may have put other code there (the dlclose wrapper,
 *     override.c);
 *   - dladdr and dl_iterate_phdr take the loader's (recursive) lock and allocate nothing; no
 *     lock of ours is held across them;
 *   - entries are one word (address | verdict << 56), written once by CAS: readers never see
 *     half an entry; a full probe window means the next call asks the loader again.
 */
#include "mthd.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

#define FOREIGN_SLOTS 8192   /* distinct malloc/free call sites remembered */
#define FOREIGN_PROBE 8
#define FOREIGN_SHIFT 56
#define FOREIGN_ADDR ((((uint64_t)1) << FOREIGN_SHIFT) - 1)

static _Atomic uint64_t foreign_cache[FOREIGN_SLOTS];

/* ---- does an object bring operators of its own? (its dynamic symbol table) ---- */

typedef struct {
  uintptr_t pc;         /* in: an address inside the object */
  bool own_ops;         /* out */
} own_ops_t;

static uint32_t gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++) h = h * 33 + (uint8_t)*s;
  return h;
}

static bool is_operator(const char *s) {
  return strncmp(s, "_Zn", 3) == 0 ? (s[3] == 'w' || s[3] == 'a')
       : strncmp(s, "_Zd", 3) == 0 ? (s[3] == 'l' || s[3] == 'a') : false;
}

/* ld.so relocates most objects' dynamic entries in place, not all (a read-only PT_DYNAMIC) */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) p) { return p < base ? base + p : p; }

/* The file a versioned import comes from: verneed's entry for version index idx, or NULL. */
static const char *import_file(const ElfW(Verneed) *vn, size_t nvn, const char *strtab, unsigned idx) {
  for (size_t k = 0; vn && k < nvn; k++) {
    const ElfW(Vernaux) *aux = (const ElfW(Vernaux) *)((const char *)vn + vn->vn_aux);
    for (unsigned j = 0; j < vn->vn_cnt; j++) {
      if (aux->vna_other == idx) return strtab + vn->vn_file;
      aux = (const ElfW(Vernaux) *)((const char *)aux + aux->vna_next);
    }
    if (!vn->vn_next) break;
    vn = (const ElfW(Verneed) *)((const char *)vn + vn->vn_next);
  }
  return NULL;
}

/* An object's operators are not ours when it defines operator new or delete itself (libLLVM),
 * or imports them from an object other than libstdc++ (rust-lld imports libLLVM's, by
 * version, and inlines some of them: its frees of libLLVM's blocks come from anywhere in it).
 * One that imports libstdc++'s, or unversioned ones, gets ours: we come first in the lookup. */
static bool own_operators(uintptr_t base, const ElfW(Dyn) *dyn) {
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const uint32_t *gnu = NULL, *sysv = NULL;
  const ElfW(Half) *versym = NULL;
  const ElfW(Verneed) *verneed = NULL;
  size_t nverneed = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
      case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(base, dyn->d_un.d_ptr); break;
      case DT_STRTAB: strtab = (const char *)dyn_ptr(base, dyn->d_un.d_ptr); break;
      case DT_GNU_HASH: gnu = (const uint32_t *)dyn_ptr(base, dyn->d_un.d_ptr); break;
      case DT_HASH: sysv = (const uint32_t *)dyn_ptr(base, dyn->d_un.d_ptr); break;
      case DT_VERSYM: versym = (const ElfW(Half) *)dyn_ptr(base, dyn->d_un.d_ptr); break;
      case DT_VERNEED: verneed = (const ElfW(Verneed) *)dyn_ptr(base, dyn->d_un.d_ptr); break;
      case DT_VERNEEDNUM: nverneed = dyn->d_un.d_val; break;
    }
  }
  if (!symtab || !strtab || (!gnu && !sysv)) return false;
  /* Imports: with a GNU hash table, the unhashed symbols before symoffset, where every
   * undefined one is; with a SysV table, all nchain of them (definitions too). */
  uint32_t nscan = gnu ? gnu[1] : sysv[1];
  for (uint32_t i = 1; i < nscan; i++) {
    const char *name = strtab + symtab[i].st_name;
    if (!is_operator(name)) continue;
    if (symtab[i].st_shndx != SHN_UNDEF) return true;
    unsigned idx = versym ? versym[i] & 0x7fff : 0;
    const char *file = idx > 1 ? import_file(verneed, nverneed, strtab, idx) : NULL;
    if (file && strncmp(file, "libstdc++", 9) != 0) return true;
  }
  if (gnu) {
    /* definitions are hashed: look up the plain forms of operator new and delete */
    static const char *const ops[] = {"_Znwm", "_ZdlPv"};
    uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    for (int k = 0; k < 2 && nbuckets; k++) {
      uint32_t h = gnu_hash(ops[k]);
      for (uint32_t i = buckets[h % nbuckets]; i >= symoffset; i++) {
        uint32_t h2 = chain[i - symoffset];
        if ((h | 1) == (h2 | 1) && strcmp(strtab + symtab[i].st_name, ops[k]) == 0 &&
            symtab[i].st_shndx != SHN_UNDEF)
          return true;
        if (h2 & 1) break;
      }
    }
  }
  return false;
}

static int own_ops_phdr(struct dl_phdr_info *info, size_t size, void *arg) {
  own_ops_t *q = arg;
  const ElfW(Dyn) *dyn = NULL;
  bool inside = false;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && q->pc - lo < ph->p_memsz) inside = true;
    if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)lo;
  }
  if (!inside) return 0;
  q->own_ops = dyn && own_operators(info->dlpi_addr, dyn);
  return 1;
}

/* ---- the verdict for one call site ---- */

static int classify(uintptr_t caller, int family) {
  static char self;
  Dl_info info, me;
  /* caller - 1: a call that ends its function returns one past it */
  if (!dladdr((void *)(caller - 1), &info)) return family;
  if (dladdr(&self, &me) && me.dli_fbase == info.dli_fbase) return family;
  own_ops_t q = {caller - 1, false};
  dl_iterate_phdr(own_ops_phdr, &q);
  return q.own_ops ? MTHD_FAM_UNKNOWN : family;
}

static size_t slot_of(uintptr_t caller) {
  uint64_t x = (uint64_t)caller * 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 51) & (FOREIGN_SLOTS - 1);
}

int mthd_foreign_family(uintptr_t caller, int family) {
  if (family != MTHD_FAM_MALLOC || caller == 0 || (caller & ~FOREIGN_ADDR) || mthd_tls.busy) return family;
  size_t i = slot_of(caller);
  for (int k = 0; k < FOREIGN_PROBE; k++) {
    uint64_t e = atomic_load_explicit(&foreign_cache[(i + k) & (FOREIGN_SLOTS - 1)], memory_order_acquire);
    if (e == 0) break;
    if ((e & FOREIGN_ADDR) == caller) return (int)(e >> FOREIGN_SHIFT);
  }
  mthd_tls.busy++;   /* the loader's calls, should they allocate, get plain blocks */
  int v = classify(caller, family);
  mthd_tls.busy--;
  uint64_t want = (uint64_t)caller | ((uint64_t)v << FOREIGN_SHIFT);
  for (int k = 0; k < FOREIGN_PROBE; k++) {
    uint64_t expect = 0;
    if (atomic_compare_exchange_strong(&foreign_cache[(i + k) & (FOREIGN_SLOTS - 1)], &expect, want)) break;
    if ((expect & FOREIGN_ADDR) == caller) break;   /* another thread cached it first */
  }
  return v;
}

void mthd_foreign_forget(void) {
  for (size_t i = 0; i < FOREIGN_SLOTS; i++) atomic_store_explicit(&foreign_cache[i], 0, memory_order_relaxed);
}

bool mthd_family_matches(int alloc_family, int dealloc_family) {
  return alloc_family == dealloc_family || alloc_family == MTHD_FAM_UNKNOWN || dealloc_family == MTHD_FAM_UNKNOWN;
}
