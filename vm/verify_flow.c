/* verify_flow.c — the verifier's data flow over a function's object registers: what each
 * register holds at each instruction, on every path (a forward analysis over basic blocks
 * to a fixed point), so that every register use is checked against its definitions:
 *   - a use of a register that no path has defined (empty on every path) is an error;
 *   - every CALLK / CALLX buffer operand must be a tensor whose dtype and rank, where the
 *     definitions fix them (EMPTY, VIEW, TCONST, SHAPE, MATCH, RESHAPE, COPY, ROWS), are the
 *     kernel signature's (a rank-0 tensor may fill a buffer of any rank: a (1,) buffer).
 * What the definitions leave open (a tensor out of a tuple or a call, a MATCH of any dtype)
 * is checked before the call by loom_vm_sig_check_call, with the dims. */
#include <stdio.h>
#include <string.h>

#include "vm/exec.h"
#include "vm/vm_internal.h"

#define BAD(...) LOOM_ERROR(DATA_LOSS, __VA_ARGS__)

/* An abstract register value: state | kind << 8 | dtype << 16 | rank << 24. */
enum { UNREACHED = 0, EMPTY = 1, MAYBE = 2, DEF = 3 };
#define ANY8 0xFFu
#define STATE(v) ((v) & 0xFFu)
#define KIND(v) (((v) >> 8) & 0xFFu)
#define DTYPE(v) (((v) >> 16) & 0xFFu)
#define RANK(v) ((v) >> 24)
static uint32_t val(uint32_t state, uint32_t kind, uint32_t dtype, uint32_t rank) {
  return state | (kind & 0xFFu) << 8 | (dtype > 0xFE ? ANY8 : dtype) << 16 | (rank > 0xFE ? ANY8 : rank) << 24;
}
static uint32_t tensor(uint32_t dtype, uint32_t rank) { return val(DEF, LOOM_VM_OBJ_TENSOR, dtype, rank); }

/* The least value above both (paths meet). */
static uint32_t join(uint32_t a, uint32_t b) {
  if (a == b || STATE(b) == UNREACHED) return a;
  if (STATE(a) == UNREACHED) return b;
  if (STATE(a) == EMPTY && STATE(b) == EMPTY) return a;
  uint32_t st = STATE(a) == DEF && STATE(b) == DEF ? DEF : MAYBE;
  if (STATE(a) == EMPTY) return (b & ~0xFFu) | st;
  if (STATE(b) == EMPTY) return (a & ~0xFFu) | st;
  return val(st, KIND(a) == KIND(b) ? KIND(a) : LOOM_VM_OBJ_ANY, DTYPE(a) == DTYPE(b) ? DTYPE(a) : ANY8,
             RANK(a) == RANK(b) ? RANK(a) : ANY8);
}

typedef struct flow {
  const loom_vm_exec *e;
  const loom_vm_func *f;
  uint32_t *block_of;  /* per pc: its block (leaders start blocks) */
  uint32_t *start;     /* per block: first pc */
  uint32_t nblocks;
  uint32_t *in;        /* nblocks x nobj: state at each block's entry */
  uint32_t *cur;       /* nobj: the state while walking a block */
} flow;

/* A use of register r: an error when it is empty on every path. */
static loom_status use(const flow *fl, uint32_t r, const char *what) {
  if (STATE(fl->cur[r]) == EMPTY)
    return BAD("%s: register r%u is used before any instruction defines it (empty on every path here)", what, r);
  return LOOM_OK;
}

