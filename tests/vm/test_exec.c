/* test_exec.c — executable files: round trip, corrupt files, fuzzing, disassembly. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/clock.h"
#include "vm_fixture.h"

int loom_fuzz_exec_one(const uint8_t *data, size_t size);

/* The add fixture plus a weight, an extern and debug info, as bytes. */
static loom_vm_exec *richer_exec(void) {
  loom_vm_builder *b;
  OK(loom_vm_builder_new(NULL, &b));
  uint32_t sig[] = {LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_SYM, 0, loom_vm_builder_str(b, "n")};
  uint32_t k = loom_vm_builder_kernel(b, "empty", 1, 1, sig, 6);
  (void)loom_vm_builder_extern(b, "ext", 0, 0, NULL, 0);
  float w[5] = {1, 2, 3, 4, 5};
  int64_t wd = 5;
  uint32_t kw = loom_vm_builder_const(b, "w", LOOM_DTYPE_F32, 1, &wd, w);
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dims[] = {"s + past"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 1, dims);
  uint32_t r = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t n = loom_vm_fb_ireg(f, "s");
  loom_vm_fb_debug(f, "lv0 = const w");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TCONST, r, kw));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_DIM, n, x, 0));
  uint32_t l[] = {1, x, 1, n};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, k, loom_vm_fb_list(f, l, 4)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, r, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  return e;
}

static void to_bytes(const loom_vm_exec *e, uint8_t **p, size_t *n) { OK(loom_vm_exec_write(e, NULL, p, n)); }

LOOM_TEST(exec, save_load_run_equals_in_memory) {
  loom_vm_exec *mem = fixture_add_exec();
  char path[] = "/tmp/loom-exec-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  OK(loom_vm_exec_save(mem, path));
  loom_vm_exec *file;
  OK(loom_vm_exec_load_file(NULL, path, &file));
  unlink(path);
  loom_vm_exec *both[2] = {mem, file};
  float results[2][15];
  for (int k = 0; k < 2; k++) {
    loom_vm *vm;
    OK(loom_vm_create(NULL, both[k], fixture_resolve, NULL, NULL, &vm));
    loom_tensor *x = fixture_tensor(loom_vm_device(vm), 3, 7, 0.5f), *y = fixture_tensor(loom_vm_device(vm), 3, 7, -2);
    loom_vm_obj *args[2] = {&x->hdr, &y->hdr}, *out;
    OK(loom_vm_call(vm, 0, args, 2, &out));
    memcpy(results[k], ((loom_tensor *)out)->data, sizeof results[k]);
    loom_vm_obj_release(out);
    loom_vm_obj_release(&x->hdr);
    loom_vm_obj_release(&y->hdr);
    loom_vm_destroy(vm);
  }
  cr_assert(memcmp(results[0], results[1], sizeof results[0]) == 0);
  /* identical bytes when written again, identical listing */
  uint8_t *b1, *b2;
  size_t n1, n2;
  to_bytes(mem, &b1, &n1);
  to_bytes(file, &b2, &n2);
  cr_assert_eq(n1, n2);
  cr_assert(memcmp(b1, b2, n1) == 0);
  loom_free(NULL, b1, n1);
  loom_free(NULL, b2, n2);
  loom_vm_exec_free(mem);
  loom_vm_exec_free(file);
}

LOOM_TEST(exec, weights_are_used_in_place_and_disasm_reads_well) {
  loom_vm_exec *e = richer_exec();
  uint8_t *p;
  size_t n;
  to_bytes(e, &p, &n);
  loom_vm_exec *l;
  OK(loom_vm_exec_load(NULL, p, n, NULL, NULL, &l));
  cr_assert(l->data >= p && l->data < p + n, "DATA points into the loaded bytes (mmap-able)");
  cr_assert_float_eq(((const float *)(l->data + l->consts[0].offset))[4], 5.0f, 0);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_vm_exec_disasm(l, &sb);
  const char *t = loom_strbuf_cstr(&sb);
  cr_assert(strstr(t, "func 0 main(x: f32(s + past))") != NULL, "%s", t);
  cr_assert(strstr(t, "const 0 'w': f32(5) at data+0, 20 bytes") != NULL, "%s", t);
  cr_assert(strstr(t, "TCONST    r1, const 0 'w'") != NULL, "%s", t);
  cr_assert(strstr(t, "; lv0 = const w") != NULL, "%s", t);
  cr_assert(strstr(t, "CALLK     empty(r0; i0)") != NULL, "%s", t);
  loom_strbuf_free(&sb);
  loom_vm_exec_free(l);
  loom_free(NULL, p, n);
  loom_vm_exec_free(e);
}

