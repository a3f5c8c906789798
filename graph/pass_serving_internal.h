/* pass_serving_internal.h — shared by graph/pass_serving.c (the rewrite: the token axis, the
 * emission of the serving form) and graph/pass_serving_match.c (what it recognises: each
 * layer's attention, the causal mask an exporter builds in the graph, the positions it
 * computes from the shapes). Not a public header. */
#ifndef LOOM_GRAPH_PASS_SERVING_INTERNAL_H
#define LOOM_GRAPH_PASS_SERVING_INTERNAL_H

#include "base/map.h"
#include "graph/graph_internal.h"

enum { MAX_LAYERS = 128 };

/* One layer's attention, as found. */
typedef struct serving_layer {
  loom_graph_binding *root;      /* y = matmul(softmax(..), V) */
  loom_graph_expr *past_k, *past_v; /* the two past parameters */
  loom_graph_expr *q, *k_new, *v_new; /* (1, h, s, d), (1, hk, s, d), (1, hk, s, dv) in the ONNX graph */
  loom_graph_expr *present_k, *present_v; /* the concat vars */
  double scale;                  /* the scores' factor (the product of every constant factor found) */
  int64_t hk, d, dv;             /* key heads, key and value widths */
  int64_t rep_k, rep_v;          /* repeat_kv factor of the keys / values (0: none) */
  loom_graph_expr *kc, *vc;      /* the new cache parameters */
} serving_layer;

/* The rewrite's state. */
typedef struct serving {
  loom_graph_module *m;
  loom_sym_ctx *cx;
  loom_graph_func *f;            /* the ONNX @main */
  const char *what;              /* the model's name, for messages */
  loom_map producer;             /* var id -> its binding */
  loom_map skip;                 /* var id -> 1: an attention intermediate (not copied) */
  loom_map repl;                 /* var id -> its new leaf (loom_graph_expr *) */
  loom_map layer_of;             /* var id of an attention root -> layer index + 1 */
  loom_map posv;                 /* var id -> 1: arange(past, past + s) computed in the graph (the positions) */
  loom_map uses;                 /* var id -> its uses by copied bindings (mark_unused) */
  loom_map cand;                 /* var id -> 1: an operand of a binding not copied (mark_unused) */
  bool oom;                      /* a map insertion failed in a callback */
  serving_layer layers[MAX_LAYERS];
  int nlayers;
  loom_graph_expr *ids, *pos;    /* input_ids, position_ids (NULL: computed in the graph) */
  loom_graph_expr *amask;        /* attention_mask (1, p + s), taken as all ones, or NULL */
  const loom_sym_expr *seq;      /* input_ids' token dim (s) */
  const loom_sym_expr *past;     /* the past inputs' dim 2 (p; NULL until the first is seen) */
  const loom_sym_expr *t;        /* the step's token count (the new @main's) */
  int64_t pos_rows;              /* rows of the table position_ids index (0: none found) */
  unsigned tmp;                  /* names of the bindings the rewrite adds: sv0, sv1, ... */
  char why[256];                 /* why the first matmul over a present value was not an attention */
  char mwhy[160];                /* why the mask last looked at was not proven causal */
} serving;

/* UNIMPLEMENTED "'<model>' cannot be served ...: <fmt with a, b>". */
loom_status sv_refuse(const serving *s, const char *fmt, const char *a, const char *b);
/* The binding of var e (NULL for a parameter or a non-var). */
loom_graph_binding *sv_producer(const serving *s, const loom_graph_expr *e);
/* The op call bound to `e`, when it is a call of `op`. */
const loom_graph_expr *sv_call_of(const serving *s, const loom_graph_expr *e, loom_graph_op op);
/* A constant dim of a tensor's struct info. */
bool sv_dim_const(const loom_sinfo *si, int axis, int64_t *out);
/* Matches the attention rooted at binding b (y = matmul(P, V)); fills *L and marks its
 * intermediates in s->skip. false (a reason in s->why, the first one) when it is not one. */
bool sv_match_attention(serving *s, loom_graph_binding *b, serving_layer *L);
/* Checks the layer's tensors: q (1, h, s, d), the new and past keys and values (1, hk, ., d). */
loom_status sv_check_layer(serving *s, serving_layer *L);
/* Is e the positions of the new tokens computed from the shapes: add(arange(0, s), p) with p the
 * past length (either order), (s,) i64? */
bool sv_is_positions(serving *s, const loom_graph_expr *e);

#endif
