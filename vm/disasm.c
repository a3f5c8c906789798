/* disasm.c — human-readable listing of an executable (`loom disasm FILE`; docs/vm.md). */
#include <string.h>

#include "vm/exec.h"

static void reg(const loom_vm_func *f, char kind, uint32_t v, loom_strbuf *sb) {
  (void)f;
  if (kind == 'I') loom_strbuf_printf(sb, "i%u", v);
  else loom_strbuf_printf(sb, "r%u", v);
}

static void regs(const loom_vm_func *f, char kind, const uint32_t *l, uint32_t n, loom_strbuf *sb) {
  for (uint32_t i = 0; i < n; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    reg(f, kind, l[i], sb);
  }
}

static const char *dtname(uint32_t d) {
  return d == LOOM_VM_ANY_DTYPE ? "any" : d < LOOM_DTYPE_COUNT ? loom_dtype_name((loom_dtype)d) : "?";
}

static void list_text(const loom_vm_exec *e, const loom_vm_func *f, loom_vm_op op, uint32_t a, uint32_t off,
                      loom_strbuf *sb) {
  const uint32_t *l = f->lists + off;
  switch (op) {
  case LOOM_VM_OP_MATCH:
  case LOOM_VM_OP_MATCHV: {
    loom_strbuf_printf(sb, "'%s' %s(", loom_vm_exec_str(e, l[0]), dtname(l[1]));
    uint32_t rank = l[2];
    l += 3;
    for (uint32_t ax = 0; ax < rank; ax++) {
      if (ax) loom_strbuf_puts(sb, ", ");
      switch (l[0]) {
      case LOOM_VM_AXIS_ANY: loom_strbuf_puts(sb, "?"); l += 1; break;
      case LOOM_VM_AXIS_CONST: loom_strbuf_printf(sb, "%lld", (long long)e->intconsts[l[1]]); l += 2; break;
      case LOOM_VM_AXIS_BIND:
      case LOOM_VM_AXIS_AFFINE: {
        int32_t k = (int32_t)l[2], c = (int32_t)l[3];
        if (l[0] == LOOM_VM_AXIS_BIND) loom_strbuf_puts(sb, "bind ");
        if (k != 1) loom_strbuf_printf(sb, "%d*", k);
        loom_strbuf_printf(sb, "i%u", l[1]);
        if (c) loom_strbuf_printf(sb, " %c %lld", c > 0 ? '+' : '-', c > 0 ? (long long)c : -(long long)c);
        l += 4;
        break;
      }
      default:
        loom_strbuf_printf(sb, "i%u \"%s\"", l[1], loom_vm_exec_str(e, l[2]));
        l += 4 + l[3];
        break;
      }
    }
    loom_strbuf_puts(sb, ")");
    return;
  }
  case LOOM_VM_OP_RESHAPE:
    loom_strbuf_printf(sb, "r%u as (", l[0]);
    regs(f, 'I', l + 2, l[1], sb);
    loom_strbuf_puts(sb, ")");
    return;
  case LOOM_VM_OP_CHECK:
    loom_strbuf_printf(sb, "\"%s\" (", loom_vm_exec_str(e, l[0]));
    regs(f, 'I', l + 2, l[1], sb);
    loom_strbuf_puts(sb, ")");
    return;
  case LOOM_VM_OP_SHAPE:
  case LOOM_VM_OP_TUPLE:
    loom_strbuf_puts(sb, "(");
    regs(f, op == LOOM_VM_OP_SHAPE ? 'I' : 'R', l + 1, l[0], sb);
    loom_strbuf_puts(sb, ")");
    return;
  case LOOM_VM_OP_VIEW:
    loom_strbuf_printf(sb, "r%u + i%u as %s(", l[0], l[2], dtname(l[1]));
    regs(f, 'I', l + 4, l[3], sb);
    loom_strbuf_puts(sb, ")");
    return;
  case LOOM_VM_OP_EMPTY:
    loom_strbuf_printf(sb, "%s(", dtname(l[0]));
    regs(f, 'I', l + 3, l[2], sb);
    loom_strbuf_printf(sb, ") on device %u", l[1]);
    return;
  case LOOM_VM_OP_CALL:
    loom_strbuf_printf(sb, "%s(", loom_vm_exec_str(e, e->funcs[l[0]].name));
    regs(f, 'R', l + 2, l[1], sb);
    if (l[2 + l[1]]) {
      loom_strbuf_puts(sb, "; ");
      regs(f, 'I', l + 3 + l[1], l[2 + l[1]], sb);
    }
    loom_strbuf_puts(sb, ")");
    return;
  default: { /* CALLK, CALLX, CALLB */
    const char *name = op == LOOM_VM_OP_CALLK   ? loom_vm_exec_str(e, e->kernels[a].name)
                       : op == LOOM_VM_OP_CALLX ? loom_vm_exec_str(e, e->externs[a].name)
                                                : loom_vm_builtin_table[a].name;
    loom_strbuf_printf(sb, "%s(", name);
    regs(f, 'R', l + 1, l[0], sb);
    loom_strbuf_puts(sb, "; ");
    regs(f, 'I', l + 2 + l[0], l[1 + l[0]], sb);
    loom_strbuf_puts(sb, ")");
    return;
  }
  }
}

