/* lower_vm_internal.h — what the VM lowering's files share (lower_vm.c: functions, bindings,
 * calls, shapes; lower_loop.c: loops). Not a public interface: lower_vm.h is. */
#ifndef LOOM_DRIVER_LOWER_VM_INTERNAL_H
#define LOOM_DRIVER_LOWER_VM_INTERNAL_H

#include "base/map.h"
#include "driver/lower_vm.h"

/* The state of lowering one module. */
typedef struct lower {
  loom_graph_module *m;
  loom_sym_ctx *cx;
  loom_vm_builder *b;
  loom_map kernels;   /* tp name (interned pointer) -> kernel index + 1 */
  loom_map consts;    /* constant data pointer -> builder const index + 1 */
  /* per function */
  const loom_graph_func *f;
  loom_vm_fbuilder *fb;
  const loom_memplan *plan; /* the plan of the bindings being lowered (a function's, or a loop body's) */
  loom_map var_reg;   /* graph var id -> object register */
  loom_map sym_reg;   /* symbolic expression -> int register holding its value */
  uint32_t *storage_reg; /* per storage of `plan`: its register, or NOREG before it is allocated */
  uint32_t zero_reg;  /* int register holding 0 (view offsets) */
  uint32_t nids;      /* var ids of the module (the size of last-use tables) */
  const char *where;  /* the binding being lowered, for messages */
  const char *dbg;    /* debug text of the binding's main instructions */
  uint32_t nconsts;
  loom_lower_hostops *hostops; /* the calls HOSTOP runs (lower_host.c), or NULL: refused */
  loom_status err;    /* first error */
} lower;

/* Records the first error (later ones are dropped). */
#define FAIL(l, ...) ((l)->err ? (void)0 : (void)((l)->err = LOOM_ERROR(__VA_ARGS__)))
#define NOREG LOOM_VM_NONE

static inline loom_vm_insn abc(loom_vm_op op, uint32_t a, uint32_t b, uint32_t c) { return loom_vm_insn_abc(op, a, b, c); }
static inline loom_vm_insn abx(loom_vm_op op, uint32_t a, uint32_t bx) { return loom_vm_insn_abx(op, a, bx); }

/* Records out-of-memory as the error. */
void lw_oom(lower *l);
/* Emits an instruction that carries the binding's debug text (errors at it name the binding). */
void lw_emit_main(lower *l, loom_vm_insn in);
/* The int register holding symbolic expression e (computed here once per function, or cached);
 * NOREG after an error. */
uint32_t lw_sym_reg(lower *l, const loom_sym_expr *e);
uint32_t lw_const_reg(lower *l, int64_t v);
/* MATCH (MATCHV for a Shape) of register `reg`, named `name` in errors, against `si`: binds the
 * vars not bound yet (lower_vm.c has the details). False on error. */
bool lw_emit_match(lower *l, uint32_t reg, const char *name, const loom_sinfo *si, bool *defer, bool recheck);
/* The register kind for values of struct info si. */
loom_vm_obj_kind lw_kind_of(const loom_sinfo *si);
/* The register holding leaf e (a var, or a constant loaded here). */
uint32_t lw_leaf_reg(lower *l, const loom_graph_expr *e);
/* A new register for graph var `var`. */
uint32_t lw_new_var_reg(lower *l, const loom_graph_expr *var);
/* dst := a copy of src; false on OOM (recorded). */
bool lw_copy_map(lower *l, loom_map *dst, const loom_map *src);
/* Lowers binding b, the bi-th of l->plan (NOREG: one inside an `if` branch, outside the plan). */
void lw_emit_binding(lower *l, uint32_t bi, const loom_graph_binding *b);
/* last[var id] := 1 + the plan position of each use in e (a use inside a nested `if` or loop
 * counts at its binding). */
void lw_note_uses(uint32_t *last, uint32_t nids, uint32_t at, const loom_graph_expr *e);
/* Emits the bindings of plan p (l->plan) in order, each followed by the releases it allows:
 * the registers of `params` and of p's vars whose last use (`last`) it is, and the storages
 * whose last tensor it holds (not hoisted ones). `skip`: a binding not emitted (NULL: none). */
void lw_emit_plan(lower *l, const loom_memplan *p, size_t nparams, loom_graph_expr *const *params, const uint32_t *last,
                  const loom_graph_binding *skip);
/* A register whose value is killed: KILL of var's register, if it has one. */
void lw_emit_kill(lower *l, const loom_graph_expr *var);

/* lower_host.c: whether call v takes or makes a string (a host operator); binding b as HOSTOP. */
bool lw_is_hostop(const loom_graph_expr *v);
void lw_emit_hostop(lower *l, const loom_graph_binding *b);

/* lower_loop.c: loop binding b, the bi-th of l->plan (NOREG: outside the plan). */
void lw_emit_loop(lower *l, uint32_t bi, const loom_graph_binding *b);

#endif
