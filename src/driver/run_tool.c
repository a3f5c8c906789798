/* run_tool.c — what `loom-run ARTIFACT` and `loom run FILE` share: inputs from flags
 * (random from the symbolic signature, or .npy files), repeated timed calls, printing and
 * saving outputs. Uses only the runtime API (links into loom-run with libloomrt alone). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/npy.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "driver/run_tool.h"
#include "vm/symeval.h"

#define MAX_VARS 64
#define MAX_INPUTS 256

typedef struct binds {
  char *names[MAX_VARS];
  int64_t values[MAX_VARS];
  size_t n;
} binds;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void fill_random(loom_tensor *t) {
  size_t n = loom_tensor_numel(t);
  for (size_t i = 0; i < n; i++) {
    double u = (double)(rng() >> 11) / 9007199254740992.0; /* [0, 1) */
    switch (t->dtype) {
    case LOOM_DTYPE_F32: ((float *)t->data)[i] = (float)(2 * u - 1); break;
    case LOOM_DTYPE_F64: ((double *)t->data)[i] = 2 * u - 1; break;
    case LOOM_DTYPE_F16: ((uint16_t *)t->data)[i] = loom_f32_to_f16((float)(2 * u - 1)); break;
    case LOOM_DTYPE_BF16: ((uint16_t *)t->data)[i] = loom_f32_to_bf16((float)(2 * u - 1)); break;
    case LOOM_DTYPE_BOOL: ((uint8_t *)t->data)[i] = u < 0.5; break;
    default: { /* integers: [0, 10) */
      int64_t v = (int64_t)(u * 10);
      memcpy((char *)t->data + i * loom_dtype_size(t->dtype), &v, loom_dtype_size(t->dtype));
    }
    }
  }
}

static double elem(const loom_tensor *t, size_t i) {
  const char *p = (const char *)t->data + i * loom_dtype_size(t->dtype);
  switch (t->dtype) {
  case LOOM_DTYPE_F32: return *(const float *)p;
  case LOOM_DTYPE_F64: return *(const double *)p;
  case LOOM_DTYPE_F16: return loom_f16_to_f32(*(const uint16_t *)p);
  case LOOM_DTYPE_BF16: return loom_bf16_to_f32(*(const uint16_t *)p);
  case LOOM_DTYPE_BOOL: case LOOM_DTYPE_U8: return *(const uint8_t *)p;
  case LOOM_DTYPE_I8: return *(const int8_t *)p;
  case LOOM_DTYPE_I16: return *(const int16_t *)p;
  case LOOM_DTYPE_U16: return *(const uint16_t *)p;
  case LOOM_DTYPE_I32: return *(const int32_t *)p;
  case LOOM_DTYPE_U32: return *(const uint32_t *)p;
  case LOOM_DTYPE_I64: return (double)*(const int64_t *)p;
  default: return (double)*(const uint64_t *)p;
  }
}

static loom_status parse_binds(const char *spec, binds *b) {
  const char *p = spec;
  while (*p) {
    const char *eq = strchr(p, '=');
    if (!eq || eq == p) return LOOM_ERROR(INVALID_ARGUMENT, "--bind '%s': expected VAR=VALUE,...", spec);
    if (b->n == MAX_VARS) return LOOM_ERROR(INVALID_ARGUMENT, "--bind: more than %d vars", MAX_VARS);
    char *end;
    long long v = strtoll(eq + 1, &end, 10);
    if (end == eq + 1 || (*end && *end != ',')) return LOOM_ERROR(INVALID_ARGUMENT, "--bind '%s': value of '%.*s' is not an integer", spec, (int)(eq - p), p);
    for (size_t i = 0; i < b->n; i++)
      if (strlen(b->names[i]) == (size_t)(eq - p) && !strncmp(b->names[i], p, (size_t)(eq - p)))
        return LOOM_ERROR(INVALID_ARGUMENT, "--bind '%s': '%s' is given twice (%lld and %lld)", spec, b->names[i],
                          (long long)b->values[i], v);
    b->names[b->n] = strndup(p, (size_t)(eq - p));
    b->values[b->n++] = v;
    p = *end ? end + 1 : end;
  }
  return LOOM_OK;
}

