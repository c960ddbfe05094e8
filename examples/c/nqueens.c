/*
 * N-queens as in the BOTS benchmark: the number of ways to place n queens
 * on an n x n board, a task per column at every row (each task copies its
 * parent's board, places its queen and checks it), in a terroir task group
 * per search node. Checks the count against a sequential search and
 * prints the best of `runs` timings.
 *
 *   nqueens [n=11] [runs=3]
 *
 * Threads: TERROIR_NUM_THREADS, else one per CPU. Output, one line:
 *   nqueens runtime=terroir n=.. threads=.. result=.. expected=.. seq_s=.. best_s=.. check=ok
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <string.h>
#include <terroir.h>

#include "bench_util.h"

#define MAX_N 20

/* Whether the queens of rows 0..n-1 (column a[i] in row i) attack none. */
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

struct nq_task {
  int n, row, col;
  const char *parent; /* the parent's board, rows 0..row-1 */
  long solutions;
};

static long nqueens(int n, int row, const char *board);

static void nq_task_fn(void *p) {
  struct nq_task *t = p;
  char board[MAX_N];
  memcpy(board, t->parent, (size_t)t->row);
  board[t->row] = (char)t->col;
  t->solutions = ok(t->row + 1, board) ? nqueens(t->n, t->row + 1, board) : 0;
}

static long nqueens(int n, int row, const char *board) {
  if (row == n) return 1;
  struct nq_task tasks[MAX_N];
  terroir_group *g;
  CHECK(terroir_group_create(NULL, &g)); /* NULL: this worker's pool */
  for (int col = 0; col < n; col++) {
    tasks[col] = (struct nq_task){n, row, col, board, 0};
    CHECK(terroir_group_spawn(g, nq_task_fn, &tasks[col], NULL));
  }
  CHECK(terroir_group_destroy(g)); /* waits for the tasks */
  long total = 0;
  for (int col = 0; col < n; col++) total += tasks[col].solutions;
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

struct root {
  int n;
  long result;
};

static void root_fn(void *p) {
  struct root *r = p;
  char board[MAX_N] = {0};
  r->result = nqueens(r->n, 0, board);
}

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 11);
  long runs = arg_long(argc, argv, 2, 3);
  if (n > MAX_N) {
    fprintf(stderr, "nqueens: n must be at most %d\n", MAX_N);
    return 2;
  }
  terroir_pool *pool;
  CHECK(terroir_pool_global(&pool));
  size_t threads;
  CHECK(terroir_pool_num_workers(pool, &threads));

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
    struct root root = {n, 0};
    double t0 = now_s();
    /* From main: one group on the pool, one root task. */
    terroir_group *g;
    CHECK(terroir_group_create(pool, &g));
    CHECK(terroir_group_spawn(g, root_fn, &root, NULL));
    CHECK(terroir_group_destroy(g));
    double t = now_s() - t0;
    if (t < best) best = t;
    result = root.result;
  }
  int good = result == expected;
  printf("nqueens runtime=terroir n=%d threads=%zu result=%ld expected=%ld seq_s=%.6f best_s=%.6f check=%s\n",
         n, threads, result, expected, seq_best, best, good ? "ok" : "FAILED");
  return good ? 0 : 1;
}
