/* compile.c — the public compile API (src/loom.h): pipeline -> VM lowering -> kernels
 * (JIT in process, or an AOT shared object linked with the system's C compiler driver). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/file.h"
#include "driver/lower_vm.h"
#include "driver/pipeline.h"
#include "frontend/onnx/onnx_import.h"
#include "libcall/libcall.h"
#include "loom.h"
#include "targets/cpu/codegen.h"
#include "tensorprog/tp.h"

struct loom_compiled {
  loom_graph_module *m;
  bool owns_module;
  loom_vm_exec *exe;
  loom_cpu_options cpu;
  char *cpu_name, *features;
  loom_cpu_jit *jit;               /* made by the first loom_compiled_open */
  loom_artifact_kernel *kernels;   /* exe->nkernels entries (JIT functions) */
  loom_libcall_lib *externs;       /* the module's declared externs, loaded by the first open */
  loom_compile_times times;
};

void loom_compiled_free(loom_compiled *c) {
  if (!c) return;
  loom_vm_exec_free(c->exe);
  if (c->jit) loom_cpu_jit_destroy(c->jit);
  loom_libcall_lib_destroy(c->externs);
  free(c->kernels);
  free(c->cpu_name);
  free(c->features);
  if (c->owns_module) loom_graph_module_destroy(c->m);
  free(c);
}

const loom_vm_exec *loom_compiled_exec(const loom_compiled *c) { return c->exe; }
loom_graph_module *loom_compiled_module(const loom_compiled *c) { return c->m; }
loom_compile_times loom_compiled_times(const loom_compiled *c) { return c->times; }

/* The low-precision float dtype in `si` (a tensor or a tuple of them), or LOOM_DTYPE_COUNT. */
static loom_dtype lowp_in(const loom_sinfo *si) {
  if (!si) return LOOM_DTYPE_COUNT;
  if (si->kind == LOOM_SINFO_TUPLE)
    for (size_t i = 0; i < si->nfields; i++)
      if (lowp_in(si->fields[i]) != LOOM_DTYPE_COUNT) return lowp_in(si->fields[i]);
  if ((si->kind == LOOM_SINFO_TENSOR || si->kind == LOOM_SINFO_SCALAR) && si->dtype == LOOM_DTYPE_F8E8M0)
    return si->dtype;
  return LOOM_DTYPE_COUNT;
}

/* Float8, float4, e8m0 (loom_dtype_is_lowp_float) run on the reference interpreter only: a
 * compiled function refuses them up front, naming the parameter or binding. (The 4- and 2-bit
 * integers compile: integers of that width, one per byte.) */
static loom_status refuse_lowp(loom_graph_module *m) {
  for (size_t i = 0; i < loom_graph_module_num_funcs(m); i++) {
    const loom_graph_func *f = loom_graph_module_func_at(m, i);
    const char *what = NULL;
    loom_dtype dt = LOOM_DTYPE_COUNT;
    for (size_t k = 0; k < f->nparams && dt == LOOM_DTYPE_COUNT; k++)
      if ((dt = lowp_in(f->params[k]->sinfo)) != LOOM_DTYPE_COUNT) what = f->params[k]->u.var.name;
    for (size_t b = 0; b < f->body->nblocks && dt == LOOM_DTYPE_COUNT; b++)
      for (size_t k = 0; k < f->body->blocks[b]->n && dt == LOOM_DTYPE_COUNT; k++) {
        const loom_graph_expr *v = f->body->blocks[b]->bindings[k]->var;
        if ((dt = lowp_in(v->sinfo)) != LOOM_DTYPE_COUNT) what = v->u.var.name;
      }
    if (dt != LOOM_DTYPE_COUNT)
      return LOOM_ERROR(UNIMPLEMENTED, "function @%s: '%s' has dtype %s; e8m0 runs on the reference interpreter only "
                        "(loom eval), not compiled", f->name, what, loom_dtype_name(dt));
  }
  return LOOM_OK;
}

