/* See symbolize.h.  Working memory is one mmap'd arena; ELF files are mmap'd read-only. */
#define _GNU_SOURCE
#include "symbolize.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_LIBDW
#include <elfutils/libdw.h>
#endif

#define MAX_MAPS 16384
#define MAX_FILES 512

struct mapping {
  uint64_t start, end, offset;
  const char *path; /* into the maps copy, or NULL */
  int file;         /* index into files, -1 if not opened yet, -2 unusable */
};

struct elffile {
  const char *path;
  const unsigned char *base; /* whole file mapped */
  size_t size;
  const unsigned char *dbase; /* separate debug file (build-id), or NULL */
  size_t dsize;
  uint64_t bias;             /* runtime address - file vaddr */
  int bias_known;
#ifdef HAVE_LIBDW
  Dwarf *dw;
  int dwfd;
  int dw_tried;
#endif
};

struct psym {
  size_t arena_size;
  unsigned flags;
  char *maps;
  struct mapping *m;
  int nm;
  struct elffile *f;
  int nf;
};

static void *arena(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static uint64_t hexnum(const char **pp) {
  const char *p = *pp;
  uint64_t v = 0;
  for (;; p++) {
    char c = *p;
    if (c >= '0' && c <= '9') v = v * 16 + (uint64_t)(c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + (uint64_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v = v * 16 + (uint64_t)(c - 'A' + 10);
    else break;
  }
  *pp = p;
  return v;
}

struct psym *psym_open(const char *maps, size_t len, unsigned flags) {
  size_t need = sizeof(struct psym) + (len + 1) + sizeof(struct mapping) * MAX_MAPS +
                sizeof(struct elffile) * MAX_FILES + 64;
  need = (need + 4095) & ~(size_t)4095;
  char *a = arena(need);
  if (!a) return NULL;
  struct psym *s = (struct psym *)a;
  s->arena_size = need;
  s->flags = flags;
  s->m = (struct mapping *)(a + ((sizeof(struct psym) + 15) & ~(size_t)15));
  s->f = (struct elffile *)(s->m + MAX_MAPS);
  s->maps = (char *)(s->f + MAX_FILES);
  memcpy(s->maps, maps, len);
  s->maps[len] = 0;

  /* "start-end perms offset dev inode   path" */
  char *p = s->maps;
  while (*p && s->nm < MAX_MAPS) {
    char *line = p;
    char *eol = strchr(p, '\n');
    if (eol) *eol = 0;
    p = eol ? eol + 1 : p + strlen(p);
    const char *q = line;
    struct mapping *mp = &s->m[s->nm];
    mp->start = hexnum(&q);
    if (*q != '-') continue;
    q++;
    mp->end = hexnum(&q);
    while (*q == ' ') q++;
    while (*q && *q != ' ') q++; /* perms */
    while (*q == ' ') q++;
    mp->offset = hexnum(&q);
    while (*q == ' ') q++;
    while (*q && *q != ' ') q++; /* dev */
    while (*q == ' ') q++;
    while (*q && *q != ' ') q++; /* inode */
    while (*q == ' ') q++;
    mp->path = (*q == '/') ? q : NULL;
    mp->file = mp->path ? -1 : -2;
    if (mp->path) {
      char *del = strstr((char *)mp->path, " (deleted)");
      if (del) *del = 0;
    }
    /* A large .bss continues past the file-backed page as an anonymous mapping right after
     * it: give it to the same object so that globals there still get their names. */
    if (!mp->path && !*q && s->nm > 0) {
      struct mapping *prev = &s->m[s->nm - 1];
      if (prev->path && prev->end == mp->start) {
        mp->path = prev->path;
        mp->offset = prev->offset + (prev->end - prev->start);
        mp->file = -1;
      }
    }
    s->nm++;
  }
  return s;
}

struct psym *psym_open_self(unsigned flags) {
  /* Read /proc/self/maps into an mmap'd buffer, growing it by remapping. */
  size_t cap = 1 << 20, n = 0;
  char *buf = arena(cap);
  if (!buf) return NULL;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) { munmap(buf, cap); return NULL; }
  for (;;) {
    if (n == cap) {
      char *nb = mremap(buf, cap, cap * 2, MREMAP_MAYMOVE);
      if (nb == MAP_FAILED) break;
      buf = nb;
      cap *= 2;
    }
    ssize_t k = read(fd, buf + n, cap - n);
    if (k <= 0) break;
    n += (size_t)k;
  }
  close(fd);
  struct psym *s = psym_open(buf, n, flags);
  munmap(buf, cap);
  return s;
}

static const unsigned char *map_file(const char *path, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) { close(fd); return NULL; }
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return NULL;
  const Elf64_Ehdr *eh = p;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) {
    munmap(p, (size_t)st.st_size);
    return NULL;
  }
  *size = (size_t)st.st_size;
  return p;
}

