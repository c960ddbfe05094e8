/*
 * The C API's defined results for bad input: every error case of the API
 * (NULL pointers, invalid nodes and workers, zero sizes, double destroys,
 * stale and garbage handles, waiting on a group from inside its own
 * tasks, recordings started twice or stopped without a start, bad paths,
 * formats, label names and pops without a push), and a few things that must work (nested
 * spawns, places, memory on nodes, pools used from several threads,
 * reports written to any path). Prints one line per failed
 * check and a summary line "errors: N passed, M failed"; exit status 1 if
 * any check failed.
 *
 *   cc examples/c/errors.c $(pkg-config --cflags --libs terroir) -lpthread \
 *      -Wl,-rpath,$(pkg-config --variable=libdir terroir) -o errors && ./errors
 *
 * (with terroir installed: scripts/install-c.sh).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <terroir.h>
#include <unistd.h>

static int passed, failed;

#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (cond) {                                                        \
      passed++;                                                        \
    } else {                                                           \
      failed++;                                                        \
      fprintf(stderr, "errors.c:%d: check failed: %s\n", __LINE__, #cond); \
    }                                                                  \
  } while (0)

/* `call` returns `code` and the last error message contains `needle`. */
#define EXPECT_ERR(call, code, needle)                                                       \
  do {                                                                                       \
    int rc_ = (call);                                                                        \
    const char *m_ = terroir_last_error_message();                                           \
    if (rc_ == (code) && m_ != NULL && strstr(m_, (needle)) != NULL) {                       \
      passed++;                                                                              \
    } else {                                                                                 \
      failed++;                                                                              \
      fprintf(stderr, "errors.c:%d: %s returned %d (%s), message \"%s\"; expected %d with \"%s\"\n", \
              __LINE__, #call, rc_, terroir_strerror(rc_), m_ ? m_ : "(null)", (int)(code), (needle)); \
    }                                                                                        \
  } while (0)

#define EXPECT_OK(call)                                                                      \
  do {                                                                                       \
    int rc_ = (call);                                                                        \
    if (rc_ == TERROIR_ERROR_OK) {                                                           \
      passed++;                                                                              \
    } else {                                                                                 \
      failed++;                                                                              \
      const char *m_ = terroir_last_error_message();                                         \
      fprintf(stderr, "errors.c:%d: %s failed: %s (%s)\n", __LINE__, #call, terroir_strerror(rc_), \
              m_ ? m_ : "(null)");                                                           \
    }                                                                                        \
  } while (0)

static void noop(void *arg) { (void)arg; }

static void increment(void *arg) { atomic_fetch_add((atomic_long *)arg, 1); }

/* ---- errors and strings ---- */

static void *fresh_thread_message(void *arg) {
  (void)arg;
  return (void *)terroir_last_error_message();
}

static void test_strings(void) {
  for (int code = 0; code <= TERROIR_ERROR_IO; code++) {
    const char *s = terroir_strerror(code);
    EXPECT(s != NULL && strlen(s) > 0 && strcmp(s, "unknown terroir error code") != 0);
  }
  EXPECT(strcmp(terroir_strerror(-1), "unknown terroir error code") == 0);
  EXPECT(strcmp(terroir_strerror(1000), "unknown terroir error code") == 0);
  /* A thread that never failed has no message. */
  pthread_t t;
  void *msg = (void *)1;
  pthread_create(&t, NULL, fresh_thread_message, NULL);
  pthread_join(t, &msg);
  EXPECT(msg == NULL);
}

/* ---- pools ---- */

static void test_pools(void) {
  terroir_pool *pool = NULL;
  EXPECT_ERR(terroir_pool_create(NULL, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  terroir_pool_config bad_policy = {.size = sizeof(terroir_pool_config), .num_threads = 1, .policy = 99};
  EXPECT_ERR(terroir_pool_create(&bad_policy, &pool), TERROIR_ERROR_INVALID_ARGUMENT, "policy = 99");
  terroir_pool_config bad_pin = {.size = sizeof(terroir_pool_config), .num_threads = 1, .pin = 7};
  EXPECT_ERR(terroir_pool_create(&bad_pin, &pool), TERROIR_ERROR_INVALID_ARGUMENT, "pin = 7");
  /* More workers than a pool may have: refused before any thread starts. */
  terroir_pool_config absurd = {.size = sizeof(terroir_pool_config), .num_threads = SIZE_MAX};
  EXPECT_ERR(terroir_pool_create(&absurd, &pool), TERROIR_ERROR_POOL_BUILD, "workers a pool may have");
  absurd.num_threads = (size_t)1 << 40;
  EXPECT_ERR(terroir_pool_global_init(&absurd), TERROIR_ERROR_POOL_BUILD, "num_threads(1099511627776)");

  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = 2, .policy = TERROIR_POLICY_FLAT, .pin = TERROIR_PIN_OFF};
  EXPECT_OK(terroir_pool_create(&config, &pool));
  size_t workers = 0, nodes = 0;
  EXPECT_OK(terroir_pool_num_workers(pool, &workers));
  EXPECT(workers == 2);
  EXPECT_OK(terroir_pool_num_nodes(pool, &nodes));
  EXPECT(nodes >= 1);
  EXPECT_ERR(terroir_pool_num_workers(pool, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  uint32_t node = 12345;
  EXPECT_OK(terroir_pool_node_id(pool, 0, &node));
  EXPECT(node != 12345);
  EXPECT_ERR(terroir_pool_node_id(pool, nodes, &node), TERROIR_ERROR_INVALID_NODE, "out of range");
  EXPECT_OK(terroir_pool_worker_node(pool, 1, &node));
  EXPECT_ERR(terroir_pool_worker_node(pool, 2, &node), TERROIR_ERROR_INVALID_WORKER, "worker index 2");

  /* A join on the pool from outside it. */
  atomic_long n = 0;
  EXPECT_OK(terroir_join(pool, increment, &n, increment, &n));
  EXPECT(n == 2);
  EXPECT_ERR(terroir_join(pool, NULL, NULL, noop, NULL), TERROIR_ERROR_NULL_POINTER, "`fa`");
  EXPECT_ERR(terroir_join(NULL, noop, NULL, NULL, NULL), TERROIR_ERROR_NULL_POINTER, "`fb`");

  /* Double destroy, use after destroy, garbage handles. */
  EXPECT_OK(terroir_pool_destroy(pool));
  EXPECT_ERR(terroir_pool_destroy(pool), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_join(pool, noop, NULL, noop, NULL), TERROIR_ERROR_INVALID_HANDLE, "pool handle");
  EXPECT_ERR(terroir_pool_num_workers(pool, &workers), TERROIR_ERROR_INVALID_HANDLE, "not live");
  terroir_group *g = NULL;
  EXPECT_ERR(terroir_group_create(pool, &g), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_pool_destroy((terroir_pool *)(uintptr_t)0x1234), TERROIR_ERROR_INVALID_HANDLE,
             "not live");
  EXPECT_ERR(terroir_pool_destroy((terroir_pool *)&workers), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_pool_destroy(NULL), TERROIR_ERROR_NULL_POINTER, "`pool`");

  /* The global pool: one, not destroyable, not re-initializable. */
  terroir_pool *global = NULL, *again = NULL;
  EXPECT_OK(terroir_pool_global(&global));
  EXPECT_OK(terroir_pool_global(&again));
  EXPECT(global != NULL && global == again);
  EXPECT_ERR(terroir_pool_destroy(global), TERROIR_ERROR_INVALID_ARGUMENT, "global pool");
  EXPECT_ERR(terroir_pool_global_init(NULL), TERROIR_ERROR_GLOBAL_ALREADY_INITIALIZED, "exists");
  EXPECT_ERR(terroir_pool_global(NULL), TERROIR_ERROR_NULL_POINTER, "`out`");

  /* Statistics: a size must be set; node indices are checked. */
  terroir_stats stats = TERROIR_STATS_INIT;
  EXPECT_OK(terroir_pool_stats(NULL, &stats));
  EXPECT_ERR(terroir_pool_stats(NULL, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  stats.size = 0;
  EXPECT_ERR(terroir_pool_stats(NULL, &stats), TERROIR_ERROR_INVALID_ARGUMENT, "out->size = 0");
  terroir_node_stats node_stats = TERROIR_NODE_STATS_INIT;
  EXPECT_ERR(terroir_pool_node_stats(NULL, 4096, &node_stats), TERROIR_ERROR_INVALID_NODE, "out of range");
  size_t distances = 0;
  EXPECT_ERR(terroir_pool_remote_steals(NULL, NULL, 1, &distances), TERROIR_ERROR_NULL_POINTER, "`out`");
  EXPECT_ERR(terroir_pool_reset_stats((terroir_pool *)(uintptr_t)0x77), TERROIR_ERROR_INVALID_HANDLE,
             "not live");

  /* Not a worker. */
  size_t me = 0;
  EXPECT_ERR(terroir_current_worker(&me), TERROIR_ERROR_NOT_IN_POOL, "not a worker");
}

/* ---- versions, and the structs that grow (a leading `size` field) ---- */

/* A terroir_pool_config as a newer header might declare it: one more field. */
typedef struct {
  terroir_pool_config v1;
  uint64_t newer_field;
} newer_pool_config;

static void test_versions_and_sizes(void) {
  EXPECT(terroir_version() == TERROIR_VERSION);
  char expected[64];
  snprintf(expected, sizeof expected, "%d.%d.%d", TERROIR_VERSION_MAJOR, TERROIR_VERSION_MINOR,
           TERROIR_VERSION_PATCH);
  EXPECT(strcmp(terroir_version_string(), expected) == 0);

  terroir_pool *pool = NULL;
  /* The initializer: size set, every other field its default. */
  terroir_pool_config config = TERROIR_POOL_CONFIG_INIT;
  EXPECT(config.size == sizeof(terroir_pool_config) && config.num_threads == 0 && config.policy == 0);
  config.num_threads = 1;
  config.pin = TERROIR_PIN_OFF;
  EXPECT_OK(terroir_pool_create(&config, &pool));
  EXPECT_OK(terroir_pool_destroy(pool));

  /* size not set (a struct written before the field existed, or zeroed). */
  terroir_pool_config unset = {.num_threads = 1};
  EXPECT_ERR(terroir_pool_create(&unset, &pool), TERROIR_ERROR_INVALID_ARGUMENT,
             "config->size = 0 is smaller than the first version of terroir_pool_config");
  EXPECT_ERR(terroir_pool_create(&unset, &pool), TERROIR_ERROR_INVALID_ARGUMENT, "TERROIR_POOL_CONFIG_INIT");
  EXPECT_ERR(terroir_pool_global_init(&unset), TERROIR_ERROR_INVALID_ARGUMENT, "config->size = 0");
  /* Smaller than the first version: the library would miss fields. */
  terroir_pool_config small = {.size = sizeof(size_t), .num_threads = 1};
  EXPECT_ERR(terroir_pool_create(&small, &pool), TERROIR_ERROR_INVALID_ARGUMENT, "config->size = ");
  /* A garbage size: refused without reading past the struct. */
  terroir_pool_config garbage = {.size = (size_t)1 << 40, .num_threads = 1};
  EXPECT_ERR(terroir_pool_create(&garbage, &pool), TERROIR_ERROR_INVALID_ARGUMENT, "was it set to sizeof");
  garbage.size = SIZE_MAX;
  EXPECT_ERR(terroir_pool_create(&garbage, &pool), TERROIR_ERROR_INVALID_ARGUMENT, "was it set to sizeof");

  /* A program built against a newer header: a field this library does not
   * know is fine at zero (its default), an error otherwise. */
  newer_pool_config newer = {.v1 = TERROIR_POOL_CONFIG_INIT, .newer_field = 0};
  newer.v1.size = sizeof newer;
  newer.v1.num_threads = 1;
  newer.v1.pin = TERROIR_PIN_OFF;
  EXPECT_OK(terroir_pool_create(&newer.v1, &pool));
  size_t workers = 0;
  EXPECT_OK(terroir_pool_num_workers(pool, &workers));
  EXPECT(workers == 1);
  EXPECT_OK(terroir_pool_destroy(pool));
  newer.newer_field = 1;
  EXPECT_ERR(terroir_pool_create(&newer.v1, &pool), TERROIR_ERROR_INVALID_ARGUMENT,
             "does not know that field");

  /* Recording options grow the same way. */
  terroir_record_options options = TERROIR_RECORD_OPTIONS_INIT;
  EXPECT(options.size == sizeof(terroir_record_options) && options.counters == TERROIR_COUNTERS_ALL);
  terroir_record_options unset_options = {.counters = TERROIR_COUNTERS_NONE};
  EXPECT_ERR(terroir_record_start(NULL, &unset_options), TERROIR_ERROR_INVALID_ARGUMENT,
             "options->size = 0");
  options.reserved = 3;
  EXPECT_ERR(terroir_record_start(NULL, &options), TERROIR_ERROR_INVALID_ARGUMENT, "options->reserved = 3");
}

/* ---- groups ---- */

struct self_wait {
  terroir_group *group;
  int wait_rc, destroy_rc, join_rc;
};

static void wait_on_own_group(void *arg) {
  struct self_wait *s = arg;
  s->wait_rc = terroir_group_wait(s->group);
  s->destroy_rc = terroir_group_destroy(s->group);
}

static void wait_in_branch(void *arg) {
  struct self_wait *s = arg;
  s->join_rc = terroir_group_wait(s->group);
}

static void join_then_wait(void *arg) {
  struct self_wait *s = arg;
  /* Both branches are part of this task: waiting on its group from either
   * would deadlock just the same. */
  if (terroir_join(NULL, noop, NULL, wait_in_branch, s) != TERROIR_ERROR_OK) s->join_rc = -1;
}

struct nested {
  terroir_group *outer;
  int rc;
};

static void wait_on_outer(void *arg) {
  struct nested *n = arg;
  n->rc = terroir_group_wait(n->outer);
}

/* A task of `outer` that waits on a group of its own, whose task waits on
 * `outer`: that task is work the outer task waits for. */
static void wait_through_inner(void *arg) {
  struct nested *n = arg;
  terroir_group *inner;
  if (terroir_group_create(NULL, &inner) != TERROIR_ERROR_OK) abort();
  if (terroir_group_spawn(inner, wait_on_outer, n, NULL) != TERROIR_ERROR_OK) abort();
  if (terroir_group_destroy(inner) != TERROIR_ERROR_OK) abort();
}

struct tree {
  terroir_group *group;
  atomic_long *count;
  int depth;
};

/* Spawns two more tasks into its own group until `depth` is 0. */
static void grow(void *arg) {
  struct tree *t = arg;
  atomic_fetch_add(t->count, 1);
  for (int i = 0; i < 2 && t->depth > 0; i++) {
    struct tree *child = malloc(sizeof *child);
    *child = (struct tree){t->group, t->count, t->depth - 1};
    if (terroir_group_spawn(t->group, grow, child, NULL) != TERROIR_ERROR_OK) abort();
  }
  free(t);
}

struct where {
  atomic_long wrong;
  atomic_long ran;
  size_t worker;
};

static void check_worker(void *arg) {
  struct where *w = arg;
  size_t me = 99;
  if (terroir_current_worker(&me) != TERROIR_ERROR_OK || me != w->worker) atomic_fetch_add(&w->wrong, 1);
  atomic_fetch_add(&w->ran, 1);
}

static void *spawn_from_thread(void *arg) {
  terroir_group *g = arg;
  static atomic_long n;
  for (int i = 0; i < 100; i++)
    if (terroir_group_spawn(g, increment, &n, NULL) != TERROIR_ERROR_OK) return (void *)1;
  return NULL;
}

static void test_groups(void) {
  terroir_group *g = NULL;
  EXPECT_ERR(terroir_group_create(NULL, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  EXPECT_OK(terroir_group_create(NULL, &g));
  EXPECT_ERR(terroir_group_spawn(NULL, noop, NULL, NULL), TERROIR_ERROR_NULL_POINTER, "`group`");
  EXPECT_ERR(terroir_group_spawn(g, NULL, NULL, NULL), TERROIR_ERROR_NULL_POINTER, "`f`");
  terroir_place place = {.kind = 9};
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_INVALID_ARGUMENT, "place->kind = 9");
  place = (terroir_place){.kind = TERROIR_PLACE_KIND_NODE, .node = 777};
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_INVALID_NODE, "place->node = 777");
  place = (terroir_place){.kind = TERROIR_PLACE_KIND_WORKER, .worker = 4096};
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_INVALID_WORKER, "worker index 4096");
  place = (terroir_place){.kind = TERROIR_PLACE_KIND_DATA, .data = NULL, .len = 8};
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_NULL_POINTER, "place->data");
  char buffer[64] = {0};
  place = (terroir_place){.kind = TERROIR_PLACE_KIND_DATA, .data = buffer, .len = 0};
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_ZERO_SIZE, "place->len");
  /* A length no object can have (more than PTRDIFF_MAX bytes), and one that
   * runs past the end of the address space: errors, never a slice. */
  place = (terroir_place){.kind = TERROIR_PLACE_KIND_DATA, .data = buffer, .len = SIZE_MAX};
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_INVALID_ARGUMENT, "place->len = ");
  place = (terroir_place){.kind = TERROIR_PLACE_KIND_DATA, .data = (void *)(UINTPTR_MAX - 4095), .len = 8192};
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_INVALID_ARGUMENT, "address space");
  /* Pushed places: the array and each region are checked. */
  terroir_access regions[2] = {{buffer, sizeof buffer, false}, {NULL, 8, true}};
  place = (terroir_place){.kind = TERROIR_PLACE_KIND_PUSHED, .data = NULL, .len = 2};
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_NULL_POINTER, "`place->data`");
  place.data = regions;
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_NULL_POINTER, "`place->data[1].data`");
  regions[1] = (terroir_access){buffer, 0, true};
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_ZERO_SIZE, "place->data[1].len is 0");
  regions[1].len = SIZE_MAX;
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_INVALID_ARGUMENT, "place->data[1].len");
  place.len = 70000;
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_INVALID_ARGUMENT, "at most 65536");
  regions[1].len = sizeof buffer;
  place.kind = 6;
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, &place), TERROIR_ERROR_INVALID_ARGUMENT, "(0 to 5)");
  /* Valid places of every kind. */
  atomic_long n = 0;
  uint32_t node0 = 0;
  EXPECT_OK(terroir_pool_node_id(NULL, 0, &node0));
  terroir_place places[] = {
      {.kind = TERROIR_PLACE_KIND_ANY},
      {.kind = TERROIR_PLACE_KIND_NODE, .node = node0},
      {.kind = TERROIR_PLACE_KIND_NODE, .node = node0, .strict = true},
      {.kind = TERROIR_PLACE_KIND_WORKER, .worker = 0},
      {.kind = TERROIR_PLACE_KIND_DATA, .data = buffer, .len = sizeof buffer},
      {.kind = TERROIR_PLACE_KIND_AFTER, .data = buffer, .len = 1},
      {.kind = TERROIR_PLACE_KIND_AFTER, .data = NULL, .len = 0, .strict = true},
      {.kind = TERROIR_PLACE_KIND_PUSHED, .data = regions, .len = 2},
      {.kind = TERROIR_PLACE_KIND_PUSHED, .data = NULL, .len = 0},
  };
  for (size_t i = 0; i < sizeof places / sizeof places[0]; i++)
    EXPECT_OK(terroir_group_spawn(g, increment, &n, &places[i]));
  EXPECT_OK(terroir_group_spawn(g, increment, &n, NULL));
  EXPECT_OK(terroir_group_wait(g));
  EXPECT(n == 10);
  EXPECT_OK(terroir_group_wait(g)); /* nothing left: returns at once */

  /* Double destroy and use after destroy. */
  EXPECT_OK(terroir_group_destroy(g));
  EXPECT_ERR(terroir_group_destroy(g), TERROIR_ERROR_INVALID_HANDLE, "group handle");
  EXPECT_ERR(terroir_group_wait(g), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_group_spawn(g, noop, NULL, NULL), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_group_destroy((terroir_group *)(uintptr_t)0xdeadbeef), TERROIR_ERROR_INVALID_HANDLE,
             "not live");
  EXPECT_ERR(terroir_group_wait(NULL), TERROIR_ERROR_NULL_POINTER, "`group`");
  EXPECT_ERR(terroir_group_destroy(NULL), TERROIR_ERROR_NULL_POINTER, "`group`");

  /* Waiting on a group from inside one of its own tasks: an error, not a
   * deadlock; the group stays usable. */
  struct self_wait s = {.wait_rc = -1, .destroy_rc = -1, .join_rc = -1};
  EXPECT_OK(terroir_group_create(NULL, &s.group));
  EXPECT_OK(terroir_group_spawn(s.group, wait_on_own_group, &s, NULL));
  EXPECT_OK(terroir_group_spawn(s.group, join_then_wait, &s, NULL));
  EXPECT_OK(terroir_group_wait(s.group));
  EXPECT(s.wait_rc == TERROIR_ERROR_WOULD_DEADLOCK);
  EXPECT(s.destroy_rc == TERROIR_ERROR_WOULD_DEADLOCK);
  EXPECT(s.join_rc == TERROIR_ERROR_WOULD_DEADLOCK);
  EXPECT_OK(terroir_group_destroy(s.group));
  struct nested nest = {.rc = -1};
  EXPECT_OK(terroir_group_create(NULL, &nest.outer));
  EXPECT_OK(terroir_group_spawn(nest.outer, wait_through_inner, &nest, NULL));
  EXPECT_OK(terroir_group_destroy(nest.outer));
  EXPECT(nest.rc == TERROIR_ERROR_WOULD_DEADLOCK);

  /* Tasks spawning into their own group while it is waited for. */
  atomic_long count = 0;
  EXPECT_OK(terroir_group_create(NULL, &g));
  struct tree *root = malloc(sizeof *root);
  *root = (struct tree){g, &count, 10};
  EXPECT_OK(terroir_group_spawn(g, grow, root, NULL));
  EXPECT_OK(terroir_group_destroy(g));
  EXPECT(count == 2047);

  /* Spawns from several threads outside the pool, then one wait. */
  EXPECT_OK(terroir_group_create(NULL, &g));
  pthread_t threads[4];
  for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, spawn_from_thread, g);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(threads[i], &r);
    EXPECT(r == NULL);
  }
  EXPECT_OK(terroir_group_destroy(g));

  /* A strict worker place on a STRICT_LOCALITY pool runs on that worker;
   * a group keeps its pool alive after the pool handle is destroyed. */
  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = 2, .policy = TERROIR_POLICY_STRICT_LOCALITY, .pin = TERROIR_PIN_OFF};
  terroir_pool *pool;
  EXPECT_OK(terroir_pool_create(&config, &pool));
  EXPECT_OK(terroir_group_create(pool, &g));
  EXPECT_OK(terroir_pool_destroy(pool));
  struct where w = {.worker = 1};
  place = (terroir_place){.kind = TERROIR_PLACE_KIND_WORKER, .worker = 1, .strict = true};
  for (int i = 0; i < 50; i++) EXPECT_OK(terroir_group_spawn(g, check_worker, &w, &place));
  EXPECT_OK(terroir_group_destroy(g));
  EXPECT(w.ran == 50 && w.wrong == 0);
}

