/* plugins/cpu/codegen.c: the code generator. Adds to a module (which
 * already holds the kernel library) one entry function that runs the
 * instruction list: memory instructions inline (copy -> memmove; alloc,
 * dealloc and view need no code because the memory plan fixed every
 * address), compute instructions through the per-kind emitters of emit.h.
 * Weights are read through a table of pointers (the JIT: the module's
 * shared constant data and the weights packed here, never embedded in the
 * code) or at offsets in one region (bundles).
 * After an instruction whose kernel checks index values, one load and
 * branch: a recorded fault returns at once (1), so later instructions never
 * run on what the faulting one left unwritten. Also the emit.h accessors
 * those emitters use. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* A generated helper function and the key of what it was made from. */
typedef struct kcpu_helper {
  LLVMValueRef fn;
  void *key;
  size_t len;
  uint64_t hash;
} kcpu_helper;

struct kcpu_emit {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  LLVMValueRef weights, arena, pool, fault;
  bool fault_used; /* the current instruction asked for the fault record */
  LLVMValueRef *inputs, *outputs; /* loaded once in the entry block */
  uint32_t *weight_slots;         /* per buffer id (table), UINT32_MAX: none yet */
  uint64_t *weight_offsets;       /* per buffer id (region) */
  const kiln_ir *ir;
  const kcpu_codegen_opts *o;
  uint32_t next_id;
  bool oom; /* the weights table could not grow */
  uint32_t *refs;   /* per buffer id: operand slots naming it, over all instructions */
  uint32_t *packed; /* per buffer id: of those, ones given a packed form instead */
  kcpu_helper *helpers; /* generated helper functions, for kcpu_helper_find */
  uint32_t n_helpers, cap_helpers;
};

typedef kiln_status (*kcpu_emit_fn)(kcpu_emit *e, const kiln_instr *in);

/* Emitters by node kind; NULL where no file defines one (weak). */
static kcpu_emit_fn kcpu_emitter(kiln_node_kind k) {
  static const kcpu_emit_fn table[] = {
#define KILN_NODE(name, a, b, c, d, f) kcpu_emit_##name,
#include <kiln/node_kinds.def>
#undef KILN_NODE
  };
  return (uint32_t)k < KILN_NODE_KIND_COUNT ? table[k] : NULL;
}

bool kcpu_has_emitter(kiln_node_kind k) {
  return kcpu_emitter(k) != NULL;
}

LLVMContextRef kcpu_context(kcpu_emit *e) {
  return e->ctx;
}
LLVMModuleRef kcpu_module(kcpu_emit *e) {
  return e->mod;
}
LLVMBuilderRef kcpu_builder(kcpu_emit *e) {
  return e->b;
}
LLVMValueRef kcpu_function(kcpu_emit *e) {
  return e->fn;
}
LLVMValueRef kcpu_pool(kcpu_emit *e) {
  return e->pool;
}
LLVMValueRef kcpu_fault_ptr(kcpu_emit *e) {
  e->fault_used = true;
  return e->fault;
}
uint32_t kcpu_threads(kcpu_emit *e) {
  return e->o->threads ? e->o->threads : 1;
}
uint32_t kcpu_vector_lanes(kcpu_emit *e) {
  return e->o->lanes ? e->o->lanes : 4;
}
bool kcpu_target_vnni(kcpu_emit *e) {
  return e->o->vnni;
}
uint32_t kcpu_next_id(kcpu_emit *e) {
  return e->next_id++;
}

LLVMValueRef kcpu_i32(kcpu_emit *e, int32_t v) {
  return LLVMConstInt(LLVMInt32TypeInContext(e->ctx), (unsigned long long)(int64_t)v, 1);
}
LLVMValueRef kcpu_i64(kcpu_emit *e, int64_t v) {
  return LLVMConstInt(LLVMInt64TypeInContext(e->ctx), (unsigned long long)v, 1);
}
LLVMValueRef kcpu_f32(kcpu_emit *e, float v) {
  return LLVMConstReal(LLVMFloatTypeInContext(e->ctx), v);
}
LLVMValueRef kcpu_f64(kcpu_emit *e, double v) {
  return LLVMConstReal(LLVMDoubleTypeInContext(e->ctx), v);
}

