/*
 * terroir_alloc_blocked, terroir_alloc_interleaved_on and
 * terroir_alloc_node_of: blocked memory is one share per listed node in
 * ascending node order (each byte's node found without a system call),
 * interleaved memory over one node is on that node and over several on
 * none in particular; memory is zeroed, usable as a loop's data range and
 * freed by terroir_free. And the defined result of each bad input (NULL
 * pointers, zero and absurd sizes, node lists that are empty, too long,
 * with a node listed twice or one this process may not use, offsets past
 * the end, pointers terroir did not return).
 *
 *   layouts [pages=64]
 *
 * Output: "layouts P passed, F failed"; exit status 1 if any check failed.
 * tests/ffi.rs runs it (and once under Valgrind).
 */
#define _DEFAULT_SOURCE /* sysconf */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

static void fill(size_t begin, size_t end, void *arg) {
  unsigned char *p = arg;
  for (size_t i = begin; i < end; i++) p[i] = (unsigned char)i;
}

/* Checks a blocked allocation of `size` bytes over `nodes` (ascending,
 * as the library orders them): every byte's node is listed, and the nodes
 * never go down from one byte to the next. */
static void check_blocked(void *p, size_t size, const uint32_t *nodes, size_t n, const char *what) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), bad = 0;
  int32_t prev = -1;
  for (size_t off = 0; off < size; off += page / 2) {
    int32_t node = -2;
    EXPECT_OK(terroir_alloc_node_of(p, off, &node));
    int listed = 0;
    for (size_t i = 0; i < n; i++) listed |= node == (int32_t)nodes[i];
    if (!listed || node < prev) bad++;
    prev = node;
  }
  int32_t first = -2, last = -2;
  EXPECT_OK(terroir_alloc_node_of(p, 0, &first));
  EXPECT_OK(terroir_alloc_node_of(p, size - 1, &last));
  EXPECT(bad == 0 && first == (int32_t)nodes[0] && last == (int32_t)nodes[n - 1],
         "%s: %zu bad offsets, first on %d, last on %d", what, bad, first, last);
  size_t nonzero = 0;
  for (size_t i = 0; i < size; i++) nonzero += ((unsigned char *)p)[i] != 0;
  EXPECT(nonzero == 0, "%s: %zu bytes not zero", what, nonzero);
}

