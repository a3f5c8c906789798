/* hostop.h — the VM's host operators (docs/vm.md "Host operators") and the conversions
 * between the VM's objects and the reference interpreter's values they use.
 *
 * An executable runs an operator that takes or makes string tensors as CALLB HOSTOP i
 * (lower_host.c); loom_compiled_open hands the runtime loom_driver_hostop with the compiled
 * module, and HOSTOP i evaluates the module's i-th such call with the interpreter's own
 * implementation (loom_graph_call_eval): one implementation of each string operator. */
#ifndef LOOM_DRIVER_HOSTOP_H
#define LOOM_DRIVER_HOSTOP_H

#include "driver/lower_vm.h"
#include "graph/graph.h"
#include "vm/vm.h"

/* What loom_driver_hostop reads: the module and the calls HOSTOP i runs (both borrowed). */
typedef struct loom_driver_hostops {
  loom_graph_module *m;
  const loom_lower_hostops *calls;
} loom_driver_hostops;

/* loom_vm_hostop_fn over a loom_driver_hostops (ctx): the result is made on `dev`. */
LOOM_MUST_USE loom_status loom_driver_hostop(void *ctx, uint32_t op, loom_device *dev, uint32_t nargs,
                                             loom_vm_obj *const *args, loom_vm_obj **out);

/* The interpreter's value of VM object o (a tensor, tuple or list; copied, strings too). */
LOOM_MUST_USE loom_status loom_driver_value_of_obj(const loom_vm_obj *o, loom_graph_value *out);
/* The VM object (a new reference) of value v on the CPU device dev: a tensor (a string tensor
 * owns copies of the bytes), a tuple or a list. */
LOOM_MUST_USE loom_status loom_driver_obj_of_value(loom_device *dev, const loom_graph_value *v, loom_vm_obj **out);

#endif
