/* verify.c — well-formedness of tensor programs.
 *
 * Rules (each failure names the program and what is wrong):
 *   - every load/store names a buffer in scope (a parameter, or an alloc earlier in an
 *     enclosing sequence) with exactly ndim indices, each an integer;
 *   - symbolic expressions (indices, extents, alloc shapes) use only the signature's
 *     symbols and the variables of enclosing loops;
 *   - a let is referenced only after it, inside its sequence;
 *   - operator operand dtypes agree: ARITH same numeric dtype; CMP same dtype; LOGIC
 *     bool or integer; MATH float; select's condition bool and branches alike;
 *   - a store's value has the buffer's dtype; an if's condition is bool;
 *   - loop variables are not reused by nested loops;
 *   - GPU forms: a gpu_thread loop lies inside a gpu_block loop and inside no other
 *     gpu_thread loop; a gpu_block loop inside no GPU loop; neither is `reduce`; inside a
 *     gpu_block every store is inside a gpu_thread loop (block-level code runs on every
 *     thread, so it only computes); a Shared alloc lies in a gpu_block, outside its thread
 *     loops, with constant extents; a barrier is an item of a gpu_thread loop's body
 *     sequence (not under an if or an inner loop: every thread must reach it), and that
 *     sequence then holds no let or alloc of its own (the interpreter runs it phase by
 *     phase, barrier to barrier, so per-thread values cannot cross one); a gpu_lanes loop lies
 *     in a gpu_thread loop of extent 32 (one warp), in no other gpu_lanes loop, and is in the
 *     form of tp_lanes.h (a `reduce` one updates its Local accumulators only as Q[c] = Q[c] OP e);
 *   - float8 / float4 / e8m0 are storage types computed in float (as f16), the 4- and
 *     2-bit integers integers that wrap at their width. */
#include <string.h>

#include "base/strbuf.h"
#include "base/vec.h"
#include "tensorprog/tp_ir.h"
#include "tensorprog/tp_lanes.h"

typedef struct verifier {
  loom_sym_ctx *cx;
  const loom_tp_func *f;
  LOOM_VEC(const loom_sym_expr *) syms; /* signature symbols + enclosing loop vars */
  LOOM_VEC(const loom_tp_buffer *) bufs;
  LOOM_VEC(const loom_tp_stmt *) lets;
  int blocks;                           /* enclosing gpu_block loops */
  int threads;                          /* enclosing gpu_thread loops */
  int lanes;                            /* enclosing gpu_lanes loops */
  const loom_tp_stmt *thread_loop;      /* the innermost enclosing gpu_thread loop, or NULL */
  const loom_tp_stmt *thread_body;      /* the body of the innermost gpu_thread loop, while
                                           its items are checked (NULL elsewhere) */
  loom_status err;                      /* first error */
} verifier;

static void fail(verifier *v, loom_status s) {
  if (!v->err) v->err = s;
  else loom_status_free(s);
}

static bool sym_known(const verifier *v, const loom_sym_expr *var) {
  for (size_t i = 0; i < v->syms.len; i++)
    if (v->syms.data[i] == var) return true;
  return false;
}

typedef struct sym_check {
  verifier *v;
  const char *where;
} sym_check;

static void check_var(void *ud, const loom_sym_expr *var) {
  sym_check *c = ud;
  if (c->v->err || sym_known(c->v, var)) return;
  fail(c->v, LOOM_ERROR(TYPE_ERROR, "program @%s: %s uses '%s', which is neither a parameter symbol nor an enclosing loop variable",
                        c->v->f->name, c->where, loom_sym_var_name(var)));
}

static void check_sym(verifier *v, const loom_sym_expr *e, const char *where) {
  sym_check c = {v, where};
  loom_sym_for_each_var(e, check_var, &c);
}

static bool buf_visible(const verifier *v, const loom_tp_buffer *b) {
  for (size_t i = 0; i < v->bufs.len; i++)
    if (v->bufs.data[i] == b) return true;
  return false;
}

static void check_expr(verifier *v, const loom_tp_expr *e);

static void check_access(verifier *v, const loom_tp_buffer *b, loom_tp_expr *const *idx, const char *what) {
  if (!buf_visible(v, b)) {
    fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: %s of buffer '%s', which is not in scope", v->f->name, what, b->name));
    return;
  }
  for (int d = 0; d < b->ndim && !v->err; d++) {
    check_expr(v, idx[d]);
    if (!v->err && !loom_dtype_is_int(idx[d]->dtype))
      fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: %s of '%s' axis %d: index has dtype %s, not an integer",
                         v->f->name, what, b->name, d, loom_dtype_name(idx[d]->dtype)));
  }
}