void loom_vm_insn_format(const loom_vm_exec *e, const loom_vm_func *f, uint32_t pc, loom_strbuf *sb) {
  if (pc >= f->ncode) {
    loom_strbuf_puts(sb, "?");
    return;
  }
  loom_vm_insn in = f->code[pc];
  loom_vm_op op = LOOM_VM_OP(in);
  if (op >= LOOM_VM_OP_COUNT) {
    loom_strbuf_printf(sb, "<bad opcode %u>", (unsigned)op);
    return;
  }
  const loom_vm_opinfo *oi = &loom_vm_opinfo_table[op];
  loom_strbuf_printf(sb, "%-9s", oi->name);
  char kinds[3] = {oi->a, oi->b, oi->c};
  uint32_t vals[3] = {LOOM_VM_A(in), oi->c == 'x' ? LOOM_VM_BX(in) : LOOM_VM_B(in), LOOM_VM_C(in)};
  bool first = true;
  for (int i = 0; i < 3; i++) {
    char k = kinds[i];
    uint32_t v = vals[i];
    if (k == '-' || k == 'x' || k == 'N' || k == 'E' || k == 'B') continue;
    loom_strbuf_puts(sb, first ? " " : ", ");
    first = false;
    switch (k) {
    case 'R': case 'T': case 'S': case 'P': loom_strbuf_printf(sb, "r%u", v); break;
    case 'I': loom_strbuf_printf(sb, "i%u", v); break;
    case 'U': loom_strbuf_printf(sb, "%u", v); break;
    case 'K': loom_strbuf_printf(sb, "%lld", v < e->nintconsts ? (long long)e->intconsts[v] : 0LL); break;
    case 'C': loom_strbuf_printf(sb, "const %u '%s'", v, v < e->nconsts ? loom_vm_exec_str(e, e->consts[v].name) : "?"); break;
    case 'J': loom_strbuf_printf(sb, "-> %u", v); break;
    case 'L': list_text(e, f, op, LOOM_VM_A(in), v, sb); break;
    default: loom_strbuf_printf(sb, "%u", v); break;
    }
  }
}

static void param_text(const loom_vm_exec *e, const loom_vm_param *p, loom_strbuf *sb) {
  loom_strbuf_printf(sb, "%s: %s(", loom_vm_exec_str(e, p->name), dtname(p->dtype));
  for (uint32_t d = 0; d < p->rank; d++) loom_strbuf_printf(sb, "%s%s", d ? ", " : "", loom_vm_exec_str(e, p->dims[d]));
  loom_strbuf_puts(sb, ")");
}

