/* vm_internal.h — what the VM's own files share (not a public interface). */
#ifndef LOOM_VM_VM_INTERNAL_H
#define LOOM_VM_VM_INTERNAL_H

#include "vm/exec.h"

#define LOOM_VM_MAX_DEPTH 200u     /* nested VM calls */
#define LOOM_VM_KERR_INPUT '\x01'  /* first byte of a kernel's error slot: the input is bad (set_error_index) */

/* Verifies instruction pc of f (used by the loader and by the sanitized dispatch loop). */
LOOM_MUST_USE loom_status loom_vm_verify_insn(const loom_vm_exec *e, const loom_vm_func *f, uint32_t pc);
/* The data flow over f's object registers (verify_flow.c): uses against definitions, kernel
 * operands against signatures. Runs after every instruction of f has verified. */
LOOM_MUST_USE loom_status loom_vm_verify_flow(const loom_vm_exec *e, const loom_vm_func *f);

#endif