typedef struct secinfo {
  uint32_t id, count;
  uint64_t off, size;
} secinfo;

static secinfo section(const uint8_t *p, uint32_t s) {
  secinfo si;
  const uint8_t *q = p + 24 + 24 * s;
  memcpy(&si.id, q, 4), memcpy(&si.count, q + 4, 4), memcpy(&si.off, q + 8, 8), memcpy(&si.size, q + 16, 8);
  return si;
}

static loom_status load_bytes(const uint8_t *p, size_t n) {
  uint8_t *c = malloc(n ? n : 1);
  memcpy(c, p, n);
  loom_vm_exec *e = NULL;
  loom_status st = loom_vm_exec_load(NULL, c, n, NULL, NULL, &e);
  loom_vm_exec_free(e);
  free(c);
  return st;
}

LOOM_TEST(exec, truncation_at_every_section_boundary_is_rejected) {
  loom_vm_exec *e = richer_exec();
  uint8_t *p;
  size_t n;
  to_bytes(e, &p, &n);
  FAILS_WITH(load_bytes(p, 0), "shorter than the 24-byte header");
  FAILS_WITH(load_bytes(p, 30), "truncated section table");
  FAILS_WITH(load_bytes(p, n - 1), "section DATA");
  for (uint32_t s = 0; s < LOOM_VM_SEC_COUNT; s++) {
    secinfo si = section(p, s);
    char want[64];
    snprintf(want, sizeof want, "section %s", loom_vm_section_name(s));
    /* cut in the middle of section s, or at its start when it is not empty */
    if (si.size) {
      FAILS_WITH(load_bytes(p, si.off + si.size / 2), want);
      FAILS_WITH(load_bytes(p, si.off), want);
    }
  }
  loom_free(NULL, p, n);
  loom_vm_exec_free(e);
}

static void patch32(uint8_t *p, uint64_t at, uint32_t v) { memcpy(p + at, &v, 4); }

