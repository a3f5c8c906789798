/* lower_vm.h — VM lowering: a legalized graph module -> a VM executable (vm/exec.h).
 *
 * Per graph function, in order:
 *   - entry: one MATCH per tensor parameter binds the symbolic vars from the actual dims
 *     (bare vars and affine forms k*v + c bind; later occurrences check); axes whose
 *     expressions need vars bound by a later parameter are checked by a second MATCH;
 *   - every binding: its guards as CHECK instructions (the message names the op, operand,
 *     axis and values), then
 *       call_tp      the output from the function's memory plan (graph/memplan.h, made by
 *                    the `memplan` pass before this one): ALLOC of the
 *                    storage at its first tensor, a VIEW into it (EMPTY for a returned
 *                    tensor), then CALLK with the kernel ABI of targets/cpu/codegen.h:
 *                    buffers = args then output, symbols = the program's f->syms solved
 *                    at compile time from the call's struct info (int registers);
 *       a call taking or making strings: CALLB HOSTOP (lower_host.c), run by the host;
 *       call_extern  CALLX: buffers = tensor args then output; symbols = every buffer's
 *                    dims in order, then the scalar args (libcall's convention);
 *       @f(...)      CALL; match_cast: MOV + MATCH (binds the vars it defines);
 *       tuples, tuple items, constants (weights go to the executable's DATA);
 *       if           JMPIFNOT / JMP on a symbolic condition, each branch's tensors EMPTY;
 *       loop         a backward jump over the body, lowered from its own plan (lower_loop.c);
 *   - KILL of every register after its last use, and of every storage after the plan's
 *     last use; RET of the result.
 * Symbolic expressions are computed once per function into int registers (IADD, IMUL,
 * IFLOORDIV, ... with overflow checks in the VM).
 *
 * What does not lower (an operator the legalize pass kept, `if` on a tensor condition, shape or
 * scalar values bound to vars) is an UNIMPLEMENTED error naming the function and the binding. */
#ifndef LOOM_DRIVER_LOWER_VM_H
#define LOOM_DRIVER_LOWER_VM_H

#include "graph/graph.h"
#include "graph/memplan.h"
#include "base/vec.h"
#include "vm/exec.h"

/* The operator calls an executable runs on the host (lower_host.c; docs/vm.md "Host
 * operators"): entry i is HOSTOP i's call, an expression of the module lowered. */
typedef LOOM_VEC(const loom_graph_expr *) loom_lower_hostops;

/* The executable of every graph function of `m`; plans[i] is the memory plan of the i-th
 * function (loom_memplan_build). Its kernel table names tensor programs of `m` (kernel
 * name = program name). `hostops` (emptied first) receives the calls HOSTOP runs (calls that
 * take or make strings); NULL refuses such calls. */
LOOM_MUST_USE loom_status loom_lower_vm(loom_graph_module *m, loom_memplan *const *plans, loom_lower_hostops *hostops,
                                        loom_vm_exec **out);

/* Signature words of a kernel (vm/exec.h, loom_vm_kernel). */
typedef LOOM_VEC(uint32_t) loom_lower_words;
/* Appends to `out` the signature of tensor program tp's kernel (lower_sig.c): each buffer
 * parameter's dtype, rank and dims over tp->syms, then the syms' names (strings of `b`). */
typedef struct loom_tp_func loom_tp_func;
LOOM_MUST_USE loom_status loom_lower_tp_sig(const loom_tp_func *tp, loom_vm_builder *b, loom_lower_words *out);

#endif
