/*
 * Task groups under races between threads outside the pool: spawns into one
 * group from several threads while others wait on it, and waits racing a
 * destroy whose slot is reused at once by a new group. Every task counts
 * itself; the counts must come out exact, every call must return what its
 * documentation says, and nothing may hang (tests/ffi.rs runs this with a
 * time limit, and once under Valgrind).
 *
 *   group_race [rounds=3]
 *
 * Output: "group_race rounds=N ok" on success; otherwise a message and a
 * failing exit.
 */
#define _POSIX_C_SOURCE 200809L /* bench_util.h: clock_gettime */
#include <terroir.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* CHECK: the C examples' check of a terroir call. */
#include "../../../examples/c/bench_util.h"

#define FAIL(...)                 \
  do {                            \
    fprintf(stderr, __VA_ARGS__); \
    abort();                      \
  } while (0)

static void count(void *arg) { atomic_fetch_add((atomic_long *)arg, 1); }

/* A task of `group` that spawns two more into it down to depth 0 (2^(d+1)-1
 * tasks in all), and runs a nested group of three of its own, so that group
 * slots are reused on the workers meanwhile. */
struct node {
  terroir_group *group;
  atomic_long *count;
  int depth;
};

static void node_task(void *arg) {
  struct node *n = arg;
  atomic_fetch_add(n->count, 1);
  for (int i = 0; n->depth > 0 && i < 2; i++) {
    struct node *k = malloc(sizeof *k);
    if (!k) FAIL("out of memory\n");
    *k = (struct node){n->group, n->count, n->depth - 1};
    CHECK(terroir_group_spawn(n->group, node_task, k, NULL));
  }
  terroir_group *inner;
  atomic_long inner_count = 0;
  CHECK(terroir_group_create(NULL, &inner));
  for (int i = 0; i < 3; i++) CHECK(terroir_group_spawn(inner, count, &inner_count, NULL));
  CHECK(terroir_group_destroy(inner));
  if (atomic_load(&inner_count) != 3) FAIL("a nested group ran %ld of 3 tasks\n", (long)inner_count);
  free(n);
}

static void spawn_tree(terroir_group *g, atomic_long *counter, int depth) {
  struct node *n = malloc(sizeof *n);
  if (!n) FAIL("out of memory\n");
  *n = (struct node){g, counter, depth};
  CHECK(terroir_group_spawn(g, node_task, n, NULL));
}

/* Part 1: spawners and waiters on one shared group. */
struct shared {
  terroir_group *group;
  atomic_long count;
  atomic_int stop;
};

enum { SPAWNERS = 3, TREES = 100, TREE_DEPTH = 3 };

static void *spawner(void *arg) {
  struct shared *s = arg;
  for (int i = 0; i < TREES; i++) {
    spawn_tree(s->group, &s->count, TREE_DEPTH);
    if (i % 17 == 0) CHECK(terroir_group_wait(s->group));
  }
  return NULL;
}

static void *waiter(void *arg) {
  struct shared *s = arg;
  while (!atomic_load(&s->stop)) CHECK(terroir_group_wait(s->group));
  return NULL;
}

/* Part 2: three waits race one destroy, whose slot a new group takes at once. */
struct raced {
  terroir_group *group;
  atomic_long count;
};

enum { RACES = 100, RACE_TREES = 5, RACE_DEPTH = 2 };
#define RACE_TASKS (RACE_TREES * ((2 << RACE_DEPTH) - 1))

static void *wait_racing_destroy(void *arg) {
  struct raced *r = arg;
  int rc = terroir_group_wait(r->group);
  /* Done waiting, or the group was gone (destroyed) before the wait looked. */
  if (rc != TERROIR_ERROR_OK && rc != TERROIR_ERROR_INVALID_HANDLE) FAIL("a racing wait gave %d\n", rc);
  if (rc == TERROIR_ERROR_OK && atomic_load(&r->count) != RACE_TASKS)
    FAIL("a wait returned after %ld of %d tasks\n", (long)atomic_load(&r->count), RACE_TASKS);
  return NULL;
}

static void *racer(void *arg) {
  (void)arg;
  for (int it = 0; it < RACES; it++) {
    struct raced *r = calloc(1, sizeof *r);
    if (!r) FAIL("out of memory\n");
    CHECK(terroir_group_create(NULL, &r->group));
    for (int i = 0; i < RACE_TREES; i++) spawn_tree(r->group, &r->count, RACE_DEPTH);
    pthread_t w[3];
    for (int k = 0; k < 3; k++)
      if (pthread_create(&w[k], NULL, wait_racing_destroy, r)) FAIL("pthread_create\n");
    CHECK(terroir_group_destroy(r->group));
    if (atomic_load(&r->count) != RACE_TASKS)
      FAIL("destroy returned after %ld of %d tasks\n", (long)atomic_load(&r->count), RACE_TASKS);
    /* Most likely the slot just freed: the waiters must not mistake it. */
    terroir_group *next;
    atomic_long next_count = 0;
    CHECK(terroir_group_create(NULL, &next));
    CHECK(terroir_group_spawn(next, count, &next_count, NULL));
    for (int k = 0; k < 3; k++) pthread_join(w[k], NULL);
    CHECK(terroir_group_destroy(next));
    if (atomic_load(&next_count) != 1) FAIL("the next group ran %ld of 1 task\n", (long)next_count);
    free(r);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 3;
  for (int round = 0; round < rounds; round++) {
    struct shared s = {0};
    CHECK(terroir_group_create(NULL, &s.group));
    pthread_t spawners[SPAWNERS], waiters[2], racers[2];
    for (int i = 0; i < 2; i++)
      if (pthread_create(&waiters[i], NULL, waiter, &s)) FAIL("pthread_create\n");
    for (int i = 0; i < SPAWNERS; i++)
      if (pthread_create(&spawners[i], NULL, spawner, &s)) FAIL("pthread_create\n");
    for (int i = 0; i < 2; i++)
      if (pthread_create(&racers[i], NULL, racer, NULL)) FAIL("pthread_create\n");
    for (int i = 0; i < SPAWNERS; i++) pthread_join(spawners[i], NULL);
    CHECK(terroir_group_wait(s.group));
    long expected = (long)SPAWNERS * TREES * ((2 << TREE_DEPTH) - 1);
    if (atomic_load(&s.count) != expected) FAIL("the shared group ran %ld of %ld tasks\n", (long)s.count, expected);
    atomic_store(&s.stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(waiters[i], NULL);
    CHECK(terroir_group_destroy(s.group));
    for (int i = 0; i < 2; i++) pthread_join(racers[i], NULL);
  }
  printf("group_race rounds=%d ok\n", rounds);
  return 0;
}