/* ---- a wait from work stacked on top of the group's own work ----
 *
 * A task D waits for its group g = {t1, t2}, so its worker runs g's batch:
 * t1, while the other worker steals t2. Then u, a task spawned from
 * outside the pool into another group, lands on a worker whose stack
 * holds g's work below it, and waits for g: that wait can never end, so
 * it must be refused, not block for ever.
 *
 * - on_task = 0, two workers: t2 holds its worker until u is done; D's
 *   worker, waiting for t2, takes u on top of g's batch.
 * - on_task = 1, three workers: t1 holds D's worker; t2 joins x and y, y
 *   is stolen by the third worker, and t2's worker, waiting for y, takes
 *   u on top of t2 (it runs no batch of g). */
struct stacked {
  int on_task;
  terroir_group *g;
  atomic_int t2_started, y_started, u_done;
  int u_rc;
};

/* Joins until `*flag` is set: each join polls for steal requests, so an
 * idle worker takes the caller's pending continuation. */
static void join_until(atomic_int *flag) {
  while (!atomic_load(flag)) terroir_join(NULL, noop, NULL, noop, NULL);
}

static void stacked_hold(struct stacked *s) {
  while (!atomic_load(&s->u_done)) sched_yield();
}

static void stacked_x(void *arg) { join_until(&((struct stacked *)arg)->y_started); }

