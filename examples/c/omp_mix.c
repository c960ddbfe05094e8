/*
 * terroir inside an OpenMP program: the same compute loop run in turn as
 * an OpenMP parallel region (`#pragma omp parallel for`) and as terroir
 * tasks (`terroir_parallel_for`), in one process. Each runtime keeps its
 * own threads: libgomp's team and terroir's pool. What each does while
 * the other works decides the time:
 *
 *   - libgomp threads that finish a region spin before they sleep
 *     (OMP_WAIT_POLICY=active: they keep spinning; passive: they sleep
 *     at once), taking cores from terroir's workers;
 *   - terroir's workers spin briefly, yield, then park; pinned (the
 *     default on a machine terroir sees whole), each sits on one core,
 *     which a spinning OpenMP thread shares.
 *
 * Two modes:
 *   alternate   the main thread runs an OpenMP region, then terroir tasks,
 *               `rounds` times (a legacy OpenMP code calling a library
 *               built on terroir);
 *   concurrent  the main thread runs `rounds` OpenMP regions while a
 *               second thread runs `rounds` terroir loops at the same time
 *               (both runtimes want every core).
 *
 *   gcc -O2 -fopenmp examples/c/omp_mix.c $(pkg-config --cflags --libs terroir) -o omp_mix
 *   ./omp_mix [alternate|concurrent] [rounds] [n] [runs]
 *   OMP_WAIT_POLICY=passive TERROIR_PIN=0 ./omp_mix alternate
 *
 * Prints one line: the mode, the settings seen, and the best of `runs`
 * (omp_s and terroir_s: the time of each runtime's phases, summed over the
 * rounds; total_s: the whole run; cpu_s: the CPU time of every thread of
 * the process during it), work_s (the CPU time of the phases run
 * sequentially: what the run needs; the rest of cpu_s is spinning and
 * scheduling), and check=ok when both runtimes computed what the
 * sequential loop does.
 * examples/c/omp_mix.sh times it with and without the settings.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <omp.h>
#include <pthread.h>
#include <string.h>
#include <terroir.h>

#include "bench_util.h"

/* About 200 flops of dependent arithmetic per element: compute bound, so
 * that the runtimes, not memory bandwidth, decide the time. */
static double work(double x) {
  for (int k = 0; k < 48; k++) x = x * 0.999 + 0.5 / (1.0 + x * x);
  return x;
}

struct arrays {
  double *in, *out_omp, *out_terroir;
  long n;
};

static void omp_phase(struct arrays *a) {
  double *out = a->out_omp;
  const double *in = a->in;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < a->n; i++) out[i] = work(in[i]);
}

static void terroir_body(size_t begin, size_t end, void *arg) {
  struct arrays *a = arg;
  for (size_t i = begin; i < end; i++) a->out_terroir[i] = work(a->in[i]);
}

static void terroir_phase(struct arrays *a) {
  CHECK(terroir_parallel_for(NULL, 0, (size_t)a->n, 0, terroir_body, a, NULL));
}

/* The concurrent mode's second thread: `rounds` terroir loops. */
struct side {
  struct arrays *a;
  long rounds;
  double seconds;
};

static void *terroir_side(void *arg) {
  struct side *s = arg;
  double t0 = now_s();
  for (long r = 0; r < s->rounds; r++) terroir_phase(s->a);
  s->seconds = now_s() - t0;
  return NULL;
}

/* CPU seconds of the whole process (every thread of both runtimes):
 * what spinning costs even when the wall time hides it. */
static double process_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *env_or(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return v && *v ? v : dflt;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "alternate";
  int concurrent = strcmp(mode, "concurrent") == 0;
  if (!concurrent && strcmp(mode, "alternate") != 0) {
    fprintf(stderr, "omp_mix: mode must be alternate or concurrent, not \"%s\"\n", mode);
    return 2;
  }
  long rounds = arg_long(argc, argv, 2, 200);
  long n = arg_long(argc, argv, 3, 20000);
  long runs = arg_long(argc, argv, 4, 3);

  struct arrays a = {malloc((size_t)n * sizeof(double)), malloc((size_t)n * sizeof(double)),
                     malloc((size_t)n * sizeof(double)), n};
  double *expected = malloc((size_t)n * sizeof(double));
  if (!a.in || !a.out_omp || !a.out_terroir || !expected) {
    fprintf(stderr, "omp_mix: cannot allocate 4 x %ld doubles\n", n);
    return 2;
  }
  for (long i = 0; i < n; i++) a.in[i] = (double)(i % 1000) * 0.01;
  /* The sequential phase's CPU time (not counting time the thread waits
   * for a core on a busy machine): the best of a few. */
  double seq_s = 1e30;
  for (int k = 0; k < 5; k++) {
    double t0 = thread_cpu_s();
    for (long i = 0; i < n; i++) expected[i] = work(a.in[i]);
    double t = thread_cpu_s() - t0;
    if (t < seq_s) seq_s = t;
  }

  /* Both runtimes start their threads before the timing. */
  omp_phase(&a);
  terroir_phase(&a);
  size_t workers = 0;
  CHECK(terroir_pool_num_workers(NULL, &workers));

  double best_total = 1e30, best_omp = 0, best_terroir = 0, best_cpu = 0;
  for (long run = 0; run < runs; run++) {
    memset(a.out_omp, 0, (size_t)n * sizeof(double));
    memset(a.out_terroir, 0, (size_t)n * sizeof(double));
    double omp_s = 0, terroir_s = 0, start = now_s(), cpu0 = process_cpu_s();
    if (concurrent) {
      struct side s = {&a, rounds, 0};
      pthread_t side;
      if (pthread_create(&side, NULL, terroir_side, &s) != 0) {
        fprintf(stderr, "omp_mix: cannot start a thread\n");
        return 2;
      }
      double o0 = now_s();
      for (long r = 0; r < rounds; r++) omp_phase(&a);
      omp_s = now_s() - o0;
      pthread_join(side, NULL);
      terroir_s = s.seconds;
    } else {
      for (long r = 0; r < rounds; r++) {
        double p0 = now_s();
        omp_phase(&a);
        double p1 = now_s();
        terroir_phase(&a);
        omp_s += p1 - p0;
        terroir_s += now_s() - p1;
      }
    }
    double total = now_s() - start, cpu = process_cpu_s() - cpu0;
    if (total < best_total) {
      best_total = total;
      best_cpu = cpu;
      best_omp = omp_s;
      best_terroir = terroir_s;
    }
  }

  long wrong = 0;
  for (long i = 0; i < n; i++)
    wrong += a.out_omp[i] != expected[i] || a.out_terroir[i] != expected[i];
  printf("omp_mix mode=%s rounds=%ld n=%ld omp_threads=%d terroir_threads=%zu "
         "OMP_WAIT_POLICY=%s TERROIR_PIN=%s omp_s=%.6f terroir_s=%.6f total_s=%.6f cpu_s=%.6f "
         "work_s=%.6f check=%s\n",
         mode, rounds, n, omp_get_max_threads(), workers, env_or("OMP_WAIT_POLICY", "unset"),
         env_or("TERROIR_PIN", "unset"), best_omp, best_terroir, best_total, best_cpu,
         2.0 * (double)rounds * seq_s,
         wrong == 0 ? "ok" : "WRONG");
  free(a.in);
  free(a.out_omp);
  free(a.out_terroir);
  free(expected);
  return wrong == 0 ? 0 : 1;
}
