/*
 * fib(n) with a terroir_join on every call (leaves at n < 2): the C face of
 * terroir's fork-join. Checks the result against a sequential fib and
 * prints the best of `runs` timings.
 *
 *   fib [n=28] [runs=3]
 *
 * Threads: TERROIR_NUM_THREADS, else one per CPU. Output, one line:
 *   fib runtime=terroir n=.. threads=.. result=.. expected=.. seq_s=.. best_s=.. check=ok
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <terroir.h>

#include "bench_util.h"

/* The join every call makes. examples/c/bench.sh also builds this file
 * with -DFIB_JOIN=noop_join (examples/c/noop_join.c, in a shared library
 * of its own: it calls fa(a), then fb(b)) to time what the C program costs
 * with no scheduler at all: calls through pointers, arguments in memory. */
#ifndef FIB_JOIN
#define FIB_JOIN terroir_join
#else
int FIB_JOIN(terroir_pool *pool, terroir_task_fn fa, void *a, terroir_task_fn fb, void *b);
#endif

struct fib_arg {
  int n;
  long result;
};

static void fib_task(void *p);

static long fib(int n) {
  if (n < 2) return n;
  struct fib_arg a = {n - 1, 0}, b = {n - 2, 0};
  /* NULL: the pool this worker belongs to. */
  CHECK(FIB_JOIN(NULL, fib_task, &a, fib_task, &b));
  return a.result + b.result;
}

static void fib_task(void *p) {
  struct fib_arg *a = p;
  a->result = fib(a->n);
}

static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 28);
  long runs = arg_long(argc, argv, 2, 3);
  terroir_pool *pool;
  CHECK(terroir_pool_global(&pool));
  size_t threads;
  CHECK(terroir_pool_num_workers(pool, &threads));

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
    /* From main (outside the pool): the top join enters the pool. */
    struct fib_arg a = {n - 1, 0}, b = {n - 2, 0};
    if (n < 2) {
      result = n;
    } else {
      CHECK(terroir_join(pool, fib_task, &a, fib_task, &b));
      result = a.result + b.result;
    }
    double t = now_s() - t0;
    if (t < best) best = t;
  }
  int ok = result == expected;
  printf("fib runtime=terroir n=%d threads=%zu result=%ld expected=%ld seq_s=%.6f best_s=%.6f check=%s\n",
         n, threads, result, expected, seq_best, best, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