LOOM_TEST(exec, bad_version_magic_and_indices_are_named) {
  loom_vm_exec *e = richer_exec();
  uint8_t *p;
  size_t n;
  to_bytes(e, &p, &n);
  uint8_t *c = malloc(n);
#define MUTATE(stmt, needle)     \
  do {                           \
    memcpy(c, p, n);             \
    stmt;                        \
    FAILS_WITH(load_bytes(c, n), needle); \
  } while (0)
  MUTATE(patch32(c, 8, 99), "format version 99 is not supported (this runtime reads version 3)");
  MUTATE(c[0] = 'X', "not a Loom executable (bad magic)");
  MUTATE(patch32(c, 12, 5), "5 sections, expected 11");
  secinfo k = section(p, LOOM_VM_SEC_KERNELS), fu = section(p, LOOM_VM_SEC_FUNCS), co = section(p, LOOM_VM_SEC_CODE);
  secinfo cs = section(p, LOOM_VM_SEC_CONSTS), sy = section(p, LOOM_VM_SEC_SYMVARS);
  MUTATE(patch32(c, k.off, 100000), "in section KERNELS record 0: name string out of range");
  MUTATE(patch32(c, k.off + 4, 3), "signature buffer 1: the signature ends before it\n  in section KERNELS record 0 ('empty')");
  /* the signature words: f32, rank 1, (1 item: SYM 0), name */
  MUTATE(patch32(c, k.off + 16, 77), "signature buffer 0: unknown dtype 77");
  MUTATE(patch32(c, k.off + 20, 17), "signature buffer 0: rank 17 exceeds 16");
  MUTATE(patch32(c, k.off + 24, 0), "signature buffer 0 axis 0: dim expression of 0 items");
  MUTATE(patch32(c, k.off + 28, 99), "signature buffer 0 axis 0: unknown dim-expression item 99");
  MUTATE(patch32(c, k.off + 28, LOOM_VM_SIG_ADD), "signature buffer 0 axis 0: dim-expression item 0 pops an empty stack");
  MUTATE(patch32(c, k.off + 32, 1), "signature buffer 0 axis 0: symbol 1 out of range (the kernel takes 1)");
  MUTATE(patch32(c, k.off + 36, 99999), "signature symbol 0: name string 99999 out of range");

  MUTATE(patch32(c, sy.off, 99999), "in section SYMVARS record 0: string 99999 out of range");
  MUTATE(patch32(c, cs.off + 4, 77), "in section CONSTS record 0: unknown dtype 77");
  MUTATE(patch32(c, cs.off + 24, 4096), "in section CONSTS record 0");
  MUTATE(patch32(c, fu.off + 4, 70000), "in section FUNCS record 0: register counts 70000/1 exceed 65535");
  MUTATE(patch32(c, fu.off + 24, 50), "in section FUNCS record 0: CODE range [0, 50) is outside CODE");
  /* instruction 0 (TCONST r1, const 0): point it at constant 9 */
  MUTATE(c[co.off + 3] = 9, "in section FUNCS record 0 (function 'main')");
  MUTATE(c[co.off + 3] = 9, "operand Bx: tensor constant 9 out of range (1)\n  at instruction 0 (TCONST)");
  /* instruction 2 (CALLK kernel 0): kernel 5 */
  MUTATE(c[co.off + 16 + 1] = 5, "operand A: kernel 5 out of range (1)\n  at instruction 2 (CALLK)");
  char unknown[64];
  snprintf(unknown, sizeof unknown, "unknown opcode %d\n  at instruction 0 (?)", (int)LOOM_VM_OP_COUNT);
  MUTATE(c[co.off + 0] = LOOM_VM_OP_COUNT, unknown);
  /* the last instruction becomes a NOP */
  MUTATE(memset(c + co.off + 24, 0, 8), "could run off the end");
  free(c);
  loom_free(NULL, p, n);
  loom_vm_exec_free(e);
}

/* A constant's record holds the XXH3-64 of its bytes: loading hashes nothing, the constant is
 * checked at its first use (TCONST) and a changed byte is refused naming it; once passed it
 * is not hashed again. An executable built in memory checks nothing. */
LOOM_TEST(exec, a_changed_weight_is_refused_at_its_first_use) {
  loom_vm_exec *e = richer_exec();
  cr_assert_null(e->const_ok, "built in memory: nothing to check");
  OK(loom_vm_exec_check_consts(e));
  uint8_t *p;
  size_t n;
  to_bytes(e, &p, &n);
  for (int flip = 0; flip < 2; flip++) {
    loom_vm_exec *x;
    OK(loom_vm_exec_load(NULL, p, n, NULL, NULL, &x));
    cr_assert_not_null(x->const_ok);
    cr_assert_eq(x->const_ok[0], 0, "loading checks no constant");
    uint8_t *w = (uint8_t *)loom_vm_exec_const_bytes(x, 0);
    if (flip) w[x->consts[0].nbytes - 1] ^= 0x40;
    loom_vm *vm;
    OK(loom_vm_create(NULL, x, fixture_resolve, NULL, NULL, &vm));
    int64_t len = 4;
    loom_tensor *in;
    OK(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, 1, &len, &in));
    loom_vm_obj *args[1] = {&in->hdr}, *out = NULL;
    loom_status st = loom_vm_call(vm, 0, args, 1, &out);
    if (flip) {
      cr_assert_not_null(st, "a changed weight byte must be refused");
      const char *m = loom_status_text(st, 0);
      cr_assert(strstr(m, "constant 0 'w' (f32, 20 bytes at DATA offset 0) does not match its check") && strstr(m, "TCONST"),
                "%s", m);
      loom_status_free(st);
      FAILS_WITH(loom_vm_exec_check_consts(x), "constant 0 'w'");
      w[x->consts[0].nbytes - 1] ^= 0x40; /* restored: it passes, and stays passed */
      OK(loom_vm_exec_check_consts(x));
      cr_assert_eq(x->const_ok[0], 1);
      w[0] ^= 1;
      OK(loom_vm_exec_const_check(x, 0));
      w[0] ^= 1;
    } else {
      /* the fixture's kernel may fail on its own; the constant passed before it ran */
      loom_status_free(st);
      cr_assert_eq(x->const_ok[0], 1, "checked at its first TCONST");
    }
    loom_vm_obj_release(out);
    loom_vm_obj_release(&in->hdr);
    loom_vm_destroy(vm);
    loom_vm_exec_free(x);
  }
  loom_free(NULL, p, n);
  loom_vm_exec_free(e);
}

