/* verify.c — checks a whole executable once, at load, so the interpreter can trust it:
 * every index in range (strings, constants, registers, functions, kernels, lists, jump
 * targets), register kinds agree with what each operand needs, call and kernel
 * signatures match (kernel_sig.c checks the signatures' words), reserved bits are zero,
 * no function can run off its end, and, through the data flow of verify_flow.c, every
 * register use against its definitions and every kernel operand's dtype and rank. */
#include <string.h>

#include "vm/exec.h"
#include "vm/vm_internal.h"

#define BAD(...) LOOM_ERROR(DATA_LOSS, __VA_ARGS__)

const loom_vm_opinfo loom_vm_opinfo_table[LOOM_VM_OP_COUNT] = {
#define LOOM_OP(name, a, b, c, doc) {#name, a, b, c, doc},
#include "vm/opcodes.def"
#undef LOOM_OP
};
const loom_vm_builtininfo loom_vm_builtin_table[LOOM_VM_BUILTIN_COUNT] = {
#define LOOM_BUILTIN(name, nobj, nint, doc) {#name, nobj, nint, doc},
#include "vm/builtins.def"
#undef LOOM_BUILTIN
};

static bool str_ok(const loom_vm_exec *e, uint32_t s) { return s < e->strings_len; }

/* Checks operand `v` of kind `k`; `what` names the operand ("A"). */
static loom_status operand(const loom_vm_exec *e, const loom_vm_func *f, char k, uint32_t v, const char *what) {
  uint32_t lim = 0;
  const char *tbl = NULL;
  switch (k) {
  case '-':
    if (v != 0) return BAD("operand %s is %u, must be 0", what, v);
    return LOOM_OK;
  case 'x': case 'U': return LOOM_OK;
  case 'R': case 'T': case 'S': case 'P':
    if (v >= f->nobj) return BAD("operand %s: object register r%u out of range (function has %u)", what, v, f->nobj);
    if (k != 'R') {
      uint32_t want = k == 'T' ? LOOM_VM_OBJ_TENSOR : k == 'S' ? LOOM_VM_OBJ_STORAGE : LOOM_VM_OBJ_TUPLE;
      if (f->obj_kinds[v] != want)
        return BAD("operand %s: register r%u is declared %s, needs %s", what, v, loom_vm_obj_kind_name(f->obj_kinds[v]),
                   loom_vm_obj_kind_name(want));
    }
    return LOOM_OK;
  case 'I': lim = f->nint, tbl = "int register"; break;
  case 'F': lim = e->nfuncs, tbl = "function"; break;
  case 'N': lim = e->nkernels, tbl = "kernel"; break;
  case 'E': lim = e->nexterns, tbl = "extern"; break;
  case 'B': lim = LOOM_VM_BUILTIN_COUNT, tbl = "builtin"; break;
  case 'K': lim = e->nintconsts, tbl = "int constant"; break;
  case 'C': lim = e->nconsts, tbl = "tensor constant"; break;
  case 'J': lim = f->ncode, tbl = "jump target"; break;
  case 'L': lim = f->nlists, tbl = "list offset"; break;
  default: return BAD("operand %s has unknown kind '%c'", what, k);
  }
  if (v >= lim) return BAD("operand %s: %s %u out of range (%u)", what, tbl, v, lim);
  return LOOM_OK;
}

/* A bounded reader over the function's list pool. */
typedef struct lrd {
  const loom_vm_func *f;
  uint32_t at;
} lrd;

static loom_status word(lrd *r, uint32_t *out) {
  if (r->at >= r->f->nlists) return BAD("operand list runs past the end of the list pool (%u words)", r->f->nlists);
  *out = r->f->lists[r->at++];
  return LOOM_OK;
}

static loom_status reg_list(const loom_vm_exec *e, const loom_vm_func *f, lrd *r, char kind, uint32_t n, const char *what) {
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v;
    LOOM_PROPAGATE(word(r, &v));
    LOOM_RETURN_IF_ERROR(operand(e, f, kind, v, what), "in list item %u", i);
  }
  return LOOM_OK;
}

static loom_status counted(const loom_vm_exec *e, const loom_vm_func *f, lrd *r, char kind, uint32_t expect,
                           const char *what) {
  uint32_t n;
  LOOM_PROPAGATE(word(r, &n));
  if (expect != LOOM_VM_NONE && n != expect) return BAD("%s: %u given, signature needs %u", what, n, expect);
  if (n > LOOM_VM_MAX_CALL_ARGS) return BAD("%s: %u exceeds %u", what, n, LOOM_VM_MAX_CALL_ARGS);
  return reg_list(e, f, r, kind, n, what);
}

