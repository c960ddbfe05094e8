/*
 * N-queens as in the BOTS benchmark with OpenMP tasks: a task per column
 * at every row and a taskwait per search node. The libgomp counterpart of
 * nqueens.c, same checks and output.
 *
 *   gcc -O2 -fopenmp nqueens_omp.c -o nqueens_omp && ./nqueens_omp [n=11] [runs=3]
 *
 * Threads: OMP_NUM_THREADS, else one per CPU.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <omp.h>
#include <string.h>

#include "bench_util.h"

#define MAX_N 20

static int ok(int n, const char *a) {
  for (int i = 0; i < n; i++) {
    char p = a[i];
    for (int j = i + 1; j < n; j++) {
      char q = a[j];
      if (q == p || q == p - (j - i) || q == p + (j - i)) return 0;
    }
  }
  return 1;
}

static long nqueens(int n, int row, const char *board) {
  if (row == n) return 1;
  long solutions[MAX_N];
  for (int col = 0; col < n; col++) {
#pragma omp task firstprivate(col) shared(solutions)
    {
      char b[MAX_N];
      memcpy(b, board, (size_t)row);
      b[row] = (char)col;
      solutions[col] = ok(row + 1, b) ? nqueens(n, row + 1, b) : 0;
    }
  }
#pragma omp taskwait
  long total = 0;
  for (int col = 0; col < n; col++) total += solutions[col];
  return total;
}

static long nqueens_seq(int n, int row, char *board) {
  if (row == n) return 1;
  long total = 0;
  for (int col = 0; col < n; col++) {
    board[row] = (char)col;
    if (ok(row + 1, board)) total += nqueens_seq(n, row + 1, board);
  }
  return total;
}

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 11);
  long runs = arg_long(argc, argv, 2, 3);
  if (n > MAX_N) {
    fprintf(stderr, "nqueens_omp: n must be at most %d\n", MAX_N);
    return 2;
  }
  int threads = omp_get_max_threads();

  double seq_best = 1e30;
  long expected = 0;
  for (long r = 0; r < runs; r++) {
    char board[MAX_N] = {0};
    double t0 = now_s();
    expected = nqueens_seq(n, 0, board);
    double t = now_s() - t0;
    if (t < seq_best) seq_best = t;
  }

  double best = 1e30;
  long result = 0;
  for (long r = 0; r < runs; r++) {
    char board[MAX_N] = {0};
    double t0 = now_s();
#pragma omp parallel
#pragma omp single
    result = nqueens(n, 0, board);
    double t = now_s() - t0;
    if (t < best) best = t;
  }
  int good = result == expected;
  printf("nqueens runtime=libgomp n=%d threads=%d result=%ld expected=%ld seq_s=%.6f best_s=%.6f check=%s\n",
         n, threads, result, expected, seq_best, best, good ? "ok" : "FAILED");
  return good ? 0 : 1;
}