void loom_run_tool_print_strs(const loom_str *e, size_t n) {
  for (size_t i = 0; i < n && i < 16; i++) {
    printf("%s\"", i ? ", " : "");
    for (size_t k = 0; k < e[i].len; k++) {
      unsigned char c = (unsigned char)e[i].data[k];
      if (c == '"' || c == '\\') printf("\\%c", c);
      else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
      else putchar(c); /* UTF-8 bytes as they are */
    }
    putchar('"');
  }
  if (n > 16) printf(", ...");
}

/* "strings:a,b,c": a 1-D string tensor of the comma-separated pieces. */
static loom_status make_strings(loom_rt *rt, const char *list, loom_tensor **out) {
  int64_t n = 1;
  for (const char *q = list; *q; q++) n += *q == ',';
  const char **s = malloc((size_t)n * sizeof *s);
  size_t *len = malloc((size_t)n * sizeof *len);
  loom_status st = s && len ? LOOM_OK : LOOM_OOM();
  const char *q = list;
  for (int64_t i = 0; !st && i < n; i++) {
    const char *e = strchr(q, ',');
    s[i] = q, len[i] = e ? (size_t)(e - q) : strlen(q);
    q += len[i] + (e != NULL);
  }
  if (!st) st = loom_rt_tensor_strings(rt, 1, &n, s, len, out);
  free(s);
  free(len);
  return st;
}

/* "random:(2,7,768)", "@file.npy" or "strings:a,b,c" for parameter `pi` of fn. */
static loom_status make_input(loom_rt *rt, uint32_t fn, uint32_t pi, const char *spec, loom_tensor **out) {
  *out = NULL;
  loom_rt_param p;
  loom_rt_param_get(rt, fn, pi, &p);
  loom_dtype dt = p.dtype < 0 ? LOOM_DTYPE_F32 : (loom_dtype)p.dtype;
  if (!strncmp(spec, "strings:", 8)) return make_strings(rt, spec + 8, out);
  if (loom_dtype_is_string(dt))
    return LOOM_ERROR(INVALID_ARGUMENT, "input '%s' is a string tensor: give --input %s=strings:a,b,c", p.name, p.name);
  if (spec[0] == '@') {
    loom_npy n;
    LOOM_PROPAGATE(loom_npy_read(spec + 1, &n));
    loom_status st = loom_rt_tensor_new(rt, n.dtype, n.rank, n.shape, out);
    if (!st && n.nbytes) memcpy((*out)->data, n.data, n.nbytes);
    loom_npy_free(&n);
    return st;
  }
  if (strncmp(spec, "random:(", 8) != 0)
    return LOOM_ERROR(INVALID_ARGUMENT, "input '%s': '%s' is neither random:(D0,D1,...) nor @FILE.npy", p.name, spec);
  int64_t shape[LOOM_VM_MAX_RANK];
  int32_t rank = 0;
  const char *s = spec + 8;
  while (*s != ')') {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0 || rank == LOOM_VM_MAX_RANK)
      return LOOM_ERROR(INVALID_ARGUMENT, "input '%s': bad shape in '%s'", p.name, spec);
    shape[rank++] = v;
    s = end;
    while (*s == ' ' || *s == ',') s++;
    if (!*s) return LOOM_ERROR(INVALID_ARGUMENT, "input '%s': missing ')' in '%s'", p.name, spec);
  }
  LOOM_PROPAGATE(loom_rt_tensor_new(rt, dt, rank, shape, out));
  fill_random(*out);
  return LOOM_OK;
}

/* "list:[SPEC;SPEC;...]" for list parameter `pi`: each item a tensor spec as make_input takes
 * ("list:[]": an empty list). */
