/*
 * The after and pushed place kinds of terroir_group_spawn: tasks with one
 * key run on the worker that ran the last task with that key (strict, so
 * the test is exact); pushed places run on the node of the data they
 * declare (strict) and count it in the pool statistics; a pushed place
 * with no regions stays local. And the defined result of each bad input
 * (NULL arrays and regions, zero lengths, ranges past the end of the
 * address space, too many regions, unknown kinds).
 *
 *   places [tasks=100]
 *
 * Output: "places P passed, F failed"; exit status 1 if any check failed.
 * tests/ffi.rs runs it (and once under Valgrind).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

struct ran {
  atomic_size_t worker; /* SIZE_MAX: not run */
};

static void note_worker(void *arg) {
  size_t w = SIZE_MAX;
  terroir_current_worker(&w);
  atomic_store(&((struct ran *)arg)->worker, w);
}

static void noop(void *arg) { (void)arg; }

/* Spawns `f(arg)` at `place` into a fresh group on `pool` and waits. */
static int spawn_one(terroir_pool *pool, terroir_task_fn f, void *arg, const terroir_place *place) {
  terroir_group *g = NULL;
  int rc = terroir_group_create(pool, &g);
  if (rc != TERROIR_ERROR_OK) return rc;
  rc = terroir_group_spawn(g, f, arg, place);
  int rc2 = terroir_group_destroy(g);
  return rc != TERROIR_ERROR_OK ? rc : rc2;
}

int main(int argc, char **argv) {
  long tasks = argc > 1 ? atol(argv[1]) : 100;
  terroir_pool_config c = TERROIR_POOL_CONFIG_INIT;
  c.num_threads = 2;
  c.pin = TERROIR_PIN_OFF;
  c.policy = TERROIR_POLICY_LOCALITY;
  terroir_pool *pool = NULL;
  EXPECT_OK(terroir_pool_create(&c, &pool));
  uint32_t node0 = 0;
  EXPECT_OK(terroir_pool_node_id(pool, 0, &node0));

  /* After: every task with the key runs where the first one ran. */
  static int key_object;
  terroir_place after = {TERROIR_PLACE_KIND_AFTER, 0, 0, &key_object, 1, true};
  struct ran first = {SIZE_MAX};
  EXPECT_OK(spawn_one(pool, note_worker, &first, &after));
  size_t w0 = atomic_load(&first.worker);
  EXPECT(w0 < 2, "the first task ran on worker %zu", w0);
  long same = 0;
  for (long i = 0; i < tasks; i++) {
    struct ran r = {SIZE_MAX};
    EXPECT_OK(spawn_one(pool, note_worker, &r, &after));
    same += atomic_load(&r.worker) == w0;
  }
  EXPECT(same == tasks, "%ld of %ld tasks ran on worker %zu", same, tasks, w0);
  /* Any key is a key: NULL, integers cast to pointers. */
  terroir_place null_key = {TERROIR_PLACE_KIND_AFTER, 0, 0, NULL, 0, false};
  EXPECT_OK(spawn_one(pool, noop, NULL, &null_key));
  terroir_place int_key = {TERROIR_PLACE_KIND_AFTER, 0, 0, (const void *)(uintptr_t)42, 7, false};
  EXPECT_OK(spawn_one(pool, noop, NULL, &int_key));

  /* Pushed: regions on node0 (a terroir allocation, and plain memory
   * touched by this thread); strict, so each task runs on node0. */
  const size_t a_len = 1 << 16, b_len = 1 << 15;
  void *a = NULL;
  EXPECT_OK(terroir_alloc_on_node(a_len, node0, &a));
  char *b = malloc(b_len);
  memset(b, 1, b_len);
  terroir_access regions[2] = {{a, a_len, false}, {b, b_len, true}};
  terroir_place pushed = {TERROIR_PLACE_KIND_PUSHED, 0, 0, regions, 2, true};
  EXPECT_OK(terroir_pool_reset_stats(pool));
  long on_node0 = 0;
  for (long i = 0; i < tasks; i++) {
    struct ran r = {SIZE_MAX};
    uint32_t node = UINT32_MAX;
    EXPECT_OK(spawn_one(pool, note_worker, &r, &pushed));
    size_t w = atomic_load(&r.worker);
    if (w < 2 && terroir_pool_worker_node(pool, w, &node) == TERROIR_ERROR_OK && node == node0)
      on_node0++;
  }
  EXPECT(on_node0 == tasks, "%ld of %ld pushed tasks ran on node %u", on_node0, tasks, node0);
  terroir_stats s = TERROIR_STATS_INIT;
  EXPECT_OK(terroir_pool_stats(pool, &s));
  EXPECT(s.placed == (uint64_t)tasks && s.declared_bytes == (uint64_t)tasks * (a_len + b_len),
         "placed %llu, declared %llu", (unsigned long long)s.placed,
         (unsigned long long)s.declared_bytes);
  /* No regions: the task stays local (a hint: anywhere). */
  terroir_place empty = {TERROIR_PLACE_KIND_PUSHED, 0, 0, NULL, 0, false};
  EXPECT_OK(spawn_one(pool, noop, NULL, &empty));

  /* Bad input: nothing is spawned. */
  terroir_place bad = pushed;
  bad.data = NULL;
  EXPECT_ERR(spawn_one(pool, noop, NULL, &bad), TERROIR_ERROR_NULL_POINTER, "`place->data`");
  terroir_access broken[2] = {{a, a_len, false}, {NULL, 10, false}};
  bad.data = broken;
  EXPECT_ERR(spawn_one(pool, noop, NULL, &bad), TERROIR_ERROR_NULL_POINTER, "`place->data[1].data`");
  broken[1].data = b;
  broken[1].len = 0;
  EXPECT_ERR(spawn_one(pool, noop, NULL, &bad), TERROIR_ERROR_ZERO_SIZE, "place->data[1].len is 0");
  broken[1].len = SIZE_MAX;
  EXPECT_ERR(spawn_one(pool, noop, NULL, &bad), TERROIR_ERROR_INVALID_ARGUMENT, "place->data[1].len");
  broken[1].data = (const void *)(UINTPTR_MAX - 10);
  broken[1].len = 100;
  EXPECT_ERR(spawn_one(pool, noop, NULL, &bad), TERROIR_ERROR_INVALID_ARGUMENT, "past the end");
  bad.len = ((size_t)1 << 16) + 1;
  EXPECT_ERR(spawn_one(pool, noop, NULL, &bad), TERROIR_ERROR_INVALID_ARGUMENT, "at most 65536");
  bad.kind = 6;
  EXPECT_ERR(spawn_one(pool, noop, NULL, &bad), TERROIR_ERROR_INVALID_ARGUMENT, "(0 to 5)");

  free(b);
  EXPECT_OK(terroir_free(a));
  EXPECT_OK(terroir_pool_destroy(pool));
  FINISH("places");
}