loom_status loom_compile(loom_graph_module *m, const loom_compile_options *opts, loom_compiled **out) {
  *out = NULL;
  LOOM_PROPAGATE(refuse_lowp(m));
  static const loom_compile_options none = {0};
  if (!opts) opts = &none;
  loom_compiled *c = calloc(1, sizeof *c);
  if (!c) return LOOM_OOM();
  c->m = m;
  if ((opts->cpu && !(c->cpu_name = strdup(opts->cpu))) || (opts->features && !(c->features = strdup(opts->features)))) {
    loom_compiled_free(c);
    return LOOM_OOM();
  }
  c->cpu.cpu = c->cpu_name;
  c->cpu.features = c->features;
  const loom_pass_id *dflt;
  size_t nd = loom_pipeline_default(&dflt), n = 0;
  loom_pass_id passes[64];
  for (size_t i = 0; i < nd && n + 1 < 64; i++) {
    if (opts->offload && dflt[i] == LOOM_PASS_legalize) passes[n++] = LOOM_PASS_offload;
    passes[n++] = dflt[i];
  }
  loom_pass_options po = {.print_after_all = opts->print_after_all, .verify_each = !opts->no_verify,
                          .time_passes = opts->time_passes, .out = opts->report ? opts->report : stderr};
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  uint64_t t0 = loom_clock_ns();
  loom_status st = loom_pipeline_run(m, passes, n, &po, &diags);
  uint64_t t1 = loom_clock_ns();
  if (!st) st = loom_status_annotate(loom_lower_vm(m, &c->exe), __FILE__, __LINE__, "while lowering to the VM");
  /* an operator legalize kept cannot be lowered: say why legalize kept it (its notes) */
  for (size_t i = 0, shown = 0; st && loom_status_code(st) == LOOM_CODE_UNIMPLEMENTED && i < diags.items.len && shown < 4; i++) {
    if (!strstr(diags.items.data[i].message, "kept as an operator")) continue;
    char *d = loom_diag_format(&diags.items.data[i]);
    st = loom_status_annotate(st, __FILE__, __LINE__, "legalize: %s", d ? d : diags.items.data[i].message);
    free(d);
    shown++;
  }
  uint64_t t2 = loom_clock_ns();
  loom_diag_list_destroy(&diags);
  c->times.passes_ms = (double)(t1 - t0) / 1e6;
  c->times.lower_ms = (double)(t2 - t1) / 1e6;
  if (st) {
    loom_compiled_free(c);
    return st;
  }
  *out = c;
  return LOOM_OK;
}

/* An ONNX model: loaded, imported to @main, verified. */
static loom_status load_onnx(const char *path, loom_graph_module **m) {
  loom_onnx_model *model;
  LOOM_PROPAGATE(loom_onnx_model_load(path, &model));
  loom_status st = loom_onnx_import(model, m);
  loom_onnx_model_free(model);
  if (st) return st;
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  st = loom_graph_verify(*m, &dl);
  if (st && dl.errors) {
    loom_status_free(st);
    st = loom_diag_list_status(&dl, LOOM_CODE_INVALID_ARGUMENT);
  }
  loom_diag_list_destroy(&dl);
  return st;
}

loom_status loom_compile_file(const char *path, const loom_compile_options *opts, loom_compiled **out) {
  *out = NULL;
  size_t plen = strlen(path);
  if (plen >= 5 && !strcmp(path + plen - 5, ".onnx")) {
    loom_graph_module *m = NULL;
    loom_status st = load_onnx(path, &m);
    if (!st) st = loom_compile(m, opts, out);
    if (st) {
      loom_graph_module_destroy(m);
      return loom_status_annotate(st, __FILE__, __LINE__, "while compiling '%s'", path);
    }
    (*out)->owns_module = true;
    return LOOM_OK;
  }
  char *text;
  size_t len;
  LOOM_PROPAGATE(loom_file_read(path, &text, &len));
  loom_source src = {path, text, len};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m = NULL;
  loom_status st = loom_graph_parse(&src, &dl, &m);
  if (!st) st = loom_graph_verify(m, &dl);
  if (st && dl.errors) {
    loom_status_free(st);
    st = loom_diag_list_status(&dl, LOOM_CODE_PARSE_ERROR);
  }
  loom_diag_list_destroy(&dl);
  free(text);
  if (!st) st = loom_compile(m, opts, out);
  if (st) {
    loom_graph_module_destroy(m);
    return st;
  }
  (*out)->owns_module = true;
  return LOOM_OK;
}