/* Checks the buffers of CALLK / CALLX list l against kernel k (check: report; else just uses). */
static loom_status call_buffers(const flow *fl, const loom_vm_kernel *k, const uint32_t *l) {
  const char *name = loom_vm_exec_str(fl->e, k->name);
  for (uint32_t b = 0; b < l[0]; b++) {
    uint32_t r = l[1 + b], v = fl->cur[r];
    char what[64];
    snprintf(what, sizeof what, "buffer %u", b);
    LOOM_RETURN_IF_ERROR(use(fl, r, what), "calling '%s'", name);
    uint32_t dt, rank;
    loom_vm_sig_buffer(k, b, &dt, &rank);
    if (DTYPE(v) != ANY8 && DTYPE(v) != dt)
      return BAD("calling '%s': buffer %u (r%u) holds %s, the kernel's signature needs %s", name, b, r,
                 loom_dtype_name((loom_dtype)DTYPE(v)), loom_dtype_name((loom_dtype)dt));
    /* a scalar may fill a buffer of any rank (a (1,) buffer); the call checks the count */
    if (rank != LOOM_VM_SIG_FLAT && RANK(v) != ANY8 && RANK(v) != 0 && RANK(v) != rank)
      return BAD("calling '%s': buffer %u (r%u) has rank %u, the kernel's signature needs %u", name, b, r, RANK(v), rank);
  }
  return LOOM_OK;
}

/* One instruction: its uses are checked when `check`, and its definitions update fl->cur. */
static loom_status step(flow *fl, uint32_t pc, bool check) {
  const loom_vm_exec *e = fl->e;
  const loom_vm_func *f = fl->f;
  loom_vm_insn in = f->code[pc];
  loom_vm_op op = LOOM_VM_OP(in);
  uint32_t a = LOOM_VM_A(in), b = LOOM_VM_B(in);
  const uint32_t *l = loom_vm_opinfo_table[op].b == 'L' ? f->lists + LOOM_VM_BX(in) : NULL;
  uint32_t *R = fl->cur;
  switch (op) {
  case LOOM_VM_OP_MOV: R[a] = R[b]; break;
  case LOOM_VM_OP_TCONST: R[a] = tensor(e->consts[LOOM_VM_BX(in)].dtype, e->consts[LOOM_VM_BX(in)].rank); break;
  case LOOM_VM_OP_KILL: R[a] = val(EMPTY, 0, 0, 0); break;
  case LOOM_VM_OP_RET:
    if (check) LOOM_PROPAGATE(use(fl, a, "RET"));
    break;
  case LOOM_VM_OP_DIM:
    if (check) LOOM_PROPAGATE(use(fl, b, "DIM"));
    break;
  case LOOM_VM_OP_MATCH:
  case LOOM_VM_OP_MATCHV: {
    if (check) LOOM_PROPAGATE(use(fl, a, op == LOOM_VM_OP_MATCH ? "MATCH" : "MATCHV"));
    uint32_t dt = l[1], rank = op == LOOM_VM_OP_MATCH ? l[2] : 1;
    if (op == LOOM_VM_OP_MATCHV) dt = LOOM_VM_ANY_DTYPE; /* i64 or i32 */
    else if (dt == LOOM_VM_ANY_DTYPE && STATE(R[a]) == DEF) dt = DTYPE(R[a]) == ANY8 ? LOOM_VM_ANY_DTYPE : DTYPE(R[a]);
    R[a] = tensor(dt, rank);
    break;
  }
  case LOOM_VM_OP_SHAPE: R[a] = tensor(LOOM_DTYPE_I64, 1); break;
  case LOOM_VM_OP_ALLOC: R[a] = val(DEF, LOOM_VM_OBJ_STORAGE, ANY8, ANY8); break;
  case LOOM_VM_OP_VIEW:
    if (check) LOOM_PROPAGATE(use(fl, l[0], "VIEW storage"));
    R[a] = tensor(l[1], l[3]);
    break;
  case LOOM_VM_OP_EMPTY: R[a] = tensor(l[0], l[2]); break;
  case LOOM_VM_OP_TUPLE:
    for (uint32_t i = 0; check && i < l[0]; i++) LOOM_PROPAGATE(use(fl, l[1 + i], "TUPLE item"));
    R[a] = val(DEF, LOOM_VM_OBJ_TUPLE, ANY8, ANY8);
    break;
  case LOOM_VM_OP_TGET:
    if (check) LOOM_PROPAGATE(use(fl, b, "TGET"));
    R[a] = val(DEF, f->obj_kinds[a], ANY8, ANY8);
    break;
  case LOOM_VM_OP_CALL:
    for (uint32_t i = 0; check && i < l[1]; i++) LOOM_PROPAGATE(use(fl, l[2 + i], "CALL argument"));
    R[a] = val(DEF, f->obj_kinds[a], ANY8, ANY8);
    break;
  case LOOM_VM_OP_CALLK:
  case LOOM_VM_OP_CALLX:
    if (check) LOOM_PROPAGATE(call_buffers(fl, op == LOOM_VM_OP_CALLK ? &e->kernels[a] : &e->externs[a], l));
    break;
  case LOOM_VM_OP_CALLB: {
    bool list = a >= LOOM_VM_BUILTIN_LIST_EMPTY && a <= LOOM_VM_BUILTIN_LIST_SELECT;
    bool host = a == LOOM_VM_BUILTIN_HOSTOP;
    bool out0 = a == LOOM_VM_BUILTIN_COPY || a == LOOM_VM_BUILTIN_ROWS || list || host; /* o0 written, not read */
    for (uint32_t i = out0; check && i < l[0]; i++) LOOM_PROPAGATE(use(fl, l[1 + i], "builtin operand"));
    if (a == LOOM_VM_BUILTIN_LIST_LEN) R[l[1]] = tensor(LOOM_DTYPE_I64, 0);
    else if (a == LOOM_VM_BUILTIN_LIST_HAS) R[l[1]] = tensor(LOOM_DTYPE_BOOL, 0);
    else if (a == LOOM_VM_BUILTIN_LIST_GET) R[l[1]] = val(DEF, f->obj_kinds[l[1]], ANY8, ANY8);
    else if (list) R[l[1]] = val(DEF, LOOM_VM_OBJ_LIST, ANY8, ANY8);
    else if (host) R[l[1]] = val(DEF, f->obj_kinds[l[1]], ANY8, ANY8);
    else if (out0) R[l[1]] = STATE(R[l[2]]) == DEF ? R[l[2]] : tensor(ANY8, ANY8);
    else if (a == LOOM_VM_BUILTIN_SCAN_PUT) /* may become a new tensor: its dtype and rank stay */
      R[l[1]] = STATE(R[l[1]]) == DEF ? R[l[1]] : tensor(ANY8, ANY8);
    break;
  }
  case LOOM_VM_OP_ILOAD:
    if (check) LOOM_PROPAGATE(use(fl, b, "ILOAD"));
    break;
  case LOOM_VM_OP_RESHAPE:
    if (check) LOOM_PROPAGATE(use(fl, l[0], "RESHAPE source"));
    R[a] = tensor(STATE(R[l[0]]) == DEF || STATE(R[l[0]]) == MAYBE ? DTYPE(R[l[0]]) : ANY8, l[1]);
    break;
  default: break; /* int instructions, jumps, checks: no object register */
  }
  return LOOM_OK;
}

