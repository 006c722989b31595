/* plugins/cpu/kernels/runtime.c: the persistent thread pool of the kernel
 * library. Each thread has a contiguous share of a job's items, cut into
 * up to KCPU_SUB chunks whose boundaries depend only on the item and
 * thread counts, so results never depend on scheduling. A chunk goes to
 * whoever claims it first: a thread runs its own share's chunks in order,
 * then claims what is left of the others', so a thread that the OS runs
 * late (another process on its core) does not hold the rest up for its
 * whole share. Workers spin briefly after a job before sleeping on a
 * condition variable: back-to-back kernels of one inference then start
 * without a futex round trip, while an idle pool costs no CPU. */
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

/* Chunks of a thread's share at most: enough to leave a late thread's
 * work to the others, few enough that a kernel's setup per call stays
 * small. A share of k chunks has its claim counter start at KCPU_SUB - k,
 * so that a claim at KCPU_SUB or past it means none is left whatever the
 * job: a worker still claiming from the previous job never needs that
 * job's sizes, which the next job may be writing. */
#define KCPU_SUB 4

/* A thread's share of the current job and its claim counter, alone on
 * their cache line: the owner claims from it at every chunk, a thief only
 * once the owner's share runs late. b, e and k are written before the
 * counter is reset, and read only after a claim from it succeeds. */
typedef struct kcpu_share {
  int64_t next;    /* the share's next claim (KCPU_SUB on: none left) */
  int64_t b, e, k; /* items [b, e), in k chunks */
  char pad[64 - 4 * sizeof(int64_t)];
} kcpu_share;

struct kcpu_pool {
  int threads;
  pthread_t *tids;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
  void (*fn)(void *, int64_t, int64_t);
  void *ctx;
  int64_t n;
  uint64_t gen;   /* job generation; workers run when it changes */
  int64_t pending; /* chunks of the current job not yet done */
  kcpu_share *share;
  int stop;
  int busy; /* a job is in flight: nested calls run inline */
};

typedef struct kcpu_worker_arg {
  struct kcpu_pool *p;
  int index;
} kcpu_worker_arg;

/* The share's chunk whose claim returned c (< KCPU_SUB): its
 * (c - (KCPU_SUB - k))-th of k near-equal parts. The boundaries depend on
 * n and the thread count only. */
static void kcpu_run_chunk(struct kcpu_pool *p, const kcpu_share *s, int64_t c) {
  int64_t b = s->b, len = s->e - s->b, k = s->k, j = c - (KCPU_SUB - k);
  p->fn(p->ctx, b + len * j / k, b + len * (j + 1) / k);
}

/* Claims and runs share t's chunks until none is left; returns how many
 * it claimed. */
static int64_t kcpu_drain(struct kcpu_pool *p, int64_t t) {
  int64_t c, claimed = 0;
  while ((c = __atomic_fetch_add(&p->share[t].next, 1, __ATOMIC_ACQ_REL)) < KCPU_SUB) {
    kcpu_run_chunk(p, &p->share[t], c);
    claimed++;
    if (c == KCPU_SUB - 1) /* the share's last: no claim to spend on finding that out */
      break;
  }
  return claimed;
}

/* Counts `done` chunks as done; a worker that ends the job wakes the
 * caller. */
static void kcpu_chunks_done(struct kcpu_pool *p, int64_t done, int worker) {
  if (done && __atomic_sub_fetch(&p->pending, done, __ATOMIC_ACQ_REL) == 0 && worker) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv_done);
    pthread_mutex_unlock(&p->mu);
  }
}

/* Thread t's share first, then what is left of the others' (from the one
 * after t on): a thread that the host runs late (another process on its
 * core) leaves its remaining chunks to the others instead of holding
 * them all up. Chunks count as done in two batches, the own share's and
 * the others': while a thread holds chunks not yet counted, the job
 * cannot end (and a later one begin) under it, so each batch's chunks are
 * of one job. */
static void kcpu_run_shares(struct kcpu_pool *p, int64_t t, int worker) {
  kcpu_chunks_done(p, kcpu_drain(p, t), worker);
  int64_t done = 0;
  for (int64_t u = 1; u < p->threads; u++)
    done += kcpu_drain(p, (t + u) % p->threads);
  kcpu_chunks_done(p, done, worker);
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
    /* The others may have run every chunk already; then there is nothing
     * to claim. If a later job has begun meanwhile, a chunk claimed here
     * is that job's, which is as right: a job is published before its
     * claim counters are reset, and the previous job's counters all stand
     * at KCPU_SUB or past it. */
    kcpu_run_shares(p, a.index, 1);
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
  p->share = kcpu_alloc(threads * (int64_t)sizeof *p->share);
  if (!p->tids || !p->share) {
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
  kcpu_free(p->share);
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
  /* thread t's share [n*t/T, n*(t+1)/T) in up to KCPU_SUB chunks; the
   * pending count goes out before any counter is reset */
  int64_t chunks = 0;
  for (int t = 0; t < p->threads; t++) {
    kcpu_share *s = &p->share[t];
    s->b = n * t / p->threads;
    s->e = n * (t + 1) / p->threads;
    s->k = s->e - s->b < KCPU_SUB ? s->e - s->b : KCPU_SUB;
    chunks += s->k;
  }
  __atomic_store_n(&p->pending, chunks, __ATOMIC_RELEASE);
  for (int t = 0; t < p->threads; t++)
    __atomic_store_n(&p->share[t].next, KCPU_SUB - p->share[t].k, __ATOMIC_RELEASE);
  pthread_mutex_lock(&p->mu);
  __atomic_add_fetch(&p->gen, 1, __ATOMIC_ACQ_REL);
  pthread_cond_broadcast(&p->cv_work);
  pthread_mutex_unlock(&p->mu);
  kcpu_run_shares(p, 0, 0);
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
