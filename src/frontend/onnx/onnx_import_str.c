/* onnx_import_str.c — the string ops (graph/op_string.c; docs/ir.md "Strings"): StringConcat,
 * StringSplit, StringNormalizer, RegexFullMatch, and ai.onnx.ml's LabelEncoder from strings to
 * integers. Equal on strings is Equal's row (onnx_import_core.c). The compiled path runs them
 * as the VM's host operators (docs/vm.md "Host operators"). */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

#define NOATTR " "

/* Input 0 must be a string tensor: refused by name otherwise (a number where a string is
 * required). */
static loom_status need_string_input(nctx *c, size_t i) {
  const loom_sinfo *si = c->args[i] ? c->args[i]->sinfo : NULL;
  if (si && si->kind == LOOM_SINFO_TENSOR && si->dtype != LOOM_DTYPE_STRING && si->dtype != LOOM_DTYPE_UNKNOWN)
    return BAD(c->n, "input %zu ('%s') has element type %s; STRING is required", i, c->n->inputs[i],
               loom_dtype_name(si->dtype));
  return LOOM_OK;
}

/* STRINGS attribute `name` as a graph STRS attribute named `as` (nothing when absent). */
static loom_status strs_attr(nctx *c, const char *name, const char *as) {
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, name);
  if (!a) return LOOM_OK;
  if (a->kind != LOOM_ONNX_ATTR_STRINGS) return BAD(c->n, "attribute '%s' must be strings, not %s", name, loom_onnx_attr_kind_name(a->kind));
  for (size_t i = 0; i < a->count; i++)
    if (strlen(a->strings[i]) != a->string_lens[i]) return UNSUP(c->n, "attribute '%s': string %zu holds a NUL byte", name, i);
  oimp_add_attr(c, loom_graph_attr_strs(c->im->m, as, a->count, a->strings));
  return LOOM_OK;
}

static loom_status h_concat(nctx *c, const op_entry *e, loom_graph_expr **out) {
  LOOM_PROPAGATE(need_string_input(c, 0));
  LOOM_PROPAGATE(need_string_input(c, 1));
  return oimp_emit(c, e->op, 2, c->args, c->n->outputs[0], out);
}

/* StringSplit: Y = pieces (padded with ""), Z = counts. */
static loom_status h_split(nctx *c, const op_entry *e, loom_graph_expr **out) {
  LOOM_PROPAGATE(need_string_input(c, 0));
  const char *delim;
  int64_t maxsplit;
  LOOM_PROPAGATE(oimp_attr_str(c, "delimiter", "", &delim));
  LOOM_PROPAGATE(oimp_attr_int(c, "maxsplit", -1, &maxsplit));
  oimp_add_attr(c, loom_graph_attr_str(c->im->m, "delimiter", delim));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "maxsplit", maxsplit));
  loom_graph_expr *t;
  LOOM_PROPAGATE(oimp_emit(c, e->op, 1, c->args, NULL, &t));
  return oimp_bind_items(c, t, 2, out);
}

static loom_status h_normalizer(nctx *c, const op_entry *e, loom_graph_expr **out) {
  LOOM_PROPAGATE(need_string_input(c, 0));
  const char *act;
  int64_t sensitive;
  LOOM_PROPAGATE(oimp_attr_str(c, "case_change_action", "NONE", &act));
  LOOM_PROPAGATE(oimp_attr_int(c, "is_case_sensitive", 0, &sensitive));
  if (strcmp(act, "NONE") && strcmp(act, "LOWER") && strcmp(act, "UPPER"))
    return BAD(c->n, "case_change_action \"%s\" is not NONE, LOWER or UPPER", act);
  oimp_add_attr(c, loom_graph_attr_str(c->im->m, "case", act));
  oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "case_sensitive", sensitive != 0));
  LOOM_PROPAGATE(strs_attr(c, "stopwords", "stopwords"));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

static loom_status h_regex(nctx *c, const op_entry *e, loom_graph_expr **out) {
  LOOM_PROPAGATE(need_string_input(c, 0));
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, "pattern");
  if (!a || a->kind != LOOM_ONNX_ATTR_STRING) return BAD(c->n, "attribute 'pattern' (a string) is required");
  if (strlen(a->s) != a->len) return UNSUP(c->n, "attribute 'pattern' holds a NUL byte");
  oimp_add_attr(c, loom_graph_attr_str(c->im->m, "pattern", a->s));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

/* The integers of `values_int64s` or `values_tensor` (any integer type) into *v (malloc'd), their
 * dtype into *dt; the default from `default_int64` / `default_tensor`. */