/* Merges fl->cur into block bk's entry state; true when it changed. */
static bool flow_into(flow *fl, uint32_t bk) {
  uint32_t *in = fl->in + (size_t)bk * fl->f->nobj;
  bool changed = false;
  for (uint32_t r = 0; r < fl->f->nobj; r++) {
    uint32_t j = join(in[r], fl->cur[r]);
    if (j != in[r]) in[r] = j, changed = true;
  }
  return changed;
}

/* Runs block bk from its entry state; merges into its successors (marking them pending). */
static loom_status run_block(flow *fl, uint32_t bk, bool check, uint8_t *pending) {
  const loom_vm_func *f = fl->f;
  memcpy(fl->cur, fl->in + (size_t)bk * f->nobj, f->nobj * sizeof *fl->cur);
  uint32_t end = bk + 1 < fl->nblocks ? fl->start[bk + 1] : f->ncode;
  for (uint32_t pc = fl->start[bk]; pc < end; pc++) {
    LOOM_RETURN_IF_ERROR(step(fl, pc, check), "at instruction %u (%s)", pc, loom_vm_opinfo_table[LOOM_VM_OP(f->code[pc])].name);
    if (check) continue;
    loom_vm_op op = LOOM_VM_OP(f->code[pc]);
    if (op == LOOM_VM_OP_JMP || op == LOOM_VM_OP_JMPIF || op == LOOM_VM_OP_JMPIFNOT) {
      uint32_t t = fl->block_of[LOOM_VM_BX(f->code[pc])];
      if (flow_into(fl, t)) pending[t] = 1;
    }
    if (op == LOOM_VM_OP_RET || op == LOOM_VM_OP_JMP) return LOOM_OK;
  }
  if (!check && end < f->ncode && flow_into(fl, bk + 1)) pending[bk + 1] = 1;
  return LOOM_OK;
}