static loom_status verify_list(const loom_vm_exec *e, const loom_vm_func *f, loom_vm_op op, uint32_t a, uint32_t off) {
  lrd r = {f, off};
  uint32_t w, n;
  switch (op) {
  case LOOM_VM_OP_MATCH:
  case LOOM_VM_OP_MATCHV: {
    LOOM_PROPAGATE(word(&r, &w));
    if (!str_ok(e, w)) return BAD("pattern input name string %u out of range", w);
    LOOM_PROPAGATE(word(&r, &w));
    if (w != LOOM_VM_ANY_DTYPE && w >= LOOM_DTYPE_COUNT) return BAD("pattern dtype %u unknown", w);
    uint32_t rank;
    LOOM_PROPAGATE(word(&r, &rank));
    if (rank > LOOM_VM_MAX_RANK) return BAD("pattern rank %u exceeds %d", rank, LOOM_VM_MAX_RANK);
    for (uint32_t ax = 0; ax < rank; ax++) {
      uint32_t kind, v;
      LOOM_PROPAGATE(word(&r, &kind));
      switch (kind) {
      case LOOM_VM_AXIS_ANY: break;
      case LOOM_VM_AXIS_CONST:
        LOOM_PROPAGATE(word(&r, &v));
        if (v >= e->nintconsts) return BAD("pattern axis %u: int constant %u out of range", ax, v);
        break;
      case LOOM_VM_AXIS_BIND:
      case LOOM_VM_AXIS_AFFINE:
        LOOM_PROPAGATE(word(&r, &v));
        if (v >= f->nint) return BAD("pattern axis %u: int register i%u out of range", ax, v);
        LOOM_PROPAGATE(word(&r, &v));
        if (kind == LOOM_VM_AXIS_BIND && (int32_t)v <= 0) return BAD("pattern axis %u: coefficient %d must be positive", ax, (int32_t)v);
        LOOM_PROPAGATE(word(&r, &v));
        break;
      case LOOM_VM_AXIS_EXPR:
        LOOM_PROPAGATE(word(&r, &v));
        if (v >= f->nint) return BAD("pattern axis %u: int register i%u out of range", ax, v);
        LOOM_PROPAGATE(word(&r, &v));
        if (!str_ok(e, v)) return BAD("pattern axis %u: text string %u out of range", ax, v);
        LOOM_PROPAGATE(word(&r, &n));
        if (n > LOOM_VM_MAX_RANK) return BAD("pattern axis %u: %u vars exceed %d", ax, n, LOOM_VM_MAX_RANK);
        LOOM_PROPAGATE(reg_list(e, f, &r, 'I', n, "pattern var"));
        break;
      default: return BAD("pattern axis %u: unknown item kind %u", ax, kind);
      }
    }
    return LOOM_OK;
  }
  case LOOM_VM_OP_SHAPE: return counted(e, f, &r, 'I', LOOM_VM_NONE, "shape dims");
  case LOOM_VM_OP_RESHAPE:
    LOOM_PROPAGATE(word(&r, &w));
    LOOM_RETURN_IF_ERROR(operand(e, f, 'T', w, "source"), "in RESHAPE list");
    LOOM_PROPAGATE(word(&r, &n));
    if (n > LOOM_VM_MAX_RANK) return BAD("rank %u exceeds %d", n, LOOM_VM_MAX_RANK);
    return reg_list(e, f, &r, 'I', n, "dim");
  case LOOM_VM_OP_CHECK:
    LOOM_PROPAGATE(word(&r, &w));
    if (!str_ok(e, w)) return BAD("check message string %u out of range", w);
    return counted(e, f, &r, 'I', LOOM_VM_NONE, "check values");
  case LOOM_VM_OP_VIEW:
    LOOM_PROPAGATE(word(&r, &w));
    LOOM_RETURN_IF_ERROR(operand(e, f, 'S', w, "storage"), "in VIEW list");
    __attribute__((fallthrough));

  case LOOM_VM_OP_EMPTY:
    LOOM_PROPAGATE(word(&r, &w));
    if (w >= LOOM_DTYPE_COUNT) return BAD("dtype %u unknown", w);
    LOOM_PROPAGATE(word(&r, &w));
    if (op == LOOM_VM_OP_VIEW) LOOM_PROPAGATE(operand(e, f, 'I', w, "offset"));
    else if (w != 0) return BAD("device %u unknown (only 0, the CPU, exists)", w);
    LOOM_PROPAGATE(word(&r, &n));
    if (n > LOOM_VM_MAX_RANK) return BAD("rank %u exceeds %d", n, LOOM_VM_MAX_RANK);
    return reg_list(e, f, &r, 'I', n, "dim");
  case LOOM_VM_OP_TUPLE: return counted(e, f, &r, 'R', LOOM_VM_NONE, "tuple items");
  case LOOM_VM_OP_CALL: {
    LOOM_PROPAGATE(word(&r, &w));
    if (w >= e->nfuncs) return BAD("callee function %u out of range (%u)", w, e->nfuncs);
    const loom_vm_func *g = &e->funcs[w];
    LOOM_PROPAGATE(counted(e, f, &r, 'T', g->nparams, "call tensor arguments"));
    return counted(e, f, &r, 'I', g->nint_params, "call int arguments");
  }
  case LOOM_VM_OP_CALLK:
  case LOOM_VM_OP_CALLX: {
    const loom_vm_kernel *k = op == LOOM_VM_OP_CALLK ? &e->kernels[a] : &e->externs[a];
    LOOM_RETURN_IF_ERROR(counted(e, f, &r, 'T', k->nbuf, "buffers"), "calling '%s'", loom_vm_exec_str(e, k->name));
    LOOM_RETURN_IF_ERROR(counted(e, f, &r, 'I', k->nsym, "symbols"), "calling '%s'", loom_vm_exec_str(e, k->name));
    return LOOM_OK;
  }
  case LOOM_VM_OP_CALLB: {
    const loom_vm_builtininfo *bi = &loom_vm_builtin_table[a];
    bool list = a >= LOOM_VM_BUILTIN_LIST_EMPTY && a <= LOOM_VM_BUILTIN_LIST_SELECT; /* lists and their items */
    char ok = (a == LOOM_VM_BUILTIN_PRINT || a == LOOM_VM_BUILTIN_HOSTOP || list) ? 'R' : 'T';
    LOOM_RETURN_IF_ERROR(counted(e, f, &r, ok, bi->nobj, "objects"), "calling builtin %s", bi->name);
    LOOM_RETURN_IF_ERROR(counted(e, f, &r, 'I', bi->nint, "ints"), "calling builtin %s", bi->name);
    return LOOM_OK;
  }
  default: return LOOM_OK;
  }
}