static void check_op(verifier *v, const loom_tp_expr *e) {
  loom_tp_op op = e->u.op.op;
  int n = loom_tp_op_arity(op);
  for (int k = 0; k < n && !v->err; k++) check_expr(v, e->u.op.args[k]);
  if (v->err) return;
  loom_dtype t = e->u.op.args[0]->dtype;
  if (loom_tp_op_class_of(op) == LOOM_TP_CLASS_BITS) {
    loom_dtype to = e->u.op.args[1]->dtype;
    if (e->u.op.args[1]->kind != LOOM_TP_EXPR_CONST)
      fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: '%s' takes a literal naming the result dtype as its second operand",
                         v->f->name, loom_tp_op_spelling(op)));
    else if (t == LOOM_DTYPE_BOOL || to == LOOM_DTYPE_BOOL || loom_dtype_bits(t) != loom_dtype_bits(to) || e->dtype != to)
      fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: '%s' from %s to %s: the dtypes must be of one width and not bool",
                         v->f->name, loom_tp_op_spelling(op), loom_dtype_name(t), loom_dtype_name(to)));
    return;
  }
  for (int k = 1; k < n; k++) {
    if (e->u.op.args[k]->dtype != t) {
      fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: '%s' operands have different dtypes (%s and %s)", v->f->name,
                         loom_tp_op_spelling(op), loom_dtype_name(t), loom_dtype_name(e->u.op.args[k]->dtype)));
      return;
    }
  }
  bool ok = true;
  switch (loom_tp_op_class_of(op)) {
    /* min / max of bools are and / or (false < true), as the interpreter and codegen compute them */
    case LOOM_TP_CLASS_ARITH:
      ok = t != LOOM_DTYPE_BOOL ? (op != LOOM_TP_OP_DOT2 && op != LOOM_TP_OP_DOT4 && op != LOOM_TP_OP_DOT4S) || t == LOOM_DTYPE_I32 : op == LOOM_TP_OP_MIN || op == LOOM_TP_OP_MAX;
      break;
    case LOOM_TP_CLASS_CMP: ok = true; break;
    case LOOM_TP_CLASS_LOGIC: ok = !loom_dtype_is_float(t); break;
    case LOOM_TP_CLASS_MATH: ok = loom_dtype_is_float(t); break;
    case LOOM_TP_CLASS_BITS: break; /* checked above */
  }
  if (!ok)
    fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: '%s' is not defined on %s", v->f->name, loom_tp_op_spelling(op),
                       loom_dtype_name(t)));
}

static void check_expr(verifier *v, const loom_tp_expr *e) {
  if (v->err) return;
  switch (e->kind) {
    case LOOM_TP_EXPR_CONST:
      return;
    case LOOM_TP_EXPR_SYM:
      check_sym(v, e->u.sym, "an index expression");
      return;
    case LOOM_TP_EXPR_LOAD:
      check_access(v, e->u.load.buf, e->u.load.idx, "load");
      return;
    case LOOM_TP_EXPR_LETREF:
      for (size_t i = 0; i < v->lets.len; i++)
        if (v->lets.data[i] == e->u.let) return;
      fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: let '%s' is used outside its scope", v->f->name,
                         e->u.let->u.let.name));
      return;
    case LOOM_TP_EXPR_CAST:
      check_expr(v, e->u.cast_arg);
      return;
    case LOOM_TP_EXPR_SELECT:
      check_expr(v, e->u.select.cond);
      check_expr(v, e->u.select.then_e);
      check_expr(v, e->u.select.else_e);
      if (v->err) return;
      if (e->u.select.cond->dtype != LOOM_DTYPE_BOOL)
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: select condition is %s, not bool", v->f->name,
                           loom_dtype_name(e->u.select.cond->dtype)));
      else if (e->u.select.then_e->dtype != e->u.select.else_e->dtype)
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: select branches have different dtypes (%s and %s)", v->f->name,
                           loom_dtype_name(e->u.select.then_e->dtype), loom_dtype_name(e->u.select.else_e->dtype)));
      return;
    case LOOM_TP_EXPR_OP:
      check_op(v, e);
      return;
  }
}

/* Does sequence `s` hold a barrier among its items? */
static bool seq_has_barrier(const loom_tp_stmt *s) {
  for (size_t i = 0; i < s->u.seq.n; i++)
    if (s->u.seq.items[i]->kind == LOOM_TP_STMT_BARRIER) return true;
  return false;
}

