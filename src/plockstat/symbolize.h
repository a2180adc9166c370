/* Offline symbolizer: program counters and data addresses -> object`symbol+0xoff [file:line].
 *
 * Shared by plockstat (which symbolizes after the run, from a saved copy of /proc/<pid>/maps)
 * and the heap-debug mode (which symbolizes inside a process whose heap may be corrupt).  For
 * that second user the core never calls malloc: its working memory and the ELF files are
 * mmap'd.  Source lines (PSYM_LINES) use elfutils' libdw, which does allocate; leave the flag
 * off where malloc cannot be trusted.
 */
#ifndef MTHEAP_PLOCKSTAT_SYMBOLIZE_H
#define MTHEAP_PLOCKSTAT_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct psym;

enum {
  PSYM_LINES = 1, /* look up DWARF source lines (needs libdw; allocates) */
};

struct psym_info {
  const char *path;      /* the mapped file, or NULL when the address is in no file mapping */
  const char *object;    /* basename of path */
  const char *symbol;    /* NULL when no ELF symbol covers the address */
  int covers;            /* symbol is sized and holds the address (else: the nearest label before it) */
  uint64_t offset;       /* address - symbol start (or file-relative address if no symbol) */
  uint64_t file_vaddr;   /* the address in the ELF file's own numbering */
  const char *src_file;  /* NULL unless PSYM_LINES found it */
  unsigned src_line;
};

/* maps: the text of /proc/<pid>/maps (copied; the caller may free it).  NULL on failure. */
struct psym *psym_open(const char *maps, size_t len, unsigned flags);

/* Convenience for the heap-debug mode: the current process's own mappings. */
struct psym *psym_open_self(unsigned flags);

/* is_return_address: addr is a return address, so its source line is that of addr - 1.
 * Returns 0 when the address lies in a mapped file, -1 otherwise (out->path is then NULL).
 * Strings in *out stay valid until psym_close(). */
int psym_lookup(struct psym *s, uint64_t addr, int is_return_address, struct psym_info *out);

void psym_close(struct psym *s);

#ifdef __cplusplus
}
#endif
#endif
