/* test_vm_strings.c — string tensors in the VM (docs/vm.md "Strings" and "Host operators"):
 * storage that owns the bytes, COPY copying them, HOSTOP calling the host's function (and
 * failing by name without one), string constants refused by the executable file's writer. */
#include <stdlib.h>

#include "vm_fixture.h"

/* main(x: string(n)) -> (COPY of x, HOSTOP 0 of (x)): the host operator's result. */
static loom_vm_exec *strings_exec(void) {
  loom_vm_builder *b;
  OK(loom_vm_builder_new(NULL, &b));
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dims[] = {"n"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_STRING, 1, dims);
  uint32_t c = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR), t = loom_vm_fb_reg(f, LOOM_VM_OBJ_TUPLE);
  uint32_t h = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR), r = loom_vm_fb_reg(f, LOOM_VM_OBJ_TUPLE);
  uint32_t i = loom_vm_fb_ireg(f, NULL);
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, i, loom_vm_builder_intconst(b, 0)));
  uint32_t lc[] = {2, c, x, 0}, lt[] = {1, x}, lh[] = {2, h, t, 1, i}, lr[] = {2, c, h};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_COPY, loom_vm_fb_list(f, lc, 4)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TUPLE, t, loom_vm_fb_list(f, lt, 2)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_HOSTOP, loom_vm_fb_list(f, lh, 5)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TUPLE, r, loom_vm_fb_list(f, lr, 3)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, r, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  return e;
}

/* Host operator 0: each element of its string operand followed by "!" (others: an error). */
static loom_status bang(void *ctx, uint32_t op, loom_device *dev, uint32_t nargs, loom_vm_obj *const *args, loom_vm_obj **out) {
  (void)ctx;
  if (op != 0 || nargs != 1) return LOOM_ERROR(INVALID_ARGUMENT, "bang: op %u with %u operands", op, nargs);
  const loom_tensor *x = (const loom_tensor *)args[0];
  size_t n = loom_tensor_numel(x);
  loom_str *el = calloc(n + 1, sizeof *el);
  char (*buf)[64] = calloc(n + 1, sizeof *buf);
  for (size_t k = 0; k < n; k++) {
    const loom_str s = ((const loom_str *)x->data)[k];
    el[k] = (loom_str){buf[k], (uint64_t)snprintf(buf[k], 64, "%.*s!", (int)s.len, s.data ? s.data : "")};
  }
  loom_tensor *y;
  loom_status st = loom_tensor_strings(dev, x->rank, x->shape, el, &y);
  free(el);
  free(buf);
  if (!st) *out = &y->hdr;
  return st;
}

LOOM_TEST(vm_strings, copy_owns_bytes_and_hostop_runs_the_hosts_function) {
  loom_vm_exec *e = strings_exec();
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, fixture_resolve, NULL, NULL, &vm));
  loom_str in[3] = {{"ab", 2}, {NULL, 0}, {"h\xc3\xa9", 3}};
  loom_tensor *x;
  OK(loom_tensor_strings(loom_vm_device(vm), 1, (int64_t[]){3}, in, &x));
  const loom_str *xs = x->data;
  cr_assert(xs[0].data != in[0].data && !strcmp(xs[0].data, "ab") && !xs[1].data && !strcmp(xs[2].data, "h\xc3\xa9"));
  loom_vm_obj *args[1] = {&x->hdr}, *out;
  /* no host operators: the call fails naming the operator */
  FAILS_WITH(loom_vm_call(vm, 0, args, 1, &out), "host operator 0: this executable runs operators on the host");
  loom_vm_set_hostop(vm, bang, NULL);
  OK(loom_vm_call(vm, 0, args, 1, &out));
  const loom_tuple *r = (const loom_tuple *)out;
  const loom_tensor *c = (const loom_tensor *)r->items[0], *h = (const loom_tensor *)r->items[1];
  const loom_str *cs = c->data, *hs = h->data;
  /* the copy's bytes are its own: inside its storage, not x's */
  const char *lo = c->storage->data, *hi = lo + c->storage->size;
  for (int k = 0; k < 3; k++) {
    cr_assert_eq(cs[k].len, in[k].len);
    cr_assert(!cs[k].len || (cs[k].data >= lo && cs[k].data < hi), "element %d points outside its storage", k);
  }
  cr_assert(!strcmp(hs[0].data, "ab!") && !strcmp(hs[1].data, "!") && !strcmp(hs[2].data, "h\xc3\xa9!"));
  loom_vm_obj_release(&x->hdr); /* the copy and the result outlive x */
  cr_assert(!memcmp(cs[0].data, "ab", 2) && !memcmp(cs[2].data, "h\xc3\xa9", 3));
  loom_vm_obj_release(out);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}

LOOM_TEST(vm_strings, executable_files_refuse_string_constants) {
  loom_vm_builder *b;
  OK(loom_vm_builder_new(NULL, &b));
  loom_str w[2] = {{"a", 1}, {"b", 1}};
  int64_t wd = 2;
  uint32_t kw = loom_vm_builder_const(b, "words", LOOM_DTYPE_STRING, 1, &wd, w);
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  uint32_t r = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TCONST, r, kw));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, r, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  uint8_t *p = NULL;
  size_t n = 0;
  FAILS_WITH(loom_vm_exec_write(e, NULL, &p, &n), "constant 'words' is a string tensor: an executable file cannot hold string constants");
  loom_vm_exec_free(e);
}
