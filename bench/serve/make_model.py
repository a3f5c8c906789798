#!/usr/bin/env python3
"""bench/serve/make_model.py — one GPT-2-style decoder in the two forms bench/serve compares:

  OUT/serve.loom          Loom's serving form (docs/serve.md): ragged batch, paged_attention, the
                          paged K/V cache as parameters; weights are parameters read by name from
  OUT/weights.safetensors the same weights, written here (a seeded normal, std 0.1; gains 1, biases 0)
  OUT/model.onnx          the same decoder as a plain ONNX export with past/present key/values:
                          input_ids (1, s), position_ids (1, s), mask (s, past + s) additive, past_k<L> /
                          past_v<L> (1, H, past, Dh) -> logits (1, s, V), present_k<L> / present_v<L>

    python3 bench/serve/make_model.py OUT [--width 256 --heads 4 --layers 4 --vocab 4096 --positions 1024]
    python3 bench/serve/make_model.py models --loom-only --width 64 --heads 4 --layers 2 --vocab 256 --name serve_decoder
"""
import argparse
import json
import os
import struct

import numpy as np


def weights(cfg, seed=7):
    rng = np.random.default_rng(seed)
    d, L, V, P, F = cfg.width, cfg.layers, cfg.vocab, cfg.positions, 4 * cfg.width
    w = {"wte": rng.normal(0, 0.1, (V, d)), "wpe": rng.normal(0, 0.1, (P, d))}
    for l in range(L):
        w[f"ln1_g{l}"], w[f"ln1_b{l}"] = np.ones(d), np.zeros(d)
        w[f"w_qkv{l}"], w[f"b_qkv{l}"] = rng.normal(0, 0.1, (d, 3 * d)), np.zeros(3 * d)
        w[f"w_o{l}"], w[f"b_o{l}"] = rng.normal(0, 0.1, (d, d)), np.zeros(d)
        w[f"ln2_g{l}"], w[f"ln2_b{l}"] = np.ones(d), np.zeros(d)
        w[f"w_fc{l}"], w[f"b_fc{l}"] = rng.normal(0, 0.1, (d, F)), np.zeros(F)
        w[f"w_proj{l}"], w[f"b_proj{l}"] = rng.normal(0, 0.1, (F, d)), np.zeros(d)
    w["lnf_g"], w["lnf_b"] = np.ones(d), np.zeros(d)
    return {k: v.astype(np.float32) for k, v in w.items()}


def write_safetensors(path, w):
    header, off, blobs = {}, 0, []
    for k, v in w.items():
        b = np.ascontiguousarray(v).tobytes()
        header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def shape(t):
    return "(" + ", ".join(str(x) for x in t) + ("," if len(t) == 1 else "") + ")"


def loom_text(cfg, w):
    d, H, L = cfg.width, cfg.heads, cfg.layers
    dh = d // H
    names = ["ln1_g", "ln1_b", "w_qkv", "b_qkv", "w_o", "b_o", "ln2_g", "ln2_b", "w_fc", "b_fc", "w_proj", "b_proj"]
    lw = ", ".join(f"{n}: Tensor[{shape(w[n + '0'].shape)}, f32]" for n in names)
    out = [f"// {cfg.name}.loom — made by bench/serve/make_model.py: a GPT-2-style decoder {d} wide, {H} heads of {dh},",
           f"// {L} layers, vocabulary {cfg.vocab}, {cfg.positions} positions, in `loom serve`'s form (docs/serve.md).",
           f"fn @layer(x: Tensor[(t, {d}), f32], pos: Tensor[(t,), i64], seq: Tensor[(t,), i64], ctx: Tensor[(b,), i64],",
           f"          bt: Tensor[(b, m), i64], kc: Tensor[(n, pg, {H}, {dh}), f32], vc: Tensor[(n, pg, {H}, {dh}), f32], {lw})",
           f"    -> Tuple[Tensor[(t, {d}), f32], Tensor[(t, {H}, {dh}), f32], Tensor[(t, {H}, {dh}), f32]] {{",
           "  dataflow {",
           "    h = layer_norm(x, ln1_g, ln1_b, eps=1e-05)",
           "    qkv0 = matmul(h, w_qkv)",
           "    qkv = add(qkv0, b_qkv)",
           f"    q0 = strided_slice(qkv, axes=[1], begin=[0], end=[{d}])",
           f"    k0 = strided_slice(qkv, axes=[1], begin=[{d}], end=[{2 * d}])",
           f"    v0 = strided_slice(qkv, axes=[1], begin=[{2 * d}], end=[{3 * d}])",
           f"    q = reshape(q0, shape=[t, {H}, {dh}])",
           f"    k = reshape(k0, shape=[t, {H}, {dh}])",
           f"    v = reshape(v0, shape=[t, {H}, {dh}])",
           f"    a = paged_attention(q, k, v, kc, vc, bt, ctx, seq, pos, scale={float(1 / np.sqrt(dh))!r})",
           f"    att = reshape(a, shape=[t, {d}])",
           "    o0 = matmul(att, w_o)", "    o = add(o0, b_o)", "    x1 = add(x, o)",
           "    h2 = layer_norm(x1, ln2_g, ln2_b, eps=1e-05)",
           "    f0 = matmul(h2, w_fc)", "    f1 = add(f0, b_fc)", "    f2 = gelu_tanh(f1)",
           "    f3 = matmul(f2, w_proj)", "    f4 = add(f3, b_proj)", "    y = add(x1, f4)",
           "    out = (y, k, v)", "    output out", "  }", "  return out", "}", ""]
    params = ["tokens: Tensor[(t,), i64]", "positions: Tensor[(t,), i64]", "seq_ids: Tensor[(t,), i64]",
              "ctx_lens: Tensor[(b,), i64]", "block_tables: Tensor[(b, m), i64]", "last_index: Tensor[(b,), i64]"]
    for l in range(L):
        params += [f"k_cache{l}: Tensor[(n, pg, {H}, {dh}), f32]", f"v_cache{l}: Tensor[(n, pg, {H}, {dh}), f32]"]
    params += [f"{k}: Tensor[{shape(v.shape)}, f32]" for k, v in w.items()]
    outs = f"Tensor[(b, {cfg.vocab}), f32]" + "".join(f", Tensor[(t, {H}, {dh}), f32]" for _ in range(2 * L))
    out.append("fn @main(" + ",\n         ".join(params) + f")\n    -> Tuple[{outs}] {{")
    out += ["  dataflow {", "    tok = take(wte, tokens, axis=0)", "    pe = take(wpe, positions, axis=0)", "    h0 = add(tok, pe)"]
    for l in range(L):
        args = ", ".join([f"h{l}", "positions", "seq_ids", "ctx_lens", "block_tables", f"k_cache{l}", f"v_cache{l}"] + [f"{n}{l}" for n in names])
        out += [f"    l{l} = @layer({args})", f"    h{l + 1} = l{l}.0", f"    k{l} = l{l}.1", f"    v{l} = l{l}.2"]
    out += [f"    hf = layer_norm(h{L}, lnf_g, lnf_b, eps=1e-05)", "    hl = take(hf, last_index, axis=0)",
            "    logits = linear(hl, wte)", "    out = (logits" + "".join(f", k{l}, v{l}" for l in range(L)) + ")",
            "    output out", "  }", "  return out", "}", ""]
    return "\n".join(out)


