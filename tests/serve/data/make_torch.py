"""Writes tests/serve/data/torch_gpt2.onnx and torch_llama.onnx — a transformers GPT-2 (2 layers,
width 64, 4 heads, vocabulary 256, 128 positions) and Llama (2 layers, width 64, 8 query heads
over 2 key/value heads, rotary positions), random weights (seed 0, initializer_range 0.1),
exported by torch's TorchScript exporter (opset 17) with past key/values: inputs input_ids
(1, s), attention_mask (1, p + s), past_<L>_k / past_<L>_v (1, hk, p, d); outputs logits
(1, s, 256), present_<L>_k / present_<L>_v; torch_gpt2_dynamo.onnx and torch_llama_dynamo.onnx the
same models through torch's dynamo exporter (opset 18) — and torch_tokens.txt: ONNX Runtime's greedy
decode of each (token by token, present fed back as past, attention_mask all ones) for the
prompts tests/serve/test_serve_torch.c serves. Needs torch + transformers (/work/torchvenv);
scripts/test only reads what it wrote.

    python tests/serve/data/make_torch.py
    python tests/serve/data/make_torch.py --bench OUT.onnx   # GPT-2 at bench/serve's size (256 wide,
        4 heads, 4 layers, vocabulary 4096, 1024 positions) for bench/serve/run.py --onnx
"""
import os, sys, warnings
import numpy as np
import torch, transformers as T
from transformers import DynamicCache
import onnxruntime as ort

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT_LENS = [1, 23, 3, 11, 2, 17]  # test_serve_torch.c's
STEPS = 8
VOCAB = 256


def prompt(r):
    return [(r * 37 + j * 11 + 5) % VOCAB for j in range(PROMPT_LENS[r])]


class WithPast(torch.nn.Module):
    def __init__(self, m, n_layers):
        super().__init__()
        self.m, self.n = m, n_layers

    def forward(self, input_ids, attention_mask, *past):
        cache = DynamicCache([(past[2 * i], past[2 * i + 1]) for i in range(self.n)], config=self.m.config)
        out = self.m(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        pres = []
        for l in out.past_key_values.layers:
            pres += [l.keys, l.values]
        return (out.logits, *pres)


def build(kind):
    torch.manual_seed(0)
    if kind == "gpt2-bench":
        c = T.GPT2Config(n_embd=256, n_layer=4, n_head=4, vocab_size=4096, n_positions=1024, bos_token_id=0, eos_token_id=0)
        return T.GPT2LMHeadModel(c).eval(), c, 4, 64
    if kind == "gpt2":
        c = T.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=128, initializer_range=0.1,
                         bos_token_id=0, eos_token_id=0)
        return T.GPT2LMHeadModel(c).eval(), c, 4, 16
    c = T.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2, intermediate_size=176,
                      vocab_size=VOCAB, max_position_embeddings=128, initializer_range=0.1, bos_token_id=0, eos_token_id=0)
    return T.LlamaForCausalLM(c).eval(), c, 2, 8


def export(kind, path, dynamo=False):
    m, c, kv, hd = build(kind)
    n = c.num_hidden_layers
    s, p = 3, 5
    ids = torch.randint(0, 256, (1, s))
    am = torch.ones(1, p + s, dtype=torch.int64)
    past = [torch.randn(1, kv, p, hd) for _ in range(2 * n)]
    names = ["input_ids", "attention_mask"] + [f"past_{i // 2}_{'kv'[i % 2]}" for i in range(2 * n)]
    outs = ["logits"] + [f"present_{i // 2}_{'kv'[i % 2]}" for i in range(2 * n)]
    dyn = {"input_ids": {1: "seq"}, "attention_mask": {1: "total"}, "logits": {1: "seq"}}
    for nm in names[2:]:
        dyn[nm] = {2: "past"}
    for nm in outs[1:]:
        dyn[nm] = {2: "total"}
    with torch.no_grad():
        if dynamo:  # torch.export's dims: past from 1 (0 would specialise), total = past + seq
            S, P = torch.export.Dim("seq", min=1, max=64), torch.export.Dim("past", min=1, max=64)
            ds = {"input_ids": {1: S}, "attention_mask": {1: torch.export.Dim("total", min=2, max=128)},
                  "past": tuple({2: P} for _ in range(2 * n))}
            torch.onnx.export(WithPast(m, n), (ids, am, *past), path, input_names=names, output_names=outs, dynamic_shapes=ds,
                              dynamo=True, opset_version=18, external_data=False)
        else:
            torch.onnx.export(WithPast(m, n), (ids, am, *past), path, input_names=names, output_names=outs, dynamic_axes=dyn,
                              dynamo=False, opset_version=17)
    return kv, hd, n


def ort_greedy(path, kv, hd, n, toks):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    past = [np.zeros((1, kv, 0, hd), np.float32) for _ in range(2 * n)]
    cur, done, out = list(toks), 0, []
    for _ in range(STEPS):
        feed = {"input_ids": np.array([cur], np.int64), "attention_mask": np.ones((1, done + len(cur)), np.int64)}
        for i in range(2 * n):
            feed[f"past_{i // 2}_{'kv'[i % 2]}"] = past[i]
        res = sess.run(None, feed)
        best = int(np.argmax(res[0][0, -1]))
        out.append(best)
        past = res[1:]
        done += len(cur)
        cur = [best]
    return out


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--bench":
        export("gpt2-bench", sys.argv[2])
        print("wrote", sys.argv[2], os.path.getsize(sys.argv[2]), "bytes")
        sys.exit(0)
    lines = []
    for kind, dynamo in (("gpt2", False), ("llama", False), ("gpt2", True), ("llama", True)):
        name = kind + ("_dynamo" if dynamo else "")
        path = os.path.join(HERE, f"torch_{name}.onnx")
        kv, hd, n = export(kind, path, dynamo)
        for r in range(len(PROMPT_LENS)):
            lines.append(f"{name} {r} " + " ".join(map(str, ort_greedy(path, kv, hd, n, prompt(r)))))
        print("wrote", path, os.path.getsize(path), "bytes")
    with open(os.path.join(HERE, "torch_tokens.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