loom_status loom_vm_verify_flow(const loom_vm_exec *e, const loom_vm_func *f) {
  loom_allocator *a = e->alloc;
  flow fl = {.e = e, .f = f};
  /* leaders: pc 0, jump targets, what follows a jump or a return */
  uint8_t *lead = loom_alloc_zero(a, f->ncode);
  if (!lead) return LOOM_OOM();
  lead[0] = 1;
  for (uint32_t pc = 0; pc < f->ncode; pc++) {
    loom_vm_op op = LOOM_VM_OP(f->code[pc]);
    if (op == LOOM_VM_OP_JMP || op == LOOM_VM_OP_JMPIF || op == LOOM_VM_OP_JMPIFNOT) lead[LOOM_VM_BX(f->code[pc])] = 1;
    if ((op == LOOM_VM_OP_JMP || op == LOOM_VM_OP_JMPIF || op == LOOM_VM_OP_JMPIFNOT || op == LOOM_VM_OP_RET) &&
        pc + 1 < f->ncode)
      lead[pc + 1] = 1;
  }
  for (uint32_t pc = 0; pc < f->ncode; pc++) fl.nblocks += lead[pc];
  /* the states are nblocks x nobj words: bounded so a hostile file cannot exhaust memory */
  if ((uint64_t)fl.nblocks * f->nobj > (UINT64_C(1) << 24)) {
    loom_free(a, lead, f->ncode);
    return BAD("%u basic blocks x %u object registers exceed what the verifier analyses (2^24)", fl.nblocks, f->nobj);
  }
  size_t nstate = (size_t)fl.nblocks * f->nobj;
  fl.block_of = loom_alloc_array(a, f->ncode, 4);
  fl.start = loom_alloc_array(a, fl.nblocks, 4);
  fl.in = loom_alloc_zero(a, (nstate ? nstate : 1) * 4);
  fl.cur = loom_alloc_array(a, f->nobj ? f->nobj : 1, 4);
  uint8_t *pending = loom_alloc_zero(a, fl.nblocks);
  loom_status st = LOOM_OK;
  if (!fl.block_of || !fl.start || !fl.in || !fl.cur || !pending) st = LOOM_OOM();
  for (uint32_t pc = 0, bk = 0; !st && pc < f->ncode; pc++) {
    if (lead[pc]) fl.start[bk++] = pc;
    fl.block_of[pc] = bk - 1;
  }
  if (!st) {
    /* entry: parameters hold tensors (their dtype and rank are checked by loom_vm_call for
     * entry calls only, so not assumed here); every other register is empty */
    for (uint32_t r = 0; r < f->nobj; r++)
      fl.in[r] = r >= f->nparams                       ? val(EMPTY, 0, 0, 0)
                 : f->obj_kinds[r] == LOOM_VM_OBJ_LIST ? val(DEF, LOOM_VM_OBJ_LIST, ANY8, ANY8)
                                                       : tensor(ANY8, ANY8);
    pending[0] = 1;
    for (bool again = true; again && !st;) {
      again = false;
      for (uint32_t bk = 0; bk < fl.nblocks && !st; bk++)
        if (pending[bk]) pending[bk] = 0, again = true, st = run_block(&fl, bk, false, pending);
    }
    /* the fixed point reached: check every reachable block's uses */
    for (uint32_t bk = 0; bk < fl.nblocks && !st; bk++)
      if (STATE(fl.in[(size_t)bk * f->nobj]) != UNREACHED || !f->nobj) st = run_block(&fl, bk, true, pending);
  }
  loom_free(a, lead, f->ncode);
  loom_free(a, fl.block_of, f->ncode * 4u);
  loom_free(a, fl.start, fl.nblocks * 4u);
  loom_free(a, fl.in, (nstate ? nstate : 1) * 4);
  loom_free(a, fl.cur, (f->nobj ? f->nobj : 1) * 4u);
  loom_free(a, pending, fl.nblocks);
  return st;
}
