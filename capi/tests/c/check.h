/*
 * The checks of the C tests in this folder: EXPECT(cond, fmt, ...) counts
 * a passed or failed check (printing the failed ones), EXPECT_ERR(call,
 * code, needle) checks that a call returns `code` with a last-error
 * message containing `needle`, and FINISH(name) prints
 * "NAME P passed, F failed" and returns main's exit status.
 */
#ifndef TERROIR_TEST_CHECK_H
#define TERROIR_TEST_CHECK_H

#include <stdio.h>
#include <string.h>
#include <terroir.h>

static int passed, failed;

#define EXPECT(cond, ...)                                                   \
  do {                                                                      \
    if (cond) {                                                             \
      passed++;                                                             \
    } else {                                                                \
      failed++;                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, "\n");                                                \
    }                                                                       \
  } while (0)

#define EXPECT_OK(call)                                                              \
  do {                                                                               \
    int rc_ = (call);                                                                \
    const char *m_ = terroir_last_error_message();                                   \
    EXPECT(rc_ == TERROIR_ERROR_OK, "%s returned %d (%s): %s", #call, rc_,           \
           terroir_strerror(rc_), m_ ? m_ : "(no message)");                         \
  } while (0)

#define EXPECT_ERR(call, code, needle)                                                 \
  do {                                                                                 \
    int rc_ = (call);                                                                  \
    const char *m_ = terroir_last_error_message();                                     \
    EXPECT(rc_ == (code) && m_ != NULL && strstr(m_, (needle)) != NULL,                \
           "%s returned %d (%s), message \"%s\"; expected %d with \"%s\"", #call, rc_, \
           terroir_strerror(rc_), m_ ? m_ : "(null)", (int)(code), (needle));          \
  } while (0)

#define FINISH(name)                                             \
  do {                                                           \
    printf("%s %d passed, %d failed\n", (name), passed, failed); \
    return failed ? 1 : 0;                                       \
  } while (0)

#endif
