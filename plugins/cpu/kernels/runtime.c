/* plugins/cpu/kernels/runtime.c: the persistent thread pool of the kernel
 * library. Work is split statically (one contiguous chunk per thread) so
 * results never depend on scheduling. Workers spin briefly after a job
 * before sleeping on a condition variable: back-to-back kernels of one
 * inference then start without a futex round trip, while an idle pool costs
 * no CPU. A chunk goes to whoever claims it first: its worker, or the
 * caller once its own chunk is done, so a worker that the OS has not run
 * yet (another process on its core) does not hold the caller up; the
 * chunks, and so the results, are the same either way. */
#include "kcpu_runtime.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Polls before sleeping, about 0.2 ms: long enough to cover the gap
 * between two parallel kernels of one inference with single-threaded ones
 * in between (a futex wake-up in a VM cost tens of microseconds a kernel:
 * 20000 polls left BERT ~25% and MobileNetV2 ~20% slower), short enough
 * that an idle pool stops burning a core at once. */
#define KCPU_SPIN 200000

struct kcpu_pool {
  int threads;
  pthread_t *tids;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
  void (*fn)(void *, int64_t, int64_t);
  void *ctx;
  int64_t n;
  uint64_t gen; /* job generation; workers run when it changes */
  int pending;  /* chunks 1.. of the current job not yet done */
  int *claimed; /* chunk t taken (by worker t or the caller) in this job */
  int stop;
  int busy; /* a job is in flight: nested calls run inline */
};

typedef struct kcpu_worker_arg {
  struct kcpu_pool *p;
  int index;
} kcpu_worker_arg;

static void kcpu_run_chunk(struct kcpu_pool *p, int t) {
  int64_t T = p->threads, n = p->n;
  int64_t b = n * t / T, e = n * (t + 1) / T;
  if (b < e)
    p->fn(p->ctx, b, e);
}

static void *kcpu_worker(void *argp) {
  kcpu_worker_arg a = *(kcpu_worker_arg *)argp;
  free(argp);
  struct kcpu_pool *p = a.p;
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (__atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) == seen &&
           !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE) && spins < KCPU_SPIN) {
      __asm__ volatile("" ::: "memory");
      spins++;
    }
    pthread_mutex_lock(&p->mu);
    while (__atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) == seen &&
           !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
      pthread_cond_wait(&p->cv_work, &p->mu);
    pthread_mutex_unlock(&p->mu);
    if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
      return NULL;
    seen = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
    /* the caller may have taken the chunk already; then there is nothing
     * to do (if a later job has begun meanwhile, its chunk is claimed and
     * run here, which is as right: the job was published before the
     * claims were reset) */
    if (__atomic_exchange_n(&p->claimed[a.index], 1, __ATOMIC_ACQ_REL))
      continue;
    kcpu_run_chunk(p, a.index);
    if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL) == 0) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_broadcast(&p->cv_done);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

KCPU_PREBUILT struct kcpu_pool *kcpu_pool_create(int threads) {
  if (threads < 1)
    threads = 1;
  struct kcpu_pool *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->threads = threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv_work, NULL);
  pthread_cond_init(&p->cv_done, NULL);
  if (threads == 1)
    return p;
  p->tids = calloc((size_t)threads, sizeof *p->tids);
  p->claimed = calloc((size_t)threads, sizeof *p->claimed);
  if (!p->tids || !p->claimed) {
    kcpu_pool_destroy(p);
    return NULL;
  }
  for (int t = 1; t < threads; t++) {
    kcpu_worker_arg *a = malloc(sizeof *a);
    if (a) {
      a->p = p;
      a->index = t;
    }
    if (!a || pthread_create(&p->tids[t], NULL, kcpu_worker, a) != 0) {
      free(a);
      p->threads = t; /* destroy joins the ones that started */
      kcpu_pool_destroy(p);
      return NULL;
    }
  }
  return p;
}

KCPU_PREBUILT void kcpu_pool_destroy(struct kcpu_pool *p) {
  if (!p)
    return;
  if (p->tids) {
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (int t = 1; t < p->threads; t++)
      pthread_join(p->tids[t], NULL);
    free(p->tids);
  }
  free(p->claimed);
  pthread_cond_destroy(&p->cv_work);
  pthread_cond_destroy(&p->cv_done);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

KCPU_PREBUILT int kcpu_pool_threads(const struct kcpu_pool *p) {
  return p ? p->threads : 1;
}

KCPU_PREBUILT void kcpu_parallel_for(struct kcpu_pool *p, int64_t n,
                                     void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
  if (n <= 0)
    return;
  if (!p || p->threads <= 1 || n == 1 || __atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQ_REL)) {
    fn(ctx, 0, n);
    return;
  }
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  __atomic_store_n(&p->pending, p->threads - 1, __ATOMIC_RELEASE);
  for (int t = 1; t < p->threads; t++)
    __atomic_store_n(&p->claimed[t], 0, __ATOMIC_RELEASE);
  pthread_mutex_lock(&p->mu);
  __atomic_add_fetch(&p->gen, 1, __ATOMIC_ACQ_REL);
  pthread_cond_broadcast(&p->cv_work);
  pthread_mutex_unlock(&p->mu);
  kcpu_run_chunk(p, 0);
  /* the chunks no worker has started */
  for (int t = 1; t < p->threads; t++)
    if (!__atomic_exchange_n(&p->claimed[t], 1, __ATOMIC_ACQ_REL)) {
      kcpu_run_chunk(p, t);
      __atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL);
    }
  int spins = 0;
  while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0 && spins < KCPU_SPIN) {
    __asm__ volatile("" ::: "memory");
    spins++;
  }
  pthread_mutex_lock(&p->mu);
  while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0)
    pthread_cond_wait(&p->cv_done, &p->mu);
  pthread_mutex_unlock(&p->mu);
  __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
}

KCPU_PREBUILT void *kcpu_alloc(int64_t bytes) {
  if (bytes <= 0)
    bytes = 64;
  size_t sz = ((size_t)bytes + 63) & ~(size_t)63;
  return aligned_alloc(64, sz);
}

KCPU_PREBUILT void kcpu_free(void *ptr) {
  free(ptr);
}

KCPU_PREBUILT int64_t kcpu_k_prof_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

KCPU_PREBUILT void kcpu_k_prof_record(void *events, int64_t index, int64_t t0) {
  int64_t now = kcpu_k_prof_now();
  char *ev = (char *)events + index * 24;
  uint64_t start = (uint64_t)t0, dur = (uint64_t)(now - t0);
  memcpy(ev + 8, &start, sizeof start);
  memcpy(ev + 16, &dur, sizeof dur);
}

__attribute__((noinline, cold)) void kcpu_fault_index(kcpu_fault *f, int64_t site, int64_t value,
                                                      int64_t bound, int64_t at) {
  int32_t expected = 0;
  if (!f || !__atomic_compare_exchange_n(&f->claimed, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
    return;
  f->code = KCPU_FAULT_INDEX;
  f->site = site;
  f->value = value;
  f->bound = bound;
  f->at = at;
}
