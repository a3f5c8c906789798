/* kernel_sig.c — kernel and extern signatures (vm/exec.h, loom_vm_kernel): checking their
 * words at load, checking the buffers of each call against them, printing them.
 *
 * A kernel indexes its buffers with the symbols it is passed: `linear(A: (m, k),
 * W: (n, k), Y: (m, n); m, n, k)` reads A[i, j] for i < m, j < k. So before every CALLK
 * the VM checks that each buffer tensor has the signature's dtype and exactly the dims its
 * expressions give at the symbols' values (a tensor of another rank, such as a scalar for
 * a (1,) buffer, must have exactly the element count those dims give); then the kernel's
 * loops (over those symbols) stay inside the buffers it was given. Words were checked at load
 * (loom_vm_sig_verify), so evaluation trusts their structure; its arithmetic is checked. */
#include <stdio.h>
#include <string.h>

#include "vm/exec.h"

#define BAD(...) LOOM_ERROR(DATA_LOSS, __VA_ARGS__)

/* Operands each item pops (SYM and CONST push without popping). */
static const uint8_t item_pops[LOOM_VM_SIG_ITEM_COUNT] = {0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3};
static const char *const item_text[LOOM_VM_SIG_ITEM_COUNT] = {"", "", "+", "-", "*", "floordiv", "floormod",
                                                              "min", "max", "==", "<", "<=", "select"};
_Static_assert(sizeof item_pops == LOOM_VM_SIG_ITEM_COUNT, "one entry per item");

/* Operand words that follow item `op`. */
static uint32_t item_words(uint32_t op) { return op == LOOM_VM_SIG_SYM ? 1 : op == LOOM_VM_SIG_CONST ? 2 : 0; }

/* Checks one dim expression at sig[*at]: count, items, operands, stack discipline. */
static loom_status verify_expr(const loom_vm_kernel *k, uint32_t *at, const char *where) {
  if (*at >= k->nsig) return BAD("%s: the signature ends before its dim expression", where);
  uint32_t n = k->sig[(*at)++];
  if (n == 0 || n > LOOM_VM_SIG_MAX_ITEMS) return BAD("%s: dim expression of %u items (1..%u)", where, n, LOOM_VM_SIG_MAX_ITEMS);
  uint32_t depth = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (*at >= k->nsig) return BAD("%s: the signature ends inside a dim expression", where);
    uint32_t op = k->sig[(*at)++];
    if (op >= LOOM_VM_SIG_ITEM_COUNT) return BAD("%s: unknown dim-expression item %u", where, op);
    if (k->nsig - *at < item_words(op)) return BAD("%s: the signature ends inside a dim-expression item", where);
    if (op == LOOM_VM_SIG_SYM && k->sig[*at] >= k->nsym)
      return BAD("%s: symbol %u out of range (the kernel takes %u)", where, k->sig[*at], k->nsym);
    *at += item_words(op);
    if (depth < item_pops[op]) return BAD("%s: dim-expression item %u pops an empty stack", where, i);
    depth = depth - item_pops[op] + 1;
    if (depth > LOOM_VM_SIG_MAX_DEPTH) return BAD("%s: dim expression deeper than %u", where, LOOM_VM_SIG_MAX_DEPTH);
  }
  if (depth != 1) return BAD("%s: dim expression leaves %u values, not 1", where, depth);
  return LOOM_OK;
}

