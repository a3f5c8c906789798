/* interp_loop.h — the body of the interpreter loop, included twice by interp.c: once
 * as loop_fast (LOOM_VM_LOOP_PROFILE 0) and once as loop_profile (1), so the fast loop
 * carries no profiling branches (a function with computed-goto labels cannot be inlined,
 * so a constant parameter would not be folded). Not a header of its own. */
static loom_status LOOM_VM_LOOP_NAME(loom_vm *vm, call_state *cs, frame *fr, loom_vm_obj **out) {
  const bool prof = LOOM_VM_LOOP_PROFILE;
  const loom_vm_exec *e = vm->exe;
  const loom_vm_func *f = fr->f;
  const loom_vm_insn *code = f->code;
  const uint32_t *lists = f->lists;
  const int64_t *K = e->intconsts;
  loom_vm_obj **R = fr->R;
  int64_t *I = fr->I;
  uint32_t pc = 0;
  loom_vm_insn in = 0;
  loom_status st = LOOM_OK;
  uint64_t t0 = 0;
  loom_vm_op cur = LOOM_VM_OP_NOP;

#if USE_SWITCH
#define DISPATCH() continue
#define CASE(op) case LOOM_VM_OP_##op
  for (;;) {
    if (prof && pc) prof_add(&vm->op_prof[cur], loom_clock_ns() - t0);
    in = code[pc++];
    cur = LOOM_VM_OP(in);
    if (prof) t0 = loom_clock_ns();
    st = loom_vm_verify_insn(e, f, pc - 1);
    if (st) {
      st = loom_status_annotate(st, __FILE__, __LINE__, "internal: the dispatch check rejected an instruction");
      goto fail;
    }
    switch (cur) {
#else
#define DISPATCH()                                                                     \
  do {                                                                                 \
    if (prof) prof_add(&vm->op_prof[cur], loom_clock_ns() - t0);                       \
    in = code[pc++];                                                                   \
    cur = LOOM_VM_OP(in);                                                              \
    if (prof) t0 = loom_clock_ns();                                                    \
    goto *labels[cur];                                                                 \
  } while (0)
#define CASE(op) L_##op
  static void *const labels[LOOM_VM_OP_COUNT] = {
#define LOOM_OP(name, a, b, c, doc) &&L_##name,
#include "vm/opcodes.def"
#undef LOOM_OP
  };
  in = code[pc++];
  cur = LOOM_VM_OP(in);
  if (prof) t0 = loom_clock_ns();
  goto *labels[cur];
  {
    {
#endif
    /* Synopsis: nothing */
    CASE(NOP):
      DISPATCH();
    /* Synopsis: R[A] := R[B] */
    CASE(MOV): {
      loom_vm_obj *x = R[LOOM_VM_B(in)];
      loom_vm_obj_retain(x);
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = x;
      DISPATCH();
    }
    CASE(IMOV):
      I[LOOM_VM_A(in)] = I[LOOM_VM_B(in)];
      DISPATCH();
    CASE(ICONST):
      I[LOOM_VM_A(in)] = K[LOOM_VM_BX(in)];
      DISPATCH();
    /* Synopsis: R[A] := const[Bx], its bytes checked at its first use (loom_vm_exec_const_check) */
    CASE(TCONST): {
      if (LOOM_UNLIKELY(e->const_ok && !__atomic_load_n(&e->const_ok[LOOM_VM_BX(in)], __ATOMIC_ACQUIRE))) {
        st = loom_vm_exec_const_check(e, LOOM_VM_BX(in));
        if (st) goto fail;
      }
      loom_tensor *t = vm->consts[LOOM_VM_BX(in)];
      loom_vm_obj_retain(&t->hdr);
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = &t->hdr;
      DISPATCH();
    }
    CASE(KILL):
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = NULL;
      DISPATCH();
    /* Synopsis: I[A] := I[B] op I[C], checked */
    CASE(IADD):
      CHECKED("IADD", __builtin_add_overflow(I[LOOM_VM_B(in)], I[LOOM_VM_C(in)], &I[LOOM_VM_A(in)]));
      DISPATCH();
    CASE(ISUB):
      CHECKED("ISUB", __builtin_sub_overflow(I[LOOM_VM_B(in)], I[LOOM_VM_C(in)], &I[LOOM_VM_A(in)]));
      DISPATCH();
    CASE(IMUL):
      CHECKED("IMUL", __builtin_mul_overflow(I[LOOM_VM_B(in)], I[LOOM_VM_C(in)], &I[LOOM_VM_A(in)]));
      DISPATCH();
    CASE(IFLOORDIV):
    CASE(IFLOORMOD): {
      int64_t a = I[LOOM_VM_B(in)], b = I[LOOM_VM_C(in)];
      if (LOOM_UNLIKELY(b == 0)) {
        st = LOOM_ERROR(OUT_OF_RANGE, "%s: division by zero (%lld / 0)", cur == LOOM_VM_OP_IFLOORDIV ? "floordiv" : "floormod", (long long)a);
        goto fail;
      }
      if (LOOM_UNLIKELY(a == INT64_MIN && b == -1)) {
        st = LOOM_ERROR(OUT_OF_RANGE, "floordiv overflows int64: %lld / -1", (long long)a);
        goto fail;
      }
      int64_t q = a / b, r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) q -= 1, r += b;
      I[LOOM_VM_A(in)] = cur == LOOM_VM_OP_IFLOORDIV ? q : r;
      DISPATCH();
    }
    CASE(IMIN): {
      int64_t a = I[LOOM_VM_B(in)], b = I[LOOM_VM_C(in)];
      I[LOOM_VM_A(in)] = a < b ? a : b;
      DISPATCH();
    }
    CASE(IMAX): {
      int64_t a = I[LOOM_VM_B(in)], b = I[LOOM_VM_C(in)];
      I[LOOM_VM_A(in)] = a > b ? a : b;
      DISPATCH();
    }
    CASE(IEQ): I[LOOM_VM_A(in)] = I[LOOM_VM_B(in)] == I[LOOM_VM_C(in)]; DISPATCH();
    CASE(INE): I[LOOM_VM_A(in)] = I[LOOM_VM_B(in)] != I[LOOM_VM_C(in)]; DISPATCH();
    CASE(ILT): I[LOOM_VM_A(in)] = I[LOOM_VM_B(in)] < I[LOOM_VM_C(in)]; DISPATCH();
    CASE(ILE): I[LOOM_VM_A(in)] = I[LOOM_VM_B(in)] <= I[LOOM_VM_C(in)]; DISPATCH();
    /* Synopsis: pc := Bx (conditionally) */
    CASE(JMP):
      pc = LOOM_VM_BX(in);
      DISPATCH();
    CASE(JMPIF):
      if (I[LOOM_VM_A(in)] != 0) pc = LOOM_VM_BX(in);
      DISPATCH();
    CASE(JMPIFNOT):
      if (I[LOOM_VM_A(in)] == 0) pc = LOOM_VM_BX(in);
      DISPATCH();
    /* Synopsis: return R[A] */
    CASE(RET): {
      loom_vm_obj *x = R[LOOM_VM_A(in)];
      NEED(LOOM_VM_A(in));
      loom_vm_obj_retain(x);
      *out = x;
      if (prof) prof_add(&vm->op_prof[cur], loom_clock_ns() - t0);
      return LOOM_OK;
    }
    /* Synopsis: I[A] := shape(R[B])[C] */
    CASE(DIM): {
      NEED(LOOM_VM_B(in));
      loom_tensor *t = (loom_tensor *)R[LOOM_VM_B(in)];
      if (LOOM_UNLIKELY(LOOM_VM_C(in) >= (uint32_t)t->rank)) {
        st = LOOM_ERROR(OUT_OF_RANGE, "DIM: axis %u of a rank-%d tensor", LOOM_VM_C(in), t->rank);
        goto fail;
      }
      I[LOOM_VM_A(in)] = t->shape[LOOM_VM_C(in)];
      DISPATCH();
    }
    CASE(MATCH):
      NEED(LOOM_VM_A(in));
      st = match(e, fr, (loom_tensor *)R[LOOM_VM_A(in)], LOOM_VM_BX(in));
      if (st) goto fail;
      DISPATCH();
    CASE(MATCHV):
      NEED(LOOM_VM_A(in));
      st = match_values(vm, fr, (loom_tensor *)R[LOOM_VM_A(in)], LOOM_VM_BX(in));
      if (st) goto fail;
      DISPATCH();
    CASE(SHAPE): {
      const uint32_t *l = lists + LOOM_VM_BX(in);
      int64_t n = l[0];
      loom_tensor *t;
      st = loom_tensor_alloc(vm->dev, LOOM_DTYPE_I64, 1, &n, &t);
      if (st) goto fail;
      int64_t dims[16]; /* written in chunks: a device's memory takes them through its copies */
      for (uint32_t i = 0; i < l[0] && !st; i += 16) {
        uint32_t m = l[0] - i < 16 ? l[0] - i : 16;
        for (uint32_t j = 0; j < m; j++) dims[j] = I[l[1 + i + j]];
        st = write_data(vm, (int64_t *)t->data + i, dims, m * sizeof *dims);
      }
      if (st) {
        loom_vm_obj_release(&t->hdr);
        goto fail;
      }
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = &t->hdr;
      DISPATCH();
    }
    /* Synopsis: R[A] := storage(I[B] bytes, device C) */
    CASE(ALLOC): {
      int64_t n = I[LOOM_VM_B(in)];
      if (n < 0) {
        st = LOOM_ERROR(OUT_OF_RANGE, "ALLOC of %lld bytes", (long long)n);
        goto fail;
      }
      loom_storage *s;
      st = loom_storage_alloc(vm->dev, (size_t)n, &s);
      if (st) goto fail;
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = &s->hdr;
      DISPATCH();
    }
    CASE(VIEW):
    CASE(EMPTY): {
      const uint32_t *l = lists + LOOM_VM_BX(in);
      bool view = cur == LOOM_VM_OP_VIEW;
      if (view) {
        NEED(l[0]);
        l++;
      }
      uint32_t rank = l[2];
      int64_t dims[LOOM_VM_MAX_RANK];
      for (uint32_t i = 0; i < rank; i++) dims[i] = I[l[3 + i]];
      loom_tensor *t;
      if (view) {
        int64_t offv = I[l[1]];
        if (offv < 0) {
          st = LOOM_ERROR(OUT_OF_RANGE, "VIEW at negative offset %lld", (long long)offv);
          goto fail;
        }
        st = loom_tensor_view((loom_storage *)R[l[-1]], (size_t)offv, (loom_dtype)l[0], (int32_t)rank, dims, &t);
      } else {
        st = loom_tensor_alloc(vm->dev, (loom_dtype)l[0], (int32_t)rank, dims, &t);
      }
      if (st) goto fail;
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = &t->hdr;
      DISPATCH();
    }
    CASE(TUPLE): {
      const uint32_t *l = lists + LOOM_VM_BX(in);
      loom_vm_obj *items[LOOM_VM_MAX_CALL_ARGS];
      for (uint32_t i = 0; i < l[0]; i++) {
        NEED(l[1 + i]);
        items[i] = R[l[1 + i]];
      }
      loom_tuple *t;
      st = loom_tuple_new(vm->alloc, items, l[0], &t);
      if (st) goto fail;
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = &t->hdr;
      DISPATCH();
    }
    CASE(TGET): {
      NEED(LOOM_VM_B(in));
      loom_tuple *t = (loom_tuple *)R[LOOM_VM_B(in)];
      uint32_t want = f->obj_kinds[LOOM_VM_A(in)];
      if (LOOM_VM_C(in) >= t->size) {
        st = LOOM_ERROR(OUT_OF_RANGE, "TGET: item %u of a %u-tuple", LOOM_VM_C(in), t->size);
        goto fail;
      }
      loom_vm_obj *x = t->items[LOOM_VM_C(in)];
      if (want != LOOM_VM_OBJ_ANY && x->kind != want) {
        st = LOOM_ERROR(TYPE_ERROR, "TGET: item %u is a %s, register r%u holds %s", LOOM_VM_C(in),
                        loom_vm_obj_kind_name(x->kind), LOOM_VM_A(in), loom_vm_obj_kind_name(want));
        goto fail;
      }
      loom_vm_obj_retain(x);
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = x;
      DISPATCH();
    }
    CASE(CALL): {
      const uint32_t *l = lists + LOOM_VM_BX(in);
      const loom_vm_func *g = &e->funcs[l[0]];
      loom_vm_obj *a[LOOM_VM_MAX_CALL_ARGS];
      int64_t ia[LOOM_VM_MAX_CALL_ARGS];
      for (uint32_t i = 0; i < l[1]; i++) {
        NEED(l[2 + i]);
        a[i] = R[l[2 + i]];
      }
      const uint32_t *il = l + 2 + l[1];
      for (uint32_t i = 0; i < il[0]; i++) ia[i] = I[il[1 + i]];
      loom_vm_obj *res;
      st = run(vm, cs, l[0], a, ia, &res);
      if (st) goto fail;
      uint32_t want = f->obj_kinds[LOOM_VM_A(in)];
      if (want != LOOM_VM_OBJ_ANY && res->kind != want) {
        st = LOOM_ERROR(TYPE_ERROR, "function '%s' returned a %s, register r%u holds %s", loom_vm_exec_str(e, g->name),
                        loom_vm_obj_kind_name(res->kind), LOOM_VM_A(in), loom_vm_obj_kind_name(want));
        loom_vm_obj_release(res);
        goto fail;
      }
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = res;
      DISPATCH();
    }
    /* Synopsis: kernel A(buffers, symbols, ctx) */
    CASE(CALLK):
    CASE(CALLX): {
      const uint32_t *l = lists + LOOM_VM_BX(in);
      void *bufs[LOOM_VM_MAX_CALL_ARGS];
      loom_tensor *ts[LOOM_VM_MAX_CALL_ARGS];
      int64_t syms[LOOM_VM_MAX_CALL_ARGS];
      uint32_t nb = l[0];
      for (uint32_t i = 0; i < nb; i++) {
        loom_vm_obj *x = R[l[1 + i]];
        if (LOOM_UNLIKELY(!x)) NEED(l[1 + i]);
        ts[i] = (loom_tensor *)x;
        bufs[i] = ts[i]->data;
      }
      const uint32_t *sl = l + 1 + nb;
      for (uint32_t i = 0; i < sl[0]; i++) syms[i] = I[sl[1 + i]];
      bool ext = cur == LOOM_VM_OP_CALLX;
      /* the buffers against the kernel's signature at these symbols: no kernel indexes
       * past the buffers it is given (kernel_sig.c) */
      st = loom_vm_sig_check_call(e, ext ? &e->externs[LOOM_VM_A(in)] : &e->kernels[LOOM_VM_A(in)], ext, ts, syms);
      if (LOOM_UNLIKELY(st != LOOM_OK)) goto fail;
      loom_kernel_fn fnp = ext ? vm->externs[LOOM_VM_A(in)] : vm->kernels[LOOM_VM_A(in)];
      bool dev_timed = prof && vm->dev->vt->prof_mark; /* the device's own time, not the host's */
      if (dev_timed) vm->dev->vt->prof_mark(vm->dev);
      uint64_t k0 = prof ? loom_clock_ns() : 0;
      int32_t rc = ext || vm->dev->vt->host ? fnp(bufs, syms, &cs->kctx) : vm->dev->vt->launch(vm->dev, fnp, bufs, syms, &cs->kctx);
      if (prof) {
        uint64_t dt = loom_clock_ns() - k0, dev_ns = dev_timed ? vm->dev->vt->prof_elapsed(vm->dev) : 0;
        prof_add(&vm->kernel_prof[(ext ? e->nkernels : 0) + LOOM_VM_A(in)], dev_ns ? dev_ns : dt);
      }
      if (LOOM_UNLIKELY(rc != 0)) {
        const loom_vm_kernel *k = ext ? &e->externs[LOOM_VM_A(in)] : &e->kernels[LOOM_VM_A(in)];
        if (cs->kerr[0] == LOOM_VM_KERR_INPUT) /* bad input data (an index out of range), not a kernel failure */
          st = LOOM_ERROR(OUT_OF_RANGE, "%s '%s': %s", ext ? "extern" : "kernel", loom_vm_exec_str(e, k->name), cs->kerr + 1);
        else
          st = LOOM_ERROR(INTERNAL, "%s '%s' failed (code %d): %s", ext ? "extern" : "kernel", loom_vm_exec_str(e, k->name), rc,
                          cs->kerr[0] ? cs->kerr : "no message");
        cs->kerr[0] = 0;
        goto fail;
      }
      DISPATCH();
    }
    CASE(CALLB):
      st = builtin(vm, fr, LOOM_VM_A(in), lists + LOOM_VM_BX(in));
      if (st) goto fail;
      DISPATCH();
    /* Synopsis: R[A] := R[L[0]] under other dims (a view) */
    CASE(RESHAPE): {
      const uint32_t *l = lists + LOOM_VM_BX(in);
      NEED(l[0]);
      loom_tensor *t;
      st = reshape_view((const loom_tensor *)R[l[0]], l[1], I, l + 2, &t);
      if (st) goto fail;
      loom_vm_obj_release(R[LOOM_VM_A(in)]);
      R[LOOM_VM_A(in)] = &t->hdr;
      DISPATCH();
    }
    /* Synopsis: I[A] := the one element of R[B] */
    CASE(ILOAD): {
      NEED(LOOM_VM_B(in));
      st = load_int(vm, (const loom_tensor *)R[LOOM_VM_B(in)], &I[LOOM_VM_A(in)]);
      if (st) goto fail;
      DISPATCH();
    }
    /* Synopsis: error unless I[A] != 0 */
    CASE(CHECK):
      if (LOOM_UNLIKELY(I[LOOM_VM_A(in)] == 0)) {
        st = check_failed(e, fr, lists + LOOM_VM_BX(in));
        goto fail;
      }
      DISPATCH();
#if USE_SWITCH
    default:
      st = LOOM_ERROR(INTERNAL, "unknown opcode %u", (unsigned)cur);
      goto fail;
    }
  }
#else
    }
  }
#endif
fail:;
  /* context: function, pc, instruction, graph binding */
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_vm_insn_format(e, f, pc - 1, &sb);
  const char *bind = NULL;
  for (uint32_t i = 0; i < f->ndebug; i++)
    if (f->debug[i].pc == pc - 1) bind = loom_vm_exec_str(e, f->debug[i].text);
  st = loom_status_annotate(st, __FILE__, __LINE__, "in function '%s' at pc %u: %s%s%s%s", loom_vm_exec_str(e, f->name), pc - 1,
                            loom_strbuf_cstr(&sb), bind ? " [" : "", bind ? bind : "", bind ? "]" : "");
  loom_strbuf_free(&sb);
  return st;
}

#undef DISPATCH
#undef CASE