static LLVMValueRef kcpu_const_global(kcpu_emit *e, LLVMTypeRef elt, LLVMValueRef *vals,
                                      uint32_t n) {
  LLVMValueRef init = LLVMConstArray2(elt, vals, n);
  LLVMValueRef g = LLVMAddGlobal(e->mod, LLVMTypeOf(init), "kcpu.const");
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, 64);
  return g;
}

LLVMValueRef kcpu_i64_array(kcpu_emit *e, const int64_t *v, uint32_t n) {
  LLVMValueRef *vals = calloc(n ? n : 1, sizeof *vals);
  if (!vals)
    return LLVMConstNull(LLVMPointerTypeInContext(e->ctx, 0));
  for (uint32_t i = 0; i < n; i++)
    vals[i] = kcpu_i64(e, v[i]);
  LLVMValueRef g = kcpu_const_global(e, LLVMInt64TypeInContext(e->ctx), vals, n);
  free(vals);
  return g;
}

LLVMValueRef kcpu_f32_array(kcpu_emit *e, const float *v, uint32_t n) {
  LLVMValueRef *vals = calloc(n ? n : 1, sizeof *vals);
  if (!vals)
    return LLVMConstNull(LLVMPointerTypeInContext(e->ctx, 0));
  for (uint32_t i = 0; i < n; i++)
    vals[i] = kcpu_f32(e, v[i]);
  LLVMValueRef g = kcpu_const_global(e, LLVMFloatTypeInContext(e->ctx), vals, n);
  free(vals);
  return g;
}

static bool kcpu_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap)
    return true;
  uint32_t nc = *cap ? *cap * 2 : 64;
  while (nc < need)
    nc *= 2;
  void *p = realloc(*arr, (size_t)nc * elem);
  if (!p)
    return false;
  *arr = p;
  *cap = nc;
  return true;
}

