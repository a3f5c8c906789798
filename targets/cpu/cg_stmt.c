/* cg_stmt.c — statements, loops, local buffers and parallel outlining; the kernel
 * function of one tensor program.
 *
 * Shape of the generated code for `prim @p(...)`:
 *
 *   i32 @loom_kernel_p(ptr %buffers, ptr %symbols, ptr %ctx)    ; the ABI entry (vm/kernel_abi.h)
 *     loads buffers[k] and symbols[j], calls @p.impl
 *   internal i32 @p.impl(ptr noalias %A, ..., i64 %n, ..., ptr %ctx)
 *     the body; buffer params are `noalias` so loads and stores reorder and vectorise
 *     (after inlining the attribute becomes scoped alias metadata)
 *
 * A PARALLEL loop (not nested in another one) becomes
 *   store every live binding (buffers, symbols, lets, ctx) into an arg struct on the stack;
 *   rc = ctx->parallel_for(ctx->pool, extent, @p.par<K>, &arg); if rc != 0 return rc
 *   internal i32 @p.par<K>(ptr %arg, i64 %begin, i64 %end, i32 %worker)   ; loom_parallel_body
 *     loads the bindings, calls @p.par<K>.impl(noalias pointers..., begin, end)
 *   which runs the loop over [begin, end). Nested parallel loops run serially.
 *
 * Loops: VECTORIZE attaches llvm.loop.vectorize.enable; UNROLL of a constant extent up
 * to 64 is unrolled here (the body emitted once per iteration with the variable a
 * constant), otherwise llvm.loop.unroll.full; reduce loops are plain loops whose float
 * arithmetic may be reassociated (unless strict_fp). While a loop body is generated its
 * variable gets the fact 0 <= v < extent, so floordiv/floormod of nonnegative indices
 * become unsigned shifts and masks.
 *
 * Local buffers (alloc) are zero-filled like the interpreter's (but an `uninit` one: every
 * element it reads was written first): on the stack (hoisted to the function entry) when their
 * size is a constant up to 64 KiB, else calloc (uninit: malloc) / free around their scope (a
 * failed allocation fails the kernel). */
#include <llvm-c/DebugInfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "targets/cpu/cg_internal.h"

enum { STACK_ALLOC_MAX = 64 * 1024, UNROLL_MAX = 64 };

/* ---- loop metadata ------------------------------------------------------------ */

/* A loop property !{!"key"} or !{!"key", val}. */
static LLVMMetadataRef loop_prop(cg *g, const char *key, LLVMValueRef val) {
  LLVMMetadataRef ops[2];
  ops[0] = LLVMMDStringInContext2(g->c, key, strlen(key));
  unsigned nops = 1;
  if (val) ops[nops++] = LLVMValueAsMetadata(val);
  return LLVMMDNodeInContext2(g->c, ops, nops);
}

/* Attaches !llvm.loop !{self, props...} to the latch branch `br`. */
static void set_loop_props(cg *g, LLVMValueRef br, LLVMMetadataRef *props, size_t nprops) {
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(g->c, NULL, 0);
  LLVMMetadataRef self_ops[4] = {tmp};
  for (size_t i = 0; i < nprops && i < 3; i++) self_ops[1 + i] = props[i];
  LLVMMetadataRef loop = LLVMMDNodeInContext2(g->c, self_ops, 1 + (nprops < 3 ? nprops : 3));
  LLVMMetadataReplaceAllUsesWith(tmp, loop); /* also disposes the temporary */
  unsigned kind = LLVMGetMDKindIDInContext(g->c, "llvm.loop", 9);
  LLVMSetMetadata(br, kind, LLVMMetadataAsValue(g->c, loop));
}

static void set_loop_md(cg *g, LLVMValueRef br, const char *key, LLVMValueRef val) {
  LLVMMetadataRef prop = loop_prop(g, key, val);
  set_loop_props(g, br, &prop, 1);
}

/* !prof branch_weights on a conditional branch: `taken` to its true successor, `not` to its false one. */
static void set_branch_weights(cg *g, LLVMValueRef br, unsigned taken, unsigned not_taken) {
  LLVMMetadataRef ops[3] = {LLVMMDStringInContext2(g->c, "branch_weights", 14),
                            LLVMValueAsMetadata(LLVMConstInt(g->t_i32, taken, 0)),
                            LLVMValueAsMetadata(LLVMConstInt(g->t_i32, not_taken, 0))};
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(g->c, "prof", 4), LLVMMetadataAsValue(g->c, LLVMMDNodeInContext2(g->c, ops, 3)));
}

/* Cold code (cg.cold): neither vectorised nor unrolled nor interleaved by LLVM. */
static void set_loop_cold(cg *g, LLVMValueRef br) {
  LLVMMetadataRef props[3] = {loop_prop(g, "llvm.loop.vectorize.enable", LLVMConstInt(g->t_i1, 0, 0)),
                              loop_prop(g, "llvm.loop.unroll.disable", NULL),
                              loop_prop(g, "llvm.loop.interleave.count", LLVMConstInt(g->t_i32, 1, 0))};
  set_loop_props(g, br, props, 3);
}

/* ---- bindings ------------------------------------------------------------------ */

/* `at`: the hoist point of the binding's scope (cg_hoist_point), or NULL. */
void cg_push_sym(cg *g, const loom_sym_expr *var, LLVMValueRef v, LLVMValueRef at) {
  if (!LOOM_VEC_PUSH(NULL, &g->syms, ((cg_symval){var, v, at}))) cg_error(g, LOOM_OOM());
}
void cg_push_buf(cg *g, const loom_tp_buffer *b, LLVMValueRef p) {
  if (!LOOM_VEC_PUSH(NULL, &g->bufs, ((cg_bufval){b, p}))) cg_error(g, LOOM_OOM());
}
static void push_let(cg *g, const loom_tp_stmt *l, LLVMValueRef v) {
  if (!LOOM_VEC_PUSH(NULL, &g->lets, ((cg_letval){l, v}))) cg_error(g, LOOM_OOM());
}