def onnx_model(cfg, w, genai=False):
    """genai: the variant ONNX Runtime GenAI drives (attention_mask (1, t) int64 in place of the
    additive mask, which is then built inside from the shapes: causal, offset by the past)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    d, H, L, V = cfg.width, cfg.heads, cfg.layers, cfg.vocab
    dh = d // H
    nodes, inits = [], [numpy_helper.from_array(v, k) for k, v in w.items()]
    inits.append(numpy_helper.from_array(np.ascontiguousarray(w["wte"].T), "wte_t"))
    c = lambda name, arr: inits.append(numpy_helper.from_array(np.asarray(arr), name))
    c("shape_q", np.array([1, -1, H, dh], np.int64))
    c("shape_o", np.array([1, -1, d], np.int64))
    c("scale", np.array(1 / np.sqrt(dh), np.float32))
    c("split3", np.array([d, d, d], np.int64))
    n = lambda op, ins, outs, **kw: nodes.append(helper.make_node(op, ins, outs, **kw))
    n("Gather", ["wte", "input_ids"], ["tok"])
    n("Gather", ["wpe", "position_ids"], ["pe"])
    n("Add", ["tok", "pe"], ["h_0"])
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "s"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "s"])]
    if genai:
        inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, "t"]))
        c("i0", np.array(0, np.int64))
        c("i1", np.array(1, np.int64))
        c("ax0", np.array([0], np.int64))
        c("ax1", np.array([1], np.int64))
        c("f0", np.array(0, np.float32))
        c("fneg", np.array(-1e9, np.float32))
        n("Shape", ["input_ids"], ["ids_shape"])
        n("Gather", ["ids_shape", "i1"], ["s_len"], axis=0)
        n("Shape", ["attention_mask"], ["am_shape"])
        n("Gather", ["am_shape", "i1"], ["t_len"], axis=0)
        n("Sub", ["t_len", "s_len"], ["past_len"])
        n("Range", ["past_len", "t_len", "i1"], ["rows0"])
        n("Unsqueeze", ["rows0", "ax1"], ["rows"])
        n("Range", ["i0", "t_len", "i1"], ["cols0"])
        n("Unsqueeze", ["cols0", "ax0"], ["cols"])
        n("LessOrEqual", ["cols", "rows"], ["keep"])
        n("Where", ["keep", "f0", "fneg"], ["mask"])
    else:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["s", "t"]))
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "s", V])]
    for l in range(L):
        p = f"L{l}_"
        inputs += [helper.make_tensor_value_info(f"past_k{l}", TensorProto.FLOAT, [1, H, "past", dh]),
                   helper.make_tensor_value_info(f"past_v{l}", TensorProto.FLOAT, [1, H, "past", dh])]
        outputs += [helper.make_tensor_value_info(f"present_k{l}", TensorProto.FLOAT, [1, H, "t", dh]),
                    helper.make_tensor_value_info(f"present_v{l}", TensorProto.FLOAT, [1, H, "t", dh])]
        n("LayerNormalization", [f"h_{l}", f"ln1_g{l}", f"ln1_b{l}"], [p + "ln1"], epsilon=1e-5, axis=-1)
        n("MatMul", [p + "ln1", f"w_qkv{l}"], [p + "qkv0"])
        n("Add", [p + "qkv0", f"b_qkv{l}"], [p + "qkv"])
        n("Split", [p + "qkv", "split3"], [p + "q0", p + "k0", p + "v0"], axis=-1)
        for x in "qkv":
            n("Reshape", [p + x + "0", "shape_q"], [p + x + "1"])
            n("Transpose", [p + x + "1"], [p + x + "2"], perm=[0, 2, 1, 3])
        n("Concat", [f"past_k{l}", p + "k2"], [f"present_k{l}"], axis=2)
        n("Concat", [f"past_v{l}", p + "v2"], [f"present_v{l}"], axis=2)
        n("Transpose", [f"present_k{l}"], [p + "kt"], perm=[0, 1, 3, 2])
        n("MatMul", [p + "q2", p + "kt"], [p + "sc0"])
        n("Mul", [p + "sc0", "scale"], [p + "sc1"])
        n("Add", [p + "sc1", "mask"], [p + "sc"])
        n("Softmax", [p + "sc"], [p + "pr"], axis=-1)
        n("MatMul", [p + "pr", f"present_v{l}"], [p + "a0"])
        n("Transpose", [p + "a0"], [p + "a1"], perm=[0, 2, 1, 3])
        n("Reshape", [p + "a1", "shape_o"], [p + "att"])
        n("MatMul", [p + "att", f"w_o{l}"], [p + "o0"])
        n("Add", [p + "o0", f"b_o{l}"], [p + "o"])
        n("Add", [f"h_{l}", p + "o"], [p + "x1"])
        n("LayerNormalization", [p + "x1", f"ln2_g{l}", f"ln2_b{l}"], [p + "ln2"], epsilon=1e-5, axis=-1)
        n("MatMul", [p + "ln2", f"w_fc{l}"], [p + "f0"])
        n("Add", [p + "f0", f"b_fc{l}"], [p + "f1"])
        n("Gelu", [p + "f1"], [p + "f2"], approximate="tanh")
        n("MatMul", [p + "f2", f"w_proj{l}"], [p + "f3"])
        n("Add", [p + "f3", f"b_proj{l}"], [p + "f4"])
        n("Add", [p + "x1", p + "f4"], [f"h_{l + 1}"])
    n("LayerNormalization", [f"h_{L}", "lnf_g", "lnf_b"], ["hf"], epsilon=1e-5, axis=-1)
    n("MatMul", ["hf", "wte_t"], ["logits"])
    g = helper.make_graph(nodes, "decoder", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--positions", type=int, default=1024)
    ap.add_argument("--name", default="serve")
    ap.add_argument("--loom-only", action="store_true")
    cfg = ap.parse_args()
    os.makedirs(cfg.out, exist_ok=True)
    w = weights(cfg)
    with open(os.path.join(cfg.out, cfg.name + ".loom"), "w") as f:
        f.write(loom_text(cfg, w))
    if cfg.loom_only:
        return
    write_safetensors(os.path.join(cfg.out, "weights.safetensors"), w)
    import onnx
    onnx.save(onnx_model(cfg, w), os.path.join(cfg.out, "model.onnx"))
    # baseline (b): the same model for ONNX Runtime GenAI, with its configuration
    gd = os.path.join(cfg.out, "genai")
    os.makedirs(gd, exist_ok=True)
    onnx.save(onnx_model(cfg, w, genai=True), os.path.join(gd, "model.onnx"))
    dh = cfg.width // cfg.heads
    conf = {"model": {"bos_token_id": 0, "context_length": cfg.positions, "eos_token_id": cfg.vocab - 1, "pad_token_id": 0,
                      "type": "llama", "vocab_size": cfg.vocab,
                      "decoder": {"filename": "model.onnx", "head_size": dh, "hidden_size": cfg.width,
                                  "num_attention_heads": cfg.heads, "num_hidden_layers": cfg.layers, "num_key_value_heads": cfg.heads,
                                  "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask", "position_ids": "position_ids",
                                             "past_key_names": "past_k%d", "past_value_names": "past_v%d"},
                                  "outputs": {"logits": "logits", "present_key_names": "present_k%d", "present_value_names": "present_v%d"}}},
            "search": {"do_sample": False, "max_length": cfg.positions, "min_length": 0, "num_beams": 1, "num_return_sequences": 1,
                       "past_present_share_buffer": False, "temperature": 1.0, "top_k": 1, "top_p": 1.0, "repetition_penalty": 1.0,
                       "length_penalty": 1.0, "diversity_penalty": 0.0, "no_repeat_ngram_size": 0, "early_stopping": True}}
    with open(os.path.join(gd, "genai_config.json"), "w") as f:
        json.dump(conf, f, indent=2)


if __name__ == "__main__":
    main()