/* Whether --input's `name` (n bytes) names parameter `pname`: the same text, or an ONNX input's
 * name as the importer spells it in the IR (each character outside [A-Za-z0-9_] as '_':
 * "gpu_0/data_0" is gpu_0_data_0). */
static bool names_param(const char *pname, const char *name, size_t n) {
  if (strlen(pname) != n) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    bool id = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (pname[i] != (id ? c : '_')) return false;
  }
  return true;
}

/* The parameter of function fn that `name` (n bytes) names (exact spelling first), or UINT32_MAX. */
static uint32_t find_param(loom_rt *rt, uint32_t fn, const char *name, size_t n) {
  uint32_t np = loom_rt_param_count(rt, fn), found = UINT32_MAX;
  for (uint32_t k = 0; k < np; k++) {
    loom_rt_param p;
    loom_rt_param_get(rt, fn, k, &p);
    if (strlen(p.name) == n && !strncmp(p.name, name, n)) return k;
    if (found == UINT32_MAX && names_param(p.name, name, n)) found = k;
  }
  return found;
}

/* fn's parameter names, comma-separated (cut with "..." to fit cap bytes), for an error. */
static void param_names(loom_rt *rt, uint32_t fn, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (uint32_t k = 0; k < loom_rt_param_count(rt, fn); k++) {
    loom_rt_param p;
    loom_rt_param_get(rt, fn, k, &p);
    int w = snprintf(buf + len, cap - len, "%s%s", k ? ", " : "", p.name);
    if (w < 0 || (size_t)w >= cap - len) {
      if (cap > 4) memcpy(buf + cap - 4, "...", 4);
      return;
    }
    len += (size_t)w;
  }
}

static loom_status make_list_input(loom_rt *rt, uint32_t fn, uint32_t pi, const char *spec, loom_vm_obj **out) {
  *out = NULL;
  loom_rt_param p;
  loom_rt_param_get(rt, fn, pi, &p);
  size_t n = strlen(spec);
  if (strncmp(spec, "list:[", 6) != 0 || n < 7 || spec[n - 1] != ']')
    return LOOM_ERROR(INVALID_ARGUMENT, "input '%s' is a list: give list:[SPEC;SPEC;...] (each SPEC random:(...) or "
                      "@FILE.npy), not '%s'", p.name, spec);
  char *body = strndup(spec + 6, n - 7);
  if (!body) return LOOM_OOM();
  loom_vm_obj *items[MAX_INPUTS];
  uint32_t k = 0;
  loom_status st = LOOM_OK;
  for (char *save = NULL, *it = strtok_r(body, ";", &save); it && !st; it = strtok_r(NULL, ";", &save)) {
    loom_tensor *t;
    if (k == MAX_INPUTS) st = LOOM_ERROR(UNIMPLEMENTED, "input '%s': more than %d items", p.name, MAX_INPUTS);
    else st = make_input(rt, fn, pi, it, &t);
    if (!st) items[k++] = &t->hdr;
  }
  if (!st) st = loom_rt_list_new(rt, items, k, out);
  for (uint32_t i = 0; i < k; i++) loom_vm_obj_release(items[i]);
  free(body);
  return st;
}

/* Whether identifier `name` occurs in `text` as a whole word. */
static bool mentions(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
    bool before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
    bool after = isalnum((unsigned char)p[n]) || p[n] == '_';
    if (!before && !after) return true;
  }
  return false;
}

/* An input given with --input must agree with --bind: each axis whose signature dim
 * evaluates at the bound values must be that size. */
