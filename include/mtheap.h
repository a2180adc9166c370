/* mtheap: a scalable malloc for multithreaded programs.
 *
 * Linking -lmtheap (or LD_PRELOAD=libmtheap.so) replaces the whole malloc family and C++
 * operator new/delete.  The prefixed functions below are always available and never depend on
 * the override: a program can use mtheap side by side with another malloc.
 */
#ifndef MTHEAP_H
#define MTHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MTHEAP_VERSION_MAJOR 0
#define MTHEAP_VERSION_MINOR 1
#define MTHEAP_VERSION_PATCH 0

#if defined(__GNUC__)
#define MTHEAP_API __attribute__((visibility("default")))
#define MTHEAP_MALLOC_ATTR __attribute__((malloc, warn_unused_result))
#else
#define MTHEAP_API
#define MTHEAP_MALLOC_ATTR
#endif

/* The malloc family, with glibc's semantics. */
MTHEAP_API MTHEAP_MALLOC_ATTR void *mtheap_malloc(size_t size);
MTHEAP_API MTHEAP_MALLOC_ATTR void *mtheap_calloc(size_t count, size_t size);
MTHEAP_API void *mtheap_realloc(void *p, size_t size);
MTHEAP_API void *mtheap_reallocarray(void *p, size_t count, size_t size);
MTHEAP_API void mtheap_free(void *p);
MTHEAP_API void mtheap_free_sized(void *p, size_t size);
MTHEAP_API void mtheap_free_aligned_sized(void *p, size_t alignment, size_t size);
MTHEAP_API int mtheap_posix_memalign(void **out, size_t alignment, size_t size);
MTHEAP_API MTHEAP_MALLOC_ATTR void *mtheap_aligned_alloc(size_t alignment, size_t size);
MTHEAP_API MTHEAP_MALLOC_ATTR void *mtheap_memalign(size_t alignment, size_t size);
MTHEAP_API MTHEAP_MALLOC_ATTR void *mtheap_valloc(size_t size);
MTHEAP_API MTHEAP_MALLOC_ATTR void *mtheap_pvalloc(size_t size);
MTHEAP_API size_t mtheap_usable_size(const void *p);

/* True if p points into memory mtheap manages (any block, live or not). */
MTHEAP_API bool mtheap_owns(const void *p);

/* Return free memory to the OS now.  force=false purges what has waited past the purge delay
 * and gives back what the calling thread's caches held idle (as its periodic tick does);
 * force=true also purges fresh free memory and everything the calling thread keeps for reuse
 * (empty pages, cached blocks, freed large spans). */
MTHEAP_API void mtheap_collect(bool force);

#define MTHEAP_NUM_CLASSES 96  /* size-class slots in mtheap_stats.classes */

struct mtheap_class_stats {
  size_t block_size;      /* 0 for an unused slot */
  uint64_t mallocs;       /* blocks handed out */
  uint64_t frees;         /* blocks returned (by any thread) */
  uint64_t pages;         /* pages (spans) of this class in use now */
};

struct mtheap_stats {
  /* bytes */
  size_t in_use;          /* live blocks, by block size */
  size_t in_use_peak;     /* highest in_use seen by a statistics update (see README) */
  size_t pages_in_use;    /* bytes of spans holding at least one block, plus huge blocks */
  size_t pages_peak;
  size_t reserved;        /* address space reserved from the OS */
  size_t committed;       /* reserved bytes that may be resident (touched, not yet purged) */
  size_t resident;        /* the process's RSS, from /proc/self/statm */
  size_t purged;          /* bytes handed back to the OS with madvise, in total */
  /* counts */
  uint64_t mallocs, frees, remote_frees;
  uint64_t large_mallocs, huge_mallocs;  /* spans over 128 KiB; blocks in their own segments */
  uint64_t reallocs_in_place, reallocs_mremap;
  uint64_t mmap_calls, munmap_calls, madvise_calls, mremap_calls;
  uint64_t threads_seen, threads_live, heaps_reused;
  uint64_t lock_acquires, lock_waits, lock_wait_ns;  /* mtheap's internal locks */
  struct mtheap_class_stats classes[MTHEAP_NUM_CLASSES];
  /* Shared-memory traffic, the operations that decide how far the allocator scales with cores
   * (docs/PERFORMANCE.md): everything else a thread does touches only its own heap.  Added in
   * 0.2.0: the struct grew, so the shared library's soname went from libmtheap.so.0 to .so.1
   * (a program built against the old header must be rebuilt, not fed a larger struct). */
  uint64_t inbox_overflows;  /* remote frees pushed on the owner's overflow list (its array was full) */
  uint64_t inbox_drains;     /* times an owner took remote frees out of its inbox */
  uint64_t span_ops;         /* spans (pages, large blocks) taken from or returned to a heap's segments */
  uint64_t segment_ops;      /* segments taken from or returned to the shared arena (under its lock) */
  uint64_t shared_rmw;       /* atomic read-modify-writes on lines other threads write: 1 per remote
                                free and overflow push, 2 per span op and drain, 3 per lock
                                acquisition, and the locks a heap tries to borrow free slices */
};

MTHEAP_API void mtheap_stats_get(struct mtheap_stats *out);

/* Heap-debugging mode (LD_PRELOAD=libmtheap-debug.so, options in MTHEAP_DEBUG): check every
 * live block's redzones and every quarantined block's free pattern now.  Errors are reported
 * as at free(); the process aborts at the first one unless MTHEAP_DEBUG contains "continue".
 * Returns the number of errors found.  Only libmtheap-debug.so defines it: declare a weak
 * reference to keep a program runnable with the normal library. */
MTHEAP_API int mtheap_check_heap(void);
MTHEAP_API void mtheap_stats_print(FILE *out);  /* NULL means stderr */

#ifdef __cplusplus
}
#endif
#endif /* MTHEAP_H */
