/*
 * Many waits on one group from workers of its own pool, from workers of a
 * second pool and from the main thread, while the group's tasks (many of
 * them strictly placed on one worker) spawn more into it. Waits nest on
 * the workers' stacks (a waiting worker runs other work), so some are
 * refused with TERROIR_ERROR_WOULD_DEADLOCK; every other call must succeed,
 * every task must run, and nothing may hang (tests/ffi.rs runs this with a
 * time limit). Workers that blocked on the group instead of working, or
 * waits from another pool's worker that were not refused when stacked on
 * the group's own batch, made this hang.
 *
 *   group_waits [rounds=50]
 *
 * Output: "group_waits rounds=N ran=.. waits=.. refused=.. ok".
 */
#define _POSIX_C_SOURCE 200809L /* bench_util.h: clock_gettime */
#include <terroir.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* CHECK: the C examples' check of a terroir call. */
#include "../../../examples/c/bench_util.h"

enum { WORKERS = 4 };

static terroir_pool *pool, *other_pool;
static terroir_group *g;
static atomic_long ran, spawned, waits, refused;
static atomic_uint_fast64_t seed = 88172645463325252u;

/* A shared pseudo-random number (xorshift; races only cost randomness). */
static unsigned next_random(void) {
  uint64_t x = atomic_load_explicit(&seed, memory_order_relaxed);
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  atomic_store_explicit(&seed, x, memory_order_relaxed);
  return (unsigned)(x >> 32);
}

static terroir_place on_worker(unsigned w, int strict) {
  return (terroir_place){.kind = TERROIR_PLACE_KIND_WORKER, .worker = w % WORKERS, .strict = strict};
}

static void leaf(void *arg) {
  (void)arg;
  atomic_fetch_add(&ran, 1);
}

/* A task of g that spawns one more into it, at a random strict place or none. */
static void spawner(void *arg) {
  (void)arg;
  terroir_place p = on_worker(next_random(), 1);
  atomic_fetch_add(&spawned, 1);
  CHECK(terroir_group_spawn(g, leaf, NULL, (next_random() & 1) ? &p : NULL));
  atomic_fetch_add(&ran, 1);
}

/* A task of another group that (sometimes spawns into g, then) waits for g. */
static void waiter(void *arg) {
  (void)arg;
  if (next_random() & 1) {
    terroir_place p = on_worker(next_random(), 1);
    atomic_fetch_add(&spawned, 1);
    CHECK(terroir_group_spawn(g, spawner, NULL, &p));
  }
  int rc = terroir_group_wait(g);
  if (rc == TERROIR_ERROR_WOULD_DEADLOCK)
    atomic_fetch_add(&refused, 1);
  else
    CHECK(rc);
  atomic_fetch_add(&waits, 1);
}

static void *other_pool_waiters(void *arg) {
  (void)arg;
  terroir_group *h;
  CHECK(terroir_group_create(other_pool, &h));
  for (int i = 0; i < 8; i++) CHECK(terroir_group_spawn(h, waiter, NULL, NULL));
  CHECK(terroir_group_destroy(h));
  return NULL;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 50;
  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = WORKERS, .policy = TERROIR_POLICY_LOCALITY};
  terroir_pool_config other = {.size = sizeof(terroir_pool_config), .num_threads = 2};
  CHECK(terroir_pool_create(&config, &pool));
  CHECK(terroir_pool_create(&other, &other_pool));
  for (int r = 0; r < rounds; r++) {
    CHECK(terroir_group_create(pool, &g));
    for (unsigned i = 0; i < 16; i++) {
      terroir_place p = on_worker(i, 1);
      atomic_fetch_add(&spawned, 1);
      CHECK(terroir_group_spawn(g, (i & 1) ? spawner : leaf, NULL, &p));
    }
    terroir_group *h;
    CHECK(terroir_group_create(pool, &h));
    for (unsigned i = 0; i < 12; i++) {
      terroir_place p = on_worker(i, (i & 2) != 0);
      CHECK(terroir_group_spawn(h, waiter, NULL, &p));
    }
    pthread_t t;
    if (pthread_create(&t, NULL, other_pool_waiters, NULL)) abort();
    if (r & 1) CHECK(terroir_group_wait(g));
    CHECK(terroir_group_destroy(h));
    pthread_join(t, NULL);
    CHECK(terroir_group_destroy(g));
  }
  CHECK(terroir_pool_destroy(other_pool));
  CHECK(terroir_pool_destroy(pool));
  long expected = atomic_load(&spawned);
  if (atomic_load(&ran) != expected) {
    fprintf(stderr, "%ld of %ld tasks ran\n", atomic_load(&ran), expected);
    return 1;
  }
  printf("group_waits rounds=%d ran=%ld waits=%ld refused=%ld ok\n", rounds, atomic_load(&ran),
         atomic_load(&waits), atomic_load(&refused));
  return 0;
}