/* The tensor programs of the executable's kernel table, in table order. */
static loom_status kernel_programs(const loom_compiled *c, const loom_tp_func **fs) {
  for (uint32_t k = 0; k < c->exe->nkernels; k++) {
    const char *name = loom_vm_exec_str(c->exe, c->exe->kernels[k].name);
    fs[k] = loom_graph_module_find_tp(c->m, name);
    if (!fs[k]) return LOOM_ERROR(INTERNAL, "kernel '%s' has no tensor program in the module", name);
  }
  return LOOM_OK;
}

static loom_status jit_kernels(loom_compiled *c) {
  if (c->kernels) return LOOM_OK;
  uint32_t n = c->exe->nkernels;
  const loom_tp_func **fs = calloc(n + 1, sizeof *fs);
  loom_kernel_fn *fns = calloc(n + 1, sizeof *fns);
  c->kernels = calloc(n + 1, sizeof *c->kernels);
  loom_status st = (!fs || !fns || !c->kernels) ? LOOM_OOM() : LOOM_OK;
  uint64_t t0 = loom_clock_ns();
  if (!st) st = kernel_programs(c, fs);
  if (!st) st = loom_cpu_jit_create(&c->cpu, &c->jit);
  if (!st && n) st = loom_cpu_jit_compile(c->jit, loom_graph_module_sym(c->m), fs, n, fns);
  for (uint32_t k = 0; !st && k < n; k++)
    c->kernels[k] = (loom_artifact_kernel){loom_vm_exec_str(c->exe, c->exe->kernels[k].name), fns[k]};
  c->times.codegen_ms = (double)(loom_clock_ns() - t0) / 1e6;
  free(fs);
  free(fns);
  if (st) {
    free(c->kernels);
    c->kernels = NULL;
  }
  return st;
}

/* Loads the externs the module declares (libcall/), once. */
static loom_status load_externs(loom_compiled *c) {
  if (c->externs || !loom_graph_module_num_externs(c->m)) return LOOM_OK;
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_libcall_sig *sigs;
  size_t n;
  loom_status st = loom_graph_module_libcall_sigs(c->m, &a, &sigs, &n);
  loom_libcall_options lo = {.search_dir = loom_graph_module_source_dir(c->m)};
  if (!st) st = loom_libcall_lib_create(NULL, sigs, (uint32_t)n, &lo, &c->externs);
  if (!st) st = loom_libcall_lib_check_exec(c->externs, c->exe);
  loom_arena_destroy(&a);
  return st;
}

loom_status loom_compiled_open(loom_compiled *c, const loom_rt_options *opts, loom_rt **out) {
  *out = NULL;
  LOOM_PROPAGATE(jit_kernels(c));
  LOOM_PROPAGATE(load_externs(c));
  loom_rt_options o = opts ? *opts : (loom_rt_options){0};
  o.kernels = c->kernels;
  o.nkernels = c->exe->nkernels;
  if (c->externs && !o.nexterns) o.externs = loom_libcall_lib_externs(c->externs, &o.nexterns);
  /* the runtime owns its executable: hand it a copy through the file format */
  uint8_t *bytes;
  size_t len;
  LOOM_PROPAGATE(loom_vm_exec_write(c->exe, NULL, &bytes, &len));
  loom_vm_exec *copy; /* DATA is used in place from `bytes`: the copy keeps them (frees them) */
  LOOM_PROPAGATE(loom_vm_exec_load(NULL, bytes, len, free, bytes, &copy));
  return loom_rt_open_exec(copy, &o, out);
}

