/* fuzz_onnx_model.c — the fuzz target of the ONNX model and tensor loaders.
 *
 * LLVMFuzzerTestOneInput parses one input as a model (printing and importing what loads)
 * and as a tensor, and frees everything. Two drivers use it: the bounded mutation loop of the test suite
 * (test_fuzz_onnx.c) and libFuzzer (tests/fuzz/run_libfuzzer). No Criterion here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import.h"
#include "fuzz/fuzz_onnx.h"

size_t loom_fuzz_onnx_ok, loom_fuzz_onnx_errors;

size_t loom_fuzz_onnx_views;

/* The initializers of two loads of one input, one with every raw_data copied, one with every
 * raw_data used in place (onnx_view.c, views of any size): the same names, types, dims and
 * bytes, in every graph; aborts otherwise. */
static void same_initializers(const loom_onnx_graph *a, const loom_onnx_graph *b) {
  if (a->n_initializers != b->n_initializers || a->n_nodes != b->n_nodes) {
    fprintf(stderr, "in-place load differs: %zu / %zu initializers, %zu / %zu nodes\n", a->n_initializers,
            b->n_initializers, a->n_nodes, b->n_nodes);
    abort();
  }
  for (size_t i = 0; i < a->n_initializers; i++) {
    const loom_onnx_tensor *x = &a->initializers[i], *y = &b->initializers[i];
    if (strcmp(x->name, y->name) || x->dtype != y->dtype || x->rank != y->rank || x->nbytes != y->nbytes ||
        (x->nbytes && memcmp(x->data, y->data, x->nbytes)) || (x->rank && memcmp(x->dims, y->dims, x->rank * sizeof *x->dims))) {
      fprintf(stderr, "in-place load differs at initializer %zu ('%s')\n", i, x->name);
      abort();
    }
  }
  for (size_t i = 0; i < a->n_nodes; i++)
    for (size_t k = 0; k < a->nodes[i].n_attrs; k++) {
      const loom_onnx_attr *x = &a->nodes[i].attrs[k], *y = &b->nodes[i].attrs[k];
      if (x->kind == LOOM_ONNX_ATTR_GRAPH && x->g && y->g) same_initializers(x->g, y->g);
      if (x->kind == LOOM_ONNX_ATTR_TENSOR && x->t && y->t &&
          (x->t->nbytes != y->t->nbytes || (x->t->nbytes && memcmp(x->t->data, y->t->data, x->t->nbytes)))) {
        fprintf(stderr, "in-place load differs at node %zu attribute '%s'\n", i, x->name);
        abort();
      }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  loom_onnx_model *m = NULL, *v = NULL;
  loom_status s = loom_onnx_model_parse(data, size, "fuzz.onnx", NULL, &m);
  /* the same input with every raw_data left in place: the same result */
  loom_status vs = loom_onnx_model_parse_in_place(data, size, "fuzz.onnx", NULL, 1, &v);
  if ((s == LOOM_OK) != (vs == LOOM_OK)) {
    fprintf(stderr, "in-place load %s, copying load %s\n", vs ? loom_status_text(vs, 0) : "ok", s ? loom_status_text(s, 0) : "ok");
    abort();
  }
  if (v) {
    same_initializers(m->graph, v->graph);
    loom_fuzz_onnx_views += v->nviews;
  }
  loom_status_free(vs);
  loom_onnx_model_free(v);
  if (s == LOOM_OK) {
    /* Exercise the printer on whatever loaded. */
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_onnx_model_print_sb(m, &sb);
    loom_strbuf_free(&sb);
    /* ... and the graph importer (which folds constant nodes in the interpreter). */
    loom_graph_module *gm = NULL;
    loom_status is = loom_onnx_import(m, &gm);
    loom_status_free(is);
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(m);
    loom_fuzz_onnx_ok++;
  } else {
    /* Every failure names the input. */
    if (!loom_status_is_static(s) && strstr(loom_status_text(s, 0), "fuzz.onnx") == NULL) {
      fprintf(stderr, "status without the file name: %s\n", loom_status_text(s, 0));
      abort();
    }
    loom_status_free(s);
    loom_fuzz_onnx_errors++;
  }
  loom_arena arena;
  loom_arena_init(&arena, NULL, 0);
  loom_onnx_tensor *t;
  s = loom_onnx_tensor_parse(data, size, "fuzz.pb", &arena, &t);
  loom_status_free(s);
  loom_arena_destroy(&arena);
  return 0;
}

