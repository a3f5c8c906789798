"""Generates models/torch_export/<name>/: small models of the families users bring, built with
Hugging Face `transformers` and `torchvision` building blocks (random weights, fixed seed) and exported
by PyTorch's two ONNX exporters with every batch / sequence / image dim dynamic, plus ONNX Runtime's
outputs at several shapes. tests/e2e/test_e2e_torch_models.c compiles each model ONCE and checks
Loom against those outputs at every saved shape (the tests need neither torch nor onnxruntime).

    python3 -m venv /tmp/v && /tmp/v/bin/pip install torch torchvision transformers onnx onnxscript onnxruntime numpy
    /tmp/v/bin/python models/torch_export/gen.py            # rewrites every model directory here

Made with torch 2.15.0, torchvision 0.30, transformers 5.24.0, onnx 1.23.2, onnxruntime 1.31.1.
Per model directory: model.onnx (< 5 MB) and, per case C, C.in<k>.npy (the inputs in the model's
order) and C.out<k>.npy (ONNX Runtime's outputs in the model's order).

| model | what | exporter |
|---|---|---|
| bert | BertModel, 2 layers, padding mask, token types | TorchScript |
| gpt2_past | GPT2LMHeadModel with a KV cache: past in, present out, padded mask | dynamo |
| llama_past | LlamaForCausalLM, grouped-query attention (8 q / 2 kv heads), RoPE, KV cache | TorchScript |
| t5_encoder | T5EncoderModel (relative position buckets, RMS norm) | dynamo |
| vit | ViTModel at any image size (position embeddings resized to the patch grid at run time), patch 8 | TorchScript |
| cnn | torchvision blocks: ResNet BasicBlock, MobileNetV2 InvertedResidual, EfficientNet MBConv (SiLU, squeeze-excitation), pooling, linear; dynamic batch and image size | TorchScript |
"""
import os
import shutil
import warnings

import numpy as np
import onnxruntime as ort
import torch
import transformers as T

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 1000


def export(module, args, path, names, outs, dynamo, dyn_axes=None, dyn_shapes=None):
    module.eval()
    with torch.no_grad():
        if dynamo:
            torch.onnx.export(module, args, path, input_names=names, output_names=outs, dynamic_shapes=dyn_shapes,
                              dynamo=True, opset_version=18, external_data=False)
        else:
            torch.onnx.export(module, args, path, input_names=names, output_names=outs, dynamic_axes=dyn_axes,
                              dynamo=False, opset_version=17)


class Hidden(torch.nn.Module):
    """An encoder's last hidden state from named inputs."""

    def __init__(self, m, names):
        super().__init__()
        self.m, self.names = m, names

    def forward(self, *a):
        return self.m(**dict(zip(self.names, a))).last_hidden_state


