/* Everything that talks to the kernel about memory.  Each call is counted: "no mmap churn" is a
 * promise the statistics must be able to prove. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

MTH_HIDDEN mth_global_stats_t mth_gstats;

static void *mth_mmap(void *addr, size_t size, int extra_flags) {
  atomic_fetch_add_explicit(&mth_gstats.mmap_calls, 1, memory_order_relaxed);
  void *p = mmap(addr, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void mth_munmap(void *p, size_t size) {
  if (size == 0) return;
  atomic_fetch_add_explicit(&mth_gstats.munmap_calls, 1, memory_order_relaxed);
  munmap(p, size);
}

static void mth_no_thp(void *p, size_t size) {
  if (mth_opt.thp) return;
  /* purges of a few slices inside a transparent huge page would split it, and a huge page makes RSS
   * jump by 2 MiB for one touched byte: the complaint users have of other allocators. */
  atomic_fetch_add_explicit(&mth_gstats.madvise_calls, 1, memory_order_relaxed);
  madvise(p, size, MADV_NOHUGEPAGE);
}

/* Address space, aligned, not committed (MAP_NORESERVE keeps it out of overcommit accounting;
 * pages are faulted in on first touch). */
void *mth_os_reserve(size_t size, size_t align) {
  uint8_t *p = mth_mmap(NULL, size + align, 0);
  if (!p) return NULL;
  uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
  mth_munmap(p, a - (uintptr_t)p);
  mth_munmap((uint8_t *)a + size, (uintptr_t)p + size + align - (a + size));
  mth_no_thp((void *)a, size);
  atomic_fetch_add_explicit(&mth_gstats.reserved, size, memory_order_relaxed);
  return (void *)a;
}

/* MADV_DONTNEED, not MADV_FREE: RSS must visibly fall, and a purged range reads back as zero,
 * which calloc relies on. */
void mth_os_purge(void *p, size_t size) {
  atomic_fetch_add_explicit(&mth_gstats.madvise_calls, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mth_gstats.purged, size, memory_order_relaxed);
  madvise(p, size, MADV_DONTNEED);
}

static bool mth_mremap_fixed(void *old, size_t old_size, void *new_addr, size_t new_size) {
  atomic_fetch_add_explicit(&mth_gstats.mremap_calls, 1, memory_order_relaxed);
  return mremap(old, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, new_addr) != MAP_FAILED;
}

/* Move the pages of [old, old+old_size) to new_addr (inside our reservation) without copying.
 * mremap moves one mapping only (EFAULT when the range spans several), and every earlier move
 * leaves mapping boundaries behind: at the block it moved and at the hole it mapped again.
 * Those boundaries are on 2 MiB slots, so a range the kernel refuses whole is moved slot by
 * slot; if a piece fails, the pieces already moved go back and the caller copies. */
bool mth_os_remap_fixed(void *old, size_t old_size, void *new_addr, size_t new_size) {
  if (mth_mremap_fixed(old, old_size, new_addr, new_size)) {
    mth_no_thp(new_addr, new_size);
    return true;
  }
  if (errno != EFAULT || (old_size & MTH_SEG_MASK)) return false;
  uint8_t *from = old, *to = new_addr;
  size_t done = 0;
  while (done < old_size && mth_mremap_fixed(from + done, MTH_SEG_SIZE, to + done, MTH_SEG_SIZE))
    done += MTH_SEG_SIZE;
  if (done < old_size) {
    size_t moved = done;
    while (done > 0) {
      done -= MTH_SEG_SIZE;
      if (!mth_mremap_fixed(to + done, MTH_SEG_SIZE, from + done, MTH_SEG_SIZE))
        mth_fatal("cannot move %zu bytes back from %p to %p", (size_t)MTH_SEG_SIZE, (void *)(to + done),
                  (void *)(from + done));
    }
    /* moving back left holes where the pieces were: the destination is ours to reuse */
    if (moved) mth_os_rereserve(to, moved);
    return false;
  }
  mth_no_thp(new_addr, new_size);
  return true;
}

/* mremap leaves a hole where the block was; map it again so the region stays whole. */
void mth_os_rereserve(void *p, size_t size) {
  if (!mth_mmap(p, size, MAP_FIXED)) mth_fatal("cannot map back %zu bytes at %p", size, p);
  mth_no_thp(p, size);
}

size_t mth_os_resident(void) {
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char *s = buf;
  while (*s && *s != ' ') s++;
  size_t pages = 0;
  while (*s == ' ') s++;
  while (*s >= '0' && *s <= '9') pages = pages * 10 + (size_t)(*s++ - '0');
  return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Metadata (heaps, region tables): bump allocation from chunks that are never returned.
 * Heaps are recycled, so the total is bounded by the peak number of threads. */
MTH_HIDDEN mth_lock_t mth_meta_lock;
static uint8_t *mth_meta_cur, *mth_meta_end;

static void *mth_meta_alloc_aligned(size_t size, size_t align) {
  size = (size + MTH_CACHE_LINE - 1) & ~(size_t)(MTH_CACHE_LINE - 1);
  mth_lock(&mth_meta_lock);
  uint8_t *cur = (uint8_t *)(((uintptr_t)mth_meta_cur + align - 1) & ~(uintptr_t)(align - 1));
  if (mth_meta_cur && cur <= mth_meta_end) mth_meta_cur = cur;   /* chunks are page-aligned */
  if ((size_t)(mth_meta_end - mth_meta_cur) < size) {
    size_t chunk = size > ((size_t)1 << 20) ? size : ((size_t)1 << 20);
    uint8_t *p = mth_mmap(NULL, chunk, 0);
    if (!p) {
      mth_unlock(&mth_meta_lock);
      return NULL;
    }
    mth_meta_cur = p;
    mth_meta_end = p + chunk;
  }
  void *r = mth_meta_cur;
  mth_meta_cur += size;
  mth_unlock(&mth_meta_lock);
  return r;
}

void *mth_meta_alloc(size_t size) { return mth_meta_alloc_aligned(size, MTH_CACHE_LINE); }

/* Heaps: whole pages of their own, so the pages a thread touches are its heap's and no other
 * metadata lands in the heap's untouched tail (internal.h). */
void *mth_meta_alloc_pages(size_t size) { return mth_meta_alloc_aligned((size + 4095) & ~(size_t)4095, 4096); }
