/*
 * The OpenMP twin of triad.c: STREAM triad a[i] = b[i] + s * c[i],
 * first touch and triad with `#pragma omp parallel for schedule(static)`.
 * Same arguments and output line as triad.c (runtime=libgomp).
 *
 *   gcc -O2 -fopenmp examples/c/triad_omp.c -o triad_omp && ./triad_omp [n] [runs]
 *
 * Threads: OMP_NUM_THREADS, else one per CPU.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <omp.h>

#include "bench_util.h"

#define SCALAR 3.0

static void triad(double *restrict a, const double *restrict b, const double *restrict c, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) a[i] = b[i] + SCALAR * c[i];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 16L << 20);
  long runs = arg_long(argc, argv, 2, 3);
  double *a = malloc((size_t)n * sizeof(double));
  double *b = malloc((size_t)n * sizeof(double));
  double *c = malloc((size_t)n * sizeof(double));
  if (!a || !b || !c) {
    fprintf(stderr, "triad_omp: cannot allocate 3 x %ld doubles\n", n);
    return 2;
  }
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) {
    a[i] = 0.0;
    b[i] = (double)(i % 1000);
    c[i] = (double)(i % 7);
  }

  double seq_best = 1e30;
  for (long r = 0; r < runs; r++) {
    double t0 = now_s();
    for (long i = 0; i < n; i++) a[i] = b[i] + SCALAR * c[i];
    double t = now_s() - t0;
    if (t < seq_best) seq_best = t;
  }
  double best = 1e30;
  for (long r = 0; r < runs; r++) {
    for (long i = 0; i < n; i += 4096) a[i] = -1.0; /* not left over from the last run */
    double t0 = now_s();
    triad(a, b, c, n);
    double t = now_s() - t0;
    if (t < best) best = t;
  }

  double result = 0.0, expected = 0.0;
  for (long i = 0; i < n; i++) {
    result += a[i];
    expected += (double)(i % 1000) + SCALAR * (double)(i % 7);
  }
  int good = result == expected;
  printf("triad runtime=libgomp n=%ld threads=%d result=%.0f expected=%.0f seq_s=%.6f best_s=%.6f gbs=%.2f check=%s\n",
         n, omp_get_max_threads(), result, expected, seq_best, best, 3.0 * 8.0 * (double)n / best / 1e9,
         good ? "ok" : "FAILED");
  free(a);
  free(b);
  free(c);
  return good ? 0 : 1;
}
