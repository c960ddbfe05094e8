/*
 * The model of the Health-like simulation (after BOTS "health", itself after
 * the Olden benchmark): a tree of villages, each with a hospital. At every
 * time step, in every village, people fall ill and queue at the hospital;
 * the staff assess them; some are treated there, some are sent up to the
 * parent village's hospital, the rest go home. Each village's step touches
 * only its own lists, and a parent takes its children's referrals after
 * they have finished the step, so a parallel run (children simulated as
 * tasks) gives exactly the sequential result.
 *
 * Shared by health.c (terroir) and health_omp.c (OpenMP): only the parallel
 * driver differs.
 */
#ifndef TERROIR_EXAMPLES_HEALTH_MODEL_H
#define TERROIR_EXAMPLES_HEALTH_MODEL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

#define MAX_CHILDREN 8

/* Model parameters (BOTS's "small" input has the same shape). */
#define GET_SICK_P 0.02       /* per person and step */
#define CONVALESCENCE_P 0.4   /* after assessment: needs treatment */
#define REALLOC_P 0.3         /* ...then sent up to the parent's hospital */
#define ASSESS_TIME 3         /* steps */
#define CONVALESCENCE_TIME 6  /* steps */
#define PERSONNEL_PER_LEVEL 2 /* hospital staff: (level + 1) * this */

struct patient {
  uint64_t seed;
  int time_left;
  int hosps_visited;
  long time; /* steps spent in hospitals */
  struct patient *next;
};

struct list {
  struct patient *head, *tail;
};

struct village {
  struct village *children[MAX_CHILDREN];
  int nchildren;
  int level; /* 0: leaves */
  uint64_t seed;
  int free_personnel;
  struct list population, waiting, assess, inside, up;
};

/* xorshift64*: a uniform double in [0, 1). */
static inline double rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) * (1.0 / 9007199254740992.0);
}

static inline void push(struct list *l, struct patient *p) {
  p->next = NULL;
  if (l->tail) l->tail->next = p;
  else l->head = p;
  l->tail = p;
}

/* Empties `l`, then runs `body` for each of its patients `p` in order
 * (`body` pushes `p` onto some list, possibly `l` again). */
#define FOR_EACH_TAKE(l, p, body)                                       \
  do {                                                                  \
    struct patient *p##_all = (l)->head;                                \
    (l)->head = (l)->tail = NULL;                                       \
    while (p##_all) {                                                   \
      struct patient *p = p##_all;                                      \
      p##_all = p##_all->next;                                          \
      body                                                              \
    }                                                                   \
  } while (0)

static uint64_t next_seed;

static inline struct village *build(int level, int children, int population) {
  struct village *v = calloc(1, sizeof *v);
  if (!v) abort();
  v->level = level;
  v->seed = next_seed += 0x9E3779B97F4A7C15ULL;
  v->free_personnel = (level + 1) * PERSONNEL_PER_LEVEL;
  for (int i = 0; i < population; i++) {
    struct patient *p = calloc(1, sizeof *p);
    if (!p) abort();
    p->seed = next_seed += 0x9E3779B97F4A7C15ULL;
    push(&v->population, p);
  }
  if (level > 0) {
    v->nchildren = children;
    for (int i = 0; i < children; i++) v->children[i] = build(level - 1, children, population);
  }
  return v;
}

static inline void free_list(struct list *l) {
  FOR_EACH_TAKE(l, p, free(p););
}

static inline void free_village(struct village *v) {
  for (int i = 0; i < v->nchildren; i++) free_village(v->children[i]);
  free_list(&v->population);
  free_list(&v->waiting);
  free_list(&v->assess);
  free_list(&v->inside);
  free_list(&v->up);
  free(v);
}

/* The part of a step that needs only the village's own lists. */
static inline void step_own(struct village *v, int is_root) {
  /* Treated patients go home when their treatment ends. */
  FOR_EACH_TAKE(&v->inside, p, {
    p->time++;
    if (--p->time_left == 0) {
      v->free_personnel++;
      push(&v->population, p);
    } else {
      push(&v->inside, p);
    }
  });
  /* Assessed patients are treated here, sent up, or sent home. */
  FOR_EACH_TAKE(&v->assess, p, {
    p->time++;
    if (--p->time_left > 0) {
      push(&v->assess, p);
    } else if (rnd(&p->seed) < CONVALESCENCE_P) {
      if (is_root || rnd(&p->seed) > REALLOC_P) {
        p->time_left = CONVALESCENCE_TIME;
        push(&v->inside, p);
      } else {
        v->free_personnel++;
        push(&v->up, p);
      }
    } else {
      v->free_personnel++;
      push(&v->population, p);
    }
  });
  /* The waiting room, first come first served. */
  FOR_EACH_TAKE(&v->waiting, p, {
    p->time++;
    if (v->free_personnel > 0) {
      v->free_personnel--;
      p->time_left = ASSESS_TIME;
      push(&v->assess, p);
    } else {
      push(&v->waiting, p);
    }
  });
}