class WithPast(torch.nn.Module):
    """A causal LM with its KV cache as flat tensors: (ids, mask, past_0_k, past_0_v, ...) ->
    (logits, present_0_k, present_0_v, ...)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask, *past):
        n = self.m.config.num_hidden_layers
        cache = T.DynamicCache([(past[2 * i], past[2 * i + 1]) for i in range(n)], config=self.m.config)
        out = self.m(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        pres = []
        for layer in out.past_key_values.layers:
            pres += [layer.keys, layer.values]
        return (out.logits, *pres)


def text_cases(shapes, with_types=False):
    cases = {}
    for b, s in shapes:
        rng = np.random.default_rng(1000 * b + s)
        ids = rng.integers(0, VOCAB, (b, s)).astype(np.int64)
        mask = np.ones((b, s), np.int64)
        if b > 1 and s > 2:
            mask[1, -2:] = 0  # a padded sequence
        ins = [ids, mask] + ([(rng.integers(0, 2, (b, s))).astype(np.int64)] if with_types else [])
        cases[f"{b}x{s}"] = ins
    return cases


def export_bert(c, path):
    """BertModel(c) (last hidden state from ids, mask, token types), batch and seq dynamic. bench/gpu uses it."""
    names = ["input_ids", "attention_mask", "token_type_ids"]
    m = Hidden(T.BertModel(c), names)
    args = tuple(torch.tensor(a) for a in text_cases([(2, 5)], True)["2x5"])
    export(m, args, path, names, ["y"], False,
           dyn_axes={**{n: {0: "batch", 1: "seq"} for n in names}, "y": {0: "batch", 1: "seq"}})
    return m


def bert(d):
    c = T.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                     vocab_size=VOCAB, max_position_embeddings=256)
    export_bert(c, d + "/model.onnx")
    return text_cases([(1, 1), (1, 7), (2, 13), (3, 64)], True)


def t5_encoder(d):
    c = T.T5Config(d_model=64, num_layers=2, num_heads=4, d_ff=128, d_kv=16, vocab_size=VOCAB)
    names = ["input_ids", "attention_mask"]
    m = Hidden(T.T5EncoderModel(c), names)
    args = tuple(torch.tensor(a) for a in text_cases([(2, 5)])["2x5"])
    B, S = torch.export.Dim("batch", min=1, max=1024), torch.export.Dim("seq", min=1, max=1024)
    export(m, args, d + "/model.onnx", names, ["y"], True, dyn_shapes=(({0: B, 1: S}, {0: B, 1: S}),))
    return text_cases([(1, 1), (1, 9), (2, 31), (3, 130)])


def past_case(c, b, s, p, seed):
    """Inputs of WithPast(model of config c): ids (b, s), a mask over past + s (the second sequence
    left-padded), and random past keys / values (b, kv heads, p, head dim)."""
    kvh = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    hd = c.hidden_size // c.num_attention_heads
    rng = np.random.default_rng(seed)
    mask = np.ones((b, p + s), np.int64)
    if b > 1:
        mask[1, :2] = 0  # left padding of the second sequence
    return [rng.integers(0, VOCAB, (b, s)).astype(np.int64), mask] + \
           [rng.standard_normal((b, kvh, p, hd)).astype(np.float32) for _ in range(2 * c.num_hidden_layers)]


def export_with_past(m, path, dynamo, max_len=512):
    """Exports WithPast(m): (input_ids, attention_mask, past_<i>_k, past_<i>_v, ...) -> (logits,
    present_<i>_k, ...), batch / seq / past (and the mask's total) dynamic. bench/gpu uses it."""
    n = m.config.num_hidden_layers
    names = ["input_ids", "attention_mask"] + [f"past_{i // 2}_{'kv'[i % 2]}" for i in range(2 * n)]
    outs = ["logits"] + [f"present_{i // 2}_{'kv'[i % 2]}" for i in range(2 * n)]
    args = tuple(torch.tensor(a) for a in past_case(m.config, 2, 3, 5, 0))
    if dynamo:
        B, S, P = (torch.export.Dim(x, min=1, max=max_len) for x in ("batch", "seq", "past"))
        dyn = {"input_ids": {0: B, 1: S}, "attention_mask": {0: B, 1: torch.export.Dim("total", min=1, max=2 * max_len)},
               "past": tuple({0: B, 2: P} for _ in range(2 * n))}
        export(WithPast(m), args, path, names, outs, True, dyn_shapes=dyn)
    else:
        dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"}}
        dyn.update({x: {0: "batch", 2: "past"} for x in names[2:]})
        dyn.update({x: {0: "batch"} for x in outs})
        export(WithPast(m), args, path, names, outs, False, dyn_axes=dyn)
    return names


def causal_past(d, kind, dynamo):
    if kind == "gpt2":
        c = T.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=512)
        m = T.GPT2LMHeadModel(c)
    else:
        c = T.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
                          intermediate_size=176, vocab_size=VOCAB, max_position_embeddings=512)
        m = T.LlamaForCausalLM(c)
    export_with_past(m, d + "/model.onnx", dynamo)
    # prefill (no past), decode steps with a cache, a batch with padding; p = 0 keeps a dim of 0
    return {f"{b}x{s}p{p}": past_case(c, b, s, p, 7 * b + 11 * s + p) for b, s, p in
            [(1, 5, 0), (2, 1, 9), (3, 4, 17), (1, 1, 64)]}