static const Elf64_Shdr *shdrs(const unsigned char *b, size_t size, int *n) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
  if (!eh->e_shoff || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size) { *n = 0; return NULL; }
  *n = eh->e_shnum;
  return (const Elf64_Shdr *)(b + eh->e_shoff);
}

/* Separate debug file from the build-id note: /usr/lib/debug/.build-id/xx/yyyy.debug */
static void find_debug_file(struct elffile *f) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->base;
  if (eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > f->size) return;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(f->base + eh->e_phoff);
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type != PT_NOTE || ph[i].p_offset + ph[i].p_filesz > f->size) continue;
    const unsigned char *p = f->base + ph[i].p_offset, *end = p + ph[i].p_filesz;
    while (p + sizeof(Elf64_Nhdr) <= end) {
      const Elf64_Nhdr *nh = (const Elf64_Nhdr *)p;
      const unsigned char *name = p + sizeof *nh;
      const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
          nh->n_descsz >= 2 && nh->n_descsz < 64 && desc + nh->n_descsz <= end) {
        char path[256] = "/usr/lib/debug/.build-id/";
        char *q = path + strlen(path);
        static const char hx[] = "0123456789abcdef";
        for (unsigned k = 0; k < nh->n_descsz; k++) {
          *q++ = hx[desc[k] >> 4];
          *q++ = hx[desc[k] & 15];
          if (k == 0) *q++ = '/';
        }
        memcpy(q, ".debug", 7);
        f->dbase = map_file(path, &f->dsize);
        return;
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
}

static int get_file(struct psym *s, struct mapping *mp) {
  if (mp->file >= 0 || mp->file == -2) return mp->file;
  for (int i = 0; i < s->nf; i++)
    if (!strcmp(s->f[i].path, mp->path)) return mp->file = i;
  if (s->nf >= MAX_FILES) return mp->file = -2;
  struct elffile *f = &s->f[s->nf];
  memset(f, 0, sizeof *f);
  f->path = mp->path;
  f->base = map_file(mp->path, &f->size);
  if (!f->base) return mp->file = -2;
  find_debug_file(f);
  /* Load bias from the mapping of file offset 0 and the first PT_LOAD. */
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->base;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(f->base + eh->e_phoff);
  uint64_t first_vaddr = 0;
  int have = 0;
  if (eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) <= f->size) {
    for (int i = 0; i < eh->e_phnum; i++)
      if (ph[i].p_type == PT_LOAD) { first_vaddr = ph[i].p_vaddr - ph[i].p_offset; have = 1; break; }
  }
  uint64_t lowest = UINT64_MAX;
  for (int i = 0; i < s->nm; i++)
    if (s->m[i].path && !strcmp(s->m[i].path, mp->path) && s->m[i].offset == 0 && s->m[i].start < lowest)
      lowest = s->m[i].start;
  if (have && lowest != UINT64_MAX) {
    f->bias = lowest - (first_vaddr & ~(uint64_t)4095);
    f->bias_known = 1;
  } else if (eh->e_type == ET_EXEC) {
    f->bias = 0;
    f->bias_known = 1;
  }
  return mp->file = s->nf++;
}

static int underscores(const char *n) {
  int k = 0;
  while (n[k] == '_') k++;
  return k;
}