loom_status loom_vm_verify_insn(const loom_vm_exec *e, const loom_vm_func *f, uint32_t pc) {
  loom_vm_insn in = f->code[pc];
  uint32_t op = LOOM_VM_OP(in);
  if (op >= LOOM_VM_OP_COUNT) return BAD("unknown opcode %u", op);
  if (LOOM_VM_PAD(in)) return BAD("reserved bits are 0x%02x, must be 0", LOOM_VM_PAD(in));
  const loom_vm_opinfo *oi = &loom_vm_opinfo_table[op];
  LOOM_PROPAGATE(operand(e, f, oi->a, LOOM_VM_A(in), "A"));
  if (oi->c == 'x') {
    LOOM_PROPAGATE(operand(e, f, oi->b, LOOM_VM_BX(in), "Bx"));
  } else {
    LOOM_PROPAGATE(operand(e, f, oi->b, LOOM_VM_B(in), "B"));
    LOOM_PROPAGATE(operand(e, f, oi->c, LOOM_VM_C(in), "C"));
  }
  uint32_t a = LOOM_VM_A(in), b = LOOM_VM_B(in);
  /* kind agreement of moves */
  if (op == LOOM_VM_OP_MOV && f->obj_kinds[a] != LOOM_VM_OBJ_ANY && f->obj_kinds[a] != f->obj_kinds[b])
    return BAD("MOV r%u (%s) := r%u (%s): kinds differ", a, loom_vm_obj_kind_name(f->obj_kinds[a]), b,
               loom_vm_obj_kind_name(f->obj_kinds[b]));
  if (op == LOOM_VM_OP_ALLOC && LOOM_VM_C(in) != 0)
    return BAD("ALLOC on device %u: only device 0 (the CPU) exists", LOOM_VM_C(in));
  if (oi->b == 'L') LOOM_PROPAGATE(verify_list(e, f, (loom_vm_op)op, a, LOOM_VM_BX(in)));
  if (op == LOOM_VM_OP_CALLB && a == LOOM_VM_BUILTIN_COPY) {
    /* output register must be a tensor register: checked by the list kinds */
  }
  return LOOM_OK;
}

