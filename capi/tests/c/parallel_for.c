/*
 * terroir_parallel_for: every index of the range visited exactly once,
 * under both schedules, every grain (0 = automatic, 1, odd, larger than
 * the range, SIZE_MAX), empty and one-index ranges, ranges ending at
 * SIZE_MAX, a data range (memory of terroir_alloc_*, and plain memory),
 * a created pool, nested loops; and the defined result of each bad input
 * (NULL fn, begin > end, bad options, bad data ranges, a destroyed pool).
 *
 *   parallel_for [n=100003]
 *
 * Output: "parallel_for n=N P passed, F failed"; exit status 1 if any
 * check failed. tests/ffi.rs runs it (and once under Valgrind).
 */
#define _POSIX_C_SOURCE 200809L /* bench_util.h: clock_gettime */
#include <terroir.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../examples/c/bench_util.h"

static int passed, failed;

#define EXPECT(cond, ...)                                                 \
  do {                                                                    \
    if (cond) {                                                           \
      passed++;                                                           \
    } else {                                                              \
      failed++;                                                           \
      fprintf(stderr, "parallel_for.c:%d: check failed: %s: ", __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fprintf(stderr, "\n");                                              \
    }                                                                     \
  } while (0)

/* `call` returns `code` and the last error message contains `needle`. */
#define EXPECT_ERR(call, code, needle)                                                      \
  do {                                                                                      \
    int rc_ = (call);                                                                       \
    const char *m_ = terroir_last_error_message();                                          \
    EXPECT(rc_ == (code) && m_ != NULL && strstr(m_, (needle)) != NULL,                     \
           "%s returned %d (%s), message \"%s\"; expected %d with \"%s\"", #call, rc_,      \
           terroir_strerror(rc_), m_ ? m_ : "(null)", (int)(code), (needle));               \
  } while (0)

/* Counts visits of begin..begin+len. */
struct visits {
  size_t begin, len;
  atomic_uint *count;
  atomic_size_t calls, bad; /* calls; calls with an empty or outside range */
};

static void visit(size_t begin, size_t end, void *arg) {
  struct visits *v = arg;
  atomic_fetch_add(&v->calls, 1);
  if (begin >= end || begin < v->begin || end - v->begin > v->len) {
    atomic_fetch_add(&v->bad, 1);
    return;
  }
  for (size_t i = begin; i < end; i++) atomic_fetch_add(&v->count[i - v->begin], 1);
}

/* Runs a loop over begin..begin+len and checks every index was visited
 * once, with no empty or outside sub-range. */
static void check_cover(terroir_pool *pool, size_t begin, size_t len, size_t grain,
                        const terroir_for_options *opts, const char *what) {
  struct visits v = {begin, len, calloc(len ? len : 1, sizeof(atomic_uint)), 0, 0};
  int rc = terroir_parallel_for(pool, begin, begin + len, grain, visit, &v, opts);
  EXPECT(rc == TERROIR_ERROR_OK, "%s: %s (%s)", what, terroir_strerror(rc),
         terroir_last_error_message() ? terroir_last_error_message() : "");
  size_t wrong = 0, first = len;
  for (size_t i = 0; i < len; i++)
    if (atomic_load(&v.count[i]) != 1) {
      wrong++;
      if (first == len) first = i;
    }
  EXPECT(wrong == 0, "%s (begin %zu, len %zu, grain %zu): %zu indices not visited once (first %zu)",
         what, begin, len, grain, wrong, first);
  EXPECT(atomic_load(&v.bad) == 0, "%s: %zu calls with an empty or outside range", what,
         (size_t)atomic_load(&v.bad));
  EXPECT(len > 0 || atomic_load(&v.calls) == 0, "%s: an empty range made %zu calls", what,
         (size_t)atomic_load(&v.calls));
  free(v.count);
}

/* Sums lengths (for ranges too long to count per index). */
struct lengths {
  atomic_size_t total, lo, hi;
};

static void add_length(size_t begin, size_t end, void *arg) {
  struct lengths *l = arg;
  atomic_fetch_add(&l->total, end - begin);
  size_t lo = atomic_load(&l->lo);
  while (begin < lo && !atomic_compare_exchange_weak(&l->lo, &lo, begin)) {
  }
  size_t hi = atomic_load(&l->hi);
  while (end > hi && !atomic_compare_exchange_weak(&l->hi, &hi, end)) {
  }
}

/* A loop whose body runs a loop (pool NULL: the worker's pool). */
static void nested_body(size_t begin, size_t end, void *arg) {
  atomic_size_t *total = arg;
  for (size_t i = begin; i < end; i++) {
    struct lengths l = {0, SIZE_MAX, 0};
    int rc = terroir_parallel_for(NULL, 0, 100, 7, add_length, &l, NULL);
    if (rc != TERROIR_ERROR_OK || atomic_load(&l.total) != 100) atomic_fetch_add(total, 1000000);
    atomic_fetch_add(total, 1);
  }
}

static void never(size_t begin, size_t end, void *arg) {
  (void)begin;
  (void)end;
  atomic_fetch_add((atomic_size_t *)arg, 1);
}

int main(int argc, char **argv) {
  size_t n = (size_t)arg_long(argc, argv, 1, 100003);
  terroir_pool *global;
  CHECK(terroir_pool_global(&global));

  terroir_for_options stat = TERROIR_FOR_OPTIONS_INIT, adapt = TERROIR_FOR_OPTIONS_INIT;
  stat.schedule = TERROIR_SCHEDULE_STATIC;
  const terroir_for_options *schedules[] = {NULL, &adapt, &stat};
  const size_t grains[] = {0, 1, 7, 1000, n + 1, SIZE_MAX};
  const size_t lens[] = {0, 1, 2, 13, n};
  for (size_t s = 0; s < 3; s++)
    for (size_t g = 0; g < sizeof grains / sizeof *grains; g++)
      for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
        char what[96];
        snprintf(what, sizeof what, "schedule %s, grain #%zu, len %zu",
                 s == 0 ? "NULL" : s == 1 ? "adaptive" : "static", g, lens[k]);
        check_cover(s == 1 ? global : NULL, 5, lens[k], grains[g], schedules[s], what);
      }

  /* Ranges ending at SIZE_MAX: no overflow, every index once. */
  for (size_t s = 1; s < 3; s++) {
    struct lengths l = {0, SIZE_MAX, 0};
    int rc = terroir_parallel_for(NULL, SIZE_MAX - 100000, SIZE_MAX, 0, add_length, &l, schedules[s]);
    EXPECT(rc == TERROIR_ERROR_OK && atomic_load(&l.total) == 100000 &&
               atomic_load(&l.lo) == SIZE_MAX - 100000 && atomic_load(&l.hi) == SIZE_MAX,
           "range ending at SIZE_MAX: rc %d, total %zu, lo %zu, hi %zu", rc,
           (size_t)atomic_load(&l.total), (size_t)atomic_load(&l.lo), (size_t)atomic_load(&l.hi));
  }

  /* A data range: memory of terroir_alloc_* (on the pool's first node,
   * and interleaved) and plain memory; with strict placement too. */
  uint32_t node0;
  CHECK(terroir_pool_node_id(global, 0, &node0));
  void *on_node, *inter;
  CHECK(terroir_alloc_on_node(n * sizeof(double), node0, &on_node));
  CHECK(terroir_alloc_interleaved(n * sizeof(double), &inter));
  double *plain = calloc(n, sizeof(double));
  void *datas[] = {on_node, inter, plain};
  for (size_t d = 0; d < 3; d++)
    for (size_t s = 1; s < 3; s++)
      for (uint32_t strict = 0; strict < 2; strict++) {
        terroir_for_options o = *schedules[s];
        o.data = datas[d];
        o.data_len = n * sizeof(double);
        o.strict = strict;
        char what[64];
        snprintf(what, sizeof what, "data range #%zu, schedule %zu, strict %u", d, s, strict);
        check_cover(NULL, 0, n, 0, &o, what);
      }

  /* A created pool, and a loop inside a loop. */
  terroir_pool_config config = TERROIR_POOL_CONFIG_INIT;
  config.num_threads = 3;
  terroir_pool *pool;
  CHECK(terroir_pool_create(&config, &pool));
  check_cover(pool, 0, n, 0, &stat, "created pool, static");
  check_cover(pool, 0, n, 3, NULL, "created pool, adaptive");
  atomic_size_t nested = 0;
  EXPECT(terroir_parallel_for(pool, 0, 50, 1, nested_body, &nested, NULL) == TERROIR_ERROR_OK &&
             atomic_load(&nested) == 50,
         "nested loops: %zu (expected 50)", (size_t)atomic_load(&nested));

  /* Bad input: a defined error, the body never called. */
  atomic_size_t calls = 0;
  EXPECT_ERR(terroir_parallel_for(NULL, 0, 10, 0, NULL, NULL, NULL), TERROIR_ERROR_NULL_POINTER, "`fn`");
  EXPECT_ERR(terroir_parallel_for(NULL, 10, 9, 0, never, &calls, NULL), TERROIR_ERROR_INVALID_ARGUMENT,
             "begin = 10 is greater than end = 9");
  EXPECT_ERR(terroir_parallel_for(NULL, SIZE_MAX, 0, SIZE_MAX, never, &calls, NULL),
             TERROIR_ERROR_INVALID_ARGUMENT, "is greater than end");
  terroir_for_options bad = TERROIR_FOR_OPTIONS_INIT;
  bad.size = 0;
  EXPECT_ERR(terroir_parallel_for(NULL, 0, 10, 0, never, &calls, &bad), TERROIR_ERROR_INVALID_ARGUMENT,
             "options->size = 0");
  bad.size = (size_t)1 << 40;
  EXPECT_ERR(terroir_parallel_for(NULL, 0, 10, 0, never, &calls, &bad), TERROIR_ERROR_INVALID_ARGUMENT,
             "options->size");
  bad = (terroir_for_options)TERROIR_FOR_OPTIONS_INIT;
  bad.schedule = 7;
  EXPECT_ERR(terroir_parallel_for(NULL, 0, 10, 0, never, &calls, &bad), TERROIR_ERROR_INVALID_ARGUMENT,
             "options->schedule = 7");
  bad = (terroir_for_options)TERROIR_FOR_OPTIONS_INIT;
  bad.data_len = 64;
  EXPECT_ERR(terroir_parallel_for(NULL, 0, 10, 0, never, &calls, &bad), TERROIR_ERROR_NULL_POINTER,
             "options->data");
  bad = (terroir_for_options)TERROIR_FOR_OPTIONS_INIT;
  bad.data = plain;
  EXPECT_ERR(terroir_parallel_for(NULL, 0, 10, 0, never, &calls, &bad), TERROIR_ERROR_ZERO_SIZE,
             "options->data_len is 0");
  bad.data_len = SIZE_MAX;
  EXPECT_ERR(terroir_parallel_for(NULL, 0, 10, 0, never, &calls, &bad), TERROIR_ERROR_INVALID_ARGUMENT,
             "options->data_len");
  bad.data = (const void *)(UINTPTR_MAX - 10);
  bad.data_len = 100;
  EXPECT_ERR(terroir_parallel_for(NULL, 0, 10, 0, never, &calls, &bad), TERROIR_ERROR_INVALID_ARGUMENT,
             "past the end of the address space");
  EXPECT(atomic_load(&calls) == 0, "a refused loop called its body %zu times", (size_t)atomic_load(&calls));
  /* An empty range with a valid body calls nothing and succeeds. */
  EXPECT(terroir_parallel_for(NULL, 42, 42, 0, never, &calls, &stat) == TERROIR_ERROR_OK &&
             atomic_load(&calls) == 0,
         "empty range: %zu calls", (size_t)atomic_load(&calls));

  CHECK(terroir_pool_destroy(pool));
  EXPECT_ERR(terroir_parallel_for(pool, 0, 10, 0, never, &calls, NULL), TERROIR_ERROR_INVALID_HANDLE, "");
  EXPECT(atomic_load(&calls) == 0, "a loop on a destroyed pool called its body");

  CHECK(terroir_free(on_node));
  CHECK(terroir_free(inter));
  free(plain);
  printf("parallel_for n=%zu %d passed, %d failed\n", n, passed, failed);
  return failed ? 1 : 0;
}