loom_status loom_vm_sig_verify(const loom_vm_exec *e, const loom_vm_kernel *k) {
  uint32_t at = 0;
  char where[96];
  for (uint32_t b = 0; b < k->nbuf; b++) {
    snprintf(where, sizeof where, "signature buffer %u", b);
    if (k->nsig - at < 2) return BAD("%s: the signature ends before it", where);
    uint32_t dt = k->sig[at++], rank = k->sig[at++];
    if (dt >= LOOM_DTYPE_COUNT) return BAD("%s: unknown dtype %u", where, dt);
    if (rank == LOOM_VM_SIG_FLAT) rank = 1;
    else if (rank > LOOM_VM_MAX_RANK) return BAD("%s: rank %u exceeds %d", where, rank, LOOM_VM_MAX_RANK);
    for (uint32_t d = 0; d < rank; d++) {
      snprintf(where, sizeof where, "signature buffer %u axis %u", b, d);
      LOOM_PROPAGATE(verify_expr(k, &at, where));
    }
  }
  if (k->nsig - at != k->nsym)
    return BAD("signature: %u words after the buffers, the kernel's %u symbols need one name each", k->nsig - at, k->nsym);
  for (uint32_t j = 0; j < k->nsym; j++)
    if (k->sig[at + j] >= e->strings_len) return BAD("signature symbol %u: name string %u out of range", j, k->sig[at + j]);
  return LOOM_OK;
}

bool loom_vm_sig_equal(const loom_vm_kernel *k, const uint32_t *sig, uint32_t nsig) {
  return k->nsig == nsig && (nsig == 0 || !memcmp(k->sig, sig, nsig * 4u));
}

/* Skips one (verified) dim expression at w; returns what follows it. */
static const uint32_t *skip_expr(const uint32_t *w) {
  uint32_t n = *w++;
  for (uint32_t i = 0; i < n; i++) w += 1 + item_words(*w);
  return w;
}

void loom_vm_sig_buffer(const loom_vm_kernel *k, uint32_t b, uint32_t *dtype, uint32_t *rank) {
  const uint32_t *w = k->sig;
  for (uint32_t i = 0; i < b; i++) {
    uint32_t r = w[1] == LOOM_VM_SIG_FLAT ? 1 : w[1];
    w += 2;
    for (uint32_t d = 0; d < r; d++) w = skip_expr(w);
  }
  *dtype = w[0], *rank = w[1];
}

/* Evaluates the (verified) expression at *w with checked arithmetic; false on overflow or
 * division by zero. Advances *w past it. */
static bool eval_expr(const uint32_t **pw, const int64_t *syms, int64_t *out) {
  const uint32_t *w = *pw;
  uint32_t n = *w++;
  if (n == 1 && w[0] == LOOM_VM_SIG_SYM) { /* the common cases: a dim is a symbol or a constant */
    *out = syms[w[1]];
    *pw = w + 2;
    return true;
  }
  if (n == 1 && w[0] == LOOM_VM_SIG_CONST) {
    *out = (int64_t)((uint64_t)w[1] | (uint64_t)w[2] << 32);
    *pw = w + 3;
    return true;
  }
  int64_t st[LOOM_VM_SIG_MAX_DEPTH];
  uint32_t sp = 0;
  bool ok = true;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t op = *w++;
    if (op == LOOM_VM_SIG_SYM) {
      st[sp++] = syms[*w++];
      continue;
    }
    if (op == LOOM_VM_SIG_CONST) {
      st[sp++] = (int64_t)((uint64_t)w[0] | (uint64_t)w[1] << 32);
      w += 2;
      continue;
    }
    int64_t b = st[--sp], a = st[--sp], r = 0;
    switch ((loom_vm_sig_item)op) {
    case LOOM_VM_SIG_ADD: ok &= !__builtin_add_overflow(a, b, &r); break;
    case LOOM_VM_SIG_SUB: ok &= !__builtin_sub_overflow(a, b, &r); break;
    case LOOM_VM_SIG_MUL: ok &= !__builtin_mul_overflow(a, b, &r); break;
    case LOOM_VM_SIG_FLOORDIV:
    case LOOM_VM_SIG_FLOORMOD:
      if (b == 0 || (a == INT64_MIN && b == -1)) {
        ok = false;
        break;
      }
      r = op == LOOM_VM_SIG_FLOORDIV ? a / b : a % b;
      if (a % b != 0 && ((a % b < 0) != (b < 0))) r = op == LOOM_VM_SIG_FLOORDIV ? r - 1 : r + b;
      break;
    case LOOM_VM_SIG_MIN: r = a < b ? a : b; break;
    case LOOM_VM_SIG_MAX: r = a > b ? a : b; break;
    case LOOM_VM_SIG_EQ: r = a == b; break;
    case LOOM_VM_SIG_LT: r = a < b; break;
    case LOOM_VM_SIG_LE: r = a <= b; break;
    case LOOM_VM_SIG_SELECT: r = st[--sp] != 0 ? a : b; break;
    default: ok = false; break;
    }
    st[sp++] = r;
  }
  *pw = w;
  *out = st[0];
  return ok;
}