/* ---- functions with the live bindings as parameters ------------------------------ */

/* Where the builder was, to come back after generating another function. */
typedef struct fn_state {
  LLVMValueRef fn, ctxp;
  LLVMBasicBlockRef block;
  size_t nsyms, nbufs, nlets, nheap;
  cg_symval *syms; /* the parent's bindings, restored at the end */
  cg_bufval *bufs;
  cg_letval *lets;
} fn_state;

/* The live bindings in parameter order: buffers, symbols, lets, then ctx. */
static size_t env_count(cg *g) { return g->bufs.len + g->syms.len + g->lets.len + 1; }

static void env_values(cg *g, LLVMValueRef *out) {
  size_t k = 0;
  for (size_t i = 0; i < g->bufs.len; i++) out[k++] = g->bufs.data[i].ptr;
  for (size_t i = 0; i < g->syms.len; i++) out[k++] = g->syms.data[i].v;
  for (size_t i = 0; i < g->lets.len; i++) out[k++] = g->lets.data[i].v;
  out[k++] = g->ctxp;
}

/* Creates `name`(env..., extra...) -> i32, internal, alwaysinline (the pipeline's
 * `always-inline` puts it into its one caller, the noalias pointers becoming scoped metadata),
 * with noalias buffer pointers, and moves the builder into its entry with every binding
 * re-bound to the parameters.
 * `extra_params` receives the values of the extra parameters. */
static LLVMValueRef begin_env_fn(cg *g, const char *name, fn_state *saved, LLVMTypeRef *extra, size_t nextra,
                                 LLVMValueRef *extra_params) {
  size_t n = env_count(g);
  LLVMValueRef *vals = malloc((n + nextra) * sizeof *vals);
  LLVMTypeRef *tys = malloc((n + nextra) * sizeof *tys);
  if (!vals || !tys) {
    free(vals);
    free(tys);
    cg_error(g, LOOM_OOM());
    return NULL;
  }
  env_values(g, vals);
  for (size_t i = 0; i < n; i++) tys[i] = LLVMTypeOf(vals[i]);
  for (size_t i = 0; i < nextra; i++) tys[n + i] = extra[i];
  LLVMTypeRef fty = LLVMFunctionType(g->t_i32, tys, (unsigned)(n + nextra), 0);
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  unsigned inl = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->c, inl, 0));
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  unsigned nocapture = LLVMGetEnumAttributeKindForName("nocapture", 9);
  for (size_t i = 0; i < g->bufs.len; i++) {
    LLVMAddAttributeAtIndex(fn, (unsigned)i + 1, LLVMCreateEnumAttribute(g->c, noalias, 0));
    LLVMAddAttributeAtIndex(fn, (unsigned)i + 1, LLVMCreateEnumAttribute(g->c, nocapture, 0));
  }
  *saved = (fn_state){g->fn, g->ctxp, LLVMGetInsertBlock(g->b), g->syms.len, g->bufs.len, g->lets.len,
                      g->heap.len, NULL, NULL, NULL};
  g->fn = fn;
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->c, fn, "entry"));
  /* Re-bind in place (the parent's values are restored by end_env_fn). */
  saved->syms = malloc((g->syms.len + 1) * sizeof *saved->syms);
  saved->bufs = malloc((g->bufs.len + 1) * sizeof *saved->bufs);
  saved->lets = malloc((g->lets.len + 1) * sizeof *saved->lets);
  if (!saved->syms || !saved->bufs || !saved->lets) cg_error(g, LOOM_OOM());
  if (saved->syms && g->syms.len) memcpy(saved->syms, g->syms.data, g->syms.len * sizeof *saved->syms);
  if (saved->bufs && g->bufs.len) memcpy(saved->bufs, g->bufs.data, g->bufs.len * sizeof *saved->bufs);
  if (saved->lets && g->lets.len) memcpy(saved->lets, g->lets.data, g->lets.len * sizeof *saved->lets);
  size_t k = 0;
  for (size_t i = 0; i < g->bufs.len; i++) g->bufs.data[i].ptr = LLVMGetParam(fn, (unsigned)k++);
  LLVMValueRef at = cg_hoist_point(g);
  for (size_t i = 0; i < g->syms.len; i++) g->syms.data[i] = (cg_symval){g->syms.data[i].var, LLVMGetParam(fn, (unsigned)k++), at};
  for (size_t i = 0; i < g->lets.len; i++) g->lets.data[i].v = LLVMGetParam(fn, (unsigned)k++);
  g->ctxp = LLVMGetParam(fn, (unsigned)k++);
  for (size_t i = 0; i < nextra; i++) extra_params[i] = LLVMGetParam(fn, (unsigned)k++);
  free(vals);
  free(tys);
  return fn;
}

static void end_env_fn(cg *g, const fn_state *saved) {
  LLVMBuildRet(g->b, LLVMConstInt(g->t_i32, 0, 0));
  g->fn = saved->fn;
  g->ctxp = saved->ctxp;
  g->syms.len = saved->nsyms;
  g->bufs.len = saved->nbufs;
  g->lets.len = saved->nlets;
  g->heap.len = saved->nheap;
  if (saved->syms && g->syms.len) memcpy(g->syms.data, saved->syms, g->syms.len * sizeof *saved->syms);
  if (saved->bufs && g->bufs.len) memcpy(g->bufs.data, saved->bufs, g->bufs.len * sizeof *saved->bufs);
  if (saved->lets && g->lets.len) memcpy(g->lets.data, saved->lets, g->lets.len * sizeof *saved->lets);
  free(saved->syms);
  free(saved->bufs);
  cg_prune_divs(g);
  free(saved->lets);
  LLVMPositionBuilderAtEnd(g->b, saved->block);
}

