/* passes.h — the graph-level optimisation passes (docs/passes.md).
 *
 *     size_t n;
 *     LOOM_PROPAGATE(loom_graph_normalize(m, &n));
 *     LOOM_PROPAGATE(loom_graph_simplify(m, &n));
 *     LOOM_PROPAGATE(loom_graph_fold(m, &n));
 *     LOOM_PROPAGATE(loom_graph_cse(m, &n));
 *     LOOM_PROPAGATE(loom_graph_dce(m, &n));
 *
 * Each pass rewrites every graph function of the module in place and reports how many
 * rewrites it made in *out_changed (optional). None of them moves a binding: a rewrite
 * replaces a binding's value where it stands or replaces the uses of a var by an
 * earlier leaf, and every new use of a symbolic var is checked to be in scope at that
 * point (a symbol defined by a match_cast is never used above it). After each pass
 * every dataflow block's `output` list is exactly the vars used after the block, and
 * empty blocks are gone. */
#ifndef LOOM_GRAPH_PASSES_H
#define LOOM_GRAPH_PASSES_H

#include "graph/graph.h"

/* Canonical form: bindings of leaves propagated into their uses (copy and literal
 * propagation), statically true match_casts that define no symbol removed, tuple-gets
 * of a tuple built in the function replaced by the field, commutative operators with
 * their literal operands last and var operands by definition order, adjacent dataflow
 * blocks merged. */
loom_status loom_graph_normalize(loom_graph_module *m, size_t *out_changed);

/* Constant folding: operator calls whose operands are all constants (and whose
 * attributes and result shape are constant, at most LOOM_GRAPH_FOLD_MAX_ELEMS elements, or
 * any number for elementwise / broadcast / injective / reduction ops whose result has no
 * more bytes than their constant operands: a weight's transposition folds)
 * are evaluated with the interpreter's reference implementations; shape computations
 * become symbolic literals: a binding whose struct info is a Shape of known dims
 * (shape_of(x) of a tensor with symbolic dims) becomes `shape(b, s)`, a Scalar i64 of
 * known value becomes `sym(e)`, and a Shape literal operand of reshape / zeros / ones /
 * full becomes the `shape` attribute. */
#define LOOM_GRAPH_FOLD_MAX_ELEMS 16384
loom_status loom_graph_fold(loom_graph_module *m, size_t *out_changed);

/* Inlining (graph/pass_inline.c): a call of a graph function that passes a constant operand
 * (a layer function called with its weights) becomes a copy of the callee's bindings in the
 * caller's block, the callee's parameters read as the arguments and its symbolic vars as the
 * arguments' dims; the call's var then reads the copy's result. Only calls in a function's
 * top-level blocks, of callees made of plain bindings (no match_cast, control flow,
 * tensor-program or external call; into a dataflow block only dataflow blocks) whose
 * parameter dims are constants or symbolic vars; a call that does not fit stays. Repeated
 * while calls are inlined (at most 8 rounds: a callee's own calls go in the next round). */
loom_status loom_graph_inline_const_calls(loom_graph_module *m, size_t *out_changed);

/* Binds parameters of function `func` to values known at compile time: each names[i] becomes
 * module constant @names[i] of struct info sinfos[i] (a tensor of constant dims, which the
 * parameter's struct info must provably describe) over data[i], borrowed (it must outlive m),
 * its uses read the constant and the parameter is removed from the function's signature.
 * Errors name the function and the parameter (absent, bound twice, of another type, a
 * constant of that name already defined). */
loom_status loom_graph_bind_params(loom_graph_module *m, const char *func, size_t n, const char *const *names,
                                   const loom_sinfo *const *sinfos, const void *const *data, size_t *out_bound);

/* Constant matmul weights laid out once (graph/pass_pack.c): matmul(x, W) with W a constant
 * f32 (k, n) matrix (or (n, k) with transpose_b), n >= `panel`, becomes
 * matmul(x, Wp, packed_b=true) with Wp (ceil(n / panel), k, panel) computed here (n not a
 * multiple of panel: the last panel zero-padded and the call given n=n); panel < 1 does
 * nothing. Run dce after it: the weights it replaced stay until then. */
loom_status loom_graph_pack_weights(loom_graph_module *m, int panel, size_t *out_changed);
/* How the int8 matmul reads a constant weight (the driver's translation of loom_target.int8_quads). */
typedef enum loom_pack_quads {
  LOOM_PACK_QUADS_NONE = 0,  /* i16 pair words (vpmaddwd) */
  LOOM_PACK_QUADS_EXACT = 1, /* byte quads when the centred values fit a signed byte (dot4: AVX512-VNNI) */
  LOOM_PACK_QUADS_PAIRS = 2, /* byte quads when, besides, every byte pair's products with two unsigned
                                bytes sum within i16 (dot4s: AVX2's vpmaddubsw, saturating) */
} loom_pack_quads;
/* The same; with `quads` (a loom_pack_quads) an int8 weight whose centred values fit is laid out
 * in byte quads with its column sums (matmul_integer quads=true[, pairs=true]: the target's dot4). */
loom_status loom_graph_pack_weights_ex(loom_graph_module *m, int panel, int quads, size_t *out_changed);
/* The same through the packed-weight cache `cache` (graph/wcache.h; NULL: none): a packed
 * constant of 64 KiB or more whose key (layout, its parameters, the source's dtype, dims and
 * XXH3-128 of its bytes) has a sound entry is mapped from it instead of made, and one made is
 * stored. The module keeps the mappings until it is destroyed. */
typedef struct loom_wcache loom_wcache;
loom_status loom_graph_pack_weights_cached(loom_graph_module *m, int panel, int quads, loom_wcache *cache,
                                           size_t *out_changed);

