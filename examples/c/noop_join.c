/*
 * A join with no scheduler: runs fa(a), then fb(b), on the calling thread.
 * examples/c/bench.sh builds it into a shared library of its own and links
 * fib.c against it (-DFIB_JOIN=noop_join), so that the C fib's calls keep
 * the shape they have with libterroir.so (through the PLT, tasks through
 * pointers) and the difference to terroir_join is what terroir adds.
 */
#include <terroir.h>

int noop_join(terroir_pool *pool, terroir_task_fn fa, void *a, terroir_task_fn fb, void *b);

int noop_join(terroir_pool *pool, terroir_task_fn fa, void *a, terroir_task_fn fb, void *b) {
  (void)pool;
  fa(a);
  fb(b);
  return TERROIR_ERROR_OK;
}