bool loom_vm_sig_eval_dims(const loom_vm_kernel *k, uint32_t b, const int64_t *syms, int64_t *dims, uint32_t *rank) {
  const uint32_t *w = k->sig;
  for (uint32_t i = 0; i < b; i++) {
    uint32_t r = w[1] == LOOM_VM_SIG_FLAT ? 1 : w[1];
    w += 2;
    for (uint32_t d = 0; d < r; d++) w = skip_expr(w);
  }
  *rank = w[1];
  uint32_t n = w[1] == LOOM_VM_SIG_FLAT ? 1 : w[1];
  w += 2;
  for (uint32_t d = 0; d < n; d++)
    if (!eval_expr(&w, syms, &dims[d])) return false;
  return true;
}

/* Appends expression *pw (verified) as text, symbols by name; advances *pw. */
static void format_expr(const loom_vm_exec *e, const loom_vm_kernel *k, const uint32_t **pw, loom_strbuf *sb) {
  const uint32_t *w = *pw;
  uint32_t n = *w++;
  char st[LOOM_VM_SIG_MAX_DEPTH][96];
  uint32_t sp = 0;
  const uint32_t *names = k->sig + k->nsig - k->nsym;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t op = *w++;
    if (op == LOOM_VM_SIG_SYM) {
      snprintf(st[sp++], sizeof st[0], "%s", loom_vm_exec_str(e, names[*w++]));
    } else if (op == LOOM_VM_SIG_CONST) {
      snprintf(st[sp++], sizeof st[0], "%lld", (long long)(int64_t)((uint64_t)w[0] | (uint64_t)w[1] << 32));
      w += 2;
    } else if (op == LOOM_VM_SIG_SELECT) {
      char r[96];
      snprintf(r, sizeof r, "select(%s, %s, %s)", st[sp - 3], st[sp - 2], st[sp - 1]);
      sp -= 2;
      memcpy(st[sp - 1], r, sizeof r);
    } else {
      char r[96];
      const char *t = item_text[op];
      if (op >= LOOM_VM_SIG_FLOORDIV && op <= LOOM_VM_SIG_MAX) snprintf(r, sizeof r, "%s(%s, %s)", t, st[sp - 2], st[sp - 1]);
      else snprintf(r, sizeof r, "(%s %s %s)", st[sp - 2], t, st[sp - 1]);
      sp -= 1;
      memcpy(st[sp - 1], r, sizeof r);
    }
  }
  *pw = w;
  loom_strbuf_puts(sb, sp ? st[0] : "?");
}

void loom_vm_sig_format(const loom_vm_exec *e, const loom_vm_kernel *k, loom_strbuf *sb) {
  const uint32_t *w = k->sig;
  loom_strbuf_putc(sb, '(');
  for (uint32_t b = 0; b < k->nbuf; b++) {
    uint32_t dt = w[0], rank = w[1];
    w += 2;
    loom_strbuf_printf(sb, "%s%s%c", b ? ", " : "", loom_dtype_name((loom_dtype)dt), rank == LOOM_VM_SIG_FLAT ? '[' : '(');
    for (uint32_t d = 0; d < (rank == LOOM_VM_SIG_FLAT ? 1 : rank); d++) {
      if (d) loom_strbuf_puts(sb, ", ");
      format_expr(e, k, &w, sb);
    }
    loom_strbuf_putc(sb, rank == LOOM_VM_SIG_FLAT ? ']' : ')');
  }
  loom_strbuf_puts(sb, k->nsym ? "; " : "");
  for (uint32_t j = 0; j < k->nsym; j++) loom_strbuf_printf(sb, "%s%s", j ? ", " : "", loom_vm_exec_str(e, w[j]));
  loom_strbuf_putc(sb, ')');
}