/* ---- loops ---------------------------------------------------------------------- */

static void with_loop_fact(cg *g, const loom_tp_stmt *s, bool push) {
  if (!push) {
    loom_sym_facts_pop(g->cx);
    return;
  }
  loom_sym_facts_push(g->cx);
  loom_sym_interval iv = loom_sym_bounds(g->cx, s->u.loop.extent);
  int64_t hi = iv.hi_inf ? INT64_MAX : iv.hi - 1;
  if (hi >= 0) {
    loom_status st = loom_sym_assume_range(g->cx, s->u.loop.var, 0, hi);
    loom_status_free(st); /* a contradiction only means the loop never runs */
  }
}

void cg_loop_body(cg *g, const loom_tp_stmt *s, LLVMValueRef iv) {
  cg_push_sym(g, s->u.loop.var, iv, cg_hoist_point(g));
  with_loop_fact(g, s, true);
  if (s->u.loop.reduce) g->reduce_depth++;
  cg_stmt(g, s->u.loop.body);
  if (s->u.loop.reduce) g->reduce_depth--;
  with_loop_fact(g, s, false);
  g->syms.len--;
  cg_prune_divs(g);
}

/* ---- integer divisions in conditional code ------------------------------------------
 *
 * LLVM 19's loop vectoriser can compute a loop-invariant division that sits under a
 * condition for the first lane only (under that lane's condition) and use it for every lane
 * (see cg_expr.c, hoisted divisions). Symbolic divisions are hoisted out of conditional code;
 * a loop whose body still divides integers by a non-constant divisor in code that runs
 * conditionally (an if, a lazily evaluated select / && / ||) is not auto-vectorised. */

static bool is_int_division(const loom_tp_expr *e) {
  loom_tp_op op = e->u.op.op;
  return (op == LOOM_TP_OP_DIV || op == LOOM_TP_OP_MOD || op == LOOM_TP_OP_FLOORDIV || op == LOOM_TP_OP_FLOORMOD) &&
         !loom_dtype_is_float(e->u.op.args[0]->dtype) && e->u.op.args[1]->kind != LOOM_TP_EXPR_CONST;
}

static bool divides_when(const loom_tp_expr *e, bool cond) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (divides_when(e->u.load.idx[d], cond)) return true;
      return false;
    case LOOM_TP_EXPR_OP: {
      loom_tp_op op = e->u.op.op;
      if (cond && is_int_division(e)) return true;
      bool lazy = op == LOOM_TP_OP_AND || op == LOOM_TP_OP_OR; /* the second operand may not run */
      for (int i = 0; i < loom_tp_op_arity(op); i++)
        if (divides_when(e->u.op.args[i], cond || (lazy && i > 0))) return true;
      return false;
    }
    case LOOM_TP_EXPR_CAST: return divides_when(e->u.cast_arg, cond);
    case LOOM_TP_EXPR_SELECT:
      return divides_when(e->u.select.cond, cond) || divides_when(e->u.select.then_e, true) ||
             divides_when(e->u.select.else_e, true);
    default: return false;
  }
}

static bool stmt_divides_when(const loom_tp_stmt *s, bool cond) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (stmt_divides_when(s->u.seq.items[i], cond)) return true;
      return false;
    case LOOM_TP_STMT_FOR: return stmt_divides_when(s->u.loop.body, cond);
    case LOOM_TP_STMT_STORE:
      for (int d = 0; d < s->u.store.buf->ndim; d++)
        if (divides_when(s->u.store.idx[d], cond)) return true;
      return divides_when(s->u.store.value, cond);
    case LOOM_TP_STMT_LET: return divides_when(s->u.let.value, cond);
    case LOOM_TP_STMT_IF:
      return divides_when(s->u.if_.cond, cond) || stmt_divides_when(s->u.if_.then_s, true) ||
             (s->u.if_.else_s && stmt_divides_when(s->u.if_.else_s, true));
    default: return false;
  }
}

/* ---- short loops --------------------------------------------------------------------- */

/* The most iterations a loop may have for its vectorisation to be folded into masked vectors. */
enum { SHORT_LOOP_MAX = 32 };

/* The constant c of a symbol operand, or -1. */
static int64_t sym_const(const loom_tp_expr *e) {
  int64_t c;
  return e->kind == LOOM_TP_EXPR_SYM && loom_sym_is_const(e->u.sym, &c) ? c : -1;
}

/* Records the extents that `cond` (when it holds `truth`) keeps below SHORT_LOOP_MAX: `e < c`,
 * `e <= c` and the conjuncts of `&&` when true, `e >= c` and `e > c` when false (the else branch of
 * a row's `if w >= 8`: the whole row at once, shorter than a chunk). A vector loop over such an
 * extent had its iterations in LLVM's scalar remainder (a row of 7 against vectors of 8 or 16),
 * x * sigmoid(x) element by element; folded into masked vectors it runs as one or two. */
static void short_guards(cg *g, const loom_tp_expr *cond, bool truth) {
  if (cond->kind != LOOM_TP_EXPR_OP) return;
  loom_tp_op op = cond->u.op.op;
  if (op == LOOM_TP_OP_AND && truth) {
    short_guards(g, cond->u.op.args[0], true);
    short_guards(g, cond->u.op.args[1], true);
    return;
  }
  const loom_tp_expr *x = cond->u.op.args[0];
  if (loom_tp_op_arity(op) != 2 || x->kind != LOOM_TP_EXPR_SYM || g->nshort == (int)(sizeof g->short_ext / sizeof *g->short_ext))
    return;
  int64_t c = sym_const(cond->u.op.args[1]), bound = -1; /* x < bound */
  if (truth && op == LOOM_TP_OP_LT) bound = c;
  else if (truth && op == LOOM_TP_OP_LE) bound = c + 1;
  else if (!truth && op == LOOM_TP_OP_GE) bound = c;
  else if (!truth && op == LOOM_TP_OP_GT) bound = c + 1;
  if (c >= 0 && bound > 0 && bound <= SHORT_LOOP_MAX) g->short_ext[g->nshort++] = x->u.sym;
}

