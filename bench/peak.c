/* bench/peak.c: the machine's f32 FMA peak, measured, so that a kernel's
 * GFLOP/s can be quoted as a fraction of what these cores do in the same
 * run (the clock differs between machines and with load).
 *
 *   peak [--threads N] [--seconds S] [--json]
 *
 * Each thread runs independent chains of fused multiply-adds on the widest
 * vectors the compiler targets (built with -march=native by bench/run):
 * 24 accumulators, more than latency x issue width on current cores (4
 * cycles x 2 pipes), so the loop is bound by FMA issue alone. The best of
 * several timed rounds is reported, per thread count from 1 to N. Build
 * with -ffp-contract=fast (ISO C modes do not contract a*b+c into an FMA). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__)
#define PEAK_LANES 16
#elif defined(__AVX__)
#define PEAK_LANES 8
#else
#define PEAK_LANES 4
#endif
typedef float vf __attribute__((vector_size(PEAK_LANES * 4)));

#define PEAK_ACC 24
#define PEAK_ITERS 4096 /* FMA rounds between clock reads */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
  double seconds, flops, elapsed;
  float sink; /* keeps the chains live */
  pthread_barrier_t *start;
} peak_job;

/* The 24 accumulators, by name. */
#define PEAK_EACH(X)                                                                            \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) \
      X(18) X(19) X(20) X(21) X(22) X(23)

/* Multipliers and addends near 1 keep the values finite for any count.
 * The accumulators are named variables, not an array, so that they stay
 * in registers; the empty asm keeps the compiler from folding rounds. */
static void *peak_thread(void *p) {
  peak_job *j = p;
  vf m, a;
  for (int i = 0; i < PEAK_LANES; i++) {
    m[i] = 0.999999f;
    a[i] = 1e-7f;
  }
#define DECL(r) vf c##r = m + (float)(r) * 1e-3f;
  PEAK_EACH(DECL)
#undef DECL
  pthread_barrier_wait(j->start);
  double t0 = now_s(), t = t0;
  long rounds = 0;
  while (t - t0 < j->seconds) {
    for (int it = 0; it < PEAK_ITERS; it++) {
#define FMA(r) c##r = c##r * m + a;
      PEAK_EACH(FMA)
#undef FMA
#define KEEP(r) __asm__ volatile("" : "+v"(c##r));
      PEAK_EACH(KEEP)
#undef KEEP
    }
    rounds++;
    t = now_s();
  }
  j->elapsed = t - t0;
  j->flops = (double)rounds * PEAK_ITERS * PEAK_ACC * PEAK_LANES * 2.0;
  vf s = {0};
#define SUM(r) s += c##r;
  PEAK_EACH(SUM)
#undef SUM
  j->sink = s[0];
  return NULL;
}

/* GFLOP/s of T threads running at once for `seconds`. */
static double peak_run(int T, double seconds) {
  pthread_t th[256];
  peak_job jobs[256];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)T);
  for (int i = 0; i < T; i++) {
    jobs[i] = (peak_job){.seconds = seconds, .start = &start};
    if (pthread_create(&th[i], NULL, peak_thread, &jobs[i]) != 0) {
      fprintf(stderr, "peak: cannot start thread %d\n", i);
      exit(1);
    }
  }
  double gflops = 0;
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    gflops += jobs[i].flops / jobs[i].elapsed * 1e-9;
  }
  pthread_barrier_destroy(&start);
  return gflops;
}

int main(int argc, char **argv) {
  int T = 1, json = 0;
  double seconds = 0.3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      T = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else {
      fprintf(stderr, "usage: peak [--threads N] [--seconds S] [--json]\n"
                      "  f32 FMA peak in GFLOP/s for 1..N threads (best of 5 rounds of S s)\n");
      return 2;
    }
  }
  if (T < 1 || T > 256 || !(seconds > 0)) {
    fprintf(stderr, "peak: --threads must be 1..256 and --seconds positive\n");
    return 2;
  }
  if (json)
    printf("{\"lanes\": %d, \"gflops\": {", PEAK_LANES);
  for (int t = 1; t <= T; t++) {
    double best = 0;
    for (int r = 0; r < 5; r++) {
      double g = peak_run(t, seconds);
      if (g > best)
        best = g;
    }
    if (json)
      printf("%s\"%d\": %.1f", t > 1 ? ", " : "", t, best);
    else
      printf("threads %d: %.1f GFLOP/s f32 FMA peak (%d lanes)\n", t, best, PEAK_LANES);
  }
  if (json)
    printf("}}\n");
  return 0;
}