void loom_vm_exec_disasm(const loom_vm_exec *e, loom_strbuf *sb) {
  loom_strbuf_printf(sb, "; loom executable, format version %u\n", LOOM_VM_FORMAT_VERSION);
  loom_strbuf_puts(sb, "symvars:");
  for (uint32_t i = 0; i < e->nsymvars; i++) loom_strbuf_printf(sb, " %s", loom_vm_exec_str(e, e->symvars[i]));
  loom_strbuf_puts(sb, "\n");
  for (uint32_t i = 0; i < e->nconsts; i++) {
    const loom_vm_const *c = &e->consts[i];
    loom_strbuf_printf(sb, "const %u '%s': %s(", i, loom_vm_exec_str(e, c->name), dtname(c->dtype));
    for (uint32_t d = 0; d < c->rank; d++) loom_strbuf_printf(sb, "%s%lld", d ? ", " : "", (long long)c->dims[d]);
    loom_strbuf_printf(sb, ") at data+%llu, %llu bytes\n", (unsigned long long)c->offset, (unsigned long long)c->nbytes);
  }
  for (uint32_t i = 0; i < e->nkernels; i++) {
    loom_strbuf_printf(sb, "kernel %u '%s': %u buffers, %u symbols ", i, loom_vm_exec_str(e, e->kernels[i].name),
                       e->kernels[i].nbuf, e->kernels[i].nsym);
    loom_vm_sig_format(e, &e->kernels[i], sb);
    loom_strbuf_putc(sb, '\n');
  }
  for (uint32_t i = 0; i < e->nexterns; i++) {
    loom_strbuf_printf(sb, "extern %u '%s': %u buffers, %u symbols ", i, loom_vm_exec_str(e, e->externs[i].name),
                       e->externs[i].nbuf, e->externs[i].nsym);
    loom_vm_sig_format(e, &e->externs[i], sb);
    loom_strbuf_putc(sb, '\n');
  }
  for (uint32_t fi = 0; fi < e->nfuncs; fi++) {
    const loom_vm_func *f = &e->funcs[fi];
    loom_strbuf_printf(sb, "\nfunc %u %s(", fi, loom_vm_exec_str(e, f->name));
    for (uint32_t p = 0; p < f->nparams; p++) {
      if (p) loom_strbuf_puts(sb, ", ");
      param_text(e, &f->params[p], sb);
    }
    for (uint32_t p = 0; p < f->nint_params; p++) loom_strbuf_printf(sb, "%si%u: int", (p || f->nparams) ? ", " : "", p);
    loom_strbuf_printf(sb, ")  ; %u object regs, %u int regs\n", f->nobj, f->nint);
    loom_strbuf_puts(sb, "  ; regs:");
    for (uint32_t r = f->nparams; r < f->nobj; r++) loom_strbuf_printf(sb, " r%u:%s", r, loom_vm_obj_kind_name(f->obj_kinds[r]));
    for (uint32_t r = 0; r < f->nint; r++)
      if (f->int_names[r] != LOOM_VM_NONE) loom_strbuf_printf(sb, " i%u=%s", r, loom_vm_exec_str(e, e->symvars[f->int_names[r]]));
    loom_strbuf_puts(sb, "\n");
    uint32_t di = 0;
    for (uint32_t pc = 0; pc < f->ncode; pc++) {
      size_t start = sb->len;
      loom_strbuf_printf(sb, "  %4u  ", pc);
      loom_vm_insn_format(e, f, pc, sb);
      while (di < f->ndebug && f->debug[di].pc < pc) di++;
      if (di < f->ndebug && f->debug[di].pc == pc) {
        size_t w = sb->len - start;
        for (; w < 56; w++) loom_strbuf_putc(sb, ' ');
        loom_strbuf_printf(sb, " ; %s", loom_vm_exec_str(e, f->debug[di].text));
      }
      loom_strbuf_puts(sb, "\n");
    }
  }
}
