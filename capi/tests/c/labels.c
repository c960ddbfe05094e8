/*
 * terroir_label_push / terroir_label_pop: labelled regions opened and
 * closed by two calls (NVTX-style), recorded like terroir_label's
 * callback: nested regions, names freed by the caller right after the
 * push, regions on threads outside every pool and on pools that do not
 * record; and the defined result of each bad input (NULL and bad names,
 * a pop without a push, too many labels open). (A pop of a label pushed
 * by the task that the popping one runs on top of is refused too: a Rust
 * test of the engine covers it, src/sched/record/tests.rs.)
 *
 *   labels [tasks=200]
 *
 * Output: "labels P passed, F failed"; exit status 1 if any check failed.
 * tests/ffi.rs runs it (and once under Valgrind).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

static volatile uint64_t sink;

static void work(void) {
  uint64_t s = 0;
  for (uint64_t i = 0; i < 20000; i++) s += i * i;
  sink += s;
}

/* A task: "leaf" around its work, "inner" nested in it, each name a heap
 * copy freed right after the push. */
static void leaf(void *arg) {
  (void)arg;
  char *outer = strdup("leaf"), *inner = strdup("inner");
  int a = terroir_label_push(outer);
  free(outer);
  work();
  int b = terroir_label_push(inner);
  free(inner);
  work();
  int c = terroir_label_pop();
  int d = terroir_label_pop();
  if (a || b || c || d) abort(); /* checked by the counts below */
}

/* Spawns `n` leaf tasks on `pool` and waits. */
static void run_leaves(terroir_pool *pool, long n) {
  terroir_group *g = NULL;
  EXPECT_OK(terroir_group_create(pool, &g));
  for (long i = 0; i < n; i++) EXPECT_OK(terroir_group_spawn(g, leaf, NULL, NULL));
  EXPECT_OK(terroir_group_destroy(g));
}

/* Records `n` leaves on `pool`. */
static terroir_recording *record_leaves(terroir_pool *pool, long n) {
  terroir_record_options o = TERROIR_RECORD_OPTIONS_INIT;
  o.counters = TERROIR_COUNTERS_NONE;
  terroir_recording *r = NULL;
  EXPECT_OK(terroir_record_start(pool, &o));
  run_leaves(pool, n);
  EXPECT_OK(terroir_record_stop(pool, &r));
  return r;
}

/* The task counts of `label` in the CSV report at `path` (both runs). */
static int csv_counts(const char *path, const char *label, long *one, long *par) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[4096];
  size_t n = strlen(label);
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, label, n) == 0 && line[n] == ',') {
      /* label,tasks_1,total_ns_1,mean_ns_1,tasks_p,... */
      char *p = line + n + 1;
      *one = strtol(p, &p, 10);
      for (int skip = 0; skip < 2 && p; skip++) p = strchr(p + 1, ',');
      *par = p ? strtol(p + 1, NULL, 10) : -1;
      found = 1;
    }
  }
  fclose(f);
  return found;
}

int main(int argc, char **argv) {
  long tasks = argc > 1 ? atol(argv[1]) : 200;

  /* Bad input: nothing is pushed. */
  EXPECT_ERR(terroir_label_push(NULL), TERROIR_ERROR_NULL_POINTER, "`name`");
  EXPECT_ERR(terroir_label_push(""), TERROIR_ERROR_INVALID_ARGUMENT, "empty");
  EXPECT_ERR(terroir_label_push("\xff\xfe"), TERROIR_ERROR_INVALID_ARGUMENT, "not UTF-8");
  char longname[300];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  EXPECT_ERR(terroir_label_push(longname), TERROIR_ERROR_INVALID_ARGUMENT, "longer than 256");
  EXPECT_ERR(terroir_label_pop(), TERROIR_ERROR_LABEL_NOT_PUSHED, "no label pushed");

  /* Outside every pool: pushes and pops nest, nothing is recorded. */
  EXPECT_OK(terroir_label_push("main"));
  EXPECT_OK(terroir_label_push("main-inner"));
  EXPECT_OK(terroir_label_pop());
  EXPECT_OK(terroir_label_pop());
  EXPECT_ERR(terroir_label_pop(), TERROIR_ERROR_LABEL_NOT_PUSHED, "more pops than");

  /* Too many open labels on one thread. */
  int pushed = 0, rc = TERROIR_ERROR_OK;
  while (pushed < 2000 && (rc = terroir_label_push("deep")) == TERROIR_ERROR_OK) pushed++;
  EXPECT(rc == TERROIR_ERROR_OUT_OF_MEMORY && pushed == 1024, "pushed %d, then %d", pushed, rc);
  while (pushed > 0 && terroir_label_pop() == TERROIR_ERROR_OK) pushed--;
  EXPECT(pushed == 0, "%d labels left", pushed);

  /* A pool that does not record: the regions only nest. */
  terroir_pool_config c = TERROIR_POOL_CONFIG_INIT;
  c.num_threads = 2;
  c.pin = TERROIR_PIN_OFF;
  terroir_pool *pool = NULL, *one = NULL;
  EXPECT_OK(terroir_pool_create(&c, &pool));
  run_leaves(pool, 10);
  c.num_threads = 1;
  EXPECT_OK(terroir_pool_create(&c, &one));

  /* Recorded: every task's "leaf" and "inner" regions, in both runs. */
  terroir_recording *base = record_leaves(one, tasks);
  terroir_recording *par = record_leaves(pool, tasks);
  terroir_report *report = NULL;
  EXPECT_OK(terroir_report_create(base, par, &report));
  char path[] = "/tmp/terroir-labels-XXXXXX";
  int fd = mkstemp(path);
  EXPECT(fd >= 0, "mkstemp");
  EXPECT_OK(terroir_report_write(report, TERROIR_REPORT_FORMAT_CSV, path));
  long n1 = -1, np = -1;
  EXPECT(csv_counts(path, "leaf", &n1, &np) && n1 == tasks && np == tasks,
         "leaf: %ld and %ld tasks, expected %ld", n1, np, tasks);
  EXPECT(csv_counts(path, "inner", &n1, &np) && n1 == tasks && np == tasks,
         "inner: %ld and %ld tasks, expected %ld", n1, np, tasks);
  remove(path);
  EXPECT_OK(terroir_report_destroy(report));
  EXPECT_OK(terroir_recording_destroy(base));
  EXPECT_OK(terroir_recording_destroy(par));

  EXPECT_OK(terroir_pool_destroy(one));
  EXPECT_OK(terroir_pool_destroy(pool));
  FINISH("labels");
}