static bool is_short(const cg *g, const loom_sym_expr *extent) {
  for (int i = 0; i < g->nshort; i++)
    if (g->short_ext[i] == extent) return true;
  return false;
}

/* for v in [begin, end) step `step` { body } as a plain counted loop with `kind`'s metadata. */
void cg_range_loop(cg *g, const loom_tp_stmt *s, LLVMValueRef begin, LLVMValueRef end, int64_t step) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->c, g->fn, "loop.head");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->c, g->fn, "loop.body");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(g->c, g->fn, "loop.exit");
  LLVMBuildBr(g->b, head);
  LLVMPositionBuilderAtEnd(g->b, head);
  LLVMValueRef iv = LLVMBuildPhi(g->b, g->t_i64, loom_sym_var_name(s->u.loop.var));
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, iv, end, ""), body, exit);
  LLVMPositionBuilderAtEnd(g->b, body);
  cg_loop_body(g, s, iv);
  LLVMValueRef next = LLVMBuildNUWAdd(g->b, iv, cg_i64(g, step), "");
  LLVMSetNSW(next, 1);
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMValueRef br = LLVMBuildBr(g->b, head);
  LLVMValueRef vals[2] = {begin, next};
  LLVMBasicBlockRef bbs[2] = {pre, latch};
  LLVMAddIncoming(iv, vals, bbs, 2);
  if (g->cold)
    set_loop_cold(g, br);
  else if (s->u.loop.kind == LOOM_TP_LOOP_UNROLL)
    set_loop_md(g, br, "llvm.loop.unroll.full", NULL);
  else if (stmt_divides_when(s->u.loop.body, false))
    set_loop_md(g, br, "llvm.loop.vectorize.enable", LLVMConstInt(g->t_i1, 0, 0));
  else if (s->u.loop.kind == LOOM_TP_LOOP_VECTORIZE && is_short(g, s->u.loop.extent)) {
    LLVMMetadataRef props[2] = {loop_prop(g, "llvm.loop.vectorize.enable", LLVMConstInt(g->t_i1, 1, 0)),
                                loop_prop(g, "llvm.loop.vectorize.predicate.enable", LLVMConstInt(g->t_i1, 1, 0))};
    set_loop_props(g, br, props, 2);
  } else if (s->u.loop.kind == LOOM_TP_LOOP_VECTORIZE)
    set_loop_md(g, br, "llvm.loop.vectorize.enable", LLVMConstInt(g->t_i1, 1, 0));
  LLVMPositionBuilderAtEnd(g->b, exit);
}

static bool in_parallel(cg *g) { return g->nbody < 0; }

/* A PARALLEL loop: outlined body called through ctx->parallel_for. */
/* ---- the work of a parallel loop ------------------------------------------------------------
 *
 * A parallel loop whose whole work is small runs in the calling thread: handing half of a
 * microsecond's work to a worker costs the hand-over (the worker's claim, the caller waiting for
 * its chunk; on a loaded machine a worker that is not running), more than it saves. The work is
 * estimated from the program: every store counts (1 + the operations of its value: a load, an
 * operator, a cast or a select 1, a math function 8) times the extents of the loops around it,
 * times 8 outside vectorised and reduction loops (scalar code); the loop's own extent multiplies
 * the body's. When an extent inside depends on a variable bound there (a triangle's bound), the
 * work is unknown and the loop is parallel as before. Below LOOM_CPU_PARALLEL_MIN_WORK (about a
 * microsecond of vector code on the development machine: a GEMV of 128 x 384 is 196k and took 3 us)
 * the body runs as body(arg, 0, n, 0). */
#define LOOM_CPU_PARALLEL_MIN_WORK 65536.0


typedef struct work_walk {
  cg *g;
  const loom_sym_expr *inner[64]; /* loop variables bound inside the parallel loop */
  size_t ninner;
  bool unknown;                   /* an extent uses one of them, or too many loops */
} work_walk;

static bool uses_inner(work_walk *w, const loom_sym_expr *e) {
  for (size_t i = 0; i < w->ninner; i++)
    if (loom_sym_uses_var(e, w->inner[i])) return true;
  return false;
}

static double expr_ops(const loom_tp_expr *e) {
  switch (e->kind) {
  case LOOM_TP_EXPR_LOAD: return 1;
  case LOOM_TP_EXPR_OP: {
    double n = loom_tp_op_class_of(e->u.op.op) == LOOM_TP_CLASS_MATH ? 8 : 1;
    for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) n += expr_ops(e->u.op.args[i]);
    return n;
  }
  case LOOM_TP_EXPR_CAST: return 1 + expr_ops(e->u.cast_arg);
  case LOOM_TP_EXPR_SELECT:
    return 1 + expr_ops(e->u.select.cond) + expr_ops(e->u.select.then_e) + expr_ops(e->u.select.else_e);
  default: return 0;
  }
}

