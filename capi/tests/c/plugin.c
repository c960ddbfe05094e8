/*
 * A shared object that uses terroir (tests/ffi.rs builds it twice, as
 * libdyn_a.so and libdyn_b.so linked with libterroir.so, and as
 * libstatic_a.so and libstatic_b.so each with its own copy of
 * libterroir.a). PLUGIN_NAME prefixes its functions.
 */
#include <terroir.h>

#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)

static void add_one(void *arg) { __atomic_fetch_add((long *)arg, 1, __ATOMIC_RELAXED); }

/* Initializes the global pool with one worker: 0 if this call built it,
 * TERROIR_ERROR_GLOBAL_ALREADY_INITIALIZED if it existed. */
int XCAT(PLUGIN_NAME, _init)(void) {
  terroir_pool_config config = {.size = sizeof(terroir_pool_config), .num_threads = 1, .pin = TERROIR_PIN_OFF};
  return terroir_pool_global_init(&config);
}

/* Runs a join on the global pool: 2 on success. */
long XCAT(PLUGIN_NAME, _work)(void) {
  long n = 0;
  if (terroir_join(NULL, add_one, &n, add_one, &n) != TERROIR_ERROR_OK) return -1;
  return n;
}
