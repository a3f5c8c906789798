/* cg_gpu.c — the NVPTX forms of the code generator (loom_cpu_options.nvptx): the kernel entry
 * with buffers and symbols by value, gpu_block / gpu_thread loops bound to ctaid.x / tid.x,
 * gpu_lanes loops dealt to a warp's lanes (accumulators combined by shuffles), and barriers. Everything else (statements, expressions, other loops) is cg_stmt.c's and
 * cg_expr.c's, shared with the CPU kernels. */
#include <stdlib.h>
#include <math.h>
#include <stdio.h>

#include "targets/cpu/cg_internal.h"
#include "tensorprog/tp_lanes.h"

/* NVPTX: the ctaid.x / tid.x special register as an i64. */
static LLVMValueRef gpu_sreg(cg *g, const char *name) {
  LLVMTypeRef fty = LLVMFunctionType(g->t_i32, NULL, 0, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
  if (!fn) fn = LLVMAddFunction(g->mod, name, fty);
  return LLVMBuildZExt(g->b, LLVMBuildCall2(g->b, fty, fn, NULL, 0, ""), g->t_i64, "");
}

/* NVPTX: __syncthreads(). */
void cg_gpu_barrier(cg *g) {
  LLVMTypeRef fty = LLVMFunctionType(g->t_void, NULL, 0, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, "llvm.nvvm.barrier0");
  if (!fn) fn = LLVMAddFunction(g->mod, "llvm.nvvm.barrier0", fty);
  LLVMBuildCall2(g->b, fty, fn, NULL, 0, "");
}

/* NVPTX: a gpu_block loop is the block index (the grid has `extent` blocks), a gpu_thread loop
 * the thread index (the block has at least `extent` threads: the launch rule's bound); the
 * body runs where the index is below the extent. A thread loop ends with a barrier, and its
 * body's barriers are reached by every thread of the block: the body is split at them, each
 * part under its own `tid < extent` test. */
void cg_emit_gpu_loop(cg *g, const loom_tp_stmt *s) {
  bool block = s->u.loop.kind == LOOM_TP_LOOP_GPU_BLOCK;
  LLVMValueRef iv = gpu_sreg(g, block ? "llvm.nvvm.read.ptx.sreg.ctaid.x" : "llvm.nvvm.read.ptx.sreg.tid.x");
  const loom_tp_stmt *body = s->u.loop.body;
  size_t nparts = 1;
  if (!block && body->kind == LOOM_TP_STMT_SEQ)
    for (size_t i = 0; i < body->u.seq.n; i++) nparts += body->u.seq.items[i]->kind == LOOM_TP_STMT_BARRIER;
  size_t start = 0;
  for (size_t part = 0; part < nparts && !g->st; part++) {
    LLVMValueRef n = cg_sym(g, s->u.loop.extent);
    LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(g->c, g->fn, block ? "block.body" : "thread.body");
    LLVMBasicBlockRef bj = LLVMAppendBasicBlockInContext(g->c, g->fn, block ? "block.end" : "thread.end");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, iv, n, ""), bt, bj);
    LLVMPositionBuilderAtEnd(g->b, bt);
    if (nparts == 1) {
      cg_loop_body(g, s, iv);
    } else { /* the items up to the next barrier (no lets or allocs among them: verify.c) */
      size_t end = start;
      while (end < body->u.seq.n && body->u.seq.items[end]->kind != LOOM_TP_STMT_BARRIER) end++;
      loom_tp_stmt part_seq = {.kind = LOOM_TP_STMT_SEQ, .u.seq = {end - start, body->u.seq.items + start}};
      loom_tp_stmt part_loop = *s;
      part_loop.u.loop.body = &part_seq;
      cg_loop_body(g, &part_loop, iv);
      start = end + 1;
    }
    LLVMBuildBr(g->b, bj);
    LLVMPositionBuilderAtEnd(g->b, bj);
    if (!block) cg_gpu_barrier(g);
  }
}

