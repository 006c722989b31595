/* plugins/cpu/kernels/linalg.c: type-generic MatMul, Gemm, Det and Einsum
 * for the types the f32 GEMM engine (linalg_gemm.c) does not take. They
 * run on the calling thread; floats accumulate in double, integers wrap. */
#include "kcpu_elem.h"
#include "kiln/ops_ref.h"

/* Batched MatMul of any numeric type: for batch b, C + b*M*N =
 * (A + a_off[b]) [M,K] * (B + b_off[b]) [K,N] (NULL offsets: b*M*K,
 * b*K*N). Floats accumulate in double, integers in wrapping uint64. */
void kcpu_k_matmul_any(int64_t elem, int64_t batch, const int64_t *a_off, const int64_t *b_off,
                       int64_t M, int64_t N, int64_t K, const void *A, const void *B, void *C) {
  int fl = kcpu_e_is_float(elem);
  for (int64_t bt = 0; bt < batch; bt++) {
    int64_t ao = a_off ? a_off[bt] : bt * M * K, bo = b_off ? b_off[bt] : bt * K * N;
    int64_t co = bt * M * N;
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        if (fl) {
          double acc = 0.0;
          for (int64_t k = 0; k < K; k++)
            acc += kcpu_e_ldf(elem, A, ao + m * K + k) * kcpu_e_ldf(elem, B, bo + k * N + n);
          kcpu_e_stf(elem, C, co + m * N + n, acc);
        } else {
          uint64_t acc = 0;
          for (int64_t k = 0; k < K; k++)
            acc += (uint64_t)kcpu_e_ldi(elem, A, ao + m * K + k) *
                   (uint64_t)kcpu_e_ldi(elem, B, bo + k * N + n);
          kcpu_e_sti(elem, C, co + m * N + n, (int64_t)acc);
        }
      }
  }
}

/* Determinant of each [n, n] matrix of x (batch of them): kiln_ref_det,
 * the interpreter's Gaussian elimination with partial pivoting in double. */
int kcpu_k_det(int64_t elem, const void *x, void *y, int64_t batch, int64_t n) {
  double *a = kcpu_alloc((n * n > 0 ? n * n : 1) * (int64_t)sizeof(double));
  if (!a)
    return -1;
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t i = 0; i < n * n; i++)
      a[i] = kcpu_e_ldf(elem, x, b * n * n + i);
    kcpu_e_stf(elem, y, b, kiln_ref_det(a, n));
  }
  kcpu_free(a);
  return 0;
}

/* Y[M,N] = alpha * op(A) op(B) + beta * C, C read at m*c_rs + n*c_cs
 * (strides 0 broadcast; NULL = none). */
void kcpu_k_gemm_any(int64_t elem, int64_t M, int64_t N, int64_t K, double alpha, double beta,
                     const void *A, int64_t ta, const void *B, int64_t tb, const void *C,
                     int64_t c_rs, int64_t c_cs, void *Y) {
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; k++)
        acc += kcpu_e_ldf(elem, A, ta ? k * M + m : m * K + k) *
               kcpu_e_ldf(elem, B, tb ? n * K + k : k * N + n);
      acc *= alpha;
      if (C)
        acc += beta * kcpu_e_ldf(elem, C, m * c_rs + n * c_cs);
      kcpu_e_stf(elem, Y, m * N + n, acc);
    }
}

/* Einsum over up to 3 inputs: labels 0..n_out-1 index the output (dims
 * ldims), labels n_out..n_lab-1 are summed. st holds each input's stride
 * per label (st[j*n_lab + l], 0 where the input lacks the label or
 * broadcasts it). Floats sum in double, integers in wrapping int64. */
void kcpu_k_einsum(int64_t elem, int64_t n_in, const void *x0, const void *x1, const void *x2,
                   void *y, int64_t n_lab, int64_t n_out, const int64_t *ldims, const int64_t *st) {
  const void *xs[3] = {x0, x1, x2};
  int64_t c[32] = {0}, ny = 1, ns = 1;
  for (int64_t l = 0; l < n_out; l++)
    ny *= ldims[l];
  for (int64_t l = n_out; l < n_lab; l++)
    ns *= ldims[l];
  int fl = kcpu_e_is_float(elem);
  for (int64_t o = 0; o < ny; o++) {
    int64_t r = o;
    for (int64_t l = n_out - 1; l >= 0; l--) {
      c[l] = r % ldims[l];
      r /= ldims[l];
    }
    for (int64_t l = n_out; l < n_lab; l++)
      c[l] = 0;
    double facc = 0.0;
    uint64_t iacc = 0;
    for (int64_t s = 0; s < ns; s++) {
      double fp = 1.0;
      uint64_t ip = 1;
      for (int64_t j = 0; j < n_in; j++) {
        int64_t off = 0;
        for (int64_t l = 0; l < n_lab; l++)
          off += c[l] * st[j * n_lab + l];
        if (fl)
          fp *= kcpu_e_ldf(elem, xs[j], off);
        else
          ip *= (uint64_t)kcpu_e_ldi(elem, xs[j], off);
      }
      facc += fp;
      iacc += ip;
      for (int64_t l = n_lab - 1; l >= n_out; l--) {
        if (++c[l] < ldims[l])
          break;
        c[l] = 0;
      }
    }
    if (fl)
      kcpu_e_stf(elem, y, o, facc);
    else
      kcpu_e_sti(elem, y, o, (int64_t)iacc);
  }
}
