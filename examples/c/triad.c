/*
 * STREAM triad with terroir_parallel_for: a[i] = b[i] + s * c[i] over
 * three arrays of n doubles, first touched by a static-schedule loop (so
 * each worker's share of the pages is on its node, as with OpenMP's
 * `parallel for schedule(static)`), then the triad with the same static
 * schedule. Checks a's sum against the exact one and prints the best of
 * `runs` timings of the triad (the twin is triad_omp.c).
 *
 *   triad [n=16777216] [runs=3]
 *
 * Threads: TERROIR_NUM_THREADS, else one per CPU. Output, one line:
 *   triad runtime=terroir n=.. threads=.. result=.. expected=.. seq_s=.. best_s=.. gbs=.. check=ok
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <terroir.h>

#include "bench_util.h"

#define SCALAR 3.0

struct arrays {
  double *a, *b, *c;
};

/* First touch: each worker writes its static share of the three arrays.
 * Values are small integers, so every sum below is exact. */
static void init_fn(size_t begin, size_t end, void *arg) {
  struct arrays *x = arg;
  for (size_t i = begin; i < end; i++) {
    x->a[i] = 0.0;
    x->b[i] = (double)(i % 1000);
    x->c[i] = (double)(i % 7);
  }
}

static void triad_fn(size_t begin, size_t end, void *arg) {
  struct arrays *x = arg;
  double *restrict a = x->a;
  const double *restrict b = x->b, *restrict c = x->c;
  for (size_t i = begin; i < end; i++) a[i] = b[i] + SCALAR * c[i];
}

int main(int argc, char **argv) {
  size_t n = (size_t)arg_long(argc, argv, 1, 16L << 20);
  long runs = arg_long(argc, argv, 2, 3);
  terroir_pool *pool;
  CHECK(terroir_pool_global(&pool));
  size_t threads;
  CHECK(terroir_pool_num_workers(pool, &threads));

  struct arrays x = {malloc(n * sizeof(double)), malloc(n * sizeof(double)), malloc(n * sizeof(double))};
  if (!x.a || !x.b || !x.c) {
    fprintf(stderr, "triad: cannot allocate 3 x %zu doubles\n", n);
    return 2;
  }
  terroir_for_options opts = TERROIR_FOR_OPTIONS_INIT;
  opts.schedule = TERROIR_SCHEDULE_STATIC;
  CHECK(terroir_parallel_for(pool, 0, n, 0, init_fn, &x, &opts));

  double seq_best = 1e30;
  for (long r = 0; r < runs; r++) {
    double t0 = now_s();
    triad_fn(0, n, &x);
    double t = now_s() - t0;
    if (t < seq_best) seq_best = t;
  }
  double best = 1e30;
  for (long r = 0; r < runs; r++) {
    for (size_t i = 0; i < n; i += 4096) x.a[i] = -1.0; /* not left over from the last run */
    double t0 = now_s();
    CHECK(terroir_parallel_for(pool, 0, n, 0, triad_fn, &x, &opts));
    double t = now_s() - t0;
    if (t < best) best = t;
  }

  double result = 0.0, expected = 0.0;
  for (size_t i = 0; i < n; i++) {
    result += x.a[i];
    expected += (double)(i % 1000) + SCALAR * (double)(i % 7);
  }
  int good = result == expected;
  printf("triad runtime=terroir n=%zu threads=%zu result=%.0f expected=%.0f seq_s=%.6f best_s=%.6f gbs=%.2f check=%s\n",
         n, threads, result, expected, seq_best, best, 3.0 * 8.0 * (double)n / best / 1e9, good ? "ok" : "FAILED");
  free(x.a);
  free(x.b);
  free(x.c);
  return good ? 0 : 1;
}