/* A gpu_lanes loop: in a gpu_thread loop of extent 32, in no other gpu_lanes loop, in the lanes
 * form (tp_lanes.h). False (and the error recorded) otherwise. */
static bool check_lanes(verifier *v, const loom_tp_stmt *s) {
  const char *var = loom_sym_var_name(s->u.loop.var);
  int64_t n;
  if (!v->thread_loop) {
    fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: gpu_lanes loop '%s' outside a gpu_thread loop", v->f->name, var));
    return false;
  }
  if (!loom_sym_is_const(v->thread_loop->u.loop.extent, &n) || n != 32) {
    loom_strbuf e;
    loom_strbuf_init(&e, NULL);
    loom_sym_print(v->thread_loop->u.loop.extent, &e);
    fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: gpu_lanes loop '%s' is in gpu_thread loop '%s' of extent %s, not 32 "
                                   "(its lanes are one warp's)",
                       v->f->name, var, loom_sym_var_name(v->thread_loop->u.loop.var), loom_strbuf_cstr(&e)));
    loom_strbuf_free(&e);
    return false;
  }
  if (v->lanes) {
    fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: gpu_lanes loop '%s' inside another gpu_lanes loop", v->f->name, var));
    return false;
  }
  loom_tp_lanes_form form;
  if (!loom_tp_lanes_form_of(s, &form)) {
    fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: gpu_lanes loop '%s': %s", v->f->name, var, form.why));
    return false;
  }
  return true;
}

