/* mmap-lock: the NTT experiment (reference 002).  K reader threads take page faults on random
 * pages of a large mmapped file whose pages are dropped from memory every few milliseconds
 * (madvise(MADV_DONTNEED) on the mapping, then posix_fadvise(POSIX_FADV_DONTNEED), so the next
 * faults read the disk); meanwhile one thread mallocs, touches and frees 64 KiB and 16 MiB
 * blocks and times every malloc.  An allocator that calls mmap/munmap for those blocks needs
 * mmap_lock for writing and queues behind the faults; one that reuses its memory does not.
 *
 * The allocator's mmap/munmap/mremap/madvise calls during the malloc thread's loop are read
 * from the counting shim (libmmapcount.so, preloaded before the allocator) when it is present.
 * The peak RSS that counts here is the anonymous memory's (anon_peak_kb, sampled after every
 * malloc and fill): the process's own peak RSS mostly counts the file's pages the readers mapped
 * before the next drop, which depends on when the dropping reader got the CPU, not on malloc.
 *
 * Limits: the shim sees calls made through libc's exported symbols only.  glibc's own malloc
 * calls its internal __mmap and is invisible to it (the driver counts those with strace), and an
 * allocator issuing raw syscalls would be too.  count_source=none means no shim was loaded. */
#include "../common.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static const char *W = "mmap-lock";
static long long nreaders = 2, iters = 400, file_mb = 256, drop_ms = 20, small_sz = 64 << 10,
                 large_sz = 16 << 20, willneed = 0, drop_caches = 0;
static const char *path = NULL;

static unsigned char *map;
static size_t map_len;
static int fd = -1;
static _Atomic bool stop;
static _Atomic long long drops, reads;

static void *reader(void *a) {
  int id = (int)(intptr_t)a;
  struct bench_rng r;
  bench_rng_seed(&r, (uint64_t)id + 1234);
  size_t pages = map_len / BENCH_PAGE;
  unsigned sum = 0;
  long long n = 0;
  double next_drop = bench_now() + (double)drop_ms / 1000.0;
  while (!atomic_load(&stop)) {
    size_t pg = (size_t)(bench_rand(&r) % pages);
    if (willneed && (n & 63) == 0) {
      /* The paper's bad case: read-ahead advice holds mmap_lock while it queues I/O. */
      size_t chunk = (size_t)2 << 20, off = (pg * BENCH_PAGE) & ~(chunk - 1);
      if (off + chunk > map_len) chunk = map_len - off;
      syscall(SYS_madvise, map + off, chunk, MADV_WILLNEED);
    }
    sum += *(volatile unsigned char *)(map + pg * BENCH_PAGE);
    n++;
    if (id == 0 && drop_ms > 0 && (n & 255) == 0 && bench_now() >= next_drop) {
      /* Raw syscalls: the counting shim must see only the allocator's calls. */
      syscall(SYS_madvise, map, map_len, MADV_DONTNEED);
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      if (drop_caches) {
        int d = open("/proc/sys/vm/drop_caches", O_WRONLY);
        if (d >= 0) {
          if (write(d, "1", 1) < 0) { /* not permitted: fadvise alone still applies */ }
          close(d);
        }
      }
      atomic_fetch_add(&drops, 1);
      next_drop = bench_now() + (double)drop_ms / 1000.0;
    }
  }
  atomic_fetch_add(&reads, n);
  return (void *)(uintptr_t)sum;
}

/* Resident anonymous memory in KiB: statm's resident minus its shared (file and shmem) pages.
 * Read with pread on a descriptor kept open, outside the timed calls. */