static loom_status check_input_against_binds(loom_rt *rt, uint32_t fn, uint32_t pi, const loom_tensor *t, const binds *b,
                                             const char *spec) {
  loom_rt_param p;
  loom_rt_param_get(rt, fn, pi, &p);
  if ((uint32_t)t->rank != p.rank) return LOOM_OK; /* the call reports the rank */
  for (uint32_t d = 0; d < p.rank; d++) {
    bool bound = false; /* an axis no --bind var appears in is the call's to check */
    for (size_t i = 0; i < b->n && !bound; i++) bound = mentions(p.dims[d], b->names[i]);
    if (!bound) continue;
    int64_t want;
    loom_status st = loom_vm_symeval(p.dims[d], (const char *const *)b->names, b->values, b->n, &want);
    if (st) { /* a var --bind does not give: nothing to compare */
      loom_status_free(st);
      continue;
    }
    if (want == t->shape[d]) continue;
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    for (size_t i = 0; i < b->n; i++)
      if (mentions(p.dims[d], b->names[i])) loom_strbuf_printf(&sb, "%s%s=%lld", sb.len ? "," : "", b->names[i], (long long)b->values[i]);
    st = LOOM_ERROR(INVALID_ARGUMENT,
                    "--bind %s contradicts --input %s=%s: input '%s' axis %u is %s = %lld by --bind, %lld by --input",
                    loom_strbuf_cstr(&sb), p.name, spec, p.name, d, p.dims[d], (long long)want, (long long)t->shape[d]);
    loom_strbuf_free(&sb);
    return st;
  }
  return LOOM_OK;
}

static loom_status input_from_binds(loom_rt *rt, uint32_t fn, uint32_t pi, const binds *b, loom_tensor **out) {
  loom_rt_param p;
  loom_rt_param_get(rt, fn, pi, &p);
  if (p.dtype >= 0 && loom_dtype_is_string((loom_dtype)p.dtype))
    return LOOM_ERROR(INVALID_ARGUMENT, "input '%s' is a string tensor: give --input %s=strings:a,b,c", p.name, p.name);
  int64_t shape[LOOM_VM_MAX_RANK];
  for (uint32_t d = 0; d < p.rank; d++)
    LOOM_RETURN_IF_ERROR(loom_vm_symeval(p.dims[d], (const char *const *)b->names, b->values, b->n, &shape[d]),
                         "while making input '%s' axis %u from its signature", p.name, d);
  LOOM_PROPAGATE(loom_rt_tensor_new(rt, p.dtype < 0 ? LOOM_DTYPE_F32 : (loom_dtype)p.dtype, (int32_t)p.rank, shape, out));
  fill_random(*out);
  return LOOM_OK;
}

/* Prints output (or list item, at `depth`) i: a tensor's dtype, shape, sum and first elements; a
 * list's length and then its items. */
