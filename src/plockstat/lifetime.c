/* lifetime.c: the process's ends and turns: _exit, exec (each image reports on its own),
 * fork (the child starts fresh tables), and fatal signals (write the data, then die as the
 * signal would have made it die). */
#include "ps.h"

/* ---- _exit and exec: the image ends without running destructors --------------------------- */
EXPORT void _exit(int code) {
  if (!real.exit_) ensure_init();
  dump("_exit");
  real.exit_(code);
}
EXPORT void _Exit(int code) {
  if (!real.Exit_) ensure_init();
  dump("_exit");
  real.Exit_(code);
}
/* A vfork child (dash runs every command so) shares the parent's memory: it must not touch our
 * tables or buffers.  It leaves a one-line <pid>.exec file, built on its own stack, so that
 * plockstat can tell when the program it exec'd wrote nothing. */
static void vfork_exec_marker(const char *path) {
  char name[1200], line[1100];
  size_t n = slen(g_dir);
  if (!g_dir[0] || n + 32 > sizeof name || !path) return;
  memcpy(name, g_dir, n);
  char *q = name + n;
  *q++ = '/';
  char num[16]; int k = 0; unsigned v = (unsigned)getpid();
  do { num[k++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (k) *q++ = num[--k];
  memcpy(q, ".exec", 6);
  size_t m = 0;
  for (const char *p = "exec_path "; *p; p++) line[m++] = *p;
  for (size_t i = 0; path[i] && m < sizeof line - 2; i++) line[m++] = path[i] == '\n' ? '?' : path[i];
  line[m++] = '\n';
  int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t w = write(fd, line, m);
  (void)w;
  close(fd);
}

/* The data says what is about to run: if that image writes nothing (static, set-user-ID, no
 * LD_PRELOAD), plockstat can say why instead of reporting the shell alone. */
static void before_exec(const char *path) {
  if (!real.execve) ensure_init();
  /* vfork children share our memory but never ran the atfork handler: not our process. */
  if (getpid() != g_pid) {
    vfork_exec_marker(path);
    return;
  }
  size_t i = 0;
  for (; path && path[i] && i < sizeof g_exec_path - 1; i++)
    g_exec_path[i] = path[i] == '\n' ? '?' : path[i]; /* one header line */
  g_exec_path[i] = 0;
  dump("exec");
  g_exec_path[0] = 0; /* if the exec fails, this image goes on */
}
EXPORT int execve(const char *p, char *const argv[], char *const envp[]) {
  before_exec(p);
  return real.execve(p, argv, envp);
}
EXPORT int execv(const char *p, char *const argv[]) {
  before_exec(p);
  return real.execve(p, argv, environ);
}
EXPORT int execvpe(const char *f, char *const argv[], char *const envp[]) {
  before_exec(f);
  return real.execvpe(f, argv, envp);
}
EXPORT int execvp(const char *f, char *const argv[]) {
  before_exec(f);
  return real.execvpe(f, argv, environ);
}
EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  before_exec(argv[0]);
  return real.fexecve(fd, argv, envp);
}
EXPORT int execveat(int dfd, const char *p, char *const argv[], char *const envp[], int fl) {
  before_exec(p);
  return real.execveat(dfd, p, argv, envp, fl);
}
#define COLLECT_ARGV(first, ap, argv, envp_out)                                             \
  size_t argc_ = 1;                                                                         \
  va_start(ap, first);                                                                      \
  while (va_arg(ap, char *)) argc_++;                                                       \
  va_end(ap);                                                                               \
  char **argv = __builtin_alloca((argc_ + 1) * sizeof(char *));                             \
  va_start(ap, first);                                                                      \
  argv[0] = (char *)first;                                                                  \
  for (size_t i_ = 1; i_ <= argc_; i_++) argv[i_] = va_arg(ap, char *);                     \
  envp_out;                                                                                 \
  va_end(ap)
EXPORT int execl(const char *p, const char *arg, ...) {
  va_list ap;
  COLLECT_ARGV(arg, ap, argv, (void)0);
  return execv(p, argv);
}
EXPORT int execlp(const char *f, const char *arg, ...) {
  va_list ap;
  COLLECT_ARGV(arg, ap, argv, (void)0);
  return execvp(f, argv);
}
EXPORT int execle(const char *p, const char *arg, ...) {
  va_list ap;
  char **envp;
  COLLECT_ARGV(arg, ap, argv, envp = va_arg(ap, char **));
  return execve(p, argv, envp);
}

/* ---- fork: the child reports on its own ---------------------------------------------------- */
void atfork_child(void) {
  /* Each process reports on its own: drop the parent's tables and every thread but this one. */
  struct thr *self = tls_thr;
  free_tables();
  alloc_tables();
  g_pid = getpid();
  g_image_start_ns = g_window_start_ns = now_ns();
  g_main_run0 = g_main_lat0 = 0; /* a new process: its cpu time starts at zero */
  /* A dump in progress in another parent thread never finishes here. */
  atomic_store(&g_dumping, 0);
  /* The control file and its helper thread belong to the parent: do not answer for it, and
   * do not remove it at our exit. */
  g_attachable = 0;
  helper_forget();
  if (g_ctl) { munmap(g_ctl, 4096); g_ctl = NULL; }
  g_ctlpath[0] = 0;
  if (g_tid) memset((void *)g_tid, 0, sizeof(*g_tid) * TID_SLOTS);
  if (g_thr) {
    struct thr keep;
    if (self) keep = *self;
    memset(g_thr, 0, sizeof(struct thr) * (size_t)(atomic_load(&g_nthr) < THR_MAX ? atomic_load(&g_nthr) : THR_MAX));
    g_nthr = 0;
    if (self) {
      struct thr *t = thr_alloc();
      if (t) {
        int hold_cd = t->hold_cd;
        *t = keep;
        t->hold_cd = hold_cd;
        t->acq = t->lck_ns = t->cvw_ns = t->nblock = t->ncvw = 0;
        t->base_acq = t->base_lck = t->base_cvw = t->base_nblock = t->base_ncvw = 0;
        t->run0 = t->lat0 = 0;
        t->tid = my_tid();
        t->start_ns = g_image_start_ns;
        t->alive = 1;
        thr_index(t);
        if (g_key_ok) pthread_setspecific(g_key, t);
      }
      tls_thr = t;
    }
  }
}

/* ---- fatal signals ---------------------------------------------------------------------- */
/* Every signal whose default action ends the process: a crash, an abort() or a kill is exactly
 * when the user wants the lock report.  Only where the program left the default in place; a
 * handler the program installs later replaces ours, and the program then decides. */
static const int g_fatal_sigs[] = {
  SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGUSR1, SIGSEGV, SIGUSR2,
  SIGPIPE, SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGPWR, SIGSYS
};
#define ALTSTACK_SIZE (64 * 1024)

/* Runs on the thread the signal hit, with every signal blocked (sa_mask): a second SIGTERM from
 * `timeout` or a shell waits until the data is written.  dump() is async-signal-safe: no
 * malloc, no stdio, no locks; write(2) from a static buffer. */
static void on_fatal_signal(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  int e = errno;
  g_fatal_sig = sig;
  dump("signal");
  errno = e;
  /* SA_RESETHAND put back the default.  A fault the kernel raised (si_code > 0) recurs when the
   * instruction is retried, with its original address for the core file and the debugger;
   * anything sent (kill, raise, abort) is sent again, and both end the process as the signal
   * would have without us. */
  int fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) && si && si->si_code > 0;
  if (!fault) raise(sig);
}

void fatal_signals_install(void) {
  /* A stack overflow in the main thread can only be reported from another stack.  Other
   * threads' overflows still die silently: an alternate stack per thread would cost every
   * pthread_create an mmap. */
  stack_t cur;
  if (getpid() == my_tid() && sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
    void *p = map_zero(ALTSTACK_SIZE);
    if (p) {
      stack_t ss = { .ss_sp = p, .ss_size = ALTSTACK_SIZE, .ss_flags = 0 };
      if (sigaltstack(&ss, NULL) != 0) munmap(p, ALTSTACK_SIZE);
    }
  }
  for (unsigned i = 0; i < sizeof g_fatal_sigs / sizeof g_fatal_sigs[0]; i++) {
    struct sigaction old;
    if (sigaction(g_fatal_sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
        old.sa_handler != SIG_DFL)
      continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigfillset(&sa.sa_mask);
    sigaction(g_fatal_sigs[i], &sa, NULL);
  }
}