/* The error for buffer b of a call, axis `ax` (-1: dtype or rank; -2: element count). */
static loom_status mismatch(const loom_vm_exec *e, const loom_vm_kernel *k, bool is_extern, uint32_t b,
                            const loom_tensor *t, int ax, int64_t want, bool overflow) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_vm_sig_format(e, k, &sb);
  loom_strbuf shape;
  loom_strbuf_init(&shape, NULL);
  for (int32_t d = 0; d < t->rank; d++) loom_strbuf_printf(&shape, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  const char *kind = is_extern ? "extern" : "kernel";
  const char *name = loom_vm_exec_str(e, k->name);
  loom_status st;
  if (overflow)
    st = LOOM_ERROR(OUT_OF_RANGE, "%s '%s' buffer %u: a dim of its signature %s overflows or divides by zero at these symbols",
                    kind, name, b, loom_strbuf_cstr(&sb));
  else if (ax == -1)
    st = LOOM_ERROR(TYPE_ERROR, "%s '%s' buffer %u is %s(%s), its signature %s needs another dtype or rank", kind, name, b,
                    loom_dtype_name(t->dtype), loom_strbuf_cstr(&shape), loom_strbuf_cstr(&sb));
  else if (ax == -2)
    st = LOOM_ERROR(TYPE_ERROR, "%s '%s' buffer %u is %s(%s), its signature %s needs %lld elements", kind, name, b,
                    loom_dtype_name(t->dtype), loom_strbuf_cstr(&shape), loom_strbuf_cstr(&sb), (long long)want);
  else
    st = LOOM_ERROR(TYPE_ERROR, "%s '%s' buffer %u axis %d is %lld, its signature %s gives %lld at the symbols passed",
                    kind, name, b, ax, (long long)t->shape[ax], loom_strbuf_cstr(&sb), (long long)want);
  loom_strbuf_free(&sb);
  loom_strbuf_free(&shape);
  return st;
}

loom_status loom_vm_sig_check_call(const loom_vm_exec *e, const loom_vm_kernel *k, bool is_extern, loom_tensor *const *bufs,
                                   const int64_t *syms) {
  const uint32_t *w = k->sig;
  for (uint32_t b = 0; b < k->nbuf; b++) {
    const loom_tensor *t = bufs[b];
    uint32_t dt = w[0], rank = w[1];
    w += 2;
    int64_t v;
    if (rank == LOOM_VM_SIG_FLAT) {
      if ((uint32_t)t->dtype != dt) return mismatch(e, k, is_extern, b, t, -1, 0, false);
      if (!eval_expr(&w, syms, &v)) return mismatch(e, k, is_extern, b, t, 0, 0, true);
      if (v < 0 || (uint64_t)v != loom_tensor_numel(t)) return mismatch(e, k, is_extern, b, t, -2, v, false);
      continue;
    }
    if ((uint32_t)t->dtype != dt) return mismatch(e, k, is_extern, b, t, -1, 0, false);
    if ((uint32_t)t->rank == rank) {
      for (uint32_t d = 0; d < rank; d++) {
        if (!eval_expr(&w, syms, &v)) return mismatch(e, k, is_extern, b, t, (int)d, 0, true);
        if (t->shape[d] != v) return mismatch(e, k, is_extern, b, t, (int)d, v, false);
      }
      continue;
    }
    /* another rank (a scalar for a (1,) buffer): the same elements, dense */
    int64_t count = 1;
    for (uint32_t d = 0; d < rank; d++) {
      if (!eval_expr(&w, syms, &v) || v < 0 || __builtin_mul_overflow(count, v, &count))
        return mismatch(e, k, is_extern, b, t, (int)d, 0, true);
    }
    if ((uint64_t)count != loom_tensor_numel(t)) return mismatch(e, k, is_extern, b, t, -2, count, false);
  }
  return LOOM_OK;
}
