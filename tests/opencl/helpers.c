/* tests/opencl/helpers.c: graph building and the opencl-vs-interpreter
 * comparison used by every test of the suite. */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK(expr)                                                                                   \
  do {                                                                                             \
    kiln_status s_ = (expr);                                                                       \
    ck_assert_msg(!s_, "%s: %s", #expr, kiln_status_message(s_));                                  \
  } while (0)

static kiln_context *g_ctx;

kiln_context *tg_ctx(void) {
  if (!g_ctx)
    OK(kiln_context_create(&g_ctx));
  return g_ctx;
}

uint32_t tg_opencl_devices(void) {
  for (uint32_t i = 0; i < kiln_context_backend_count(tg_ctx()); i++) {
    kiln_backend_info info;
    kiln_status_free(kiln_context_backend(tg_ctx(), i, &info));
    if (!strcmp(info.name, "opencl"))
      return info.device_count;
  }
  return 0;
}

void tg_init(tg *t) {
  OK(kiln_module_create(NULL, "t", &t->m));
  OK(kiln_module_add_function(t->m, "main", &t->f));
}

void tg_free(tg *t) {
  kiln_module_destroy(t->m);
}

kiln_value *tg_input(tg *t, const char *name, kiln_elem e, uint32_t rank, const int64_t *dims) {
  kiln_type ty;
  kiln_value *v;
  OK(kiln_type_make(e, rank, dims, &ty));
  OK(kiln_module_add_input(t->m, name, &ty, &v));
  return v;
}

kiln_value *tg_const(tg *t, kiln_elem e, uint32_t rank, const int64_t *dims, const void *data) {
  kiln_type ty;
  kiln_value *v;
  OK(kiln_type_make(e, rank, dims, &ty));
  OK(kiln_module_add_constant(t->m, NULL, &ty, data, &v));
  return v;
}

kiln_value *tg_node(tg *t, kiln_node_kind k, kiln_value *const *ins, uint32_t n,
                    const kiln_attr_desc *attrs, uint32_t na) {
  kiln_node *nd;
  OK(kiln_function_add_node(t->f, k, NULL, ins, n, attrs, na, 0, &nd));
  return kiln_node_result(nd, 0);
}

void tg_output(tg *t, const char *name, kiln_value *v) {
  OK(kiln_function_add_output(t->f, name, v));
}

static void fill(const kiln_type *ty, void *data, uint32_t seed) {
  int64_t n = kiln_type_numel(ty);
  uint32_t x = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    double r = (double)(x >> 8) / (double)(1u << 24); /* [0, 1) */
    switch (ty->elem) {
    case KILN_F32:
      ((float *)data)[i] = (float)(r * 4 - 2);
      break;
    case KILN_F64:
      ((double *)data)[i] = r * 4 - 2;
      break;
    case KILN_I32:
      ((int32_t *)data)[i] = (int32_t)(r * 11) - 5;
      break;
    case KILN_I64:
      ((int64_t *)data)[i] = (int64_t)(r * 11) - 5;
      break;
    case KILN_U8:
      ((uint8_t *)data)[i] = (uint8_t)(r * 200);
      break;
    case KILN_BOOL:
      ((uint8_t *)data)[i] = r < 0.5;
      break;
    case KILN_F16:
      ((uint16_t *)data)[i] = kiln_f32_to_f16((float)(r * 4 - 2));
      break;
    case KILN_BF16:
      ((uint16_t *)data)[i] = kiln_f32_to_bf16((float)(r * 4 - 2));
      break;
    default:
      memset((char *)data + i * (int64_t)kiln_elem_size(ty->elem), 1, kiln_elem_size(ty->elem));
    }
  }
}

static void **run_on(const char *backend, tg *t, const void *const *inputs, kiln_executable **exe) {
  OK(kiln_compile(tg_ctx(), t->m, NULL, backend, NULL, exe));
  uint32_t no = kiln_executable_output_count(*exe);
  void **outs = calloc(no + 1, sizeof *outs);
  for (uint32_t i = 0; i < no; i++) {
    kiln_io_info info;
    kiln_executable_output(*exe, i, &info);
    outs[i] = calloc(1, (size_t)kiln_type_bytes(&info.type) + 1);
  }
  OK(kiln_run(*exe, inputs, outs));
  return outs;
}

static bool close_enough(double a, double b, double tol) {
  if (isnan(a) || isnan(b))
    return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b))
    return a == b;
  return fabs(a - b) <= tol * (1 + fabs(b));
}

void tg_check(tg *t, const void *const *inputs, double tol, const float *expect, size_t n_expect) {
  uint32_t ni = kiln_module_input_count(t->m);
  void *own[16] = {0};
  const void *ins[16];
  ck_assert_uint_le(ni, 16);
  for (uint32_t i = 0; i < ni; i++) {
    if (inputs) {
      ins[i] = inputs[i];
      continue;
    }
    const kiln_type *ty = kiln_value_type(kiln_module_input(t->m, i));
    own[i] = calloc(1, (size_t)kiln_type_bytes(ty) + 1);
    fill(ty, own[i], i + 1);
    ins[i] = own[i];
  }
  kiln_executable *eo, *ei;
  void **oo = run_on("opencl", t, ins, &eo);
  void **oi = run_on("interpreter", t, ins, &ei);
  uint32_t no = kiln_executable_output_count(eo);
  for (uint32_t k = 0; k < no; k++) {
    kiln_io_info info;
    kiln_executable_output(eo, k, &info);
    int64_t n = kiln_type_numel(&info.type);
    for (int64_t i = 0; i < n; i++) {
      if (info.type.elem == KILN_F32) {
        double a = ((float *)oo[k])[i], b = ((float *)oi[k])[i];
        ck_assert_msg(close_enough(a, b, tol), "output %s[%lld]: opencl %.9g, interpreter %.9g",
                      info.name, (long long)i, a, b);
      } else if (info.type.elem == KILN_F64) {
        double a = ((double *)oo[k])[i], b = ((double *)oi[k])[i];
        ck_assert_msg(close_enough(a, b, tol), "output %s[%lld]: opencl %.17g, interpreter %.17g",
                      info.name, (long long)i, a, b);
      } else {
        size_t es = kiln_elem_size(info.type.elem);
        ck_assert_msg(!memcmp((char *)oo[k] + i * (int64_t)es, (char *)oi[k] + i * (int64_t)es, es),
                      "output %s[%lld] differs", info.name, (long long)i);
      }
    }
    if (k == 0 && expect) {
      ck_assert_int_eq(n, (int64_t)n_expect);
      for (size_t i = 0; i < n_expect; i++)
        ck_assert_msg(close_enough(((float *)oo[0])[i], expect[i], tol),
                      "output[%zu]: opencl %.9g, expected %.9g", i, ((float *)oo[0])[i], expect[i]);
    }
    free(oo[k]);
    free(oi[k]);
  }
  free(oo);
  free(oi);
  kiln_executable_destroy(eo);
  kiln_executable_destroy(ei);
  for (uint32_t i = 0; i < ni; i++)
    free(own[i]);
}