static void print_output_at(uint32_t i, const loom_vm_obj *o, int depth) {
  printf("%*s%s %u: ", 2 * depth, "", depth ? "item" : "output", i);
  if (o->kind == LOOM_VM_OBJ_LIST) {
    const loom_tuple *l = (const loom_tuple *)o;
    printf("list of %u\n", l->size);
    for (uint32_t k = 0; k < l->size; k++) print_output_at(k, l->items[k], depth + 1);
    return;
  }
  if (o->kind != LOOM_VM_OBJ_TENSOR) {
    printf("%s\n", loom_vm_obj_kind_name(o->kind));
    return;
  }
  const loom_tensor *t = (const loom_tensor *)o;
  printf("%s(", loom_dtype_name(t->dtype));
  for (int32_t d = 0; d < t->rank; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
  size_t n = loom_tensor_numel(t);
  if (loom_dtype_is_string(t->dtype)) { /* dense: made by loom_tensor_strings */
    printf(") first=[");
    loom_run_tool_print_strs(t->data, n);
    printf("]\n");
    return;
  }
  double sum = 0;
  for (size_t k = 0; k < n; k++) sum += elem(t, k);
  printf(") sum=%.6g first=[", sum);
  for (size_t k = 0; k < n && k < 6; k++) printf("%s%.6g", k ? ", " : "", elem(t, k));
  printf("%s]\n", n > 6 ? ", ..." : "");
}

static void print_output(uint32_t i, const loom_vm_obj *o) { print_output_at(i, o, 0); }

static loom_status run_inputs(const loom_cli_args *args, loom_rt *rt, binds *b);

loom_status loom_run_tool_open(const loom_cli_args *args, const char *path, loom_rt **out) {
  *out = NULL;
  const char *key = loom_cli_get(args, "--trust");
  loom_rt_options o = {.check_weights = loom_cli_flag(args, "--check-weights"), .device = loom_cli_get(args, "--device")};
  loom_vm_artifact_pubkey pk;
  if (key) {
    LOOM_RETURN_IF_ERROR(loom_vm_artifact_pubkey_read(key, &pk), "while reading the --trust key");
    o.trust = &pk;
  }
  return loom_rt_open(path, &o, out);
}

loom_status loom_run_tool(const loom_cli_args *args, loom_rt *rt) {
  /* read when cuBLAS's handle is made, at the first GEMM of a run (libcall/cublas.c) */
  if (loom_cli_flag(args, "--tf32")) setenv("LOOM_CUDA_TF32", "1", 1);
  binds bs = {0}, *b = &bs;
  loom_status st = run_inputs(args, rt, b);
  for (size_t i = 0; i < b->n; i++) free(b->names[i]);
  return st;
}

static loom_status run_inputs(const loom_cli_args *args, loom_rt *rt, binds *b) {
  const char *fname = loom_cli_get(args, "--fn") ? loom_cli_get(args, "--fn") : "main";
  if (loom_cli_flag(args, "--list")) {
    for (uint32_t i = 0; i < loom_rt_function_count(rt); i++) {
      char buf[2048];
      loom_rt_signature_text(rt, i, buf, sizeof buf);
      printf("%s\n", buf);
    }
    return LOOM_OK;
  }
  uint32_t fn = loom_rt_function_find(rt, fname);
  if (fn == UINT32_MAX) return LOOM_ERROR(NOT_FOUND, "no function '%s' in '%s' (--list shows them)", fname, args->positional[0]);
  const char *threads = loom_cli_get(args, "--threads");
  if (threads) LOOM_PROPAGATE(loom_rt_set_threads(rt, (uint32_t)strtoul(threads, NULL, 10)));
  if (loom_cli_get(args, "--bind")) LOOM_PROPAGATE(parse_binds(loom_cli_get(args, "--bind"), b));
  uint32_t np = loom_rt_param_count(rt, fn);
  if (np > MAX_INPUTS) return LOOM_ERROR(UNIMPLEMENTED, "%u parameters", np);
  loom_vm_obj *inputs[MAX_INPUTS] = {0}; /* tensors, or lists for list parameters */
  loom_status st = LOOM_OK;
  for (int i = 0; !st && i < loom_cli_count(args, "--input"); i++) {
    const char *v = loom_cli_value_at(args, "--input", i);
    const char *eq = strchr(v, '=');
    if (!eq) {
      st = LOOM_ERROR(INVALID_ARGUMENT, "--input '%s': expected NAME=random:(...) or NAME=@FILE.npy", v);
      break;
    }
    uint32_t pi = find_param(rt, fn, v, (size_t)(eq - v));
    if (pi == UINT32_MAX) {
      char names[512];
      param_names(rt, fn, names, sizeof names);
      st = LOOM_ERROR(NOT_FOUND, "--input '%.*s': '%s' has no such parameter (its parameters: %s)", (int)(eq - v), v, fname, names);
    }
    else if (inputs[pi]) st = LOOM_ERROR(INVALID_ARGUMENT, "--input '%.*s' given twice", (int)(eq - v), v);
    else {
      loom_rt_param p;
      loom_rt_param_get(rt, fn, pi, &p);
      loom_tensor *t = NULL;
      if (p.list) st = make_list_input(rt, fn, pi, eq + 1, &inputs[pi]);
      else if (!(st = make_input(rt, fn, pi, eq + 1, &t))) inputs[pi] = &t->hdr;
      if (!st && t && loom_cli_get(args, "--bind")) st = check_input_against_binds(rt, fn, pi, t, b, eq + 1);
    }
  }
  for (uint32_t k = 0; !st && k < np; k++) {
    if (inputs[k]) continue;
    loom_rt_param p;
    loom_rt_param_get(rt, fn, k, &p);
    loom_tensor *t = NULL;
    if (p.list) st = LOOM_ERROR(INVALID_ARGUMENT, "input '%s' is a list: give --input %s=list:[SPEC;...]", p.name, p.name);
    else if (!loom_cli_get(args, "--bind"))
      st = LOOM_ERROR(INVALID_ARGUMENT, "input '%s' is missing: give --input %s=... or --bind vars", p.name, p.name);
    else if (!(st = input_from_binds(rt, fn, k, b, &t))) inputs[k] = &t->hdr;
  }
  /* the inputs on the runtime's device once, not at every call (a GPU's copies stay out of the times) */
  for (uint32_t k = 0; !st && k < np; k++) {
    if (!inputs[k] || inputs[k]->kind != LOOM_VM_OBJ_TENSOR) continue;
    loom_tensor *moved;
    st = loom_rt_tensor_to_device(rt, (loom_tensor *)inputs[k], &moved);
    if (!st) {
      loom_vm_obj_release(inputs[k]);
      inputs[k] = &moved->hdr;
    }
  }
  long repeat = loom_cli_get(args, "--repeat") ? strtol(loom_cli_get(args, "--repeat"), NULL, 10) : 1;
  if (repeat < 1) repeat = 1;
  loom_rt_set_profile(rt, loom_cli_flag(args, "--profile"));
  loom_rt_outputs out = {0};
  double best = INFINITY, total = 0;
  for (long r = 0; !st && r < repeat; r++) {
    loom_rt_outputs_free(&out);
    uint64_t t0 = loom_clock_ns();
    st = loom_rt_call_values(rt, fname, inputs, np, &out);
    double ms = (double)(loom_clock_ns() - t0) / 1e6;
    total += ms;
    if (ms < best) best = ms;
  }
  for (uint32_t i = 0; !st && i < out.count; i++) { /* the outputs back in host memory */
    if (out.items[i]->kind == LOOM_VM_OBJ_TENSOR) {
      loom_tensor *h;
      st = loom_rt_tensor_to_host(rt, (loom_tensor *)out.items[i], &h);
      if (!st) {
        loom_vm_obj_release(out.items[i]);
        out.items[i] = &h->hdr;
      }
    } else if (!loom_rt_run_device(rt)->vt->host) {
      st = LOOM_ERROR(UNIMPLEMENTED, "output %u is a list: a %s run does not copy lists back yet", i,
                      loom_rt_run_device(rt)->vt->name);
    }
  }
  if (!st) {
    for (uint32_t i = 0; i < out.count; i++) print_output(i, out.items[i]);
    if (repeat > 1) printf("time: %ld runs, mean %.4f ms, min %.4f ms\n", repeat, total / (double)repeat, best);
    if (loom_cli_flag(args, "--profile")) loom_rt_profile_print(rt, stdout);
    const char *path = loom_cli_get(args, "--output");
    for (uint32_t i = 0; path && !st && i < out.count; i++) {
      if (out.items[i]->kind != LOOM_VM_OBJ_TENSOR) continue;
      const loom_tensor *t = (const loom_tensor *)out.items[i];
      if (loom_dtype_is_string(t->dtype)) {
        st = LOOM_ERROR(UNIMPLEMENTED, "output %u is a string tensor: --output writes .npy files of numbers", i);
        break;
      }
      char name[4096];
      if (out.count == 1) snprintf(name, sizeof name, "%s", path);
      else {
        size_t l = strlen(path);
        bool npy = l > 4 && !strcmp(path + l - 4, ".npy");
        snprintf(name, sizeof name, "%.*s.%u.npy", (int)(npy ? l - 4 : l), path, i);
      }
      st = loom_npy_write(name, t->dtype, t->rank, t->shape, t->data);
    }
  }
  loom_rt_outputs_free(&out);
  for (uint32_t k = 0; k < np; k++) loom_vm_obj_release(inputs[k]);
  return st;
}