static void stacked_y(void *arg) {
  struct stacked *s = arg;
  atomic_store(&s->y_started, 1);
  stacked_hold(s);
}

static void stacked_t1(void *arg) {
  struct stacked *s = arg;
  join_until(&s->t2_started);
  if (s->on_task) stacked_hold(s);
}

static void stacked_t2(void *arg) {
  struct stacked *s = arg;
  atomic_store(&s->t2_started, 1);
  if (!s->on_task) {
    stacked_hold(s);
  } else if (terroir_join(NULL, stacked_x, s, stacked_y, s) != TERROIR_ERROR_OK) {
    abort();
  }
}

static void stacked_u(void *arg) {
  struct stacked *s = arg;
  s->u_rc = terroir_group_wait(s->g);
  atomic_store(&s->u_done, 1);
}

static void stacked_driver(void *arg) {
  struct stacked *s = arg;
  if (terroir_group_create(NULL, &s->g) != TERROIR_ERROR_OK) abort();
  if (terroir_group_spawn(s->g, stacked_t1, s, NULL) != TERROIR_ERROR_OK) abort();
  if (terroir_group_spawn(s->g, stacked_t2, s, NULL) != TERROIR_ERROR_OK) abort();
  if (terroir_group_destroy(s->g) != TERROIR_ERROR_OK) abort();
}

