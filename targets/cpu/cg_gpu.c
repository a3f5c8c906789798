/* cg_gpu.c — the NVPTX forms of the code generator (loom_cpu_options.nvptx): the kernel entry
 * with buffers and symbols by value, gpu_block / gpu_thread loops bound to ctaid.x / tid.x, and
 * barriers. Everything else (statements, expressions, other loops) is cg_stmt.c's and
 * cg_expr.c's, shared with the CPU kernels. */
#include <stdlib.h>
#include <stdio.h>

#include "targets/cpu/cg_internal.h"

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