class VitAnySize(torch.nn.Module):
    """ViTModel at any image size: the position embeddings bicubic-resized to the patch grid
    (`interpolate_pos_encoding`), sizes computed from the input's shape at run time."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(pixel_values=x, interpolate_pos_encoding=True).last_hidden_state


def vit(d):
    c = T.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                    image_size=64, patch_size=8)
    export(VitAnySize(T.ViTModel(c)), (torch.randn(2, 3, 64, 64),), d + "/model.onnx", ["pixel_values"], ["y"], False,
           dyn_axes={"pixel_values": {0: "batch", 2: "h", 3: "w"}, "y": {0: "batch", 1: "tokens"}})
    return {f"{b}x{h}x{w}": [np.random.default_rng(h).standard_normal((b, 3, h, w)).astype(np.float32)]
            for b, h, w in [(1, 64, 64), (2, 57, 43), (1, 8, 120)]}


class Cnn(torch.nn.Module):
    """torchvision's own blocks at small widths: a conv stem, a ResNet BasicBlock (stride 2, projection
    shortcut), a MobileNetV2 InvertedResidual (ReLU6, depthwise 3x3), an EfficientNet MBConv (SiLU,
    depthwise 5x5, squeeze-excitation), global average pooling and a linear classifier."""

    def __init__(self):
        super().__init__()
        from functools import partial

        from torchvision.models.efficientnet import MBConv, MBConvConfig
        from torchvision.models.mobilenetv2 import InvertedResidual
        from torchvision.models.resnet import BasicBlock
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.res = BasicBlock(16, 24, stride=2, downsample=nn.Sequential(nn.Conv2d(16, 24, 1, 2, bias=False),
                                                                        nn.BatchNorm2d(24)))
        self.inv = InvertedResidual(24, 24, 1, 4)
        self.mb = MBConv(MBConvConfig(6, 5, 2, 24, 40, 1), 0.0, partial(nn.BatchNorm2d, eps=1e-3))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(40, 10))
        for mod in self.modules():  # non-trivial batch-norm statistics
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return self.head(self.mb(self.inv(self.res(self.stem(x)))))


def cnn(d):
    export(Cnn(), (torch.randn(2, 3, 64, 64),), d + "/model.onnx", ["x"], ["y"], False,
           dyn_axes={"x": {0: "batch", 2: "h", 3: "w"}, "y": {0: "batch"}})
    return {f"{b}x{h}x{w}": [np.random.default_rng(h).standard_normal((b, 3, h, w)).astype(np.float32)]
            for b, h, w in [(1, 32, 32), (2, 57, 43), (1, 97, 101), (3, 64, 64)]}


MODELS = {
    "bert": bert,
    "gpt2_past": lambda d: causal_past(d, "gpt2", True),
    "llama_past": lambda d: causal_past(d, "llama", False),
    "t5_encoder": t5_encoder,
    "vit": vit,
    "cnn": cnn,
}


def main():
    for name, make in MODELS.items():
        torch.manual_seed(0)
        d = os.path.join(HERE, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        cases = make(d)
        sess = ort.InferenceSession(d + "/model.onnx", providers=["CPUExecutionProvider"])
        in_names = [i.name for i in sess.get_inputs()]
        for case, ins in cases.items():
            outs = sess.run(None, dict(zip(in_names, ins)))
            for k, a in enumerate(ins):
                np.save(f"{d}/{case}.in{k}.npy", a)
            for k, a in enumerate(outs):
                np.save(f"{d}/{case}.out{k}.npy", a)
        size = os.path.getsize(d + "/model.onnx")
        print(f"{name}: {size / 1e6:.2f} MB, cases {', '.join(cases)}")


if __name__ == "__main__":
    main()
