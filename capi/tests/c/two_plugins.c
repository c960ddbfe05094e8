/*
 * Loads two shared objects that use terroir (FIRST and SECOND, see
 * plugin.c), lets both try to initialize the global pool, and prints how
 * many global pools that made: "global pools: 1" when both use
 * libterroir.so, "global pools: 2" when each carries its own copy of the
 * static library.
 */
#include <stdio.h>
#include <terroir.h>

#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)

int XCAT(FIRST, _init)(void);
int XCAT(SECOND, _init)(void);
long XCAT(FIRST, _work)(void);
long XCAT(SECOND, _work)(void);

int main(void) {
  int a = XCAT(FIRST, _init)();
  int b = XCAT(SECOND, _init)();
  int built = (a == TERROIR_ERROR_OK) + (b == TERROIR_ERROR_OK);
  int existed = (a == TERROIR_ERROR_GLOBAL_ALREADY_INITIALIZED) + (b == TERROIR_ERROR_GLOBAL_ALREADY_INITIALIZED);
  if (built + existed != 2) {
    fprintf(stderr, "unexpected results: %d %d\n", a, b);
    return 1;
  }
  if (XCAT(FIRST, _work)() != 2 || XCAT(SECOND, _work)() != 2) {
    fprintf(stderr, "a join failed\n");
    return 1;
  }
  printf("global pools: %d\n", built);
  return 0;
}
