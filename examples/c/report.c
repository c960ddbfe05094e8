/*
 * The work-time inflation report from C: fib(n) with a terroir_join on
 * every call and its leaves (n < CUTOFF) labelled "fib-leaf", recorded on a
 * one-worker pool (the baseline) and on a pool, compared, and written in
 * every format.
 *
 *   report [dir=terroir-report] [n=24] [threads]
 *
 * Threads: the argument, else TERROIR_NUM_THREADS, else one per CPU.
 * Writes into `dir`: report.txt, report.csv, report.svg, report.json and
 * trace.json (terroir_report_write_all), report.txt again (the text report,
 * also printed, through terroir_report_write),
 * and measure.json: the same comparison made by terroir_report_measure in
 * one call. Last line:
 *   report n=.. threads=.. result=.. expected=.. leaves=.. dir=.. check=ok
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <terroir.h>

#include "bench_util.h"

enum { CUTOFF = 12 };

struct fib_arg {
  int n;
  long result;
};

static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

/* The labelled leaf: sequential work that the report compares between the
 * one-worker run and the parallel one. */
static void leaf(void *p) {
  struct fib_arg *a = p;
  a->result = fib_seq(a->n);
}

static void fib_task(void *p) {
  struct fib_arg *a = p;
  if (a->n < CUTOFF) {
    CHECK(terroir_label("fib-leaf", leaf, a));
    return;
  }
  struct fib_arg x = {a->n - 1, 0}, y = {a->n - 2, 0};
  /* NULL: the pool this task runs on (the baseline's, then the parallel one). */
  CHECK(terroir_join(NULL, fib_task, &x, fib_task, &y));
  a->result = x.result + y.result;
}

/* Leaves of fib(n)'s recursion: the tasks labelled "fib-leaf". */
static long count_leaves(int n) { return n < CUTOFF ? 1 : count_leaves(n - 1) + count_leaves(n - 2); }

static void noop(void *p) { (void)p; }

/* fib(n) on `pool`, entered from main. */
static long run(terroir_pool *pool, int n) {
  struct fib_arg a = {n, 0};
  CHECK(terroir_join(pool, fib_task, &a, noop, NULL));
  return a.result;
}

/* Records fib(n) on `pool` between terroir_record_start and _stop. */
static terroir_recording *record(terroir_pool *pool, int n, long *result) {
  terroir_record_options options = {.size = sizeof(terroir_record_options), .counters = TERROIR_COUNTERS_ALL};
  terroir_recording *rec;
  CHECK(terroir_record_start(pool, &options));
  *result = run(pool, n);
  CHECK(terroir_record_stop(pool, &rec));
  return rec;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "terroir-report";
  int n = (int)arg_long(argc, argv, 2, 24);
  size_t threads = argc > 3 ? (size_t)arg_long(argc, argv, 3, 1) : 0; /* 0: the default */
  long expected = fib_seq(n);

  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = threads};
  terroir_pool *pool;
  CHECK(terroir_pool_create(&config, &pool));
  CHECK(terroir_pool_num_workers(pool, &threads));

  /* The baseline: the same work on one worker. */
  terroir_pool_config one_config = {.size = sizeof(terroir_pool_config), .num_threads = 1};
  terroir_pool *one;
  CHECK(terroir_pool_create(&one_config, &one));
  long base_result, par_result;
  terroir_recording *baseline = record(one, n, &base_result);
  CHECK(terroir_pool_destroy(one));
  terroir_recording *parallel = record(pool, n, &par_result);

  terroir_report *report;
  CHECK(terroir_report_create(baseline, parallel, &report));
  CHECK(terroir_recording_destroy(baseline));
  CHECK(terroir_recording_destroy(parallel));
  CHECK(terroir_report_write_all(report, dir));
  char path[4096];
  snprintf(path, sizeof path, "%s/report.txt", dir);
  CHECK(terroir_report_write(report, TERROIR_REPORT_FORMAT_TEXT, path));
  CHECK(terroir_report_destroy(report));
  FILE *text = fopen(path, "r");
  if (text != NULL) {
    int c;
    while ((c = fgetc(text)) != EOF) putchar(c);
    fclose(text);
  }

  /* The same in one call: fib_task runs on a one-worker pool, then on
   * `pool`, each time recorded. */
  struct fib_arg m = {n, 0};
  CHECK(terroir_report_measure(pool, fib_task, &m, &report));
  snprintf(path, sizeof path, "%s/measure.json", dir);
  CHECK(terroir_report_write(report, TERROIR_REPORT_FORMAT_JSON, path));
  CHECK(terroir_report_destroy(report));
  CHECK(terroir_pool_destroy(pool));

  int ok = base_result == expected && par_result == expected && m.result == expected;
  printf("report n=%d threads=%zu result=%ld expected=%ld leaves=%ld dir=%s check=%s\n", n, threads, par_result,
         expected, count_leaves(n), dir, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
