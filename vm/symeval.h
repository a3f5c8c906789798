/* symeval.h — evaluates the text of a symbolic dim ("2*n + 1", "s + past",
 * "floordiv(s, 2)") at given var values, at run time without the compiler's symbolic
 * module. Used by `loom-run --bind` to make inputs from a function's signature.
 * The whole language symbolic/sym_print.c writes (a CUDA kernel's grid, symbolic/ being compiler
 * side): expr = conj {"||" conj}; conj = cmp {"&&" cmp}; cmp = sum [CMP sum], CMP in == != <=
 * >= < > (1 or 0); sum = term {("+"|"-") term}; term = unary {("*"|"//"|"%") unary};
 * unary = ("-" | "!") unary | atom; atom = INT | NAME | "(" expr ")" | FN "(" expr "," expr ")" |
 * "select" "(" expr "," expr "," expr ")", FN in floordiv, floormod, min, max (select's three
 * operands are all evaluated). Arithmetic is checked (overflow is an error). */
#ifndef LOOM_VM_SYMEVAL_H
#define LOOM_VM_SYMEVAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

LOOM_MUST_USE loom_status loom_vm_symeval(const char *text, const char *const *names, const int64_t *values, size_t n,
                                          int64_t *out);

#endif
