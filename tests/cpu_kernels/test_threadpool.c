/* tests/cpu_kernels/test_threadpool.c: the kernel library's thread pool
 * (runtime.c): every item of a job runs exactly once, in the chunks that
 * kcpu_runtime.h documents (which depend only on the item and thread
 * counts), and a thread held up inside its first chunk leaves the rest of
 * its share to the others. */
#include "tk.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#define TP_MAXN 200
#define TP_MAXCALLS 64

typedef struct tp_job {
  int hits[TP_MAXN];
  int64_t calls[TP_MAXCALLS][2];
  int ncalls, overflow;
  pthread_mutex_t mu;
} tp_job;

static void tp_record(void *ctx, int64_t b, int64_t e) {
  tp_job *j = ctx;
  pthread_mutex_lock(&j->mu);
  for (int64_t i = b; i < e; i++)
    j->hits[i]++;
  if (j->ncalls < TP_MAXCALLS) {
    j->calls[j->ncalls][0] = b;
    j->calls[j->ncalls][1] = e;
    j->ncalls++;
  } else {
    j->overflow = 1;
  }
  pthread_mutex_unlock(&j->mu);
}

/* Whether [b, e) is one of the documented chunks of n items on T threads:
 * thread t's share [n*t/T, n*(t+1)/T), cut into k = min(4, its size)
 * near-equal parts, part p = [s + len*p/k, s + len*(p+1)/k). */
static int tp_is_chunk(int64_t n, int64_t T, int64_t b, int64_t e) {
  for (int64_t t = 0; t < T; t++) {
    int64_t s = n * t / T, len = n * (t + 1) / T - s, k = len < 4 ? len : 4;
    for (int64_t p = 0; p < k; p++)
      if (b == s + len * p / k && e == s + len * (p + 1) / k)
        return 1;
  }
  return 0;
}

START_TEST(pool_runs_every_item_once_in_documented_chunks) {
  for (int T = 2; T <= 4; T++) {
    struct kcpu_pool *p = kcpu_pool_create(T);
    ck_assert_ptr_nonnull(p);
    for (int64_t n = 1; n <= 70; n++) {
      for (int rep = 0; rep < 3; rep++) {
        tp_job j;
        memset(&j, 0, sizeof j);
        pthread_mutex_init(&j.mu, NULL);
        kcpu_parallel_for(p, n, tp_record, &j);
        pthread_mutex_destroy(&j.mu);
        ck_assert_int_eq(j.overflow, 0);
        for (int64_t i = 0; i < n; i++)
          ck_assert_msg(j.hits[i] == 1, "T=%d n=%lld: item %lld ran %d times", T, (long long)n,
                        (long long)i, j.hits[i]);
        for (int64_t i = n; i < TP_MAXN; i++)
          ck_assert_int_eq(j.hits[i], 0);
        for (int c = 0; c < j.ncalls; c++) {
          int64_t b = j.calls[c][0], e = j.calls[c][1];
          ck_assert_msg(b < e, "T=%d n=%lld: an empty call", T, (long long)n);
          if (n == 1) /* one item runs inline, as [0, 1) */
            ck_assert(b == 0 && e == 1);
          else
            ck_assert_msg(tp_is_chunk(n, T, b, e), "T=%d n=%lld: call [%lld, %lld) is no chunk",
                          T, (long long)n, (long long)b, (long long)e);
        }
      }
    }
    kcpu_pool_destroy(p);
  }
}
END_TEST

/* A worker that stops in its first chunk until the caller has run the last
 * item of that worker's share (or 5 s pass): the caller must claim the
 * share's other chunks rather than wait for them. */
typedef struct tp_late {
  pthread_t caller;
  int64_t last;             /* the worker's share ends at item last */
  int caller_ran, late_ran; /* items, under mu */
  int released, timed_out;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} tp_late;

static void tp_late_fn(void *ctx, int64_t b, int64_t e) {
  tp_late *l = ctx;
  int caller = pthread_equal(pthread_self(), l->caller);
  pthread_mutex_lock(&l->mu);
  if (caller) {
    l->caller_ran += (int)(e - b);
    if (b <= l->last && l->last < e) {
      l->released = 1;
      pthread_cond_broadcast(&l->cv);
    }
  } else {
    l->late_ran += (int)(e - b);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    while (!l->released && !l->timed_out)
      if (pthread_cond_timedwait(&l->cv, &l->mu, &until) != 0)
        l->timed_out = 1;
  }
  pthread_mutex_unlock(&l->mu);
}

START_TEST(pool_late_thread_leaves_its_share) {
  struct kcpu_pool *p = kcpu_pool_create(2);
  ck_assert_ptr_nonnull(p);
  for (int64_t n = 8; n <= 40; n += 8) {
    tp_late l = {.caller = pthread_self(), .last = n - 1};
    pthread_mutex_init(&l.mu, NULL);
    pthread_cond_init(&l.cv, NULL);
    kcpu_parallel_for(p, n, tp_late_fn, &l);
    pthread_cond_destroy(&l.cv);
    pthread_mutex_destroy(&l.mu);
    ck_assert_int_eq(l.caller_ran + l.late_ran, n);
    ck_assert_msg(!l.timed_out, "n=%lld: the caller waited for the late thread's share",
                  (long long)n);
    /* the worker ran nothing (the caller took its whole share first) or
     * only its share's first chunk, a quarter of its n / 2 items */
    ck_assert_msg(l.late_ran == 0 || l.late_ran == n / 2 / 4, "n=%lld: the late thread ran %d",
                  (long long)n, l.late_ran);
  }
  kcpu_pool_destroy(p);
}
END_TEST

Suite *tk_threadpool_suite(void) {
  Suite *s = suite_create("threadpool");
  TCase *tc = tcase_create("threadpool");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, pool_runs_every_item_once_in_documented_chunks);
  tcase_add_test(tc, pool_late_thread_leaves_its_share);
  suite_add_tcase(s, tc);
  return s;
}