int main(int argc, char **argv) {
  long pages = argc > 1 ? atol(argv[1]) : 64;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t size = (size_t)pages * page + 100;

  /* The nodes of the global pool, ascending, and the list reversed (the
   * library orders it). */
  size_t n = 0;
  EXPECT_OK(terroir_pool_num_nodes(NULL, &n));
  uint32_t nodes[64], reversed[64];
  if (n > 64) n = 64;
  for (size_t i = 0; i < n; i++) EXPECT_OK(terroir_pool_node_id(NULL, i, &nodes[i]));
  for (size_t i = 0; i < n; i++) reversed[i] = nodes[n - 1 - i];

  void *p = NULL;
  EXPECT_OK(terroir_alloc_blocked(size, reversed, n, &p));
  check_blocked(p, size, nodes, n, "blocked over the pool's nodes");
  /* A loop over it with the allocation as its data range (placed share by
   * share), then every byte checked. */
  terroir_for_options o = TERROIR_FOR_OPTIONS_INIT;
  o.schedule = TERROIR_SCHEDULE_STATIC;
  o.data = p;
  o.data_len = size;
  EXPECT_OK(terroir_parallel_for(NULL, 0, size, 0, fill, p, &o));
  size_t wrong = 0;
  for (size_t i = 0; i < size; i++) wrong += ((unsigned char *)p)[i] != (unsigned char)i;
  EXPECT(wrong == 0, "%zu bytes wrong after the loop", wrong);
  int32_t where = -2;
  EXPECT_OK(terroir_locate(p, size, &where));
  EXPECT(where >= 0, "touched memory on node %d", where);
  EXPECT_OK(terroir_free(p));
  EXPECT_ERR(terroir_free(p), TERROIR_ERROR_UNKNOWN_POINTER, "freed already");

  /* NULL and 0: every node this process may allocate on. */
  EXPECT_OK(terroir_alloc_blocked(page, NULL, 0, &p));
  int32_t node = -2;
  EXPECT_OK(terroir_alloc_node_of(p, 0, &node));
  EXPECT(node >= 0, "one page on node %d", node);
  EXPECT_OK(terroir_free(p));

  /* Interleaved: over one node, on it; over several, on none in
   * particular. */
  EXPECT_OK(terroir_alloc_interleaved_on(size, &nodes[0], 1, &p));
  EXPECT_OK(terroir_alloc_node_of(p, size - 1, &node));
  EXPECT(node == (int32_t)nodes[0], "interleaved over node %u: %d", nodes[0], node);
  EXPECT_OK(terroir_free(p));
  EXPECT_OK(terroir_alloc_interleaved_on(size, NULL, 0, &p));
  EXPECT_OK(terroir_alloc_node_of(p, 0, &node));
  EXPECT(n > 1 ? node == -1 : node == (int32_t)nodes[0], "interleaved over all: %d", node);
  EXPECT_OK(terroir_free(p));

  /* Bad input: nothing is allocated. */
  p = NULL;
  EXPECT_ERR(terroir_alloc_blocked(0, nodes, n, &p), TERROIR_ERROR_ZERO_SIZE, "size is 0");
  EXPECT_ERR(terroir_alloc_interleaved_on(0, NULL, 0, &p), TERROIR_ERROR_ZERO_SIZE, "size is 0");
  EXPECT_ERR(terroir_alloc_blocked(page, nodes, n, NULL), TERROIR_ERROR_NULL_POINTER, "`out`");
  EXPECT_ERR(terroir_alloc_blocked(page, NULL, 2, &p), TERROIR_ERROR_NULL_POINTER, "`nodes`");
  EXPECT_ERR(terroir_alloc_blocked(page, nodes, 0, &p), TERROIR_ERROR_INVALID_ARGUMENT,
             "num_nodes is 0");
  EXPECT_ERR(terroir_alloc_blocked(page, nodes, 5000, &p), TERROIR_ERROR_INVALID_ARGUMENT,
             "num_nodes = 5000");
  uint32_t twice[2] = {nodes[0], nodes[0]};
  EXPECT_ERR(terroir_alloc_blocked(page, twice, 2, &p), TERROIR_ERROR_INVALID_ARGUMENT,
             "listed twice");
  uint32_t unknown[2] = {nodes[0], 777};
  EXPECT_ERR(terroir_alloc_interleaved_on(page, unknown, 2, &p), TERROIR_ERROR_INVALID_NODE,
             "nodes[1] = 777");
  uint32_t huge = UINT32_MAX;
  EXPECT_ERR(terroir_alloc_blocked(page, &huge, 1, &p), TERROIR_ERROR_INVALID_NODE, "allowed nodes");
  EXPECT_ERR(terroir_alloc_blocked(SIZE_MAX, nodes, n, &p), TERROIR_ERROR_OUT_OF_MEMORY,
             "out of memory");
  EXPECT(p == NULL, "a failed allocation wrote %p", p);

  EXPECT_OK(terroir_alloc_blocked(page, nodes, 1, &p));
  EXPECT_ERR(terroir_alloc_node_of(NULL, 0, &node), TERROIR_ERROR_NULL_POINTER, "`ptr`");
  EXPECT_ERR(terroir_alloc_node_of(p, 0, NULL), TERROIR_ERROR_NULL_POINTER, "`node`");
  EXPECT_ERR(terroir_alloc_node_of(p, page, &node), TERROIR_ERROR_INVALID_ARGUMENT, "offset = ");
  EXPECT_ERR(terroir_alloc_node_of((char *)p + 8, 0, &node), TERROIR_ERROR_UNKNOWN_POINTER,
             "not the start");
  EXPECT_OK(terroir_free(p));
  EXPECT_ERR(terroir_alloc_node_of(p, 0, &node), TERROIR_ERROR_UNKNOWN_POINTER, "freed already");
  FINISH("layouts");
}