LOOM_TEST(exec, loader_fuzz_bounded_mutation_loop) {
  loom_vm_exec *e1 = richer_exec(), *e2 = fixture_add_exec();
  uint8_t *seeds[2];
  size_t lens[2];
  to_bytes(e1, &seeds[0], &lens[0]);
  to_bytes(e2, &seeds[1], &lens[1]);
  loom_test_rng rng = {loom_test_seed()};
  uint64_t t0 = loom_clock_ns();
  long runs = 0, loaded = 0;
  uint8_t *buf = malloc(lens[0] > lens[1] ? lens[0] : lens[1]);
  /* bounded: at most 3 seconds or 20000 inputs */
  while (runs < 20000 && loom_clock_ns() - t0 < 3000000000ull) {
    int s = (int)(runs & 1);
    size_t n = lens[s];
    memcpy(buf, seeds[s], n);
    int kind = (int)loom_test_rng_range(&rng, 0, 3);
    int edits = (int)loom_test_rng_range(&rng, 1, 4);
    for (int k = 0; k < edits; k++) {
      size_t at = (size_t)loom_test_rng_range(&rng, 0, (int64_t)n - 1);
      if (kind == 0) buf[at] ^= (uint8_t)(1u << loom_test_rng_range(&rng, 0, 7));
      else if (kind == 1) buf[at] = (uint8_t)loom_test_rng_next(&rng);
      else if (kind == 2 && at + 4 <= n) {
        uint32_t v = (uint32_t)loom_test_rng_range(&rng, 0, 3) == 0 ? 0xFFFFFFFFu : (uint32_t)loom_test_rng_range(&rng, 0, 70000);
        memcpy(buf + (at & ~(size_t)3), &v, 4);
      }
    }
    if (kind == 3) n = (size_t)loom_test_rng_range(&rng, 0, (int64_t)n);
    loaded += loom_fuzz_exec_one(buf, n);
    runs++;
  }
  cr_log_info("loader fuzz: %ld inputs, %ld loaded", runs, loaded);
  cr_assert(runs > 100);
  free(buf);
  loom_free(NULL, seeds[0], lens[0]);
  loom_free(NULL, seeds[1], lens[1]);
  loom_vm_exec_free(e1);
  loom_vm_exec_free(e2);
}

LOOM_TEST(exec, out_of_memory_at_every_allocation_is_reported_cleanly) {
  loom_vm_exec *e = richer_exec();
  uint8_t *p;
  size_t n;
  to_bytes(e, &p, &n);
  int failures = 0;
  for (long k = 0; k < 400; k++) {
    loom_alloc_fail_after(k);
    loom_vm_exec *l = NULL;
    loom_status st = loom_vm_exec_load(NULL, p, n, NULL, NULL, &l);
    loom_vm *vm = NULL;
    if (!st) st = loom_vm_create(NULL, l, fixture_resolve, NULL, NULL, &vm);
    loom_alloc_fail_after(-1);
    bool ok = st == LOOM_OK;
    if (st) {
      failures++;
      cr_assert_eq(loom_status_code(st), LOOM_CODE_RESOURCE_EXHAUSTED, "allocation %ld: %s", k, loom_status_text(st, 1));
      loom_status_free(st);
    }
    loom_vm_destroy(vm);
    loom_vm_exec_free(l);
    if (ok) break; /* every allocation has been failed once */
  }
  cr_assert(failures > 5);
  loom_free(NULL, p, n);
  loom_vm_exec_free(e);
}
