/* lower_sig.c — the signature words (vm/exec.h, loom_vm_kernel) of a tensor program's
 * kernel: how its code indexes its buffers. Each buffer parameter gives its dtype, rank
 * and dims, each dim a postfix expression over the program's symbols (tp->syms, the
 * kernel ABI's symbols, in order); then each symbol's name. The VM checks every call's
 * buffers against them (vm/kernel_sig.c), and the artifact keeps a copy next to the code
 * (kernel_abi.h) that the runtime compares with the executable's. */
#include "driver/lower_vm.h"

#include "tensorprog/tp_ir.h"

typedef struct enc {
  const loom_tp_func *tp;
  loom_lower_words *out;
  loom_status err;
} enc;

static void put(enc *c, uint32_t w) {
  if (!c->err && !LOOM_VEC_PUSH(NULL, c->out, w)) c->err = LOOM_OOM();
}

static void put_const(enc *c, int64_t v) {
  put(c, LOOM_VM_SIG_CONST);
  put(c, (uint32_t)(uint64_t)v);
  put(c, (uint32_t)((uint64_t)v >> 32));
}

/* Appends the items of `e` (postfix); returns how many. */
static uint32_t items(enc *c, const loom_sym_expr *e) {
  int64_t v;
  if (c->err) return 0;
  if (loom_sym_is_const(e, &v)) {
    put_const(c, v);
    return 1;
  }
  loom_sym_kind k = loom_sym_kind_of(e);
  if (k == LOOM_SYM_VAR) {
    for (size_t j = 0; j < c->tp->nsyms; j++)
      if (c->tp->syms[j] == e) {
        put(c, LOOM_VM_SIG_SYM);
        put(c, (uint32_t)j);
        return 1;
      }
    c->err = LOOM_ERROR(INTERNAL, "program @%s: a buffer dim uses '%s', which is not one of its symbols", c->tp->name,
                        loom_sym_var_name(e));
    return 0;
  }
  if (k == LOOM_SYM_NOT || k == LOOM_SYM_NE) { /* !a = (a == 0); a != b = ((a == b) == 0) */
    uint32_t n = items(c, loom_sym_operand(e, 0));
    if (k == LOOM_SYM_NE) n += items(c, loom_sym_operand(e, 1)) + 1, put(c, LOOM_VM_SIG_EQ);
    put_const(c, 0);
    put(c, LOOM_VM_SIG_EQ);
    return n + 2;
  }
  uint32_t op;
  switch (k) {
  case LOOM_SYM_ADD: op = LOOM_VM_SIG_ADD; break;
  case LOOM_SYM_MUL: op = LOOM_VM_SIG_MUL; break;
  case LOOM_SYM_FLOORDIV: op = LOOM_VM_SIG_FLOORDIV; break;
  case LOOM_SYM_FLOORMOD: op = LOOM_VM_SIG_FLOORMOD; break;
  case LOOM_SYM_MIN: case LOOM_SYM_AND: op = LOOM_VM_SIG_MIN; break; /* and/or on 0/1 values */
  case LOOM_SYM_MAX: case LOOM_SYM_OR: op = LOOM_VM_SIG_MAX; break;
  case LOOM_SYM_EQ: op = LOOM_VM_SIG_EQ; break;
  case LOOM_SYM_LT: op = LOOM_VM_SIG_LT; break;
  case LOOM_SYM_LE: op = LOOM_VM_SIG_LE; break;
  case LOOM_SYM_SELECT: op = LOOM_VM_SIG_SELECT; break;
  default:
    c->err = LOOM_ERROR(INTERNAL, "program @%s: a buffer dim has a '%s' expression with no signature form", c->tp->name,
                        loom_sym_kind_name(k));
    return 0;
  }
  size_t n = loom_sym_num_operands(e);
  uint32_t count = items(c, loom_sym_operand(e, 0));
  for (size_t i = 1; i < n; i++) {
    count += items(c, loom_sym_operand(e, i));
    if (op != LOOM_VM_SIG_SELECT) put(c, op), count++; /* n-ary: a fold */
  }
  if (op == LOOM_VM_SIG_SELECT) put(c, op), count++;
  return count;
}

loom_status loom_lower_tp_sig(const loom_tp_func *tp, loom_vm_builder *b, loom_lower_words *out) {
  enc c = {tp, out, LOOM_OK};
  for (size_t i = 0; i < tp->nparams; i++) {
    const loom_tp_param *p = &tp->params[i];
    if (!p->is_buffer) continue;
    put(&c, (uint32_t)p->buf->dtype);
    put(&c, (uint32_t)p->buf->ndim);
    for (int d = 0; d < p->buf->ndim && !c.err; d++) {
      size_t at = out->len;
      put(&c, 0); /* the item count, patched */
      uint32_t n = items(&c, p->buf->dims[d]);
      if (!c.err) out->data[at] = n;
      if (!c.err && n > LOOM_VM_SIG_MAX_ITEMS)
        c.err = LOOM_ERROR(UNIMPLEMENTED, "program @%s: buffer '%s' axis %d: its dim expression has %u items (at most %u)",
                           tp->name, p->buf->name, d, n, LOOM_VM_SIG_MAX_ITEMS);
    }
  }
  for (size_t j = 0; j < tp->nsyms; j++) put(&c, loom_vm_builder_str(b, loom_sym_var_name(tp->syms[j])));
  return c.err;
}