static long long anon_kb(int statm) {
  char buf[128];
  ssize_t n = statm < 0 ? -1 : pread(statm, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = 0;
  long long size, resident, shared;
  if (sscanf(buf, "%lld %lld %lld", &size, &resident, &shared) != 3) return 0;
  return (resident - shared) * (BENCH_PAGE / 1024);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, size_t n, double q) {
  size_t i = (size_t)(q * (double)(n - 1) + 0.5);
  return (double)v[i < n ? i : n - 1] / 1000.0;
}

typedef void (*counts_fn)(uint64_t out[4]);

static void open_file(void) {
  char def[256];
  if (!path) {
    const char *dir = getenv("MTHEAP_BENCH_TMPDIR");
    if (!dir) dir = "/var/tmp";
    snprintf(def, sizeof def, "%s/mtheap-bench-mmap-%lldM.dat", dir, file_mb);
    path = def;
  }
  map_len = (size_t)file_mb << 20;
  struct stat st;
  fd = open(path, O_RDONLY);
  if (fd < 0 || fstat(fd, &st) || (size_t)st.st_size != map_len) {
    /* Real data, not a sparse file: holes would be served without any disk read.  Written
     * once and kept, since writing it costs more than a short run. */
    if (fd >= 0) close(fd);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    int w = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (w < 0) bench_die(W, "create data file", errno);
    size_t chunk = 1 << 20;
    unsigned char *buf = malloc(chunk);
    if (!buf) bench_oom(W, chunk);
    for (size_t off = 0; off < map_len; off += chunk) {
      for (size_t i = 0; i < chunk; i += 8) {
        uint64_t v = bench_mix(off + i);
        memcpy(buf + i, &v, 8);
      }
      if (write(w, buf, chunk) != (ssize_t)chunk) bench_die(W, "write data file", errno);
    }
    free(buf);
    fsync(w);
    close(w);
    if (rename(tmp, path)) bench_die(W, "rename data file", errno);
    fd = open(path, O_RDONLY);
    if (fd < 0) bench_die(W, "open data file", errno);
  }
  map = (unsigned char *)syscall(SYS_mmap, NULL, map_len, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) bench_die(W, "mmap data file", errno);
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nreaders, NULL, 0, 256, "page-faulting reader threads (K)"},
      {'i', "iterations", BOPT_INT, &iters, NULL, 1, 100000000,
       "malloc thread iterations (each mallocs one small and one large block)"},
      {0, "small", BOPT_INT, &small_sz, NULL, 1, 1LL << 32, "small block size"},
      {0, "large", BOPT_INT, &large_sz, NULL, 1, 1LL << 34, "large block size"},
      {0, "file-mb", BOPT_INT, &file_mb, NULL, 1, 1 << 20, "size of the mapped file in MiB"},
      {0, "file", BOPT_STR, NULL, &path, 0, 0,
       "data file (created with real data if missing or of the wrong size; default "
       "$MTHEAP_BENCH_TMPDIR or /var/tmp/mtheap-bench-mmap-<MB>M.dat)"},
      {0, "drop-ms", BOPT_INT, &drop_ms, NULL, 0, 100000,
       "drop the file's pages every this many ms (0 = never)"},
      {0, "willneed", BOPT_FLAG, &willneed, NULL, 0, 1,
       "readers also call madvise(MADV_WILLNEED) on 2 MiB chunks (the paper's worst case)"},
      {0, "drop-caches", BOPT_FLAG, &drop_caches, NULL, 0, 1,
       "also write 1 to /proc/sys/vm/drop_caches when permitted (affects the whole machine)"},
      {0}};
  bench_parse(argc, argv, W,
              "NTT's mmap_lock experiment: K threads fault on a mmapped file while one thread "
              "mallocs/frees 64 KiB and 16 MiB blocks; reports that thread's malloc latency.",
              opts);
  open_file();
  counts_fn counts = (counts_fn)dlsym(RTLD_DEFAULT, "mtheap_bench_mmap_counts");
  pthread_t *th = calloc((size_t)nreaders + 1, sizeof *th);
  for (long long i = 0; i < nreaders; i++) {
    int e = pthread_create(&th[i], NULL, reader, (void *)(intptr_t)i);
    if (e) bench_die(W, "pthread_create", e);
  }
  bench_sleep_ms(nreaders ? 50 : 0); /* let the faults start before measuring */
  size_t nlat = (size_t)iters * 2;
  uint64_t *lat = malloc(nlat * sizeof *lat), *flat = malloc(nlat * sizeof *flat);
  if (!lat || !flat) bench_oom(W, nlat * 16);
  uint64_t c0[4] = {0}, c1[4] = {0};
  if (counts) counts(c0);
  size_t sizes[2] = {(size_t)small_sz, (size_t)large_sz};
  void *prev[2] = {NULL, NULL};
  uint64_t prevkey[2] = {0, 0}, key = 1;
  int statm = open("/proc/self/statm", O_RDONLY);
  long long anon_peak = anon_kb(statm);
  double t0 = bench_now();
  size_t k = 0;
  for (long long i = 0; i < iters; i++) {
    for (int s = 0; s < 2; s++, k++, key++) {
      uint64_t a = bench_now_ns();
      void *p = bench_malloc(sizes[s]);
      uint64_t b = bench_now_ns();
      if (!p) bench_oom(W, sizes[s]);
      lat[k] = b - a;
      bench_fill(p, sizes[s], key);
      long long anon = anon_kb(statm);
      if (anon > anon_peak) anon_peak = anon;
      /* Free the previous block of this size only now, so the self-check covers a malloc. */
      flat[k] = 0;
      if (prev[s]) {
        bench_verify(prev[s], sizes[s], prevkey[s], W);
        a = bench_now_ns();
        free(prev[s]);
        flat[k] = bench_now_ns() - a;
      }
      prev[s] = p;
      prevkey[s] = key;
    }
  }
  for (int s = 0; s < 2; s++) bench_release(prev[s], sizes[s], prevkey[s], W);
  double dt = bench_now() - t0;
  if (statm >= 0) close(statm);
  if (counts) counts(c1);
  atomic_store(&stop, true);
  for (long long i = 0; i < nreaders; i++) pthread_join(th[i], NULL);
  double mean = 0;
  for (size_t i = 0; i < nlat; i++) mean += (double)lat[i];
  mean /= (double)nlat * 1000.0;
  qsort(lat, nlat, sizeof *lat, cmp_u64);
  qsort(flat, nlat, sizeof *flat, cmp_u64);
  char extra[768];
  if (counts)
    snprintf(extra, sizeof extra,
             "mean_us=%.3f p50_us=%.3f p999_us=%.3f max_us=%.3f free_p99_us=%.3f "
             "free_max_us=%.3f mmap_calls=%" PRIu64 " munmap_calls=%" PRIu64
             " mremap_calls=%" PRIu64 " madvise_calls=%" PRIu64
             " count_source=shim seconds=%.4f drops=%lld reader_pages=%lld anon_peak_kb=%lld",
             mean, pct(lat, nlat, 0.5), pct(lat, nlat, 0.999), pct(lat, nlat, 1.0),
             pct(flat, nlat, 0.99), pct(flat, nlat, 1.0), c1[0] - c0[0], c1[1] - c0[1],
             c1[2] - c0[2], c1[3] - c0[3], dt, (long long)atomic_load(&drops),
             (long long)atomic_load(&reads), anon_peak);
  else
    snprintf(extra, sizeof extra,
             "mean_us=%.3f p50_us=%.3f p999_us=%.3f max_us=%.3f free_p99_us=%.3f "
             "free_max_us=%.3f count_source=none seconds=%.4f drops=%lld reader_pages=%lld "
             "anon_peak_kb=%lld",
             mean, pct(lat, nlat, 0.5), pct(lat, nlat, 0.999), pct(lat, nlat, 1.0),
             pct(flat, nlat, 0.99), pct(flat, nlat, 1.0), dt, (long long)atomic_load(&drops),
             (long long)atomic_load(&reads), anon_peak);
  bench_result(W, nreaders, "malloc_p99", pct(lat, nlat, 0.99), "us", "lower", extra);
  free(lat);
  free(flat);
  free(th);
  syscall(SYS_munmap, map, map_len);
  close(fd);
  return 0;
}