/* The same; with `tied` a weight that something else also reads (a tied LM head's embedding,
 * gathered) is packed for its matmuls too, the original kept for the other reads: one more copy
 * of it in memory (off in the default: issue 22). */
loom_status loom_graph_pack_weights_tied(loom_graph_module *m, int panel, int quads, bool tied, loom_wcache *cache,
                                         size_t *out_changed);

/* Common subexpression elimination over pure bindings (operator calls, call_tp, tuples,
 * tuple-gets) with equal struct info: a later equal binding's uses become the earlier
 * var. An `if` branch sees the bindings before the `if`; its own are forgotten after it. */
loom_status loom_graph_cse(loom_graph_module *m, size_t *out_changed);

/* Dead-code elimination: removes bindings whose var is never used, keeping match_casts
 * and external calls (side effects), `if`s whose branches hold them, and every binding
 * that defines a symbolic var used by live code; removes module constants nothing uses. */
loom_status loom_graph_dce(loom_graph_module *m, size_t *out_changed);

/* Attention written out as operators (matmul(q, k, transpose_b) -> scalar scale -> additive /
 * `where` / causal mask -> softmax over the keys -> matmul with v, at rank 4, rank 5 grouped-query
 * or rank 3 views, as exporters write it) becomes one `attention` call where it is exact
 * (graph/pass_attention.c: the conditions); dce then removes the composed form. */
loom_status loom_graph_attention(loom_graph_module *m, size_t *out_changed);

/* Algebraic simplification: permute_dims compositions, reshape chains (reshape,
 * expand_dims, squeeze, flatten) into one reshape, reshape-likes / broadcast_to /
 * strided_slice / permute_dims that provably keep their input as it is, mul/div by one,
 * add/sub of zero, cast to the same dtype, dropout, neg(neg(x)), one-operand concat.
 * Shape equalities are decided by the symbolic prover. */
loom_status loom_graph_simplify(loom_graph_module *m, size_t *out_changed);

/* Fusion (after legalize): over each dataflow block, chains of elementwise / broadcast /
 * injective `call_tp`s fuse into their consumer (any program but an out_fusable one:
 * reductions, other elementwise programs); each group becomes one call of one merged
 * program (loom_tp_merge + loom_tp_inline_locals) whose operands are the group's symbols
 * (`sym(b)`, ...) then its external tensor inputs. A producer fuses only when every use
 * of its var is in the group, when its struct info defines no symbol, when every
 * intermediate disappears from the merged program, when the group reads it in one pass
 * (one innermost loop), and (for one computing math intrinsics or divisions) when the
 * group reads each of its elements once. The fused call stands at the group's last binding, after every match_cast that
 * defines a symbol it passes. Programs no call uses any more are removed. */
typedef struct loom_graph_fuse_stats {
  size_t groups;   /* fused calls made, each replacing two or more call_tp */
  size_t absorbed; /* call_tp bindings that disappeared into a group */
  size_t programs; /* merged programs added (equal groups share one) */
} loom_graph_fuse_stats;
loom_status loom_graph_fuse(loom_graph_module *m, loom_graph_fuse_stats *out);
/* What a target changes in fusion (loom_graph_fuse: all false). */
typedef struct loom_graph_fuse_options {
  /* A row program that reads its input in several passes (softmax, the norms: the reduction
   * pattern) takes cheap elementwise or broadcast producers anyway, recomputed in each pass:
   * on a GPU a warp re-reads its row from cache, cheaper than a kernel of its own and a round
   * trip through memory (the CPU measured slower: loom_target.reread_rows). Costly producers
   * (math intrinsics, divisions) stay out. */
  bool reread_rows;
} loom_graph_fuse_options;
loom_status loom_graph_fuse_with(loom_graph_module *m, const loom_graph_fuse_options *o, loom_graph_fuse_stats *out);

/* Sharing (after fuse, before schedule): tensor programs identical but for integer constants
 * (the bias + residual matmuls of a block, K = 768 and K = 3072) become one program with a
 * symbol where their constants differ, bound at each call from its arguments' shapes; their
 * calls use it and they go. A group is shared only when `schedule` (the target's rules, on a
 * copy) gives the shared program, with each member's values put back, the member's own
 * schedule, and when every new symbol is a whole dim of a parameter buffer
 * (graph/pass_share.c). *out_shared: programs replaced. */
typedef loom_status (*loom_graph_schedule_fn)(void *ud, loom_graph_module *m, loom_tp_func *tp);
loom_status loom_graph_share_programs(loom_graph_module *m, loom_graph_schedule_fn schedule, void *ud,
                                      size_t *out_shared);

/* What loom_graph_serving_from_decoder found. */
typedef struct loom_graph_serving_info {
  int layers;            /* attentions replaced (cache parameter pairs) */
  int64_t position_rows; /* rows of the constant table position_ids index (0: none): the context limit */
} loom_graph_serving_info;

/* Rewrites an imported ONNX decoder with past/present key/values (input_ids, position_ids,
 * past inputs concatenated with each layer's new keys / values, an optional additive mask
 * input) into `loom serve`'s serving form (docs/serve.md): @main is replaced by one taking
 * tokens, positions, seq_ids, ctx_lens, block_tables, last_index, k_cache<L>, v_cache<L> and
 * returning the last tokens' logits and each layer's new keys and values, with
 * paged_attention in place of each attention (graph/pass_serving.c lists the patterns).
 * UNIMPLEMENTED, naming the input / binding / result, for a structure it does not recognise;
 * `what` names the model in messages. */
loom_status loom_graph_serving_from_decoder(loom_graph_module *m, const char *what, loom_graph_serving_info *out);

#endif
