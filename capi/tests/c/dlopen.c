/*
 * libterroir.so loaded with dlopen by a program not linked with it, as a
 * plugin host or an interpreter's FFI loads it. The library must use no
 * static TLS (a library that does takes its whole TLS segment from
 * glibc's small surplus at dlopen, and can fail to load), and its fast
 * paths find the calling worker by the thread pointer, in a table filled
 * as workers start (src/sched/current.rs). Checks, through function
 * pointers from dlsym: a thread started before the dlopen is no worker;
 * tasks know their worker; task groups work inside a task; the table's
 * pages are wiped in a fork child (MADV_WIPEONFORK); the main thread is
 * no worker.
 *
 *   dlopen <path of libterroir.so> [reps=1000]
 *
 * Prints "dlopen P passed, F failed"; exits 0 when nothing failed.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <terroir.h>

/* EXPECT and FINISH only: the other checks call terroir directly, and
 * this program reaches it through dlsym alone. */
#include "check.h"

static int (*pool_create)(const terroir_pool_config *, terroir_pool **);
static int (*pool_destroy)(terroir_pool *);
static int (*join)(terroir_pool *, terroir_task_fn, void *, terroir_task_fn, void *);
static int (*current_worker)(size_t *);
static int (*group_create)(terroir_pool *, terroir_group **);
static int (*group_spawn)(terroir_group *, terroir_task_fn, void *, const terroir_place *);
static int (*group_destroy)(terroir_group *);

static long reps = 1000;

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "dlsym(%s): %s\n", name, dlerror());
    exit(2);
  }
  return p;
}

/* A thread that runs from before the dlopen to after it. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open;

static void *early_thread(void *out) {
  pthread_mutex_lock(&gate_lock);
  while (!gate_open) pthread_cond_wait(&gate_cond, &gate_lock);
  pthread_mutex_unlock(&gate_lock);
  size_t w = 12345;
  *(int *)out = current_worker(&w);
  return NULL;
}

static void add_one(void *arg) { __atomic_fetch_add((long *)arg, 1, __ATOMIC_RELAXED); }

struct task_result {
  int worker_rc;
  size_t worker;
  long bad_groups, ran;
};

/* Runs on a worker: asks which one, then creates and destroys groups,
 * empty and with tasks. */
static void on_worker(void *arg) {
  struct task_result *r = arg;
  r->worker_rc = current_worker(&r->worker);
  for (long i = 0; i < reps; i++) {
    terroir_group *g;
    if (group_create(NULL, &g) != TERROIR_ERROR_OK) {
      r->bad_groups++;
      continue;
    }
    if (i % 2 == 0) {
      for (int k = 0; k < 3; k++)
        if (group_spawn(g, add_one, &r->ran, NULL) != TERROIR_ERROR_OK) r->bad_groups++;
    }
    if (group_destroy(g) != TERROIR_ERROR_OK) r->bad_groups++;
  }
}

static void nothing(void *arg) { (void)arg; }

/* Ranges of this process that a fork child gets zeroed (`wf` among
 * their VmFlags in /proc/self/smaps): the worker table's pages, once a
 * worker claimed an entry; -1 if smaps cannot be read. */
static int wipe_on_fork_ranges(void) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "VmFlags:", 8) == 0 && strstr(line, " wf")) n++;
  }
  fclose(f);
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <libterroir.so> [reps]\n", argv[0]);
    return 2;
  }
  if (argc > 2) reps = atol(argv[2]);
  pthread_t early;
  int early_rc = -1;
  if (pthread_create(&early, NULL, early_thread, &early_rc) != 0) return 2;

  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen(%s): %s\n", argv[1], dlerror());
    return 2;
  }
  pool_create = sym(lib, "terroir_pool_create");
  pool_destroy = sym(lib, "terroir_pool_destroy");
  join = sym(lib, "terroir_join");
  current_worker = sym(lib, "terroir_current_worker");
  group_create = sym(lib, "terroir_group_create");
  group_spawn = sym(lib, "terroir_group_spawn");
  group_destroy = sym(lib, "terroir_group_destroy");

  pthread_mutex_lock(&gate_lock);
  gate_open = 1;
  pthread_cond_broadcast(&gate_cond);
  pthread_mutex_unlock(&gate_lock);
  pthread_join(early, NULL);
  EXPECT(early_rc == TERROIR_ERROR_NOT_IN_POOL, "a thread older than the dlopen: rc %d", early_rc);

  size_t w = 12345;
  int rc = current_worker(&w);
  EXPECT(rc == TERROIR_ERROR_NOT_IN_POOL, "the main thread: rc %d, worker %zu", rc, w);

  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = 2, .pin = TERROIR_PIN_OFF};
  terroir_pool *pool;
  rc = pool_create(&config, &pool);
  EXPECT(rc == TERROIR_ERROR_OK, "terroir_pool_create: rc %d", rc);
  if (rc != TERROIR_ERROR_OK) goto done;

  struct task_result r = {.worker_rc = -1, .worker = 12345};
  rc = join(pool, on_worker, &r, nothing, NULL);
  EXPECT(rc == TERROIR_ERROR_OK, "terroir_join: rc %d", rc);
  EXPECT(r.worker_rc == TERROIR_ERROR_OK && r.worker < 2, "a task's worker: rc %d, worker %zu", r.worker_rc,
         r.worker);
  EXPECT(r.bad_groups == 0, "%ld group calls failed", r.bad_groups);
  EXPECT(r.ran == 3 * ((reps + 1) / 2), "%ld of %ld group tasks ran", r.ran, 3 * ((reps + 1) / 2));
  /* The table's pages took the advice (else the fast paths are never
   * used: a lookup only ever misses). */
  int wf = wipe_on_fork_ranges();
  EXPECT(wf == 1, "%d ranges wiped on fork (the worker table's)", wf);

  rc = current_worker(&w);
  EXPECT(rc == TERROIR_ERROR_NOT_IN_POOL, "the main thread after the join: rc %d", rc);
  EXPECT(pool_destroy(pool) == TERROIR_ERROR_OK, "terroir_pool_destroy");

done:
  FINISH("dlopen");
}