static uint64_t kcpu_key_hash(const void *key, size_t n) {
  const unsigned char *p = key;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

LLVMValueRef kcpu_helper_find(kcpu_emit *e, const void *key, size_t n) {
  uint64_t h = kcpu_key_hash(key, n);
  for (uint32_t i = 0; i < e->n_helpers; i++)
    if (e->helpers[i].hash == h && e->helpers[i].len == n && !memcmp(e->helpers[i].key, key, n))
      return e->helpers[i].fn;
  return NULL;
}

void kcpu_helper_add(kcpu_emit *e, const void *key, size_t n, LLVMValueRef fn) {
  void *k = malloc(n ? n : 1);
  if (!k || !kcpu_grow((void **)&e->helpers, &e->cap_helpers, e->n_helpers + 1,
                       sizeof *e->helpers)) {
    free(k); /* without memory the helper is just not shared */
    return;
  }
  memcpy(k, key, n);
  e->helpers[e->n_helpers++] = (kcpu_helper){fn, k, n, kcpu_key_hash(key, n)};
}

static LLVMValueRef kcpu_byte_gep(kcpu_emit *e, LLVMValueRef base, uint64_t offset) {
  if (offset == 0)
    return base;
  LLVMValueRef idx = kcpu_i64(e, (int64_t)offset);
  return LLVMBuildInBoundsGEP2(e->b, LLVMInt8TypeInContext(e->ctx), base, &idx, 1, "");
}

void kcpu_weight_table_free(kcpu_weight_table *t) {
  if (!t)
    return;
  for (uint32_t i = 0; i < t->n_owned; i++)
    free(t->owned[i]);
  free(t->owned);
  free(t->slots);
  free(t->read);
  memset(t, 0, sizeof *t);
}


/* Slot index of `p` in the table, appended; UINT32_MAX when out of memory. */
static uint32_t kcpu_table_add(kcpu_weight_table *t, const void *p) {
  if (!kcpu_grow((void **)&t->slots, &t->cap, t->n + 1, sizeof *t->slots))
    return UINT32_MAX;
  t->slots[t->n] = p;
  return t->n++;
}

/* The pointer in slot `slot` of the weights table, loaded where it is used
 * (one load per use keeps the entry block short; the table never changes
 * while the code runs). */
static LLVMValueRef kcpu_table_load(kcpu_emit *e, uint32_t slot) {
  LLVMTypeRef ptr = LLVMPointerTypeInContext(e->ctx, 0);
  LLVMValueRef idx = kcpu_i64(e, slot);
  LLVMValueRef at = LLVMBuildInBoundsGEP2(e->b, ptr, e->weights, &idx, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(e->b, ptr, at, "w");
  LLVMSetAlignment(v, 8);
  return v;
}

struct kcpu_pack_jobs *kcpu_pack_queue(kcpu_emit *e) {
  return e->o->weights == KCPU_WEIGHTS_TABLE ? e->o->pack : NULL;
}

void kcpu_weight_packed(kcpu_emit *e, const kiln_buffer *w) {
  /* Deferred packing releases after its jobs (kcpu_pack_plan). */
  if (e->o->weights != KCPU_WEIGHTS_TABLE || e->o->pack || !w ||
      kiln_buffer_get_kind(w) != KILN_BUFFER_WEIGHT)
    return;
  uint32_t id = kiln_buffer_id(w);
  /* Every reader has its packed form and none read the original: release
   * it now, not after the whole model, so that the originals and the
   * packed copies are never all alive at once. */
  if (++e->packed[id] == e->refs[id] && !e->o->table->read[id])
    kiln_buffer_release_data(w);
}

LLVMValueRef kcpu_packed_weight(kcpu_emit *e, void *data) {
  kcpu_weight_table *t = e->o->table;
  if (e->o->weights != KCPU_WEIGHTS_TABLE || !t || !data ||
      !kcpu_grow((void **)&t->owned, &t->cap_owned, t->n_owned + 1, sizeof *t->owned)) {
    free(data);
    return NULL;
  }
  uint32_t slot = kcpu_table_add(t, data);
  if (slot == UINT32_MAX) {
    free(data);
    return NULL;
  }
  t->owned[t->n_owned++] = data;
  return kcpu_table_load(e, slot);
}

static LLVMValueRef kcpu_weight_addr(kcpu_emit *e, const kiln_buffer *b, uint64_t offset) {
  uint32_t id = kiln_buffer_id(b);
  if (e->o->weights == KCPU_WEIGHTS_REGION)
    return kcpu_byte_gep(e, e->weights, e->weight_offsets[id] + offset);
  kcpu_weight_table *t = e->o->table;
  if (e->weight_slots[id] == UINT32_MAX) {
    e->weight_slots[id] = kcpu_table_add(t, kiln_buffer_data(b));
    if (e->weight_slots[id] == UINT32_MAX) {
      e->oom = true;
      return LLVMConstNull(LLVMPointerTypeInContext(e->ctx, 0));
    }
  }
  t->read[id] = true;
  return kcpu_byte_gep(e, kcpu_table_load(e, e->weight_slots[id]), offset);
}

LLVMValueRef kcpu_addr(kcpu_emit *e, const kiln_buffer *b) {
  LLVMTypeRef ptr = LLVMPointerTypeInContext(e->ctx, 0);
  if (!b)
    return LLVMConstNull(ptr);
  uint64_t offset = 0;
  uint32_t hops = 0, nb = kiln_ir_buffer_count(e->ir);
  while (kiln_buffer_get_kind(b) == KILN_BUFFER_VIEW && hops++ <= nb) {
    offset += kiln_buffer_offset(b);
    b = kiln_buffer_base(b);
    if (!b)
      return LLVMConstNull(ptr);
  }
  switch (kiln_buffer_get_kind(b)) {
  case KILN_BUFFER_WEIGHT:
    return kcpu_weight_addr(e, b, offset);
  case KILN_BUFFER_INPUT:
    return kcpu_byte_gep(e, e->inputs[kiln_buffer_io_index(b)], offset);
  case KILN_BUFFER_OUTPUT:
    return kcpu_byte_gep(e, e->outputs[kiln_buffer_io_index(b)], offset);
  case KILN_BUFFER_ACTIVATION:
    return kcpu_byte_gep(e, e->arena, kiln_buffer_offset(b) + offset);
  default:
    return LLVMConstNull(ptr);
  }
}

kiln_status kcpu_call(kcpu_emit *e, const char *fn, LLVMValueRef *args, unsigned n,
                      LLVMValueRef *out) {
  /* a declaration where the native library defines it
   * (kcpu_load_declared_library) */
  LLVMValueRef f = LLVMGetNamedFunction(e->mod, fn);
  if (!f)
    return kiln_status_make(KILN_INTERNAL, "cpu: kernel '%s' is not in the kernel library", fn);
  LLVMTypeRef ft = LLVMGlobalGetValueType(f);
  if (LLVMCountParamTypes(ft) != n && !LLVMIsFunctionVarArg(ft))
    return kiln_status_make(KILN_INTERNAL,
                            "cpu: kernel '%s' takes %u arguments, the emitter passed %u", fn,
                            LLVMCountParamTypes(ft), n);
  LLVMValueRef v = LLVMBuildCall2(e->b, ft, f, args, n, "");
  if (out)
    *out = v;
  return NULL;
}

uint64_t kcpu_weight_layout(const kiln_ir *ir, uint64_t *offsets) {
  uint64_t at = 0;
  for (uint32_t i = 0; i < kiln_ir_buffer_count(ir); i++) {
    const kiln_buffer *b = kiln_ir_buffer(ir, i);
    offsets[i] = 0;
    if (kiln_buffer_get_kind(b) != KILN_BUFFER_WEIGHT)
      continue;
    offsets[i] = at;
    at += ((uint64_t)kiln_type_bytes(kiln_buffer_type(b)) + 63) & ~(uint64_t)63;
  }
  return at;
}

static kiln_status kcpu_emit_instr(kcpu_emit *e, const kiln_instr *in) {
  kiln_instr_kind k = kiln_instr_get_kind(in);
  switch (k) {
  case KILN_INSTR_Alloc:
  case KILN_INSTR_Dealloc:
  case KILN_INSTR_View:
    return NULL;
  case KILN_INSTR_Copy: {
    const kiln_buffer *dst = kiln_instr_operand(in, 0), *src = kiln_instr_operand(in, 1);
    if (kiln_instr_operand_count(in) < 2 || !dst || !src)
      return kiln_status_make(KILN_VERIFY_ERROR, "cpu: copy (instruction %u) needs 2 operands",
                              kiln_instr_index(in));
    int64_t bytes = kiln_type_bytes(kiln_buffer_type(dst));
    if (bytes > 0)
      LLVMBuildMemMove(e->b, kcpu_addr(e, dst), 1, kcpu_addr(e, src), 1, kcpu_i64(e, bytes));
    return NULL;
  }
  default:
    break;
  }
  int node = kiln_instr_kind_node(k);
  kcpu_emit_fn fn = node >= 0 ? kcpu_emitter((kiln_node_kind)node) : NULL;
  if (!fn)
    return kiln_status_make(KILN_UNIMPLEMENTED, "cpu: no code generator for %s (instruction %u)",
                            kiln_instr_kind_name(k), kiln_instr_index(in));
  e->fault_used = false;
  KILN_TRY_CTX(fn(e, in), "cpu: instruction %u (%s)", kiln_instr_index(in),
               kiln_instr_kind_name(k));
  if (e->fault_used) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(e->ctx);
    LLVMValueRef claimed = LLVMBuildLoad2(e->b, i32, e->fault, "fault.claimed");
    LLVMValueRef hit = LLVMBuildICmp(e->b, LLVMIntNE, claimed, kcpu_i32(e, 0), "");
    LLVMBasicBlockRef stop = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "fault");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "ok");
    LLVMBuildCondBr(e->b, hit, stop, next);
    LLVMPositionBuilderAtEnd(e->b, stop);
    LLVMBuildRet(e->b, kcpu_i32(e, 1));
    LLVMPositionBuilderAtEnd(e->b, next);
  }
  return NULL;
}

