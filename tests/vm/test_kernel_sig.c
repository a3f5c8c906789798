/* test_kernel_sig.c — kernel signatures (vm/exec.h, loom_vm_kernel): the verifier's data
 * flow checks kernel operands and register uses (verify_flow.c), the VM checks every
 * call's buffers against the signature at the symbols passed (kernel_sig.c), and a
 * runtime refuses an executable that describes a kernel otherwise than the kernel's own
 * copy (rt_api.c). */
#include "loomrt.h"
#include "vm_fixture.h"

enum { S = LOOM_VM_SIG_SYM, C = LOOM_VM_SIG_CONST, F32 = LOOM_DTYPE_F32 };

/* main(x: f32(n, m)) -> k(x, out: f32(n, m); n, m) with out made as `out_dt`(n, out_rank dims);
 * `use_undefined`: pass a register nothing defines instead of x. */
static loom_status build(loom_dtype out_dt, uint32_t out_rank, bool use_undefined, loom_vm_exec **out) {
  loom_vm_builder *b;
  OK(loom_vm_builder_new(NULL, &b));
  uint32_t sig[] = {F32, 2, 1, S, 0, 1, S, 1, F32, 2, 1, S, 0, 1, S, 1,
                    loom_vm_builder_str(b, "n"), loom_vm_builder_str(b, "m")};
  uint32_t k = loom_vm_builder_kernel(b, "empty", 2, 2, sig, LOOM_ARRAY_LEN(sig));
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dims[] = {"n", "m"};
  uint32_t x = loom_vm_fb_param(f, "x", F32, 2, dims);
  uint32_t o = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR), u = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t n = loom_vm_fb_ireg(f, "n"), m = loom_vm_fb_ireg(f, "m");
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_DIM, n, x, 0));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_DIM, m, x, 1));
  uint32_t le[] = {out_dt, 0, out_rank, n, m};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_EMPTY, o, loom_vm_fb_list(f, le, 3 + out_rank)));
  uint32_t lk[] = {2, use_undefined ? u : x, o, 2, n, m};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, k, loom_vm_fb_list(f, lk, 6)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, o, 0, 0));
  loom_status st = loom_vm_builder_finish(b, out);
  loom_vm_builder_free(b);
  return st;
}

LOOM_TEST(kernel_sig, the_verifier_checks_operands_against_signatures) {
  loom_vm_exec *e;
  OK(build(LOOM_DTYPE_F32, 2, false, &e));
  loom_vm_exec_free(e);
  FAILS_WITH(build(LOOM_DTYPE_I64, 2, false, &e), "calling 'empty': buffer 1 (r1) holds i64, the kernel's signature needs f32");
  FAILS_WITH(build(LOOM_DTYPE_F32, 1, false, &e), "calling 'empty': buffer 1 (r1) has rank 1, the kernel's signature needs 2");
  FAILS_WITH(build(LOOM_DTYPE_F32, 2, true, &e), "buffer 0: register r2 is used before any instruction defines it");
}

/* Runs `e` on x of the given shape through the fixture's kernels. */
static loom_status run(loom_vm_exec *e, int64_t r0, int64_t r1) {
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, fixture_resolve, NULL, NULL, &vm));
  loom_tensor *x = fixture_tensor(loom_vm_device(vm), r0, r1, 0);
  loom_vm_obj *arg = &x->hdr, *out = NULL;
  loom_status st = loom_vm_call(vm, 0, &arg, 1, &out);
  loom_vm_obj_release(out);
  loom_tensor_release(x);
  loom_vm_destroy(vm);
  return st;
}

/* main(x: f32(n, m)) -> empty(x; n, m + add_to_m) where the signature says x is
 * f32(n, m * factor): wrong symbols on purpose. */
static loom_vm_exec *wrong_symbols(int64_t add_to_m, uint32_t factor) {
  loom_vm_builder *b;
  OK(loom_vm_builder_new(NULL, &b));
  uint32_t sig[] = {F32, 2, 1, S, 0, 3, S, 1, C, factor, 0, LOOM_VM_SIG_MUL, loom_vm_builder_str(b, "n"), loom_vm_builder_str(b, "m")};
  uint32_t k = loom_vm_builder_kernel(b, "empty", 1, 2, sig, LOOM_ARRAY_LEN(sig));
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dims[] = {"n", "m"};
  uint32_t x = loom_vm_fb_param(f, "x", F32, 2, dims);
  uint32_t n = loom_vm_fb_ireg(f, "n"), m = loom_vm_fb_ireg(f, "m"), c = loom_vm_fb_ireg(f, NULL);
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_DIM, n, x, 0));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_DIM, m, x, 1));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, c, loom_vm_builder_intconst(b, add_to_m)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_IADD, m, m, c));
  uint32_t lk[] = {1, x, 2, n, m};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, k, loom_vm_fb_list(f, lk, 5)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  return e;
}

LOOM_TEST(kernel_sig, every_call_checks_buffers_against_the_symbols) {
  loom_vm_exec *e = wrong_symbols(0, 1);
  OK(run(e, 3, 5));
  OK(run(e, 0, 0));
  loom_vm_exec_free(e);
  e = wrong_symbols(1, 1);
  FAILS_WITH(run(e, 3, 5), "kernel 'empty' buffer 0 axis 1 is 5, its signature (f32(n, (m * 1)); n, m) gives 6 at the symbols passed");
  loom_vm_exec_free(e);
  e = wrong_symbols(INT64_MAX / 2, 4);
  FAILS_WITH(run(e, 3, 0), "overflows");
  loom_vm_exec_free(e);
  /* the disassembly prints the signature */
  e = wrong_symbols(0, 1);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_vm_exec_disasm(e, &sb);
  cr_assert(strstr(loom_strbuf_cstr(&sb), "kernel 0 'empty': 1 buffers, 2 symbols (f32(n, (m * 1)); n, m)"), "%s",
            loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  loom_vm_exec_free(e);
}

LOOM_TEST(kernel_sig, a_kernel_table_signature_must_match_the_executable) {
  loom_vm_exec *e = fixture_add_exec();
  const loom_vm_kernel *k = &e->kernels[0];
  uint32_t *sig = malloc(k->nsig * 4u);
  memcpy(sig, k->sig, k->nsig * 4u);
  loom_artifact_kernel ks[] = {{.name = "add", .fn = kernel_add, .sig = sig, .nsig = k->nsig}};
  loom_rt_options o = {.kernels = ks, .nkernels = 1, .threads = 1};
  loom_rt *rt;
  loom_vm_exec *copy;
  uint8_t *bytes;
  size_t len;
  OK(loom_vm_exec_write(e, NULL, &bytes, &len));
  OK(loom_vm_exec_load(NULL, bytes, len, NULL, NULL, &copy));
  OK(loom_rt_open_exec(copy, &o, &rt));
  loom_rt_close(rt);
  sig[4] ^= 0; /* still equal */
  sig[3] = LOOM_VM_SIG_CONST, sig[4] = 7; /* buffer 0's count: the constant 7 (a CONST takes 2 words: the sig is shorter) */
  ks[0].nsig = k->nsig; /* same length, other words */
  OK(loom_vm_exec_load(NULL, bytes, len, NULL, NULL, &copy));
  FAILS_WITH(loom_rt_open_exec(copy, &o, &rt), "kernel 0 'add': the executable describes it as (f32[numel], f32[numel], "
                                               "f32[numel]; numel), which is not the signature its code was compiled with");
  loom_free(NULL, bytes, len);
  free(sig);
  loom_vm_exec_free(e);
}