/* The work of one execution of s (an f64 value), `vec` inside a vectorised or reduction loop. */
static LLVMValueRef stmt_work(work_walk *w, const loom_tp_stmt *s, bool vec) {
  cg *g = w->g;
  LLVMValueRef zero = LLVMConstReal(g->t_f64, 0.0);
  switch (s->kind) {
  case LOOM_TP_STMT_SEQ: {
    LLVMValueRef sum = zero;
    for (size_t i = 0; i < s->u.seq.n && !w->unknown; i++) sum = LLVMBuildFAdd(g->b, sum, stmt_work(w, s->u.seq.items[i], vec), "");
    return sum;
  }
  case LOOM_TP_STMT_FOR: {
    if (uses_inner(w, s->u.loop.extent) || w->ninner == sizeof w->inner / sizeof *w->inner) {
      w->unknown = true;
      return zero;
    }
    LLVMValueRef n = LLVMBuildSIToFP(g->b, cg_sym(g, s->u.loop.extent), g->t_f64, "");
    w->inner[w->ninner++] = s->u.loop.var;
    bool v = vec || s->u.loop.kind == LOOM_TP_LOOP_VECTORIZE || s->u.loop.reduce;
    LLVMValueRef body = stmt_work(w, s->u.loop.body, v);
    w->ninner--;
    return LLVMBuildFMul(g->b, n, body, "");
  }
  case LOOM_TP_STMT_STORE:
    return LLVMConstReal(g->t_f64, (1 + expr_ops(s->u.store.value)) * (vec ? 1 : 8));
  case LOOM_TP_STMT_LET:
    return LLVMConstReal(g->t_f64, expr_ops(s->u.let.value) * (vec ? 1 : 8));
  case LOOM_TP_STMT_IF: {
    LLVMValueRef t = stmt_work(w, s->u.if_.then_s, vec);
    return s->u.if_.else_s ? LLVMBuildFAdd(g->b, t, stmt_work(w, s->u.if_.else_s, vec), "") : t;
  }
  default: return zero;
  }
}

static void emit_parallel(cg *g, const loom_tp_stmt *s, LLVMValueRef extent) {
  char name[256];
  int id = g->nbody++;
  /* 1. The inner function: the loop over [begin, end), with noalias pointers. */
  snprintf(name, sizeof name, "%s.par%d.impl", g->sym_base, id);
  fn_state outer;
  LLVMTypeRef rng[2] = {g->t_i64, g->t_i64};
  LLVMValueRef be[2];
  size_t nenv = env_count(g);
  LLVMValueRef *env = malloc(nenv * sizeof *env);
  if (!env) {
    cg_error(g, LOOM_OOM());
    return;
  }
  env_values(g, env);
  LLVMValueRef impl = begin_env_fn(g, name, &outer, rng, 2, be);
  if (!impl) {
    free(env);
    return;
  }
  int saved_nbody = g->nbody;
  g->nbody = -1; /* nested parallel loops run serially */
  cg_range_loop(g, s, be[0], be[1], 1);
  g->nbody = saved_nbody;
  end_env_fn(g, &outer);

  /* 2. The body: unpacks the arg struct and calls the inner function. */
  LLVMTypeRef *tys = malloc(nenv * sizeof *tys);
  LLVMValueRef *args = malloc((nenv + 2) * sizeof *args);
  if (!tys || !args) {
    free(env);
    free(tys);
    free(args);
    cg_error(g, LOOM_OOM());
    return;
  }
  for (size_t i = 0; i < nenv; i++) tys[i] = LLVMTypeOf(env[i]);
  LLVMTypeRef st = LLVMStructTypeInContext(g->c, tys, (unsigned)nenv, 0);
  snprintf(name, sizeof name, "%s.par%d", g->sym_base, id);
  LLVMValueRef body = LLVMAddFunction(g->mod, name, g->t_body);
  LLVMSetLinkage(body, LLVMInternalLinkage);
  LLVMBasicBlockRef here = LLVMGetInsertBlock(g->b);
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->c, body, "entry"));
  LLVMValueRef argp = LLVMGetParam(body, 0);
  for (size_t i = 0; i < nenv; i++)
    args[i] = LLVMBuildLoad2(g->b, tys[i], LLVMBuildStructGEP2(g->b, st, argp, (unsigned)i, ""), "");
  args[nenv] = LLVMGetParam(body, 1);
  args[nenv + 1] = LLVMGetParam(body, 2);
  LLVMValueRef rc = LLVMBuildCall2(g->b, LLVMGlobalGetValueType(impl), impl, args, (unsigned)nenv + 2, "");
  LLVMBuildRet(g->b, rc);

  /* 3. The call site: fill the struct, call parallel_for, propagate failure. */
  LLVMPositionBuilderAtEnd(g->b, here);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(g->fn);
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(g->c);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first) LLVMPositionBuilderBefore(eb, first);
  else LLVMPositionBuilderAtEnd(eb, entry);
  LLVMValueRef slot = LLVMBuildAlloca(eb, st, "par.arg");
  LLVMDisposeBuilder(eb);
  for (size_t i = 0; i < nenv; i++) LLVMBuildStore(g->b, env[i], LLVMBuildStructGEP2(g->b, st, slot, (unsigned)i, ""));
  /* small work: the body in this thread (above) */
  work_walk w = {.g = g, .inner = {s->u.loop.var}, .ninner = 1};
  LLVMValueRef work = stmt_work(&w, s->u.loop.body, false);
  LLVMBasicBlockRef serial = NULL, split = NULL, join = NULL;
  LLVMValueRef rs = NULL;
  if (!w.unknown) {
    work = LLVMBuildFMul(g->b, LLVMBuildSIToFP(g->b, extent, g->t_f64, ""), work, "");
    LLVMValueRef small = LLVMBuildFCmp(g->b, LLVMRealOLT, work, LLVMConstReal(g->t_f64, LOOM_CPU_PARALLEL_MIN_WORK), "");
    serial = LLVMAppendBasicBlockInContext(g->c, g->fn, "par.serial");
    split = LLVMAppendBasicBlockInContext(g->c, g->fn, "par.split");
    join = LLVMAppendBasicBlockInContext(g->c, g->fn, "par.join");
    LLVMBuildCondBr(g->b, small, serial, split);
    LLVMPositionBuilderAtEnd(g->b, serial);
    LLVMValueRef bargs[4] = {slot, cg_i64(g, 0), extent, LLVMConstInt(g->t_i32, 0, 0)};
    rs = LLVMBuildCall2(g->b, g->t_body, body, bargs, 4, "");
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, split);
  }
  LLVMValueRef pf = LLVMBuildLoad2(g->b, g->t_ptr, LLVMBuildStructGEP2(g->b, g->t_ctx, g->ctxp, 4, ""), "parallel_for");
  LLVMValueRef pool = LLVMBuildLoad2(g->b, g->t_ptr, LLVMBuildStructGEP2(g->b, g->t_ctx, g->ctxp, 5, ""), "pool");
  LLVMTypeRef pft_params[4] = {g->t_ptr, g->t_i64, g->t_ptr, g->t_ptr};
  LLVMTypeRef pft = LLVMFunctionType(g->t_i32, pft_params, 4, 0);
  LLVMValueRef cargs[4] = {pool, extent, body, slot};
  LLVMValueRef r = LLVMBuildCall2(g->b, pft, pf, cargs, 4, "");
  if (join) {
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, join);
    LLVMValueRef phi = LLVMBuildPhi(g->b, g->t_i32, "");
    LLVMValueRef vals[2] = {rs, r};
    LLVMBasicBlockRef from[2] = {serial, split};
    LLVMAddIncoming(phi, vals, from, 2);
    r = phi;
  }
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->c, g->fn, "par.fail");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->c, g->fn, "par.ok");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, r, LLVMConstInt(g->t_i32, 0, 0), ""), bad, ok);
  LLVMPositionBuilderAtEnd(g->b, bad);
  LLVMBuildRet(g->b, r);
  LLVMPositionBuilderAtEnd(g->b, ok);
  free(env);
  free(tys);
  free(args);
}

