/*
 * A Health-like simulation (BOTS "health", see health_model.h) on terroir:
 * at every step each village simulates its children as tasks of a task
 * group, does its own hospital work meanwhile, waits for the group, then
 * takes the children's referrals. Checks the final state against a
 * sequential run and prints the best of `runs` timings.
 *
 *   health [levels=5] [steps=100] [runs=3]
 *
 * Threads: TERROIR_NUM_THREADS, else one per CPU. Output, one line:
 *   health runtime=terroir levels=.. steps=.. villages=.. threads=.. result=.. expected=.. seq_s=.. best_s=.. check=ok
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <terroir.h>

#include "health_model.h"

static void sim_village_task(void *arg);

static void sim_village(struct village *v, int is_root) {
  terroir_group *g;
  CHECK(terroir_group_create(NULL, &g)); /* NULL: this worker's pool */
  for (int i = 0; i < v->nchildren; i++) CHECK(terroir_group_spawn(g, sim_village_task, v->children[i], NULL));
  step_own(v, is_root);
  CHECK(terroir_group_destroy(g)); /* waits for the children */
  step_after_children(v);
}

static void sim_village_task(void *arg) { sim_village(arg, 0); }

struct run {
  struct village *root;
  int steps;
};

static void run_steps(void *arg) {
  struct run *r = arg;
  for (int t = 0; t < r->steps; t++) sim_village(r->root, 1);
}

int main(int argc, char **argv) {
  struct params p = health_params(argc, argv);
  terroir_pool *pool;
  CHECK(terroir_pool_global(&pool));
  size_t threads;
  CHECK(terroir_pool_num_workers(pool, &threads));

  struct summary expected;
  double seq_s = run_sequential(&p, &expected);

  double best = 1e30;
  struct summary got = {0};
  for (long r = 0; r < p.runs; r++) {
    struct run run = {build_tree(&p), p.steps};
    double t0 = now_s();
    /* From main: one group on the pool, one task running every step. */
    terroir_group *g;
    CHECK(terroir_group_create(pool, &g));
    CHECK(terroir_group_spawn(g, run_steps, &run, NULL));
    CHECK(terroir_group_destroy(g));
    double t = now_s() - t0;
    if (t < best) best = t;
    got = (struct summary){0};
    summarize(run.root, &got);
    free_village(run.root);
  }
  return report("terroir", &p, (long)threads, seq_s, best, &got, &expected);
}
