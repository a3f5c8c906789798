/* bytecode.h — encoding of VM instructions (the list itself is vm/opcodes.def).
 *
 * An instruction is one 64-bit little-endian word:
 *
 *     bits  0..7   op   (loom_vm_op)
 *     bits  8..23  A    16-bit operand
 *     bits 24..39  B    16-bit operand
 *     bits 40..55  C    16-bit operand
 *     bits 56..63  0    reserved (the verifier rejects nonzero)
 *     Bx = B | C << 16  the wide 32-bit operand of formats whose C kind is 'x'
 *
 * Operand lists (calls, shapes, match patterns) are runs of 32-bit words in the
 * function's list pool; an 'L' operand is the offset of the first word.
 *
 * MATCH pattern L[o] = input-name string, dtype (LOOM_VM_ANY_DTYPE: any), rank, then
 * per axis one item:
 *     ANY                      0                        any size
 *     CONST  k                 1, int-const index       size == K[k]
 *     BIND   r k c             2, int reg, k, c         I[r] := (size - c) / k; needs k > 0,
 *                                                      (size - c) divisible by k and >= 0
 *     AFFINE r k c             3, int reg, k, c         size == k*I[r] + c
 *     EXPR   r text vars       4, int reg, string, n, n int regs
 *                                                      size == I[r]; `text` (e.g. "s + past")
 *                                                      and the vars' values go in the error
 *   k and c are signed 32-bit. Errors read
 *     input 'x' axis 1: expected 2*n + 1 = 9 (n = 4 from axis 0), got 10 */
#ifndef LOOM_VM_BYTECODE_H
#define LOOM_VM_BYTECODE_H

#include <stdint.h>

typedef uint64_t loom_vm_insn;

typedef enum loom_vm_op {
#define LOOM_OP(name, a, b, c, doc) LOOM_VM_OP_##name,
#include "vm/opcodes.def"
#undef LOOM_OP
  LOOM_VM_OP_COUNT
} loom_vm_op;

typedef enum loom_vm_builtin {
#define LOOM_BUILTIN(name, nobj, nint, doc) LOOM_VM_BUILTIN_##name,
#include "vm/builtins.def"
#undef LOOM_BUILTIN
  LOOM_VM_BUILTIN_COUNT
} loom_vm_builtin;

/* Match-pattern axis items. */
enum {
  LOOM_VM_AXIS_ANY = 0,
  LOOM_VM_AXIS_CONST = 1,
  LOOM_VM_AXIS_BIND = 2,
  LOOM_VM_AXIS_AFFINE = 3,
  LOOM_VM_AXIS_EXPR = 4,
};
#define LOOM_VM_ANY_DTYPE 0xFFFFFFFFu /* in patterns and signatures: any dtype */
#define LOOM_VM_NONE 0xFFFFFFFFu      /* "no index" in tables */

/* Accessors. */
#define LOOM_VM_OP(i) ((loom_vm_op)((i) & 0xFF))
#define LOOM_VM_A(i) ((uint32_t)(((i) >> 8) & 0xFFFF))
#define LOOM_VM_B(i) ((uint32_t)(((i) >> 24) & 0xFFFF))
#define LOOM_VM_C(i) ((uint32_t)(((i) >> 40) & 0xFFFF))
#define LOOM_VM_BX(i) ((uint32_t)(((i) >> 24) & 0xFFFFFFFFu))
#define LOOM_VM_PAD(i) ((uint32_t)((i) >> 56))

static inline loom_vm_insn loom_vm_insn_abc(loom_vm_op op, uint32_t a, uint32_t b, uint32_t c) {
  return (uint64_t)op | (uint64_t)(a & 0xFFFF) << 8 | (uint64_t)(b & 0xFFFF) << 24 |
         (uint64_t)(c & 0xFFFF) << 40;
}
static inline loom_vm_insn loom_vm_insn_abx(loom_vm_op op, uint32_t a, uint32_t bx) {
  return (uint64_t)op | (uint64_t)(a & 0xFFFF) << 8 | (uint64_t)bx << 24;
}

/* Static properties from opcodes.def. */
typedef struct loom_vm_opinfo {
  const char *name; /* "IADD" */
  char a, b, c;     /* operand kinds */
  const char *doc;  /* semantics */
} loom_vm_opinfo;
extern const loom_vm_opinfo loom_vm_opinfo_table[LOOM_VM_OP_COUNT];

typedef struct loom_vm_builtininfo {
  const char *name; /* "COPY" */
  uint32_t nobj;    /* object operands */
  uint32_t nint;    /* int operands */
  const char *doc;
} loom_vm_builtininfo;
extern const loom_vm_builtininfo loom_vm_builtin_table[LOOM_VM_BUILTIN_COUNT];

#endif