static void emit_lanes(cg *g, const loom_tp_stmt *s, unsigned lanes) {
  g->lanes = lanes;
  g->lane_var = s->u.loop.var;
  cg_push_sym(g, s->u.loop.var, cg_i64(g, 0), NULL);
  with_loop_fact(g, s, true);
  if (s->u.loop.reduce) g->reduce_depth++;
  cg_stmt(g, s->u.loop.body);
  if (s->u.loop.reduce) g->reduce_depth--;
  with_loop_fact(g, s, false);
  g->syms.len--;
  g->lanes = 0;
  g->lane_var = NULL;
}

static void emit_for(cg *g, const loom_tp_stmt *s) {
  int64_t c;
  bool is_const = loom_sym_is_const(s->u.loop.extent, &c);
  if (g->gpu) { /* GPU loops bound; every other kind is a plain loop in a thread */
    if (s->u.loop.kind == LOOM_TP_LOOP_GPU_BLOCK || s->u.loop.kind == LOOM_TP_LOOP_GPU_THREAD) {
      cg_emit_gpu_loop(g, s);
      return;
    }
    if (s->u.loop.kind == LOOM_TP_LOOP_GPU_LANES) {
      cg_emit_gpu_lanes(g, s);
      return;
    }
    if (s->u.loop.kind == LOOM_TP_LOOP_UNROLL && is_const && c <= UNROLL_MAX) {
      for (int64_t i = 0; i < c; i++) cg_loop_body(g, s, cg_i64(g, i));
      return;
    }
    cg_range_loop(g, s, cg_i64(g, 0), cg_sym(g, s->u.loop.extent), 1);
    return;
  }
  if (s->u.loop.kind == LOOM_TP_LOOP_VECTORIZE && is_const && c >= 2 && c <= LOOM_CPU_MAX_LANES && !g->lanes && !g->cold) {
    /* strided loads only while s*W fits in 64 lanes */
    g->lane_max_stride = (unsigned)(c * 4 <= LOOM_CPU_MAX_LANES ? 4 : c * 3 <= LOOM_CPU_MAX_LANES ? 3
                                                                 : c * 2 <= LOOM_CPU_MAX_LANES ? 2 : 1);
    bool ok = cg_lanes_ok(g, s);
    g->lane_max_stride = 1;
    if (ok) {
      emit_lanes(g, s, (unsigned)c);
      return;
    }
  }
  if (s->u.loop.kind == LOOM_TP_LOOP_UNROLL && !g->lanes && !g->cold && cg_transpose_tile(g, s)) return;
  if (s->u.loop.kind == LOOM_TP_LOOP_UNROLL && is_const && c <= UNROLL_MAX && !g->cold) {
    for (int64_t i = 0; i < c; i++) cg_loop_body(g, s, cg_i64(g, i));
    return;
  }
  LLVMValueRef n = cg_sym(g, s->u.loop.extent);
  if (s->u.loop.kind == LOOM_TP_LOOP_PARALLEL && !in_parallel(g) && !(is_const && c <= 1)) {
    emit_parallel(g, s, n);
    return;
  }
  cg_range_loop(g, s, cg_i64(g, 0), n, 1);
}

/* ---- local buffers ------------------------------------------------------------------ */