/* NVPTX: a call of the intrinsic `name` (n i32 arguments, result `ret`). */
static LLVMValueRef call_i32(cg *g, const char *name, LLVMTypeRef ret, LLVMValueRef *args, unsigned n) {
  LLVMTypeRef ps[4] = {g->t_i32, g->t_i32, g->t_i32, g->t_i32};
  LLVMTypeRef fty = LLVMFunctionType(ret, ps, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
  if (!fn) fn = LLVMAddFunction(g->mod, name, fty);
  return LLVMBuildCall2(g->b, fty, fn, args, n, "");
}

/* __syncwarp(): the lanes' stores before it are seen by every lane after it. */
static void warp_sync(cg *g) {
  LLVMValueRef all = LLVMConstInt(g->t_i32, 0xffffffffu, 0);
  call_i32(g, "llvm.nvvm.bar.warp.sync", g->t_void, &all, 1);
}

/* The value of lane (this lane ^ m) of the 32-bit v (shfl.sync.bfly.b32, every lane taking part). */
static LLVMValueRef shfl_bfly32(cg *g, LLVMValueRef v, int m) {
  LLVMValueRef args[4] = {LLVMConstInt(g->t_i32, 0xffffffffu, 0), v, LLVMConstInt(g->t_i32, (unsigned)m, 0),
                          LLVMConstInt(g->t_i32, 31, 0)};
  return call_i32(g, "llvm.nvvm.shfl.sync.bfly.i32", g->t_i32, args, 4);
}

/* The register value v (8 to 64 bits, integer or float) of lane (this lane ^ m): moved as one
 * or two 32-bit halves. */
static LLVMValueRef shfl_bfly(cg *g, LLVMValueRef v, int m) {
  LLVMTypeRef ty = LLVMTypeOf(v);
  bool fp = LLVMGetTypeKind(ty) != LLVMIntegerTypeKind;
  unsigned bits = fp ? (ty == g->t_f64 ? 64 : 32) : LLVMGetIntTypeWidth(ty);
  LLVMTypeRef ity = LLVMIntTypeInContext(g->c, bits);
  LLVMValueRef x = fp ? LLVMBuildBitCast(g->b, v, ity, "") : v, r;
  if (bits <= 32) {
    LLVMValueRef w = bits < 32 ? LLVMBuildZExt(g->b, x, g->t_i32, "") : x;
    w = shfl_bfly32(g, w, m);
    r = bits < 32 ? LLVMBuildTrunc(g->b, w, ity, "") : w;
  } else {
    LLVMValueRef lo = shfl_bfly32(g, LLVMBuildTrunc(g->b, x, g->t_i32, ""), m);
    LLVMValueRef hi = shfl_bfly32(g, LLVMBuildTrunc(g->b, LLVMBuildLShr(g->b, x, cg_i64(g, 32), ""), g->t_i32, ""), m);
    r = LLVMBuildOr(g->b, LLVMBuildZExt(g->b, lo, g->t_i64, ""),
                    LLVMBuildShl(g->b, LLVMBuildZExt(g->b, hi, g->t_i64, ""), cg_i64(g, 32), ""), "");
  }
  return fp ? LLVMBuildBitCast(g->b, r, ty, "") : r;
}

/* OP's identity in the register type of t: 0 (+), 1 (*), the lowest value (max), the highest (min). */
static LLVMValueRef identity(cg *g, loom_tp_op op, loom_dtype t) {
  LLVMTypeRef ty = cg_reg_type(g, t);
  if (loom_dtype_is_float(t))
    return cg_kf(ty, op == LOOM_TP_OP_ADD ? 0.0 : op == LOOM_TP_OP_MUL ? 1.0 : op == LOOM_TP_OP_MAX ? -INFINITY : INFINITY);
  if (op == LOOM_TP_OP_ADD || op == LOOM_TP_OP_MUL) return cg_ki(ty, op == LOOM_TP_OP_MUL);
  unsigned bits = LLVMGetIntTypeWidth(ty);
  bool sgn = loom_dtype_kind_of(t) == LOOM_DTYPE_KIND_SINT;
  unsigned long long ones = bits == 64 ? ~0ULL : (1ULL << bits) - 1, top = 1ULL << (bits - 1);
  unsigned long long v = op == LOOM_TP_OP_MAX ? (sgn ? top : 0) : (sgn ? top - 1 : ones);
  return LLVMConstInt(ty, v, 0);
}

/* NVPTX: a gpu_lanes loop (verify.c: in a gpu_thread loop of extent 32, in the lanes form).
 * Lane L = tid.x & 31 runs iterations L, L + 32, ...; a `reduce` loop first saves each
 * accumulator and sets it to OP's identity, and after the loop combines the lanes' partial
 * values with 5 butterfly shuffles (every lane gets the total) and stores saved OP total. The
 * warp syncs before and after: the loop sees the stores of the code before it on every lane,
 * later code the loop's stores of every lane. */
void cg_emit_gpu_lanes(cg *g, const loom_tp_stmt *s) {
  loom_tp_lanes_form form = {.naccs = 0};
  if (s->u.loop.reduce && !loom_tp_lanes_form_of(s, &form)) {
    cg_error(g, LOOM_ERROR(INTERNAL, "gpu_lanes loop '%s': %s", loom_sym_var_name(s->u.loop.var), form.why));
    return;
  }
  warp_sync(g); /* every lane done with the code before (it may store what the loop reads) */
  LLVMValueRef tid = gpu_sreg(g, "llvm.nvvm.read.ptx.sreg.tid.x");
  LLVMValueRef lane = LLVMBuildAnd(g->b, tid, cg_i64(g, 31), "lane");
  LLVMValueRef ptr[LOOM_TP_LANES_MAX_ACCS], saved[LOOM_TP_LANES_MAX_ACCS];
  for (size_t i = 0; i < form.naccs; i++) {
    const loom_tp_lanes_acc *a = &form.accs[i];
    loom_dtype t = a->buf->dtype;
    ptr[i] = cg_elem_ptr(g, a->buf, a->idx);
    saved[i] = cg_from_mem(g, t, LLVMBuildLoad2(g->b, cg_mem_type(g, t), ptr[i], ""));
    LLVMBuildStore(g->b, cg_to_mem(g, t, identity(g, a->op, t)), ptr[i]);
  }
  cg_range_loop(g, s, lane, cg_sym(g, s->u.loop.extent), 32);
  for (size_t i = 0; i < form.naccs; i++) {
    const loom_tp_lanes_acc *a = &form.accs[i];
    loom_dtype t = a->buf->dtype;
    LLVMValueRef v = cg_from_mem(g, t, LLVMBuildLoad2(g->b, cg_mem_type(g, t), ptr[i], ""));
    for (int m = 16; m >= 1; m /= 2) v = cg_binop(g, a->op, t, v, shfl_bfly(g, v, m));
    LLVMBuildStore(g->b, cg_to_mem(g, t, cg_binop(g, a->op, t, saved[i], v)), ptr[i]);
  }
  warp_sync(g);
}

/* NVPTX: `void loom_kernel_<base>(ptr buf0, .., ptr bufK, i64 sym0, .., i64 symJ, ptr err)`, the
 * buffers and f->syms in the CPU kernel's order but by value, `err` an i32 the kernel sets to
 * 1 (or 2, an index out of range) on a run-time error. Marked a kernel (nvvm.annotations). The
 * body is one function: a failure returns from it. */
loom_status cg_emit_gpu_kernel(cg *g, const loom_tp_func *f, const char *sym) {
  size_t nb = 0;
  for (size_t i = 0; i < f->nparams; i++) nb += f->params[i].is_buffer;
  size_t np = nb + f->nsyms + 1;
  /* the kernel and its body take the same parameters; the body returns i32 (cg_fail_if's
   * `ret i32 1`), the kernel calls it and returns */
  LLVMTypeRef *ps = malloc(np * sizeof *ps);
  if (!ps) return LOOM_OOM();
  for (size_t i = 0; i < np; i++) ps[i] = i < nb || i == np - 1 ? g->t_ptr : g->t_i64;
  LLVMTypeRef kty = LLVMFunctionType(g->t_void, ps, (unsigned)np, 0);
  LLVMTypeRef ity = LLVMFunctionType(g->t_i32, ps, (unsigned)np, 0);
  free(ps);
  LLVMValueRef kfn = LLVMAddFunction(g->mod, sym, kty);
  char isym[320];
  snprintf(isym, sizeof isym, "%s.impl", g->sym_base);
  LLVMValueRef impl = LLVMAddFunction(g->mod, isym, ity);
  LLVMSetLinkage(impl, LLVMInternalLinkage);
  g->fn = impl;
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->c, impl, "entry"));
  unsigned k = 0;
  for (size_t i = 0; i < f->nparams; i++)
    if (f->params[i].is_buffer) cg_push_buf(g, f->params[i].buf, LLVMGetParam(impl, k++));
  for (size_t j = 0; j < f->nsyms; j++) cg_push_sym(g, f->syms[j], LLVMGetParam(impl, k++), NULL);
  g->ctxp = LLVMGetParam(impl, k);
  cg_stmt(g, f->body);
  cg_free_heap_to(g, 0);
  LLVMBuildRet(g->b, LLVMConstInt(g->t_i32, 0, 0));
  /* the kernel */
  g->fn = kfn;
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->c, kfn, "entry"));
  LLVMValueRef *args = malloc(np * sizeof *args);
  if (!args) return LOOM_OOM();
  for (size_t i = 0; i < np; i++) args[i] = LLVMGetParam(kfn, (unsigned)i);
  LLVMBuildCall2(g->b, ity, impl, args, (unsigned)np, "");
  free(args);
  LLVMBuildRetVoid(g->b);
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(kfn), LLVMMDStringInContext2(g->c, "kernel", 6),
                           LLVMValueAsMetadata(LLVMConstInt(g->t_i32, 1, 0))};
  LLVMAddNamedMetadataOperand(g->mod, "nvvm.annotations", LLVMMetadataAsValue(g->c, LLVMMDNodeInContext2(g->c, md, 3)));
  return cg_end_kernel(g);
}