static loom_status label_values(nctx *c, int64_t **v, size_t *n, loom_dtype *dt, int64_t *dflt) {
  const loom_onnx_attr *vi = loom_onnx_node_attr(c->n, "values_int64s"), *vt = loom_onnx_node_attr(c->n, "values_tensor");
  const loom_onnx_attr *di = loom_onnx_node_attr(c->n, "default_int64"), *dtn = loom_onnx_node_attr(c->n, "default_tensor");
  if (loom_onnx_node_attr(c->n, "values_strings") || loom_onnx_node_attr(c->n, "values_floats"))
    return UNSUP(c->n, "LabelEncoder to strings or floats is not supported (integers only)");
  *dt = LOOM_DTYPE_I64, *dflt = di && di->kind == LOOM_ONNX_ATTR_INT ? di->i : -1;
  if (vi && vi->kind == LOOM_ONNX_ATTR_INTS) {
    *n = vi->count;
    if (!(*v = malloc((*n ? *n : 1) * sizeof **v))) return LOOM_OOM();
    if (*n) memcpy(*v, vi->ints, *n * sizeof **v);
  } else if (vt && vt->kind == LOOM_ONNX_ATTR_TENSOR && loom_dtype_is_int(vt->t->dtype) && !loom_dtype_is_lowp(vt->t->dtype)) {
    loom_graph_tensor t = {.dtype = vt->t->dtype, .data = vt->t->data};
    *dt = t.dtype, *n = (size_t)vt->t->numel;
    if (!(*v = malloc((*n ? *n : 1) * sizeof **v))) return LOOM_OOM();
    for (size_t i = 0; i < *n; i++) (*v)[i] = loom_graph_tensor_get_i64(&t, i);
  } else return UNSUP(c->n, "LabelEncoder needs integer values (values_int64s, or an integer values_tensor)");
  if (dtn && dtn->kind == LOOM_ONNX_ATTR_TENSOR) {
    const loom_onnx_tensor *t = dtn->t;
    if (t->dtype != *dt || t->numel != 1) {
      free(*v);
      return BAD(c->n, "default_tensor must hold one %s, like values_tensor", loom_dtype_name(*dt));
    }
    *dflt = loom_graph_tensor_get_i64(&(loom_graph_tensor){.dtype = t->dtype, .data = t->data}, 0);
  }
  return LOOM_OK;
}

/* LabelEncoder (ai.onnx.ml, opset 4) from strings (keys_strings or a STRING keys_tensor) to
 * integers. */
static loom_status h_label_encoder(nctx *c, const op_entry *e, loom_graph_expr **out) {
  LOOM_PROPAGATE(need_string_input(c, 0));
  const loom_onnx_attr *ks = loom_onnx_node_attr(c->n, "keys_strings"), *kt = loom_onnx_node_attr(c->n, "keys_tensor");
  const char **keys = NULL;
  size_t nk = 0;
  if (ks && ks->kind == LOOM_ONNX_ATTR_STRINGS) keys = ks->strings, nk = ks->count;
  else if (kt && kt->kind == LOOM_ONNX_ATTR_TENSOR && kt->t->dtype == LOOM_DTYPE_STRING) {
    nk = (size_t)kt->t->numel;
    if (!(keys = calloc(nk ? nk : 1, sizeof *keys))) return LOOM_OOM();
    for (size_t i = 0; i < nk; i++) {
      loom_str s;
      memcpy(&s, (const char *)kt->t->data + i * sizeof s, sizeof s);
      keys[i] = s.data ? s.data : "";
      if (strlen(keys[i]) != s.len) {
        free(keys);
        return UNSUP(c->n, "keys_tensor: string %zu holds a NUL byte", i);
      }
    }
  } else return UNSUP(c->n, "LabelEncoder needs string keys (keys_strings or a STRING keys_tensor)");
  int64_t *v = NULL, dflt;
  size_t nv;
  loom_dtype dt;
  loom_status st = label_values(c, &v, &nv, &dt, &dflt);
  if (!st && nv != nk) st = BAD(c->n, "%zu keys but %zu values", nk, nv);
  if (!st) {
    oimp_add_attr(c, loom_graph_attr_strs(c->im->m, "keys", nk, keys));
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "values", nv, v));
    oimp_add_attr(c, loom_graph_attr_int(c->im->m, "default", dflt));
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", dt));
    st = oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
  }
  if (keys != (ks ? ks->strings : NULL)) free(keys);
  free(v);
  return st;
}

/* default domain (onnx_tables.def) */
const op_entry oimp_str_table[] = {
    {"StringConcat", LOOM_GRAPH_OP_STRING_CONCAT, h_concat, 2, 2, NOATTR, false},
    {"StringSplit", LOOM_GRAPH_OP_STRING_SPLIT, h_split, 1, 1, " delimiter maxsplit ", true},
    {"StringNormalizer", LOOM_GRAPH_OP_STRING_NORMALIZE, h_normalizer, 1, 1, " case_change_action is_case_sensitive locale stopwords ", false},
    {"RegexFullMatch", LOOM_GRAPH_OP_REGEX_FULL_MATCH, h_regex, 1, 1, " pattern ", false},
};
const size_t oimp_str_table_len = sizeof oimp_str_table / sizeof oimp_str_table[0];

/* domain ai.onnx.ml (onnx_tables.def) */
const op_entry oimp_str_ml_table[] = {
    {"LabelEncoder", LOOM_GRAPH_OP_LABEL_ENCODE, h_label_encoder, 1, 1,
     " keys_strings keys_int64s keys_floats keys_tensor values_strings values_int64s values_floats values_tensor"
     " default_string default_int64 default_float default_tensor ",
     false},
};
const size_t oimp_str_ml_table_len = sizeof oimp_str_ml_table / sizeof oimp_str_ml_table[0];