static void test_stacked_wait(int on_task) {
  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = on_task ? 3 : 2};
  terroir_pool *pool;
  EXPECT_OK(terroir_pool_create(&config, &pool));
  struct stacked s = {.on_task = on_task, .u_rc = -1};
  terroir_group *z, *h;
  EXPECT_OK(terroir_group_create(pool, &z));
  EXPECT_OK(terroir_group_create(pool, &h));
  EXPECT_OK(terroir_group_spawn(z, stacked_driver, &s, NULL));
  /* Spawn u once every worker but the one it must land on is held. */
  while (!atomic_load(on_task ? &s.y_started : &s.t2_started)) sched_yield();
  EXPECT_OK(terroir_group_spawn(h, stacked_u, &s, NULL));
  EXPECT_OK(terroir_group_destroy(h));
  EXPECT_OK(terroir_group_destroy(z));
  EXPECT(s.u_rc == TERROIR_ERROR_WOULD_DEADLOCK);
  EXPECT_OK(terroir_pool_destroy(pool));
}

/* A worker that waits for a group while another worker's batch of it runs
 * must keep working: here the batch's other task is strictly placed on the
 * waiting worker. (A worker that blocked on the group's condition variable
 * instead deadlocked.) `batch_owner`, on worker 0, queues `count_ran`
 * (strict on worker 1) and `signal_go` into g and waits: its batch spawns
 * the first and runs the second, which lets `blocked_waiter`, on worker 1,
 * wait for g while that batch is still running. */
