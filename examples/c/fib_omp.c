/*
 * fib(n) with an OpenMP task per call and a taskwait (leaves at n < 2):
 * the libgomp counterpart of fib.c, same checks and output.
 *
 *   gcc -O2 -fopenmp fib_omp.c -o fib_omp && ./fib_omp [n=28] [runs=3]
 *
 * Threads: OMP_NUM_THREADS, else one per CPU.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <omp.h>

#include "bench_util.h"

static long fib(int n) {
  if (n < 2) return n;
  long x, y;
#pragma omp task shared(x) firstprivate(n)
  x = fib(n - 1);
#pragma omp task shared(y) firstprivate(n)
  y = fib(n - 2);
#pragma omp taskwait
  return x + y;
}

static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 28);
  long runs = arg_long(argc, argv, 2, 3);
  int threads = omp_get_max_threads();

  double seq_best = 1e30;
  long expected = 0;
  for (long r = 0; r < runs; r++) {
    double t0 = now_s();
    expected = fib_seq(n);
    double t = now_s() - t0;
    if (t < seq_best) seq_best = t;
  }

  double best = 1e30;
  long result = 0;
  for (long r = 0; r < runs; r++) {
    double t0 = now_s();
#pragma omp parallel
#pragma omp single
    result = fib(n);
    double t = now_s() - t0;
    if (t < best) best = t;
  }
  int ok = result == expected;
  printf("fib runtime=libgomp n=%d threads=%d result=%ld expected=%ld seq_s=%.6f best_s=%.6f check=%s\n",
         n, threads, result, expected, seq_best, best, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
