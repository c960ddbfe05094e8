/*
 * terroir_pool_stats, terroir_pool_node_stats, terroir_pool_remote_steals
 * and terroir_pool_reset_stats: the counts of a known workload (placed
 * tasks declaring data on a terroir allocation), a reset, structs of a
 * newer header (zeroed where this library does not know them, `size`
 * set to what it filled); and the defined result of each bad input (NULL
 * pointers, sizes not set or absurd, a node index out of range, a
 * destroyed pool).
 *
 *   stats [tasks=200]
 *
 * Output: "stats P passed, F failed"; exit status 1 if any check failed.
 * tests/ffi.rs runs it (and once under Valgrind).
 */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

static void touch(void *arg) { ((volatile char *)arg)[0] = 1; }

/* A struct of a newer header: terroir_stats and a field after it. */
struct newer_stats {
  terroir_stats s;
  uint64_t field_of_a_newer_header;
};

int main(int argc, char **argv) {
  long tasks = argc > 1 ? atol(argv[1]) : 200;
  terroir_pool_config c = TERROIR_POOL_CONFIG_INIT;
  c.num_threads = 2;
  c.pin = TERROIR_PIN_OFF;
  terroir_pool *pool = NULL;
  EXPECT_OK(terroir_pool_create(&c, &pool));
  size_t nodes = 0;
  EXPECT_OK(terroir_pool_num_nodes(pool, &nodes));
  uint32_t node0 = 0;
  EXPECT_OK(terroir_pool_node_id(pool, 0, &node0));

  /* Placed tasks, each declaring a whole allocation on node0. */
  const size_t len = 1 << 16;
  void *data = NULL;
  EXPECT_OK(terroir_alloc_on_node(len, node0, &data));
  EXPECT_OK(terroir_pool_reset_stats(pool));
  terroir_place place = {TERROIR_PLACE_KIND_DATA, 0, 0, data, len, false};
  terroir_group *g = NULL;
  EXPECT_OK(terroir_group_create(pool, &g));
  for (long i = 0; i < tasks; i++) EXPECT_OK(terroir_group_spawn(g, touch, data, &place));
  EXPECT_OK(terroir_group_destroy(g));

  terroir_stats s = TERROIR_STATS_INIT;
  EXPECT_OK(terroir_pool_stats(pool, &s));
  EXPECT(s.size == sizeof s, "size %zu", s.size);
  EXPECT(s.placed == (uint64_t)tasks, "placed %llu, expected %ld", (unsigned long long)s.placed,
         tasks);
  EXPECT(s.jobs >= 1, "jobs %llu", (unsigned long long)s.jobs);
  EXPECT(s.declared_bytes == (uint64_t)tasks * len, "declared %llu",
         (unsigned long long)s.declared_bytes);
  EXPECT(s.local_bytes <= s.declared_bytes, "local %llu", (unsigned long long)s.local_bytes);
  EXPECT(s.locality_ratio >= 0.0 && s.locality_ratio <= 1.0, "ratio %f", s.locality_ratio);
  if (nodes == 1)
    EXPECT(s.local_bytes == s.declared_bytes && s.locality_ratio == 1.0 && s.steals_remote == 0,
           "one node: local %llu, ratio %f", (unsigned long long)s.local_bytes, s.locality_ratio);
  EXPECT(s.unroutable == 0, "unroutable %llu", (unsigned long long)s.unroutable);

  /* The nodes' shares add up to the totals. */
  uint64_t jobs = 0, placed = 0;
  for (size_t i = 0; i < nodes; i++) {
    terroir_node_stats n = TERROIR_NODE_STATS_INIT;
    uint32_t id = 0;
    EXPECT_OK(terroir_pool_node_stats(pool, i, &n));
    EXPECT_OK(terroir_pool_node_id(pool, i, &id));
    EXPECT(n.node == id && n.size == sizeof n, "node %u, expected %u", n.node, id);
    jobs += n.jobs;
    placed += n.placed;
  }
  EXPECT(jobs == s.jobs && placed == s.placed, "nodes: %llu jobs, %llu placed",
         (unsigned long long)jobs, (unsigned long long)placed);
  size_t count = 99;
  EXPECT_OK(terroir_pool_remote_steals(pool, NULL, 0, &count));
  terroir_remote_steals by_distance[8];
  size_t listed = 99;
  EXPECT_OK(terroir_pool_remote_steals(pool, by_distance, 8, &listed));
  EXPECT(listed == count, "%zu then %zu distances", count, listed);
  uint64_t remote = 0;
  for (size_t i = 0; i < listed && i < 8; i++) remote += by_distance[i].steals;
  EXPECT(remote == s.steals_remote, "remote %llu", (unsigned long long)remote);
  if (nodes == 1) EXPECT(count == 0, "%zu distances on one node", count);

  /* A newer header's struct: its unknown field zeroed, `size` what the
   * library filled. */
  struct newer_stats newer;
  memset(&newer, 0xff, sizeof newer);
  newer.s.size = sizeof newer;
  EXPECT_OK(terroir_pool_stats(pool, &newer.s));
  EXPECT(newer.s.size == sizeof(terroir_stats) && newer.field_of_a_newer_header == 0 &&
             newer.s.placed == s.placed,
         "size %zu, newer field %llu", newer.s.size,
         (unsigned long long)newer.field_of_a_newer_header);

  /* Reset: zeros, and no locality ratio. */
  EXPECT_OK(terroir_pool_reset_stats(pool));
  EXPECT_OK(terroir_pool_stats(pool, &s));
  EXPECT(s.jobs == 0 && s.placed == 0 && s.declared_bytes == 0 && s.locality_ratio == -1.0,
         "after a reset: %llu jobs, ratio %f", (unsigned long long)s.jobs, s.locality_ratio);

  /* Bad input: nothing is written. */
  EXPECT_ERR(terroir_pool_stats(pool, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  terroir_stats unset;
  memset(&unset, 0x5a, sizeof unset);
  unset.size = 0;
  EXPECT_ERR(terroir_pool_stats(pool, &unset), TERROIR_ERROR_INVALID_ARGUMENT, "out->size = 0");
  EXPECT(unset.jobs == 0x5a5a5a5a5a5a5a5aull, "written despite the error");
  unset.size = 8;
  EXPECT_ERR(terroir_pool_stats(pool, &unset), TERROIR_ERROR_INVALID_ARGUMENT, "smaller than");
  unset.size = (size_t)1 << 40;
  EXPECT_ERR(terroir_pool_stats(pool, &unset), TERROIR_ERROR_INVALID_ARGUMENT, "not the size");
  terroir_node_stats n = TERROIR_NODE_STATS_INIT;
  EXPECT_ERR(terroir_pool_node_stats(pool, nodes, &n), TERROIR_ERROR_INVALID_NODE, "out of range");
  EXPECT_ERR(terroir_pool_node_stats(pool, 0, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  n.size = 0;
  EXPECT_ERR(terroir_pool_node_stats(pool, 0, &n), TERROIR_ERROR_INVALID_ARGUMENT, "out->size = 0");
  EXPECT_ERR(terroir_pool_remote_steals(pool, NULL, 0, NULL), TERROIR_ERROR_NULL_POINTER, "`count`");
  EXPECT_ERR(terroir_pool_remote_steals(pool, NULL, 4, &count), TERROIR_ERROR_NULL_POINTER, "`out`");

  /* NULL: the global pool outside every pool. */
  s.size = sizeof s;
  EXPECT_OK(terroir_pool_stats(NULL, &s));

  EXPECT_OK(terroir_free(data));
  EXPECT_OK(terroir_pool_destroy(pool));
  s.size = sizeof s;
  EXPECT_ERR(terroir_pool_stats(pool, &s), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_pool_reset_stats(pool), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_pool_node_stats(pool, 0, &n), TERROIR_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERR(terroir_pool_remote_steals(pool, NULL, 0, &count), TERROIR_ERROR_INVALID_HANDLE,
             "not live");
  FINISH("stats");
}
