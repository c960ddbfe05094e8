/* Shared helpers of the C examples: timing, arguments, error checks. */
#ifndef TERROIR_EXAMPLES_BENCH_UTIL_H
#define TERROIR_EXAMPLES_BENCH_UTIL_H

/* The including file defines _POSIX_C_SOURCE (for clock_gettime) before
 * its first #include. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on a monotonic clock. */
static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds of CPU time of the calling thread: what a loop costs, whatever
 * else the machine runs (time spent descheduled is not counted). */
static inline double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* argv[i] as a positive integer, or `dflt` when absent. */
static inline long arg_long(int argc, char **argv, int i, long dflt) {
  if (argc <= i) return dflt;
  char *end;
  long v = strtol(argv[i], &end, 10);
  if (*end != '\0' || v <= 0) {
    fprintf(stderr, "%s: argument %d must be a positive integer, not \"%s\"\n", argv[0], i, argv[i]);
    exit(2);
  }
  return v;
}

#ifdef TERROIR_H
/* Exits with the error's description and message when a terroir call fails. */
#define CHECK(call)                                                                    \
  do {                                                                                 \
    int check_rc_ = (call);                                                            \
    if (check_rc_ != TERROIR_ERROR_OK) {                                               \
      const char *check_msg_ = terroir_last_error_message();                           \
      fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,        \
              terroir_strerror(check_rc_), check_msg_ ? check_msg_ : "no message");    \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)
#endif

#endif