static void check_stmt(verifier *v, const loom_tp_stmt *s) {
  if (v->err) return;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ: {
      size_t bm = v->bufs.len, lm = v->lets.len;
      /* Only the items of a thread loop's own body may be barriers. */
      const loom_tp_stmt *tb = v->thread_body;
      bool phased = tb == s && seq_has_barrier(s);
      v->thread_body = NULL;
      for (size_t i = 0; i < s->u.seq.n && !v->err; i++) {
        const loom_tp_stmt *c = s->u.seq.items[i];
        if (c->kind == LOOM_TP_STMT_BARRIER && tb != s)
          fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: a barrier must be an item of a gpu_thread loop's body "
                                         "(not under an if or an inner loop, not outside a thread loop)",
                             v->f->name));
        if (phased && (c->kind == LOOM_TP_STMT_LET || c->kind == LOOM_TP_STMT_ALLOC))
          fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: %s '%s' in a gpu_thread loop body with a barrier "
                                         "(a per-thread value cannot cross a barrier: move it into a nested block)",
                             v->f->name, c->kind == LOOM_TP_STMT_LET ? "let" : "alloc",
                             c->kind == LOOM_TP_STMT_LET ? c->u.let.name : c->u.alloc->name));
        check_stmt(v, c);
        if (c->kind == LOOM_TP_STMT_ALLOC && !LOOM_VEC_PUSH(NULL, &v->bufs, c->u.alloc)) fail(v, LOOM_OOM());
        if (c->kind == LOOM_TP_STMT_LET && !LOOM_VEC_PUSH(NULL, &v->lets, c)) fail(v, LOOM_OOM());
      }
      v->bufs.len = bm;
      v->lets.len = lm;
      v->thread_body = tb;
      return;
    }
    case LOOM_TP_STMT_FOR: {
      check_sym(v, s->u.loop.extent, "a loop extent");
      if (v->err) return;
      loom_tp_loop_kind k = s->u.loop.kind;
      const char *var = loom_sym_var_name(s->u.loop.var);
      if ((k == LOOM_TP_LOOP_GPU_BLOCK || k == LOOM_TP_LOOP_GPU_THREAD) && s->u.loop.reduce) {
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: loop '%s' is %s and reduce (its iterations would race)",
                           v->f->name, var, loom_tp_loop_kind_name(k)));
        return;
      }
      if (k == LOOM_TP_LOOP_GPU_BLOCK && (v->blocks || v->threads)) {
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: gpu_block loop '%s' inside another GPU loop", v->f->name, var));
        return;
      }
      if (k == LOOM_TP_LOOP_GPU_THREAD && (!v->blocks || v->threads)) {
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: gpu_thread loop '%s' %s", v->f->name, var,
                           v->threads ? "inside another gpu_thread loop" : "outside a gpu_block loop"));
        return;
      }
      if (k == LOOM_TP_LOOP_GPU_LANES && !check_lanes(v, s)) return;
      if (sym_known(v, s->u.loop.var)) {
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: loop variable '%s' is bound twice", v->f->name,
                           loom_sym_var_name(s->u.loop.var)));
        return;
      }
      if (!LOOM_VEC_PUSH(NULL, &v->syms, s->u.loop.var)) {
        fail(v, LOOM_OOM());
        return;
      }
      v->blocks += k == LOOM_TP_LOOP_GPU_BLOCK;
      v->threads += k == LOOM_TP_LOOP_GPU_THREAD;
      v->lanes += k == LOOM_TP_LOOP_GPU_LANES;
      const loom_tp_stmt *tb = v->thread_body, *tl = v->thread_loop;
      v->thread_body = k == LOOM_TP_LOOP_GPU_THREAD ? s->u.loop.body : NULL;
      if (k == LOOM_TP_LOOP_GPU_THREAD) v->thread_loop = s;
      check_stmt(v, s->u.loop.body);
      v->thread_body = tb;
      v->thread_loop = tl;
      v->blocks -= k == LOOM_TP_LOOP_GPU_BLOCK;
      v->threads -= k == LOOM_TP_LOOP_GPU_THREAD;
      v->lanes -= k == LOOM_TP_LOOP_GPU_LANES;
      v->syms.len--;
      return;
    }
    case LOOM_TP_STMT_STORE:
      if (v->blocks && !v->threads) {
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: store to '%s' in a gpu_block outside every gpu_thread loop "
                                       "(every thread of the block would run it)",
                           v->f->name, s->u.store.buf->name));
        return;
      }
      check_access(v, s->u.store.buf, s->u.store.idx, "store");
      check_expr(v, s->u.store.value);
      if (!v->err && s->u.store.value->dtype != s->u.store.buf->dtype)
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: store of a %s value into %s buffer '%s'", v->f->name,
                           loom_dtype_name(s->u.store.value->dtype), loom_dtype_name(s->u.store.buf->dtype),
                           s->u.store.buf->name));
      return;
    case LOOM_TP_STMT_LET:
      check_expr(v, s->u.let.value);
      return;
    case LOOM_TP_STMT_IF:
      check_expr(v, s->u.if_.cond);
      if (!v->err && s->u.if_.cond->dtype != LOOM_DTYPE_BOOL)
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: if condition is %s, not bool", v->f->name,
                           loom_dtype_name(s->u.if_.cond->dtype)));
      check_stmt(v, s->u.if_.then_s);
      if (s->u.if_.else_s) check_stmt(v, s->u.if_.else_s);
      return;
    case LOOM_TP_STMT_ALLOC:
      for (int d = 0; d < s->u.alloc->ndim; d++) check_sym(v, s->u.alloc->dims[d], "an alloc shape");
      if (!v->err && s->u.alloc->scope == LOOM_TP_SCOPE_SHARED) {
        if (!v->blocks || v->threads)
          fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: Shared alloc '%s' %s", v->f->name, s->u.alloc->name,
                             v->threads ? "inside a gpu_thread loop (it belongs to the block: allocate it outside)"
                                        : "outside a gpu_block loop"));
        for (int d = 0; d < s->u.alloc->ndim && !v->err; d++)
          if (loom_sym_kind_of(s->u.alloc->dims[d]) != LOOM_SYM_CONST)
            fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: Shared alloc '%s' axis %d is not a constant (shared memory is sized at compile time)",
                               v->f->name, s->u.alloc->name, d));
      }
      return;
    case LOOM_TP_STMT_PREFETCH:
      check_access(v, s->u.prefetch.buf, s->u.prefetch.idx, "prefetch");
      return;
    case LOOM_TP_STMT_BARRIER:
      /* Placement within a thread loop's body is checked by the enclosing sequence. */
      if (!v->threads)
        fail(v, LOOM_ERROR(TYPE_ERROR, "program @%s: a barrier must be an item of a gpu_thread loop's body "
                                       "(not under an if or an inner loop, not outside a thread loop)",
                           v->f->name));
      return;
  }
}

loom_status loom_tp_verify(loom_sym_ctx *cx, const loom_tp_func *f) {
  verifier v = {.cx = cx, .f = f};
  for (size_t i = 0; i < f->nsyms; i++)
    if (!LOOM_VEC_PUSH(NULL, &v.syms, f->syms[i])) fail(&v, LOOM_OOM());
  for (size_t i = 0; i < f->nparams; i++) {
    const loom_tp_param *p = &f->params[i];
    if (p->is_buffer && !LOOM_VEC_PUSH(NULL, &v.bufs, p->buf)) fail(&v, LOOM_OOM());
  }
  if (!v.err) check_stmt(&v, f->body);
  LOOM_VEC_FREE(NULL, &v.syms);
  LOOM_VEC_FREE(NULL, &v.bufs);
  LOOM_VEC_FREE(NULL, &v.lets);
  return v.err;
}