static void emit_alloc(cg *g, loom_tp_buffer *buf) {
  size_t esize = loom_dtype_size(buf->dtype);
  int64_t total = (int64_t)esize;
  bool cst = true;
  LLVMValueRef bytes = cg_i64(g, (int64_t)esize);
  for (int d = 0; d < buf->ndim; d++) {
    int64_t v;
    if (cst && loom_sym_is_const(buf->dims[d], &v) && v >= 0 && !__builtin_mul_overflow(total, v, &total)) {
    } else {
      cst = false;
    }
    bytes = LLVMBuildMul(g->b, bytes, cg_sym(g, buf->dims[d]), "");
  }
  LLVMValueRef p;
  if (g->gpu && buf->scope == LOOM_TP_SCOPE_SHARED) {
    /* the block's shared memory (constant extents: verify.c); contents start undefined */
    LLVMTypeRef at = LLVMArrayType2(cg_mem_type(g, buf->dtype), (uint64_t)(total / (int64_t)esize));
    LLVMValueRef gv = LLVMAddGlobalInAddressSpace(g->mod, at, buf->name, 3);
    LLVMSetInitializer(gv, LLVMGetUndef(at));
    LLVMSetLinkage(gv, LLVMInternalLinkage);
    LLVMSetAlignment(gv, 16);
    p = LLVMBuildAddrSpaceCast(g->b, gv, g->t_ptr, buf->name);
  } else if (cst && total <= STACK_ALLOC_MAX) {
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(g->fn);
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(g->c);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first) LLVMPositionBuilderBefore(eb, first);
    else LLVMPositionBuilderAtEnd(eb, entry);
    LLVMTypeRef at = LLVMArrayType2(cg_mem_type(g, buf->dtype), (uint64_t)(total / (int64_t)esize));
    p = LLVMBuildAlloca(eb, at, buf->name);
    LLVMSetAlignment(p, 64);
    LLVMDisposeBuilder(eb);
    if (total > 0 && !buf->uninit) LLVMBuildMemSet(g->b, p, LLVMConstInt(g->t_i8, 0, 0), cg_i64(g, total), 64);
  } else {
    /* the heap (a GPU's device heap too): calloc, or malloc where the buffer is uninit or the
     * GPU's (zeroed here as calloc would) */
    bool zero = !buf->uninit, ccall = zero && !g->gpu;
    LLVMValueRef nz = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, bytes, cg_i64(g, 0), ""), bytes, cg_i64(g, 1), "");
    LLVMTypeRef params[2] = {g->t_i64, g->t_i64};
    LLVMTypeRef ft = LLVMFunctionType(g->t_ptr, params, ccall ? 2 : 1, 0);
    const char *fname = ccall ? "calloc" : "malloc";
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, fname);
    if (!fn) fn = LLVMAddFunction(g->mod, fname, ft);
    LLVMValueRef args[2] = {nz, cg_i64(g, 1)};
    p = LLVMBuildCall2(g->b, ft, fn, args, ccall ? 2 : 1, buf->name);
    char msg[160];
    snprintf(msg, sizeof msg, "cannot allocate local buffer '%s'", buf->name);
    cg_fail_if(g, LLVMBuildICmp(g->b, LLVMIntEQ, p, LLVMConstPointerNull(g->t_ptr), ""), msg);
    if (zero && g->gpu) LLVMBuildMemSet(g->b, p, LLVMConstInt(g->t_i8, 0, 0), bytes, 16);
    if (!LOOM_VEC_PUSH(NULL, &g->heap, p)) cg_error(g, LOOM_OOM());
  }
  cg_push_buf(g, buf, p);
}

void cg_free_heap_to(cg *g, size_t mark) {
  while (g->heap.len > mark) {
    LLVMValueRef p = LOOM_VEC_POP(&g->heap);
    LLVMTypeRef ft = LLVMFunctionType(g->t_void, &g->t_ptr, 1, 0);
    LLVMValueRef ff = LLVMGetNamedFunction(g->mod, "free");
    if (!ff) ff = LLVMAddFunction(g->mod, "free", ft);
    LLVMBuildCall2(g->b, ft, ff, &p, 1, "");
  }
}

/* ---- statements ------------------------------------------------------------------- */