/* ---- AOT ------------------------------------------------------------------- */

static loom_status write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
  bool ok = fputs(text, f) >= 0;
  ok &= fclose(f) == 0;
  return ok ? LOOM_OK : LOOM_ERROR(IO_ERROR, "cannot write '%s'", path);
}

static loom_status run_cc(char *const *argv, const char *log) {
  pid_t pid = fork();
  if (pid < 0) return LOOM_ERROR(IO_ERROR, "fork: %s", strerror(errno));
  if (pid == 0) {
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    execvp(argv[0], argv);
    _exit(127);
  }
  int ws;
  if (waitpid(pid, &ws, 0) < 0) return LOOM_ERROR(IO_ERROR, "waitpid: %s", strerror(errno));
  if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) return LOOM_OK;
  char *msg = NULL;
  size_t mlen = 0;
  loom_status rs = loom_file_read(log, &msg, &mlen);
  loom_status_free(rs);
  loom_status st = WIFEXITED(ws) && WEXITSTATUS(ws) == 127
                       ? LOOM_ERROR(UNAVAILABLE, "cannot run the C compiler driver '%s' to link the artifact (set LOOM_CC)", argv[0])
                       : LOOM_ERROR(INTERNAL, "linking the artifact with '%s' failed:\n%s", argv[0], msg ? msg : "");
  free(msg);
  return st;
}