static loom_status verify_func(const loom_vm_exec *e, uint32_t fi) {
  const loom_vm_func *f = &e->funcs[fi];
  if (!str_ok(e, f->name)) return BAD("name string %u out of range", f->name);
  for (uint32_t i = 0; i < f->nobj; i++)
    if (f->obj_kinds[i] >= LOOM_VM_OBJ_KIND_COUNT) return BAD("register r%u has unknown kind %u", i, f->obj_kinds[i]);
  for (uint32_t i = 0; i < f->nint; i++)
    if (f->int_names[i] != LOOM_VM_NONE && f->int_names[i] >= e->nsymvars)
      return BAD("int register i%u names symbolic var %u, out of range (%u)", i, f->int_names[i], e->nsymvars);
  for (uint32_t p = 0; p < f->nparams; p++) {
    const loom_vm_param *pr = &f->params[p];
    if (f->obj_kinds[p] != LOOM_VM_OBJ_TENSOR && f->obj_kinds[p] != LOOM_VM_OBJ_LIST)
      return BAD("parameter %u: register r%u is not a tensor or list register", p, p);
    if (!str_ok(e, pr->name)) return BAD("parameter %u: name string out of range", p);
    if (pr->dtype != LOOM_VM_ANY_DTYPE && pr->dtype >= LOOM_DTYPE_COUNT) return BAD("parameter %u: unknown dtype %u", p, pr->dtype);
    for (uint32_t d = 0; d < pr->rank; d++)
      if (!str_ok(e, pr->dims[d])) return BAD("parameter %u axis %u: dim string out of range", p, d);
  }
  for (uint32_t i = 0; i < f->ndebug; i++) {
    if (f->debug[i].pc >= f->ncode || (i && f->debug[i].pc <= f->debug[i - 1].pc))
      return BAD("debug entry %u: pc %u out of range or out of order", i, f->debug[i].pc);
    if (!str_ok(e, f->debug[i].text)) return BAD("debug entry %u: text string out of range", i);
  }
  if (f->ncode == 0) return BAD("function has no instructions");
  for (uint32_t pc = 0; pc < f->ncode; pc++)
    LOOM_RETURN_IF_ERROR(loom_vm_verify_insn(e, f, pc), "at instruction %u (%s)", pc,
                         LOOM_VM_OP(f->code[pc]) < LOOM_VM_OP_COUNT ? loom_vm_opinfo_table[LOOM_VM_OP(f->code[pc])].name : "?");
  loom_vm_op last = LOOM_VM_OP(f->code[f->ncode - 1]);
  if (last != LOOM_VM_OP_RET && last != LOOM_VM_OP_JMP)
    return BAD("the last instruction (%u) is %s: execution could run off the end", f->ncode - 1, loom_vm_opinfo_table[last].name);
  return loom_vm_verify_flow(e, f);
}

loom_status loom_vm_exec_verify(const loom_vm_exec *e) {
  if (e->strings_len == 0 || e->strings[e->strings_len - 1] != '\0')
    return BAD("in section STRINGS: the table is empty or not NUL-terminated");
  for (uint32_t i = 0; i < e->nsymvars; i++)
    if (!str_ok(e, e->symvars[i])) return BAD("in section SYMVARS record %u: string %u out of range", i, e->symvars[i]);
  for (uint32_t i = 0; i < e->nconsts; i++) {
    const loom_vm_const *c = &e->consts[i];
    size_t nb;
    if (!str_ok(e, c->name)) return BAD("in section CONSTS record %u: name string out of range", i);
    if (c->dtype >= LOOM_DTYPE_COUNT) return BAD("in section CONSTS record %u: unknown dtype %u", i, c->dtype);
    loom_status st = loom_tensor_nbytes((loom_dtype)c->dtype, (int32_t)c->rank, c->dims, &nb);
    if (st) return loom_status_annotate(st, __FILE__, __LINE__, "in section CONSTS record %u", i);
    if (nb != c->nbytes || c->offset % 64 || c->offset > e->data_len || c->nbytes > e->data_len - c->offset)
      return BAD("in section CONSTS record %u: %llu bytes at offset %llu do not match its shape or lie outside DATA (%llu bytes)",
                 i, (unsigned long long)c->nbytes, (unsigned long long)c->offset, (unsigned long long)e->data_len);
  }
  for (uint32_t s = 0; s < 2; s++) {
    const loom_vm_kernel *k = s ? e->externs : e->kernels;
    uint32_t n = s ? e->nexterns : e->nkernels;
    for (uint32_t i = 0; i < n; i++) {
      if (!str_ok(e, k[i].name)) return BAD("in section %s record %u: name string out of range", s ? "EXTERNS" : "KERNELS", i);
      if (k[i].nbuf > LOOM_VM_MAX_CALL_ARGS || k[i].nsym > LOOM_VM_MAX_CALL_ARGS)
        return BAD("in section %s record %u: %u buffers / %u symbols exceed %u", s ? "EXTERNS" : "KERNELS", i, k[i].nbuf,
                   k[i].nsym, LOOM_VM_MAX_CALL_ARGS);
      LOOM_RETURN_IF_ERROR(loom_vm_sig_verify(e, &k[i]), "in section %s record %u ('%s')", s ? "EXTERNS" : "KERNELS", i,
                           loom_vm_exec_str(e, k[i].name));
    }
  }
  for (uint32_t i = 0; i < e->nfuncs; i++)
    LOOM_RETURN_IF_ERROR(verify_func(e, i), "in section FUNCS record %u (function '%s')", i,
                         loom_vm_exec_str(e, e->funcs[i].name));
  return LOOM_OK;
}