/* The part of a step after the children's steps: their referrals, then
 * who falls ill here. */
static inline void step_after_children(struct village *v) {
  for (int i = 0; i < v->nchildren; i++) {
    FOR_EACH_TAKE(&v->children[i]->up, p, {
      p->hosps_visited++;
      if (v->free_personnel > 0) {
        v->free_personnel--;
        p->time_left = ASSESS_TIME;
        push(&v->assess, p);
      } else {
        push(&v->waiting, p);
      }
    });
  }
  FOR_EACH_TAKE(&v->population, p, {
    if (rnd(&v->seed) < GET_SICK_P) {
      p->hosps_visited++;
      push(&v->waiting, p);
    } else {
      push(&v->population, p);
    }
  });
}

static inline void sim_village_seq(struct village *v, int is_root) {
  for (int i = 0; i < v->nchildren; i++) sim_village_seq(v->children[i], 0);
  step_own(v, is_root);
  step_after_children(v);
}

struct summary {
  long villages, population, waiting, assess, inside, hosps_visited, time;
};

static inline void count_list(const struct list *l, long *n, struct summary *s) {
  for (const struct patient *p = l->head; p; p = p->next) {
    (*n)++;
    s->hosps_visited += p->hosps_visited;
    s->time += p->time;
  }
}

static inline void summarize(const struct village *v, struct summary *s) {
  s->villages++;
  count_list(&v->population, &s->population, s);
  count_list(&v->waiting, &s->waiting, s);
  count_list(&v->assess, &s->assess, s);
  count_list(&v->inside, &s->inside, s);
  long up = 0;
  count_list(&v->up, &up, s);
  s->waiting += up;
  for (int i = 0; i < v->nchildren; i++) summarize(v->children[i], s);
}

static inline int same_summary(const struct summary *a, const struct summary *b) {
  return a->villages == b->villages && a->population == b->population && a->waiting == b->waiting &&
         a->assess == b->assess && a->inside == b->inside && a->hosps_visited == b->hosps_visited &&
         a->time == b->time;
}

/* Run parameters: health [levels=5] [steps=100] [runs=3], 4 children per
 * village, 20 people per village. */
struct params {
  int levels, steps, children, population;
  long runs;
};

static inline struct params health_params(int argc, char **argv) {
  struct params p;
  p.levels = (int)arg_long(argc, argv, 1, 5);
  p.steps = (int)arg_long(argc, argv, 2, 100);
  p.runs = arg_long(argc, argv, 3, 3);
  p.children = 4;
  p.population = 20;
  if (p.levels > 8) {
    fprintf(stderr, "%s: at most 8 levels\n", argv[0]);
    exit(2);
  }
  return p;
}

/* The village tree for a run: the same tree (same seeds) every time. */
static inline struct village *build_tree(const struct params *p) {
  next_seed = 0x2545F4914F6CDD1DULL;
  return build(p->levels - 1, p->children, p->population);
}

/* Runs the simulation sequentially `runs` times: the reference summary and
 * the best time. */
static inline double run_sequential(const struct params *p, struct summary *expected) {
  double best = 1e30;
  for (long r = 0; r < p->runs; r++) {
    struct village *root = build_tree(p);
    double t0 = now_s();
    for (int t = 0; t < p->steps; t++) sim_village_seq(root, 1);
    double t = now_s() - t0;
    if (t < best) best = t;
    *expected = (struct summary){0};
    summarize(root, expected);
    free_village(root);
  }
  return best;
}

static inline int report(const char *runtime, const struct params *p, long threads, double seq_s,
                         double best_s, const struct summary *got, const struct summary *expected) {
  int good = same_summary(got, expected);
  printf("health runtime=%s levels=%d steps=%d villages=%ld threads=%ld result=%ld expected=%ld "
         "seq_s=%.6f best_s=%.6f check=%s\n",
         runtime, p->levels, p->steps, got->villages, threads, got->time, expected->time, seq_s, best_s,
         good ? "ok" : "FAILED");
  if (!good) {
    fprintf(stderr, "summary got:      pop %ld wait %ld assess %ld inside %ld visits %ld time %ld\n",
            got->population, got->waiting, got->assess, got->inside, got->hosps_visited, got->time);
    fprintf(stderr, "summary expected: pop %ld wait %ld assess %ld inside %ld visits %ld time %ld\n",
            expected->population, expected->waiting, expected->assess, expected->inside,
            expected->hosps_visited, expected->time);
  }
  return good ? 0 : 1;
}

#endif
