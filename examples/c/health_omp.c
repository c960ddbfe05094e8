/*
 * The Health-like simulation of health.c with OpenMP tasks: a task per
 * child village and a taskwait per village and step (as BOTS "health").
 * The libgomp counterpart of health.c, same checks and output.
 *
 *   gcc -O2 -fopenmp health_omp.c -o health_omp && ./health_omp [levels=5] [steps=100] [runs=3]
 *
 * Threads: OMP_NUM_THREADS, else one per CPU.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <omp.h>

#include "health_model.h"

static void sim_village(struct village *v, int is_root) {
  for (int i = 0; i < v->nchildren; i++) {
    struct village *c = v->children[i];
#pragma omp task firstprivate(c)
    sim_village(c, 0);
  }
  step_own(v, is_root);
#pragma omp taskwait
  step_after_children(v);
}

int main(int argc, char **argv) {
  struct params p = health_params(argc, argv);
  int threads = omp_get_max_threads();

  struct summary expected;
  double seq_s = run_sequential(&p, &expected);

  double best = 1e30;
  struct summary got = {0};
  for (long r = 0; r < p.runs; r++) {
    struct village *root = build_tree(&p);
    double t0 = now_s();
#pragma omp parallel
#pragma omp single
    for (int t = 0; t < p.steps; t++) sim_village(root, 1);
    double t = now_s() - t0;
    if (t < best) best = t;
    got = (struct summary){0};
    summarize(root, &got);
    free_village(root);
  }
  return report("libgomp", &p, threads, seq_s, best, &got, &expected);
}