void cg_stmt(cg *g, const loom_tp_stmt *s) {
  if (g->st) return;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ: {
      size_t ns = g->syms.len, nb = g->bufs.len, nl = g->lets.len, nh = g->heap.len;
      for (size_t i = 0; i < s->u.seq.n && !g->st; i++) {
        const loom_tp_stmt *c = s->u.seq.items[i];
        if (c->kind == LOOM_TP_STMT_LET) push_let(g, c, cg_expr(g, c->u.let.value));
        else if (c->kind == LOOM_TP_STMT_ALLOC) emit_alloc(g, c->u.alloc);
        else cg_stmt(g, c);
      }
      cg_free_heap_to(g, nh);
      g->syms.len = ns;
      g->bufs.len = nb;
      g->lets.len = nl;
      return;
    }
    case LOOM_TP_STMT_FOR:
      emit_for(g, s);
      return;
    case LOOM_TP_STMT_STORE: {
      LLVMValueRef v = cg_expr(g, s->u.store.value);
      LLVMValueRef p = cg_elem_ptr(g, s->u.store.buf, s->u.store.idx);
      if (g->lanes) { /* lane mode: every store is a vector store (cg_lanes_ok, cg_lanes.c) */
        LLVMValueRef st = LLVMBuildStore(g->b, cg_splat(g, v, g->lanes), p);
        LLVMSetAlignment(st, (unsigned)loom_dtype_size(s->u.store.buf->dtype));
        return;
      }
      LLVMBuildStore(g->b, cg_to_mem(g, s->u.store.buf->dtype, v), p);
      return;
    }
    case LOOM_TP_STMT_IF: {
      const loom_tp_expr *ce = s->u.if_.cond;
      bool likely = ce->kind == LOOM_TP_EXPR_OP && ce->u.op.op == LOOM_TP_OP_LIKELY;
      LLVMValueRef c = cg_expr(g, ce);
      LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(g->c, g->fn, "if.then");
      LLVMBasicBlockRef be = LLVMAppendBasicBlockInContext(g->c, g->fn, "if.else");
      LLVMBasicBlockRef bj = LLVMAppendBasicBlockInContext(g->c, g->fn, "if.join");
      LLVMValueRef br = LLVMBuildCondBr(g->b, c, bt, be);
      if (likely) set_branch_weights(g, br, 2000, 1);
      LLVMPositionBuilderAtEnd(g->b, bt);
      int mark = g->nshort;
      short_guards(g, ce, true);
      cg_stmt(g, s->u.if_.then_s);
      g->nshort = mark;
      LLVMBuildBr(g->b, bj);
      LLVMPositionBuilderAtEnd(g->b, be);
      g->cold += likely;
      short_guards(g, ce, false);
      if (s->u.if_.else_s) cg_stmt(g, s->u.if_.else_s);
      g->nshort = mark;
      g->cold -= likely;
      LLVMBuildBr(g->b, bj);
      LLVMPositionBuilderAtEnd(g->b, bj);
      return;
    }
    case LOOM_TP_STMT_LET:
    case LOOM_TP_STMT_ALLOC:
      /* Outside a sequence nothing can see them; evaluate for effects (none) and drop. */
      return;
    case LOOM_TP_STMT_BARRIER:
      /* GPU programs only (emit_gpu_loop splits a thread loop's body at its barriers); the CPU
       * schedule never makes one. */
      if (g->gpu) cg_gpu_barrier(g);
      return;
    case LOOM_TP_STMT_PREFETCH: {
      /* llvm.prefetch(ptr, read, locality 3 (keep in every cache level: prefetcht0 on x86)
       * or, prefetch_l2, 2 (prefetcht1: L2 and below), data); NVPTX kernels skip the hint
       * (the GPU schedule never makes one). */
      if (g->gpu) return;
      LLVMValueRef args[4] = {cg_elem_ptr(g, s->u.prefetch.buf, s->u.prefetch.idx), LLVMConstInt(g->t_i32, 0, 0),
                              LLVMConstInt(g->t_i32, s->u.prefetch.l2 ? 2 : 3, 0), LLVMConstInt(g->t_i32, 1, 0)};
      cg_call_intrinsic(g, "llvm.prefetch", g->t_ptr, args, 4);
      return;
    }
  }
}

/* ---- the kernel -------------------------------------------------------------------- */

/* The end of one kernel's emission: the per-function tables emptied (their values belong to the
 * finished function) and its first error returned, the generator ready for the next kernel. */
loom_status cg_end_kernel(cg *g) {
  g->syms.len = 0;
  g->bufs.len = 0;
  g->lets.len = 0;
  g->heap.len = 0;
  g->divs.len = 0;
  loom_status st = g->st;
  g->st = LOOM_OK;
  return st;
}

loom_status cg_emit_kernel(cg *g, const loom_tp_func *f, const char *sym_base) {
  g->f = f;
  g->sym_base = sym_base ? sym_base : f->name;
  g->nbody = 0;
  g->reduce_depth = 0;
  char sym[300];
  snprintf(sym, sizeof sym, "loom_kernel_%s", g->sym_base);
  if (LLVMGetNamedFunction(g->mod, sym))
    return LOOM_ERROR(ALREADY_EXISTS, "program @%s is compiled twice into one module", f->name);
  if (g->gpu) return cg_emit_gpu_kernel(g, f, sym);
  LLVMTypeRef ps[3] = {g->t_ptr, g->t_ptr, g->t_ptr};
  LLVMTypeRef kty = LLVMFunctionType(g->t_i32, ps, 3, 0);
  LLVMValueRef kfn = LLVMAddFunction(g->mod, sym, kty);
  g->fn = kfn;
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->c, kfn, "entry"));
  LLVMValueRef bufs = LLVMGetParam(kfn, 0), syms = LLVMGetParam(kfn, 1);
  g->ctxp = LLVMGetParam(kfn, 2);
  /* buffers[k] for the k-th buffer param; symbols[j] for f->syms[j] */
  unsigned k = 0;
  for (size_t i = 0; i < f->nparams; i++) {
    if (!f->params[i].is_buffer) continue;
    LLVMValueRef idx = LLVMConstInt(g->t_i64, k++, 0);
    LLVMValueRef p = LLVMBuildLoad2(g->b, g->t_ptr, LLVMBuildInBoundsGEP2(g->b, g->t_ptr, bufs, &idx, 1, ""),
                                    f->params[i].buf->name);
    cg_push_buf(g, f->params[i].buf, p);
  }
  for (size_t j = 0; j < f->nsyms; j++) {
    LLVMValueRef idx = LLVMConstInt(g->t_i64, j, 0);
    LLVMValueRef v = LLVMBuildLoad2(g->b, g->t_i64, LLVMBuildInBoundsGEP2(g->b, g->t_i64, syms, &idx, 1, ""),
                                    loom_sym_var_name(f->syms[j]));
    cg_push_sym(g, f->syms[j], v, NULL);
  }
  /* Scalar params are symbols too: their variable appears in f->syms. */
  size_t nenv = env_count(g);
  LLVMValueRef *env = malloc(nenv * sizeof *env);
  if (!env) return LOOM_OOM();
  env_values(g, env);
  snprintf(sym, sizeof sym, "%s.impl", g->sym_base);
  fn_state outer;
  LLVMValueRef impl = begin_env_fn(g, sym, &outer, NULL, 0, NULL);
  if (impl) {
    cg_stmt(g, f->body);
    end_env_fn(g, &outer);
    LLVMValueRef rc = LLVMBuildCall2(g->b, LLVMGlobalGetValueType(impl), impl, env, (unsigned)nenv, "");
    LLVMBuildRet(g->b, rc);
  }
  free(env);
  return cg_end_kernel(g);
}