struct worker_wait {
  terroir_group *g;
  atomic_int waiter_started, go;
  atomic_long ran;
  int waiter_rc, owner_rc;
};

static void count_ran(void *arg) { atomic_fetch_add(&((struct worker_wait *)arg)->ran, 1); }

static void signal_go(void *arg) { atomic_store(&((struct worker_wait *)arg)->go, 1); }

static void blocked_waiter(void *arg) {
  struct worker_wait *w = arg;
  atomic_store(&w->waiter_started, 1);
  while (!atomic_load(&w->go)) sched_yield();
  w->waiter_rc = terroir_group_wait(w->g);
}

static void batch_owner(void *arg) {
  struct worker_wait *w = arg;
  terroir_place on_1 = {.kind = TERROIR_PLACE_KIND_WORKER, .worker = 1, .strict = true};
  while (!atomic_load(&w->waiter_started)) sched_yield();
  int rc = terroir_group_spawn(w->g, count_ran, w, &on_1);
  if (rc == TERROIR_ERROR_OK) rc = terroir_group_spawn(w->g, signal_go, w, NULL);
  if (rc == TERROIR_ERROR_OK) rc = terroir_group_wait(w->g);
  w->owner_rc = rc;
}

static void test_worker_waits_by_working(void) {
  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = 2, .policy = TERROIR_POLICY_LOCALITY};
  terroir_pool *pool;
  EXPECT_OK(terroir_pool_create(&config, &pool));
  struct worker_wait w = {.waiter_rc = -1, .owner_rc = -1};
  terroir_place on_0 = {.kind = TERROIR_PLACE_KIND_WORKER, .worker = 0, .strict = true};
  terroir_place on_1 = {.kind = TERROIR_PLACE_KIND_WORKER, .worker = 1, .strict = true};
  terroir_group *h;
  EXPECT_OK(terroir_group_create(pool, &h));
  EXPECT_OK(terroir_group_create(pool, &w.g));
  EXPECT_OK(terroir_group_spawn(h, blocked_waiter, &w, &on_1));
  EXPECT_OK(terroir_group_spawn(h, batch_owner, &w, &on_0));
  EXPECT_OK(terroir_group_destroy(h));
  EXPECT(w.owner_rc == TERROIR_ERROR_OK);
  EXPECT(w.waiter_rc == TERROIR_ERROR_OK);
  EXPECT(atomic_load(&w.ran) == 1);
  EXPECT_OK(terroir_group_destroy(w.g));
  EXPECT_OK(terroir_pool_destroy(pool));
}

