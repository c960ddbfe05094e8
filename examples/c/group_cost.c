/*
 * What a task group costs, on one worker: `reps` times an empty group
 * (create, destroy), then `reps` times a group of `tasks` no-op tasks
 * (create, spawn each, destroy), then `reps` times a wait on an open
 * group with no task. The time per operation is what the C API's group
 * path costs with no work and no parallelism; compare with
 * group_cost_omp.c: its taskwait with no tasks checks a count, as the
 * wait here does (wait_ns), and its empty taskgroup opens and closes a
 * group, as the empty group here does (empty_ns against taskgroup_ns).
 *
 *   group_cost [reps=1000000] [tasks=4] [runs=3] [loops=both|empty]
 *
 * `empty` runs the empty groups alone (the group_ns and wait_ns fields
 * are then the clock's cost alone),
 * for instruction counts: the difference of two callgrind runs,
 *   valgrind --tool=callgrind group_cost 100000 1 1 empty   (and 200000),
 * over 100000 is what one empty group executes, the loop included.
 *
 * Output, one line:
 *   group_cost runtime=terroir threads=1 tasks=.. empty_ns=.. group_ns=.. per_task_ns=..
 *     empty_cpu_ns=.. group_cpu_ns=.. per_task_cpu_ns=.. wait_ns=..
 * (best of `runs`; per_task_ns = group_ns / tasks). The `_ns` fields are
 * wall-clock time; the `_cpu_ns` fields the measuring thread's CPU time,
 * which time spent descheduled by other programs does not inflate (compare
 * those on a shared machine).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <terroir.h>

#include "bench_util.h"

#include <string.h>

static void noop(void *arg) { (void)arg; }

struct params {
  long reps, tasks, runs;
  int empty_only;
  double empty_s, group_s, empty_cpu_s, group_cpu_s, wait_s;
};

static void measure(void *arg) {
  struct params *p = arg;
  p->empty_s = p->group_s = p->empty_cpu_s = p->group_cpu_s = p->wait_s = 1e30;
  terroir_group *idle;
  CHECK(terroir_group_create(NULL, &idle));
  for (long r = 0; r < p->runs; r++) {
    double c0 = thread_cpu_s(), t0 = now_s();
    for (long i = 0; i < p->reps; i++) {
      terroir_group *g;
      CHECK(terroir_group_create(NULL, &g));
      CHECK(terroir_group_destroy(g));
    }
    double t1 = now_s(), c1 = thread_cpu_s();
    for (long i = 0; i < p->reps && !p->empty_only; i++) {
      terroir_group *g;
      CHECK(terroir_group_create(NULL, &g));
      for (long k = 0; k < p->tasks; k++) CHECK(terroir_group_spawn(g, noop, NULL, NULL));
      CHECK(terroir_group_destroy(g));
    }
    double t2 = now_s(), c2 = thread_cpu_s();
    for (long i = 0; i < p->reps && !p->empty_only; i++) CHECK(terroir_group_wait(idle));
    double t3 = now_s();
    if (t3 - t2 < p->wait_s) p->wait_s = t3 - t2;
    if (t1 - t0 < p->empty_s) p->empty_s = t1 - t0;
    if (t2 - t1 < p->group_s) p->group_s = t2 - t1;
    if (c1 - c0 < p->empty_cpu_s) p->empty_cpu_s = c1 - c0;
    if (c2 - c1 < p->group_cpu_s) p->group_cpu_s = c2 - c1;
  }
  CHECK(terroir_group_destroy(idle));
}

int main(int argc, char **argv) {
  struct params p = {
      .reps = arg_long(argc, argv, 1, 1000000),
      .tasks = arg_long(argc, argv, 2, 4),
      .runs = arg_long(argc, argv, 3, 3),
  };
  if (argc > 4) {
    if (strcmp(argv[4], "empty") == 0) {
      p.empty_only = 1;
    } else if (strcmp(argv[4], "both") != 0) {
      fprintf(stderr, "%s: argument 4 must be \"both\" or \"empty\", not \"%s\"\n", argv[0], argv[4]);
      return 2;
    }
  }
  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = 1};
  terroir_pool *pool;
  CHECK(terroir_pool_create(&config, &pool));
  /* Measured inside a task, as a task tree's groups are. */
  terroir_group *g;
  CHECK(terroir_group_create(pool, &g));
  CHECK(terroir_group_spawn(g, measure, &p, NULL));
  CHECK(terroir_group_destroy(g));
  CHECK(terroir_pool_destroy(pool));
  double group_ns = p.group_s / p.reps * 1e9, group_cpu_ns = p.group_cpu_s / p.reps * 1e9;
  printf("group_cost runtime=terroir threads=1 tasks=%ld empty_ns=%.1f group_ns=%.1f per_task_ns=%.1f "
         "empty_cpu_ns=%.1f group_cpu_ns=%.1f per_task_cpu_ns=%.1f wait_ns=%.1f\n",
         p.tasks, p.empty_s / p.reps * 1e9, group_ns, group_ns / p.tasks, p.empty_cpu_s / p.reps * 1e9,
         group_cpu_ns, group_cpu_ns / p.tasks, p.wait_s / p.reps * 1e9);
  return 0;
}