static void remove_dir(const char *dir, const char *const *files, size_t n) {
  char p[4096];
  for (size_t i = 0; i < n; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* The module's extern signatures as a C string literal (NULL when there are none). */
static loom_status externs_literal(loom_compiled *c, loom_strbuf *out) {
  if (!loom_graph_module_num_externs(c->m)) {
    loom_strbuf_puts(out, "0");
    return LOOM_OK;
  }
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_libcall_sig *sigs;
  size_t n;
  loom_status st = loom_graph_module_libcall_sigs(c->m, &a, &sigs, &n);
  if (!st) {
    loom_strbuf text;
    loom_strbuf_init(&text, NULL);
    loom_libcall_sigs_encode(sigs, (uint32_t)n, &text);
    loom_strbuf_putc(out, '"');
    for (const char *p = loom_strbuf_cstr(&text); *p; p++) {
      if (*p == '\n') loom_strbuf_puts(out, "\\n");
      else if (*p == '"' || *p == '\\') loom_strbuf_printf(out, "\\%c", *p);
      else loom_strbuf_putc(out, *p);
    }
    loom_strbuf_putc(out, '"');
    if (text.oom) st = LOOM_OOM();
    loom_strbuf_free(&text);
  }
  loom_arena_destroy(&a);
  return st;
}

loom_status loom_compiled_save(loom_compiled *c, const char *path) {
  static const char *const files[] = {"kernels.o", "exec.bin", "blob.S", "desc.c", "out.so", "cc.log"};
  char dir[] = "/tmp/loom-aot-XXXXXX";
  if (!mkdtemp(dir)) return LOOM_ERROR(IO_ERROR, "cannot make a temporary directory: %s", strerror(errno));
  char p[6][4200];
  for (int i = 0; i < 6; i++) snprintf(p[i], sizeof p[i], "%s/%s", dir, files[i]);
  uint32_t n = c->exe->nkernels;
  const loom_tp_func **fs = calloc(n + 1, sizeof *fs);
  uint8_t *bytes = NULL;
  size_t len = 0;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  uint64_t t0 = loom_clock_ns();
  loom_status st = fs ? kernel_programs(c, fs) : LOOM_OOM();
  if (!st) st = loom_cpu_emit_object(&c->cpu, loom_graph_module_sym(c->m), fs, n, p[0]);
  if (!st) st = loom_vm_exec_write(c->exe, NULL, &bytes, &len);
  if (!st) {
    FILE *f = fopen(p[1], "wb");
    if (!f || fwrite(bytes, 1, len, f) != len) st = LOOM_ERROR(IO_ERROR, "cannot write '%s'", p[1]);
    if (f && fclose(f) && !st) st = LOOM_ERROR(IO_ERROR, "cannot write '%s'", p[1]);
  }
  if (!st) {
    loom_strbuf_printf(&sb, "  .section .rodata.loom_exec,\"a\"\n  .balign 64\n  .globl loom_exec_bytes\n  .hidden loom_exec_bytes\n"
                            "loom_exec_bytes:\n  .incbin \"%s\"\n  .section .note.GNU-stack,\"\",@progbits\n", p[1]);
    st = write_text(p[2], loom_strbuf_cstr(&sb));
  }
  if (!st) {
    loom_strbuf_clear(&sb);
    loom_strbuf_puts(&sb, "#include <stdint.h>\ntypedef int32_t (*kfn)(void *const *, const int64_t *, const void *);\n"
                          "typedef struct { const char *name; kfn fn; } kent;\n"
                          "typedef struct { uint32_t magic, abi; const unsigned char *exec; uint64_t size; uint32_t n; const kent *k; "
                          "const char *externs; } desc;\n"
                          "extern const unsigned char loom_exec_bytes[];\n");
    char sym[256];
    for (uint32_t k = 0; k < n; k++) {
      loom_cpu_kernel_symbol(fs[k], sym, sizeof sym);
      loom_strbuf_printf(&sb, "int32_t %s(void *const *, const int64_t *, const void *);\n", sym);
    }
    loom_strbuf_puts(&sb, "static const kent kernels[] = {\n");
    for (uint32_t k = 0; k < n; k++) {
      loom_cpu_kernel_symbol(fs[k], sym, sizeof sym);
      loom_strbuf_printf(&sb, "  {\"%s\", %s},\n", loom_tp_func_name(fs[k]), sym);
    }
    loom_strbuf ext;
    loom_strbuf_init(&ext, NULL);
    st = externs_literal(c, &ext);
    loom_strbuf_printf(&sb, "  {0, 0}\n};\n__attribute__((visibility(\"default\"))) const desc %s = {0x%08xu, %uu, loom_exec_bytes, %zuu, %uu, kernels, %s};\n",
                       LOOM_ARTIFACT_SYMBOL, LOOM_ARTIFACT_MAGIC2, LOOM_KERNEL_ABI_VERSION, len, n, loom_strbuf_cstr(&ext));
    if (!st) st = sb.oom || ext.oom ? LOOM_OOM() : write_text(p[3], loom_strbuf_cstr(&sb));
    loom_strbuf_free(&ext);
  }
  if (!st) {
    /* $LOOM_CC, else cc, else clang-19 (installed with LLVM by scripts/setup) */
    const char *env = getenv("LOOM_CC");
    const char *ccs[] = {env && *env ? env : "cc", "clang-19"};
    for (int k = 0; k < (env && *env ? 1 : 2); k++) {
      char *argv[] = {(char *)ccs[k], "-shared", "-fPIC", "-O1", "-o", p[4], p[0], p[2], p[3], "-lm", NULL};
      loom_status_free(st);
      st = run_cc(argv, p[5]);
      if (!st || loom_status_code(st) != LOOM_CODE_UNAVAILABLE) break;
    }
  }
  if (!st && rename(p[4], path) != 0) {
    /* across file systems: copy, then move into place */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    char *data = NULL;
    size_t dlen = 0;
    st = loom_file_read(p[4], &data, &dlen);
    if (!st) {
      FILE *f = fopen(tmp, "wb");
      bool ok = f && fwrite(data, 1, dlen, f) == dlen;
      if (f) ok &= fclose(f) == 0;
      if (ok) chmod(tmp, 0755);
      if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        st = LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
      }
    }
    free(data);
  }
  c->times.codegen_ms = (double)(loom_clock_ns() - t0) / 1e6;
  loom_strbuf_free(&sb);
  if (bytes) loom_free(NULL, bytes, len);
  free(fs);
  remove_dir(dir, files, 6);
  return st;
}