/* ---- memory ---- */

static void test_memory(void) {
  void *p = NULL;
  uint32_t node0 = 0;
  EXPECT_OK(terroir_pool_node_id(NULL, 0, &node0));
  EXPECT_ERR(terroir_alloc_on_node(0, node0, &p), TERROIR_ERROR_ZERO_SIZE, "size is 0");
  EXPECT_ERR(terroir_alloc_on_node(4096, node0, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  EXPECT_ERR(terroir_alloc_on_node(4096, 777, &p), TERROIR_ERROR_INVALID_NODE, "allowed nodes");
  EXPECT_ERR(terroir_alloc_interleaved(0, &p), TERROIR_ERROR_ZERO_SIZE, "size is 0");
  EXPECT_ERR(terroir_alloc_on_node(SIZE_MAX, node0, &p), TERROIR_ERROR_OUT_OF_MEMORY, "out of memory");
  /* Blocked and interleaved over a node list: the list is checked. */
  uint32_t twice[2] = {node0, node0}, bad_node = 777;
  EXPECT_ERR(terroir_alloc_blocked(0, NULL, 0, &p), TERROIR_ERROR_ZERO_SIZE, "size is 0");
  EXPECT_ERR(terroir_alloc_blocked(4096, NULL, 0, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  EXPECT_ERR(terroir_alloc_blocked(4096, NULL, 2, &p), TERROIR_ERROR_NULL_POINTER, "`nodes`");
  EXPECT_ERR(terroir_alloc_blocked(4096, twice, 0, &p), TERROIR_ERROR_INVALID_ARGUMENT, "num_nodes is 0");
  EXPECT_ERR(terroir_alloc_blocked(4096, twice, 2, &p), TERROIR_ERROR_INVALID_ARGUMENT, "listed twice");
  EXPECT_ERR(terroir_alloc_interleaved_on(4096, &bad_node, 1, &p), TERROIR_ERROR_INVALID_NODE, "allowed nodes");
  EXPECT_ERR(terroir_alloc_interleaved_on(SIZE_MAX, NULL, 0, &p), TERROIR_ERROR_OUT_OF_MEMORY, "out of memory");
  int32_t byte_node = 0;
  EXPECT_ERR(terroir_alloc_node_of(&byte_node, 0, &byte_node), TERROIR_ERROR_UNKNOWN_POINTER, "not the start");

  size_t size = 1 << 20;
  EXPECT_OK(terroir_alloc_on_node(size, node0, &p));
  int32_t where = 12345;
  EXPECT_OK(terroir_locate(p, size, &where));
  EXPECT(where == -1); /* not touched yet */
  memset(p, 1, size);
  EXPECT_OK(terroir_locate(p, size, &where));
  EXPECT(where == (int32_t)node0);
  EXPECT_ERR(terroir_locate(NULL, size, &where), TERROIR_ERROR_NULL_POINTER, "`ptr`");
  EXPECT_ERR(terroir_locate(p, 0, &where), TERROIR_ERROR_ZERO_SIZE, "len is 0");
  EXPECT_ERR(terroir_locate(p, size, NULL), TERROIR_ERROR_NULL_POINTER, "`node`");
  EXPECT_ERR(terroir_locate(p, SIZE_MAX, &where), TERROIR_ERROR_INVALID_ARGUMENT, "len = ");
  EXPECT_ERR(terroir_locate(p, (size_t)PTRDIFF_MAX + 1, &where), TERROIR_ERROR_INVALID_ARGUMENT, "len = ");
  EXPECT_ERR(terroir_locate((void *)(UINTPTR_MAX - 4095), 8192, &where), TERROIR_ERROR_INVALID_ARGUMENT,
             "address space");

  terroir_migration m = {0};
  EXPECT_OK(terroir_migrate(p, size, node0, &m));
  EXPECT(m.pages > 0 && m.moved + m.already_there == m.pages && m.not_moved == 0);
  EXPECT_OK(terroir_migrate((char *)p + 100, 5000, node0, NULL)); /* a part: pages only */
  EXPECT_ERR(terroir_migrate(p, 0, node0, &m), TERROIR_ERROR_ZERO_SIZE, "len is 0");
  EXPECT_ERR(terroir_migrate(p, SIZE_MAX, node0, &m), TERROIR_ERROR_INVALID_ARGUMENT, "len = ");
  EXPECT_ERR(terroir_migrate(NULL, size, node0, &m), TERROIR_ERROR_NULL_POINTER, "`ptr`");
  EXPECT_ERR(terroir_migrate(p, size, 777, &m), TERROIR_ERROR_INVALID_NODE, "allowed nodes");

  /* A data place on a whole allocation (node known without a query). */
  terroir_group *g;
  atomic_long n = 0;
  terroir_place place = {.kind = TERROIR_PLACE_KIND_DATA, .data = p, .len = size};
  EXPECT_OK(terroir_group_create(NULL, &g));
  EXPECT_OK(terroir_group_spawn(g, increment, &n, &place));
  EXPECT_OK(terroir_group_destroy(g));
  EXPECT(n == 1);

  EXPECT_ERR(terroir_free((char *)p + 8), TERROIR_ERROR_UNKNOWN_POINTER, "not returned by terroir_alloc");
  EXPECT_OK(terroir_free(p));
  EXPECT_ERR(terroir_free(p), TERROIR_ERROR_UNKNOWN_POINTER, "freed already");
  void *m1 = malloc(64);
  EXPECT_ERR(terroir_free(m1), TERROIR_ERROR_UNKNOWN_POINTER, "not returned");
  free(m1);
  EXPECT_OK(terroir_free(NULL));

  EXPECT_OK(terroir_alloc_interleaved(3 * 4096, &p));
  memset(p, 2, 3 * 4096);
  EXPECT_OK(terroir_locate(p, 3 * 4096, &where));
  EXPECT(where >= 0);
  EXPECT_OK(terroir_free(p));
}

/* ---- recording and reports ---- */

struct inside_measure {
  atomic_long runs;
  int start_rc, stop_rc;
  int stop_message_ok;
};

/* Runs twice under terroir_report_measure (on its one-worker pool, then on
 * the pool measured), whose recording it may neither restart nor stop. */
static void measured(void *arg) {
  struct inside_measure *m = arg;
  atomic_fetch_add(&m->runs, 1);
  terroir_recording *r = NULL;
  m->start_rc = terroir_record_start(NULL, NULL);
  m->stop_rc = terroir_record_stop(NULL, &r);
  const char *msg = terroir_last_error_message();
  m->stop_message_ok = msg != NULL && strstr(msg, "terroir_report_measure in progress") != NULL;
  atomic_long n = 0;
  if (terroir_label("measured-leaf", increment, &n) != TERROIR_ERROR_OK || n != 1) abort();
}

/* `path` exists; removes it. */
static int remove_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  fclose(f);
  return unlink(path) == 0;
}

static void test_report(void) {
  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = 2, .pin = TERROIR_PIN_OFF};
  terroir_pool *pool;
  EXPECT_OK(terroir_pool_create(&config, &pool));
  terroir_recording *rec = NULL, *rec2 = NULL;
  terroir_record_options timestamps = {.size = sizeof(terroir_record_options), .counters = TERROIR_COUNTERS_NONE};

  /* Stop without a start, start twice, options out of range. */
  EXPECT_ERR(terroir_record_stop(pool, &rec), TERROIR_ERROR_NOT_RECORDING, "is not recording");
  terroir_record_options bad = {.size = sizeof(terroir_record_options), .counters = 7};
  EXPECT_ERR(terroir_record_start(pool, &bad), TERROIR_ERROR_INVALID_ARGUMENT, "counters = 7");
  EXPECT_OK(terroir_record_start(pool, &timestamps));
  EXPECT_ERR(terroir_record_start(pool, NULL), TERROIR_ERROR_ALREADY_RECORDING, "recording already");
  atomic_long n = 0;
  EXPECT_OK(terroir_join(pool, increment, &n, increment, &n));
  EXPECT_ERR(terroir_record_stop(pool, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  EXPECT_OK(terroir_record_stop(pool, &rec)); /* the NULL `out` left it recording */
  EXPECT_ERR(terroir_record_stop(pool, &rec2), TERROIR_ERROR_NOT_RECORDING, "stopped already");
  EXPECT_OK(terroir_record_start(pool, NULL)); /* again, with every counter */
  EXPECT_OK(terroir_join(pool, increment, &n, increment, &n));
  EXPECT_OK(terroir_record_stop(pool, &rec2));
  EXPECT(n == 4);
  /* NULL outside every pool: the global pool. */
  terroir_recording *global_rec = NULL;
  EXPECT_OK(terroir_record_start(NULL, &timestamps));
  EXPECT_OK(terroir_record_stop(NULL, &global_rec));
  EXPECT_OK(terroir_recording_destroy(global_rec));

  /* Reports from recordings; recordings destroyed. */
  terroir_report *report = NULL, *other = NULL;
  EXPECT_ERR(terroir_report_create(NULL, rec, &report), TERROIR_ERROR_NULL_POINTER, "`baseline`");
  EXPECT_ERR(terroir_report_create(rec, NULL, &report), TERROIR_ERROR_NULL_POINTER, "`parallel`");
  EXPECT_ERR(terroir_report_create(rec, rec2, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  EXPECT_ERR(terroir_report_create(rec, (terroir_recording *)(uintptr_t)0xdeadbeef, &report),
             TERROIR_ERROR_INVALID_HANDLE, "argument `parallel`: recording handle");
  EXPECT_OK(terroir_report_create(rec, rec2, &report));
  EXPECT_OK(terroir_recording_destroy(rec));
  EXPECT_ERR(terroir_recording_destroy(rec), TERROIR_ERROR_INVALID_HANDLE, "recording handle");
  EXPECT_ERR(terroir_report_create(rec, rec2, &other), TERROIR_ERROR_INVALID_HANDLE, "argument `baseline`");
  EXPECT_ERR(terroir_recording_destroy(NULL), TERROIR_ERROR_NULL_POINTER, "`recording`");
  EXPECT_OK(terroir_recording_destroy(rec2));

  /* Writing: every format; bad formats and paths. */
  char dir[] = "/tmp/terroir-errors-XXXXXX";
  EXPECT(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/r.out", dir);
  for (uint32_t f = TERROIR_REPORT_FORMAT_TEXT; f <= TERROIR_REPORT_FORMAT_SVG; f++)
    EXPECT_OK(terroir_report_write(report, f, path));
  EXPECT(remove_file(path));
  EXPECT_ERR(terroir_report_write(report, 5, path), TERROIR_ERROR_INVALID_ARGUMENT, "format = 5");
  EXPECT_ERR(terroir_report_write(report, TERROIR_REPORT_FORMAT_JSON, NULL), TERROIR_ERROR_NULL_POINTER, "`path`");
  EXPECT_ERR(terroir_report_write(NULL, TERROIR_REPORT_FORMAT_JSON, path), TERROIR_ERROR_NULL_POINTER, "`report`");
  EXPECT_ERR(terroir_report_write(report, TERROIR_REPORT_FORMAT_JSON, ""), TERROIR_ERROR_INVALID_ARGUMENT,
             "empty path");
  EXPECT_ERR(terroir_report_write(report, TERROIR_REPORT_FORMAT_JSON, "/nonexistent-terroir-dir/r.json"),
             TERROIR_ERROR_IO, "/nonexistent-terroir-dir/r.json");
  EXPECT_ERR(terroir_report_write(report, TERROIR_REPORT_FORMAT_CSV, dir), TERROIR_ERROR_IO, dir);
  /* Linux paths are bytes: a name that is not UTF-8 is a file name. */
  snprintf(path, sizeof path, "%s/\xff\xfe.json", dir);
  EXPECT_OK(terroir_report_write(report, TERROIR_REPORT_FORMAT_JSON, path));
  EXPECT(remove_file(path));
  snprintf(path, sizeof path, "%s/all", dir);
  EXPECT_OK(terroir_report_write_all(report, path)); /* creates the directory */
  const char *files[] = {"report.json", "report.csv", "trace.json", "report.svg", "report.txt"};
  for (size_t i = 0; i < 5; i++) {
    char file[300];
    snprintf(file, sizeof file, "%s/%s", path, files[i]);
    EXPECT(remove_file(file));
  }
  EXPECT(rmdir(path) == 0);
  EXPECT_ERR(terroir_report_write_all(report, "/dev/null/sub"), TERROIR_ERROR_IO, "/dev/null/sub");
  EXPECT_ERR(terroir_report_write_all(report, NULL), TERROIR_ERROR_NULL_POINTER, "`dir`");
  EXPECT_ERR(terroir_report_write_all(NULL, dir), TERROIR_ERROR_NULL_POINTER, "`report`");
  EXPECT_ERR(terroir_report_write_all(report, ""), TERROIR_ERROR_INVALID_ARGUMENT, "empty path");
  EXPECT_OK(terroir_report_destroy(report));
  EXPECT_ERR(terroir_report_destroy(report), TERROIR_ERROR_INVALID_HANDLE, "report handle");
  EXPECT_ERR(terroir_report_write(report, TERROIR_REPORT_FORMAT_JSON, path), TERROIR_ERROR_INVALID_HANDLE,
             "not live");
  EXPECT_ERR(terroir_report_write_all(report, path), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_report_destroy((terroir_report *)(uintptr_t)0x77), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_report_destroy(NULL), TERROIR_ERROR_NULL_POINTER, "`report`");
  EXPECT(rmdir(dir) == 0);

  /* Labels: checked before `f` runs; outside every pool `f` just runs. */
  atomic_long calls = 0;
  EXPECT_OK(terroir_label("leaf", increment, &calls));
  EXPECT_OK(terroir_label("leaf", increment, &calls));
  EXPECT_OK(terroir_label("\xc3\xa9t\xc3\xa9", increment, &calls)); /* UTF-8: fine */
  EXPECT(calls == 3);
  EXPECT_ERR(terroir_label(NULL, increment, &calls), TERROIR_ERROR_NULL_POINTER, "`name`");
  EXPECT_ERR(terroir_label("", increment, &calls), TERROIR_ERROR_INVALID_ARGUMENT, "empty");
  EXPECT_ERR(terroir_label("\xff\xfe", increment, &calls), TERROIR_ERROR_INVALID_ARGUMENT, "not UTF-8");
  char long_name[300];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  EXPECT_ERR(terroir_label(long_name, increment, &calls), TERROIR_ERROR_INVALID_ARGUMENT, "longer than 256");
  EXPECT_ERR(terroir_label("leaf", NULL, &calls), TERROIR_ERROR_NULL_POINTER, "`f`");
  EXPECT(calls == 3);
  /* Pushed labels: the same names checked; a pop needs a push. */
  EXPECT_ERR(terroir_label_push(NULL), TERROIR_ERROR_NULL_POINTER, "`name`");
  EXPECT_ERR(terroir_label_push(""), TERROIR_ERROR_INVALID_ARGUMENT, "empty");
  EXPECT_ERR(terroir_label_push(long_name), TERROIR_ERROR_INVALID_ARGUMENT, "longer than 256");
  EXPECT_ERR(terroir_label_pop(), TERROIR_ERROR_LABEL_NOT_PUSHED, "no label pushed");
  EXPECT_OK(terroir_label_push("leaf"));
  EXPECT_OK(terroir_label_pop());
  EXPECT_ERR(terroir_label_pop(), TERROIR_ERROR_LABEL_NOT_PUSHED, "more pops than");

  /* Measuring: the work may neither restart nor stop the recording it
   * runs in; a pool that records already cannot be measured. */
  struct inside_measure m = {.start_rc = -1, .stop_rc = -1};
  EXPECT_ERR(terroir_report_measure(pool, NULL, &m, &report), TERROIR_ERROR_NULL_POINTER, "`f`");
  EXPECT_ERR(terroir_report_measure(pool, measured, &m, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  EXPECT(m.runs == 0);
  EXPECT_OK(terroir_report_measure(pool, measured, &m, &report));
  EXPECT(m.runs == 2);
  EXPECT(m.start_rc == TERROIR_ERROR_ALREADY_RECORDING);
  EXPECT(m.stop_rc == TERROIR_ERROR_NOT_RECORDING && m.stop_message_ok);
  EXPECT_OK(terroir_report_destroy(report));
  EXPECT_OK(terroir_record_start(pool, &timestamps));
  EXPECT_ERR(terroir_report_measure(pool, measured, &m, &report), TERROIR_ERROR_ALREADY_RECORDING,
             "recording already");
  EXPECT_OK(terroir_record_stop(pool, &rec));
  EXPECT_OK(terroir_recording_destroy(rec));

  /* A destroyed pool; a pool destroyed while it records (the recording
   * is discarded). */
  EXPECT_OK(terroir_pool_destroy(pool));
  EXPECT_ERR(terroir_record_start(pool, NULL), TERROIR_ERROR_INVALID_HANDLE, "pool handle");
  EXPECT_ERR(terroir_record_stop(pool, &rec), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_report_measure(pool, measured, &m, &report), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_OK(terroir_pool_create(&config, &pool));
  EXPECT_OK(terroir_record_start(pool, &timestamps));
  EXPECT_OK(terroir_pool_destroy(pool));
}

int main(void) {
  test_strings();
  test_pools();
  test_versions_and_sizes();
  test_groups();
  test_stacked_wait(0);
  test_stacked_wait(1);
  test_worker_waits_by_working();
  test_memory();
  test_report();
  printf("errors: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