/* Search one image's .symtab and .dynsym for the symbol covering vaddr. */
static void search_syms(const unsigned char *b, size_t size, uint64_t vaddr, const char **best,
                        uint64_t *best_val, int *best_score) {
  int n;
  const Elf64_Shdr *sh = shdrs(b, size, &n);
  for (int i = 0; i < n; i++) {
    if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) continue;
    if (sh[i].sh_link >= (unsigned)n || sh[i].sh_offset + sh[i].sh_size > size) continue;
    const Elf64_Shdr *strs = &sh[sh[i].sh_link];
    if (strs->sh_offset + strs->sh_size > size) continue;
    const char *str = (const char *)(b + strs->sh_offset);
    const Elf64_Sym *sym = (const Elf64_Sym *)(b + sh[i].sh_offset);
    size_t cnt = sh[i].sh_size / sizeof(Elf64_Sym);
    for (size_t k = 1; k < cnt; k++) {
      const Elf64_Sym *y = &sym[k];
      int type = ELF64_ST_TYPE(y->st_info);
      if (y->st_shndx == SHN_UNDEF || y->st_shndx >= SHN_LORESERVE) continue;
      if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE && type != STT_GNU_IFUNC) continue;
      if (y->st_name >= strs->sh_size || vaddr < y->st_value) continue;
      const char *name = str + y->st_name;
      if (!name[0] || name[0] == '$' || (name[0] == '.' && name[1] == 'L')) continue;
      int score;
      if (y->st_size && vaddr < y->st_value + y->st_size) {
        /* covering symbol: prefer global names and the fewest leading underscores */
        score = 1000000 - (ELF64_ST_BIND(y->st_info) == STB_LOCAL ? 100 : 0) - underscores(name);
      } else if (!y->st_size && (type == STT_FUNC || type == STT_NOTYPE) && vaddr - y->st_value < 4096) {
        score = 1000 - (int)(vaddr - y->st_value) / 8; /* nearest preceding unsized label */
      } else {
        continue;
      }
      if (score > *best_score || (score == *best_score && y->st_value > *best_val)) {
        *best = name;
        *best_val = y->st_value;
        *best_score = score;
      }
    }
  }
}

#ifdef HAVE_LIBDW
static void lookup_line(struct psym *s, struct elffile *f, uint64_t vaddr, struct psym_info *out) {
  if (!f->dw_tried) {
    f->dw_tried = 1;
    f->dwfd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (f->dwfd >= 0) {
      f->dw = dwarf_begin(f->dwfd, DWARF_C_READ);
      if (!f->dw) { close(f->dwfd); f->dwfd = -1; }
    }
  }
  if (!f->dw) return;
  Dwarf_Die cu;
  if (!dwarf_addrdie(f->dw, vaddr, &cu)) return;
  Dwarf_Line *l = dwarf_getsrc_die(&cu, vaddr);
  if (!l) return;
  int line = 0;
  const char *src = dwarf_linesrc(l, NULL, NULL);
  if (src && dwarf_lineno(l, &line) == 0) {
    out->src_file = src;
    out->src_line = (unsigned)line;
  }
  (void)s;
}
#endif

int psym_lookup(struct psym *s, uint64_t addr, int is_ret, struct psym_info *out) {
  memset(out, 0, sizeof *out);
  struct mapping *mp = NULL;
  for (int i = 0; i < s->nm; i++)
    if (addr >= s->m[i].start && addr < s->m[i].end) { mp = &s->m[i]; break; }
  if (!mp || !mp->path) return -1;
  out->path = mp->path;
  const char *slash = strrchr(mp->path, '/');
  out->object = slash ? slash + 1 : mp->path;
  int fi = get_file(s, mp);
  if (fi < 0) {
    out->offset = addr - mp->start + mp->offset;
    return 0;
  }
  struct elffile *f = &s->f[fi];
  uint64_t vaddr = f->bias_known ? addr - f->bias : addr - mp->start + mp->offset;
  out->file_vaddr = vaddr;
  out->offset = vaddr;
  const char *best = NULL;
  uint64_t best_val = 0;
  int best_score = -1;
  search_syms(f->base, f->size, vaddr, &best, &best_val, &best_score);
  if (f->dbase) search_syms(f->dbase, f->dsize, vaddr, &best, &best_val, &best_score);
  if (best) {
    out->symbol = best;
    out->offset = vaddr - best_val;
    out->covers = best_score > 1000;   /* search_syms scores sized, covering symbols above 1000 */
  }
#ifdef HAVE_LIBDW
  if (s->flags & PSYM_LINES) lookup_line(s, f, is_ret && vaddr ? vaddr - 1 : vaddr, out);
#else
  (void)is_ret;
#endif
  return 0;
}

void psym_close(struct psym *s) {
  if (!s) return;
  for (int i = 0; i < s->nf; i++) {
    if (s->f[i].base) munmap((void *)s->f[i].base, s->f[i].size);
    if (s->f[i].dbase) munmap((void *)s->f[i].dbase, s->f[i].dsize);
#ifdef HAVE_LIBDW
    if (s->f[i].dw) { dwarf_end(s->f[i].dw); close(s->f[i].dwfd); }
#endif
  }
  munmap(s, s->arena_size);
}