/* An instruction between two clock reads (see kcpu_profile_plan). */
static kiln_status kcpu_emit_timed(kcpu_emit *e, const kiln_instr *in) {
  kcpu_profile_plan *pp = e->o->profile;
  kiln_instr_kind k = kiln_instr_get_kind(in);
  if (!pp || k == KILN_INSTR_Alloc || k == KILN_INSTR_Dealloc || k == KILN_INSTR_View)
    return kcpu_emit_instr(e, in);
  LLVMValueRef t0 = NULL;
  KILN_TRY(kcpu_call(e, "kcpu_k_prof_now", NULL, 0, &t0));
  KILN_TRY(kcpu_emit_instr(e, in));
  LLVMValueRef args[3] = {kcpu_table_load(e, pp->slot), kcpu_i64(e, pp->count), t0};
  pp->instr[pp->count++] = kiln_instr_index(in);
  return kcpu_call(e, "kcpu_k_prof_record", args, 3, NULL);
}

kiln_status kcpu_codegen(LLVMModuleRef mod, const kiln_ir *ir, const kcpu_codegen_opts *o) {
  kcpu_emit e = {.mod = mod, .ctx = LLVMGetModuleContext(mod), .ir = ir, .o = o};
  uint32_t nb = kiln_ir_buffer_count(ir), ni = kiln_ir_input_count(ir),
           no = kiln_ir_output_count(ir);
  e.inputs = calloc(ni ? ni : 1, sizeof *e.inputs);
  e.outputs = calloc(no ? no : 1, sizeof *e.outputs);
  e.weight_slots = malloc((nb ? nb : 1) * sizeof *e.weight_slots);
  e.weight_offsets = calloc(nb ? nb : 1, sizeof *e.weight_offsets);
  e.refs = calloc(nb ? nb : 1, sizeof *e.refs);
  e.packed = calloc(nb ? nb : 1, sizeof *e.packed);
  bool table = o->weights == KCPU_WEIGHTS_TABLE;
  if (table && o->table)
    o->table->read = calloc(nb ? nb : 1, sizeof *o->table->read);
  kiln_status s = NULL;
  if (table && !o->table)
    s = kiln_status_make(KILN_INTERNAL, "cpu: weights by table but no table to fill");
  else if (!e.inputs || !e.outputs || !e.weight_slots || !e.weight_offsets || !e.refs || !e.packed ||
           (table && !o->table->read))
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "cpu: no memory to generate code for %s",
                         kiln_ir_name(ir));
  if (s)
    goto done;
  for (uint32_t i = 0; i < nb; i++)
    e.weight_slots[i] = UINT32_MAX;
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++) {
    const kiln_instr *in = kiln_ir_instr(ir, i);
    for (uint32_t j = 0; j < kiln_instr_operand_count(in); j++)
      if (kiln_instr_operand(in, j))
        e.refs[kiln_buffer_id(kiln_instr_operand(in, j))]++;
  }
  LLVMTypeRef ptr = LLVMPointerTypeInContext(e.ctx, 0);
  LLVMTypeRef params[6] = {ptr, ptr, ptr, ptr, ptr, ptr};
  LLVMTypeRef ft = LLVMFunctionType(LLVMInt32TypeInContext(e.ctx), params, 6, 0);
  e.fn = LLVMAddFunction(mod, o->entry_name, ft);
  e.weights = LLVMGetParam(e.fn, 0);
  e.arena = LLVMGetParam(e.fn, 1);
  e.pool = LLVMGetParam(e.fn, 4);
  e.fault = LLVMGetParam(e.fn, 5);
  e.b = LLVMCreateBuilderInContext(e.ctx);
  LLVMPositionBuilderAtEnd(e.b, LLVMAppendBasicBlockInContext(e.ctx, e.fn, "entry"));
  for (uint32_t i = 0; i < ni; i++) {
    LLVMValueRef idx = kcpu_i64(&e, i);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(e.b, ptr, LLVMGetParam(e.fn, 2), &idx, 1, "");
    e.inputs[i] = LLVMBuildLoad2(e.b, ptr, slot, "in");
  }
  for (uint32_t i = 0; i < no; i++) {
    LLVMValueRef idx = kcpu_i64(&e, i);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(e.b, ptr, LLVMGetParam(e.fn, 3), &idx, 1, "");
    e.outputs[i] = LLVMBuildLoad2(e.b, ptr, slot, "out");
  }
  if (!table)
    kcpu_weight_layout(ir, e.weight_offsets);
  if (o->profile) {
    o->profile->count = 0;
    o->profile->slot = table ? kcpu_table_add(o->table, NULL) : UINT32_MAX;
    if (o->profile->slot == UINT32_MAX)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "cpu: no slot for the profile's events");
  }
  for (uint32_t i = 0; !s && i < kiln_ir_instr_count(ir); i++)
    s = kcpu_emit_timed(&e, kiln_ir_instr(ir, i));
  if (!s && e.oom)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "cpu: no memory for the weights table");
  if (!s)
    LLVMBuildRet(e.b, kcpu_i32(&e, 0));
  LLVMDisposeBuilder(e.b);
done:
  for (uint32_t i = 0; i < e.n_helpers; i++)
    free(e.helpers[i].key);
  free(e.helpers);
  free(e.inputs);
  free(e.outputs);
  free(e.weight_slots);
  free(e.refs);
  free(e.packed);
  free(e.weight_offsets);
  return s ? kiln_status_wrap(s, "cpu: generating code for %s", kiln_ir_name(ir)) : NULL;
}
