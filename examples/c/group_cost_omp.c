/*
 * The libgomp counterpart of group_cost.c, on one thread: `reps` times a
 * taskwait with no task, then `reps` times `tasks` no-op tasks and a
 * taskwait; and `reps` times an empty taskgroup (the construct that, like
 * terroir_group_create and _destroy, opens and closes a group: the
 * taskwait only checks a count).
 *
 *   gcc -O2 -fopenmp group_cost_omp.c -o group_cost_omp && ./group_cost_omp [reps=1000000] [tasks=4] [runs=3]
 *
 * Output, one line:
 *   group_cost runtime=libgomp threads=1 tasks=.. empty_ns=.. group_ns=.. per_task_ns=..
 *     empty_cpu_ns=.. group_cpu_ns=.. per_task_cpu_ns=.. taskgroup_ns=..
 * (as group_cost.c: wall-clock, and the measuring thread's CPU time;
 * taskgroup_ns wall-clock).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <omp.h>

#include "bench_util.h"

static void noop(void) {}

int main(int argc, char **argv) {
  long reps = arg_long(argc, argv, 1, 1000000);
  long tasks = arg_long(argc, argv, 2, 4);
  long runs = arg_long(argc, argv, 3, 3);
  double empty_s = 1e30, group_s = 1e30, empty_cpu_s = 1e30, group_cpu_s = 1e30, taskgroup_s = 1e30;
#pragma omp parallel num_threads(1)
#pragma omp single
  for (long r = 0; r < runs; r++) {
    double c0 = thread_cpu_s(), t0 = now_s();
    for (long i = 0; i < reps; i++) {
#pragma omp taskwait
    }
    double t1 = now_s(), c1 = thread_cpu_s();
    for (long i = 0; i < reps; i++) {
      for (long k = 0; k < tasks; k++) {
#pragma omp task
        noop();
      }
#pragma omp taskwait
    }
    double t2 = now_s(), c2 = thread_cpu_s();
    for (long i = 0; i < reps; i++) {
#pragma omp taskgroup
      {
        /* Keeps the empty construct from being folded away. */
        __asm__ volatile("" ::: "memory");
      }
    }
    double t3 = now_s();
    if (t3 - t2 < taskgroup_s) taskgroup_s = t3 - t2;
    if (t1 - t0 < empty_s) empty_s = t1 - t0;
    if (t2 - t1 < group_s) group_s = t2 - t1;
    if (c1 - c0 < empty_cpu_s) empty_cpu_s = c1 - c0;
    if (c2 - c1 < group_cpu_s) group_cpu_s = c2 - c1;
  }
  double group_ns = group_s / reps * 1e9, group_cpu_ns = group_cpu_s / reps * 1e9;
  printf("group_cost runtime=libgomp threads=1 tasks=%ld empty_ns=%.1f group_ns=%.1f per_task_ns=%.1f "
         "empty_cpu_ns=%.1f group_cpu_ns=%.1f per_task_cpu_ns=%.1f taskgroup_ns=%.1f\n",
         tasks, empty_s / reps * 1e9, group_ns, group_ns / tasks, empty_cpu_s / reps * 1e9, group_cpu_ns,
         group_cpu_ns / tasks, taskgroup_s / reps * 1e9);
  return 0;
}
