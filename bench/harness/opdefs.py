"""opdefs.py — bench/ops' cases: one small ONNX model per operator family, at realistic shapes.

Every case is a `Case`: a family (what the summary line counts), a label, a model built with
onnx.helper (opset OPSET, random weights from a fixed seed, symbolic dims where a real model has
them: batch, sequence, image size), the concrete shapes of its run-time inputs, the flops of one
call (0 for data-movement ops; bytes are counted from the arrays) and the tolerance of the check.
Inputs are a pure function of the case (seeded), so both systems get the very same arrays.

    cases(quick) -> [Case]     the quick subset keeps one or two shapes per family
    Case.model() -> ModelProto, Case.inputs() -> {name: ndarray}

A family Loom cannot import or compile yet is reported as unsupported, with Loom's own message.

Int8 weights are drawn from [-64, 63] (7 bits, what onnxruntime.quantization's reduce_range gives):
ONNX Runtime's u8 x s8 kernels on AVX2 without VNNI (vpmaddubsw) saturate int16 pair sums with full
8-bit weights and then differ from the ONNX reference by up to 23 % of the range; with 7-bit weights
they are exact, so both systems can be checked against each other.
"""
import math
import zlib

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 20  # Gelu is opset 20; everything else here exists since opset 13-17
F32, I64, U8, I8, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32
NP = {F32: np.float32, I64: np.int64, U8: np.uint8, I8: np.int8, I32: np.int32}


class G:
    """A graph under construction: inputs with symbolic dims, seeded weights, nodes."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.ins, self.n = [], [], [], 0

    def input(self, name, dtype, dims):
        self.ins.append(helper.make_tensor_value_info(name, dtype, dims))
        return name

    def init(self, arr, hint="w"):
        self.n += 1
        name = f"{hint}{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def weight(self, shape, std=None, hint="w"):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        std = std if std is not None else 1.0 / math.sqrt(max(fan_in, 1))
        return self.init((self.rng.standard_normal(shape) * std).astype(np.float32), hint)

    def const(self, value, dtype=np.int64):
        return self.init(np.array(value, dtype=dtype), "c")

    def op(self, op_type, inputs, out=None, **attrs):
        self.n += 1
        out = out or f"{op_type.lower()}{self.n}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def model(self, y, ydtype=F32):
        g = helper.make_graph(self.nodes, "op", self.ins, [helper.make_tensor_value_info(y, ydtype, None)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="bench-ops")
        m.ir_version = 9
        return m


class Case:
    def __init__(self, family, label, build, shapes, flops=0.0, tol=2e-3, quick=True, dtypes=None, positive=False,
                 index_hi=0, count_weights=True, model=False, variants=None):
        self.family, self.label = family, label
        self._build, self.shapes, self.flops, self.tol, self.quick = build, shapes, float(flops), tol, quick
        self.dtypes = dtypes or {}
        self.positive = positive  # inputs drawn from [0.1, 2] (pow with fractional exponents)
        self.index_hi = index_hi  # int64 inputs (indices) drawn from [0, index_hi)
        self.count_weights = count_weights  # the weights' bytes are moved (false: a gather reads a few rows)
        self.is_model = model  # a whole network (reported apart from the operator families)
        # more (label, shapes, flops) run on the same compilation (a model at several image sizes)
        self.variants = variants or []

    @property
    def id(self):
        return f"{self.family}/{self.label}"

    def model(self):
        return self._build(G(zlib.crc32(self.id.encode())))

    def inputs(self, shapes=None):
        rng = np.random.default_rng(zlib.crc32(("in:" + self.id + str(shapes or "")).encode()))
        out = {}
        for name, shape in (shapes or self.shapes).items():
            dt = self.dtypes.get(name, F32)
            if dt == F32:
                a = rng.uniform(0.1, 2.0, shape) if self.positive else rng.standard_normal(shape)
                out[name] = a.astype(np.float32)
            elif dt == U8:
                out[name] = rng.integers(0, 256, shape, dtype=np.uint8)
            elif dt == I8:
                out[name] = rng.integers(-128, 128, shape, dtype=np.int8)
            elif dt == I64:  # indices: below the case's bound
                out[name] = rng.integers(0, self.index_hi, shape, dtype=np.int64)
            else:
                raise ValueError(dt)
        return out


# ---- convolution and pooling ------------------------------------------------------------------------
def conv(cin, cout, k, stride=1, pad=0, dil=1, groups=1, nd=2, bias=True):
    def build(g):
        spatial = ["H", "W"][:nd] if nd == 2 else ["L"]
        x = g.input("x", F32, ["N", cin] + spatial)
        w = g.weight([cout, cin // groups] + [k] * nd)
        ins = [x, w] + ([g.weight([cout], std=0.1)] if bias else [])
        return g.model(g.op("Conv", ins, "y", kernel_shape=[k] * nd, strides=[stride] * nd, pads=[pad] * (2 * nd),
                            dilations=[dil] * nd, group=groups))
    return build


def conv_dw_silu(c, k, stride):
    def build(g):
        x = g.input("x", F32, ["N", c, "H", "W"])
        y = g.op("Conv", [x, g.weight([c, 1, k, k]), g.weight([c], std=0.1)], kernel_shape=[k, k], strides=[stride] * 2,
                 pads=[k // 2] * 4, group=c)
        return g.model(g.op("Mul", [y, g.op("Sigmoid", [y])], "y"))
    return build


def conv_flops(n, cin, cout, k, out_spatial, groups=1):
    return 2.0 * n * cout * (cin // groups) * (k ** len(out_spatial)) * float(np.prod(out_spatial))


def conv_transpose(cin, cout, k, stride, pad, out_pad):
    def build(g):
        x = g.input("x", F32, ["N", cin, "H", "W"])
        w = g.weight([cin, cout, k, k])
        return g.model(g.op("ConvTranspose", [x, w, g.weight([cout], std=0.1)], "y", kernel_shape=[k, k],
                            strides=[stride] * 2, pads=[pad] * 4, output_padding=[out_pad] * 2))
    return build


def pool(kind, c, k=0, stride=1, pad=0):
    def build(g):
        x = g.input("x", F32, ["N", c, "H", "W"])
        if kind in ("GlobalAveragePool", "GlobalMaxPool"):
            return g.model(g.op(kind, [x], "y"))
        return g.model(g.op(kind, [x], "y", kernel_shape=[k, k], strides=[stride] * 2, pads=[pad] * 4))
    return build


def qlinear_conv(cin, cout, k, pad):
    def build(g):
        x = g.input("x", U8, ["N", cin, "H", "W"])
        w = g.init(g.rng.integers(-64, 64, (cout, cin, k, k), dtype=np.int8), "wq")
        xs, xz = g.const(0.02, np.float32), g.const(128, np.uint8)
        ws, wz = g.const(0.01, np.float32), g.const(0, np.int8)
        ys, yz = g.const(0.5, np.float32), g.const(128, np.uint8)
        return g.model(g.op("QLinearConv", [x, xs, xz, w, ws, wz, ys, yz], "y", kernel_shape=[k, k], pads=[pad] * 4), U8)
    return build


# ---- matmul family ----------------------------------------------------------------------------------
def matmul_const(k, n):
    def build(g):
        x = g.input("x", F32, ["M", k])
        return g.model(g.op("MatMul", [x, g.weight([k, n])], "y"))
    return build


def gemm_bias(k, n):
    def build(g):
        x = g.input("x", F32, ["M", k])
        return g.model(g.op("Gemm", [x, g.weight([n, k]), g.weight([n], std=0.1)], "y", transB=1))
    return build


def batched_matmul():
    def build(g):
        a = g.input("a", F32, ["B", 12, "S", 64])
        b = g.input("b", F32, ["B", 12, 64, "T"])
        return g.model(g.op("MatMul", [a, b], "y"))
    return build


def matmul_integer(k, n):
    def build(g):
        a = g.input("a", U8, ["M", k])
        b = g.init(g.rng.integers(-64, 64, (k, n), dtype=np.int8), "bq")
        return g.model(g.op("MatMulInteger", [a, b, g.const(128, np.uint8), g.const(0, np.int8)], "y"), I32)
    return build


def qlinear_matmul(k, n):
    def build(g):
        a = g.input("a", U8, ["M", k])
        b = g.init(g.rng.integers(-64, 64, (k, n), dtype=np.int8), "bq")
        y = g.op("QLinearMatMul", [a, g.const(0.02, np.float32), g.const(128, np.uint8), b, g.const(0.01, np.float32),
                                   g.const(0, np.int8), g.const(2.0, np.float32), g.const(128, np.uint8)], "y")
        return g.model(y, U8)
    return build


def dynquant_matmul(k, n):
    """The dynamically quantized Linear of onnxruntime.quantization.quantize_dynamic: x quantized per call
    (DynamicQuantizeLinear), an int8 weight, MatMulInteger, then scale_x * scale_w and a cast back."""
    def build(g):
        x = g.input("x", F32, ["M", k])
        q = [g.n + 1, g.n + 2, g.n + 3]
        g.n += 3
        names = [f"xq{q[0]}", f"xs{q[1]}", f"xz{q[2]}"]
        g.nodes.append(helper.make_node("DynamicQuantizeLinear", [x], names))
        w = g.init(g.rng.integers(-64, 64, (k, n), dtype=np.int8), "wq")
        acc = g.op("MatMulInteger", [names[0], w, names[2], g.const(0, np.int8)])
        scale = g.op("Mul", [names[1], g.const(0.01, np.float32)])
        return g.model(g.op("Mul", [g.op("Cast", [acc], to=F32), scale], "y"))
    return build


# ---- elementwise, normalisation, reductions -------------------------------------------------------
def pow_const(e):
    def build(g):
        x = g.input("x", F32, ["B", "S", 768])
        return g.model(g.op("Pow", [x, g.const(e, np.float32)], "y"))
    return build


def pow_tensor():
    def build(g):
        x = g.input("x", F32, ["B", "S", 768])
        e = g.input("e", F32, ["B", "S", 768])
        return g.model(g.op("Pow", [x, e], "y"))
    return build


def gelu_erf():
    def build(g):
        x = g.input("x", F32, ["B", "S", 3072])
        e = g.op("Erf", [g.op("Div", [x, g.const(math.sqrt(2.0), np.float32)])])
        h = g.op("Mul", [x, g.op("Add", [e, g.const(1.0, np.float32)])])
        return g.model(g.op("Mul", [h, g.const(0.5, np.float32)], "y"))
    return build


def gelu_tanh():
    """GPT-2's: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), with Pow(x, 3) as the exporters write it."""
    def build(g):
        x = g.input("x", F32, ["B", "S", 3072])
        x3 = g.op("Pow", [x, g.const(3.0, np.float32)])
        inner = g.op("Mul", [g.op("Add", [x, g.op("Mul", [x3, g.const(0.044715, np.float32)])]),
                             g.const(math.sqrt(2.0 / math.pi), np.float32)])
        h = g.op("Mul", [x, g.op("Add", [g.op("Tanh", [inner]), g.const(1.0, np.float32)])])
        return g.model(g.op("Mul", [h, g.const(0.5, np.float32)], "y"))
    return build


def gelu_op():
    def build(g):
        return g.model(g.op("Gelu", [g.input("x", F32, ["B", "S", 3072])], "y"))
    return build


def silu():
    def build(g):
        x = g.input("x", F32, ["B", "S", 3072])
        return g.model(g.op("Mul", [x, g.op("Sigmoid", [x])], "y"))
    return build


def tanh_chain():
    def build(g):
        x = g.input("x", F32, ["B", "S", 3072])
        return g.model(g.op("Mul", [g.op("Tanh", [g.op("Add", [x, g.weight([3072], std=0.1)])]), g.const(2.0, np.float32)], "y"))
    return build


def softmax(dims=("B", 12, "S", "T"), axis=-1, op="Softmax"):
    def build(g):
        return g.model(g.op(op, [g.input("x", F32, list(dims))], "y", axis=axis))
    return build


def activation(op, **attrs):
    def build(g):
        return g.model(g.op(op, [g.input("x", F32, ["B", "S", 3072])], "y", **attrs))
    return build


def layer_norm():
    def build(g):
        x = g.input("x", F32, ["B", "S", 768])
        return g.model(g.op("LayerNormalization", [x, g.weight([768], std=0.1), g.weight([768], std=0.1)], "y",
                            axis=-1, epsilon=1e-5))
    return build


def rms_norm():
    """T5 / LLaMA RMSNorm as exported: x * 1/sqrt(mean(x*x) + eps) * g (Mul, ReduceMean, Add, Sqrt, Div)."""
    def build(g):
        x = g.input("x", F32, ["B", "S", 768])
        ms = g.op("ReduceMean", [g.op("Mul", [x, x]), g.const([-1])], keepdims=1)
        inv = g.op("Div", [g.const(1.0, np.float32), g.op("Sqrt", [g.op("Add", [ms, g.const(1e-6, np.float32)])])])
        return g.model(g.op("Mul", [g.op("Mul", [x, inv]), g.weight([768], std=0.1)], "y"))
    return build


def reduce(kind, axes, dims=("B", "S", 768)):
    def build(g):
        x = g.input("x", F32, list(dims))
        return g.model(g.op(kind, [x, g.const(axes)], "y", keepdims=0))
    return build


# ---- data movement ------------------------------------------------------------------------------------
def gather_embedding(vocab, d):
    def build(g):
        ids = g.input("ids", I64, ["B", "S"])
        return g.model(g.op("Gather", [g.weight([vocab, d], std=0.02), ids], "y", axis=0))
    return build


def tied_head(vocab, d):
    """A tied LM head: one embedding table both gathered (the token embeddings) and multiplied
    transposed (the logits), as GPT-2 / Llama with tie_word_embeddings export it."""
    def build(g):
        ids = g.input("ids", I64, ["M"])
        h = g.input("h", F32, ["M", d])
        w = g.weight([vocab, d], std=0.02)
        x = g.op("Add", [h, g.op("Gather", [w, ids], "e", axis=0)], "x")
        return g.model(g.op("MatMul", [x, g.op("Transpose", [w], "wt", perm=[1, 0])], "y"))
    return build


def concat():
    def build(g):
        xs = [g.input(n, F32, ["B", "S", 256]) for n in ("a", "b", "c")]
        return g.model(g.op("Concat", xs, "y", axis=-1))
    return build


def split_add():
    """Split into three then add the parts (one output; the parts are what is measured)."""
    def build(g):
        x = g.input("x", F32, ["B", "S", 2304])
        g.n += 3
        parts = [f"part{g.n}_{i}" for i in range(3)]
        g.nodes.append(helper.make_node("Split", [x, g.const([768, 768, 768])], parts, axis=-1))
        return g.model(g.op("Add", [g.op("Add", parts[:2]), parts[2]], "y"))
    return build


def slice_():
    def build(g):
        x = g.input("x", F32, ["B", "S", 768])
        return g.model(g.op("Slice", [x, g.const([1, 0]), g.const([-1, 768]), g.const([1, 2]), g.const([2, 1])], "y"))
    return build


def transpose(perm=(0, 2, 1, 3)):
    def build(g):
        dims = ["A", "B", "C", "D"][:len(perm)]
        return g.model(g.op("Transpose", [g.input("x", F32, dims)], "y", perm=list(perm)))
    return build


def resize(mode):
    def build(g):
        x = g.input("x", F32, ["N", 64, "H", "W"])
        return g.model(g.op("Resize", [x, "", g.const([1.0, 1.0, 2.0, 2.0], np.float32)], "y", mode=mode))
    return build


def einsum():
    def build(g):
        q = g.input("q", F32, ["B", 12, "S", 64])
        k = g.input("k", F32, ["B", 12, "T", 64])
        return g.model(g.op("Einsum", [q, k], "y", equation="bhqd,bhkd->bhqk"))
    return build


def topk(k):
    def build(g):
        x = g.input("x", F32, ["B", 32000])
        g.n += 1
        g.nodes.append(helper.make_node("TopK", [x, g.const([k])], ["y", f"idx{g.n}"], axis=-1))
        return g.model("y")
    return build


def cumsum(dims=("B", "S"), axis=1):
    def build(g):
        return g.model(g.op("CumSum", [g.input("x", F32, list(dims)), g.const(axis)], "y"))
    return build


def instance_norm(c):
    def build(g):
        x = g.input("x", F32, ["N", c, "H", "W"])
        return g.model(g.op("InstanceNormalization", [x, g.weight([c], std=0.1), g.weight([c], std=0.1)], "y",
                            epsilon=1e-5))
    return build


# ---- attention ------------------------------------------------------------------------------------------
def attention(heads, kv_heads, d, causal, kv_len="S"):
    """softmax(q k^T / sqrt(d) [+ causal mask]) v on [B, H, S, D] inputs. GQA (kv_heads < heads) groups the
    query heads over the shared K / V heads by reshapes and a broadcasting MatMul, as exporters do.
    kv_len names the keys' length (a decode step: "T", queries S = 1 over a long K / V; not causal)."""
    def build(g):
        q = g.input("q", F32, ["B", heads, "S", d])
        k = g.input("k", F32, ["B", kv_heads, kv_len, d])
        v = g.input("v", F32, ["B", kv_heads, kv_len, d])
        grp = heads // kv_heads
        if grp > 1:
            q = g.op("Reshape", [q, g.const([0, kv_heads, grp, -1, d])])
            k = g.op("Unsqueeze", [k, g.const([2])])
            v = g.op("Unsqueeze", [v, g.const([2])])
        perm = [0, 1, 2, 4, 3] if grp > 1 else [0, 1, 3, 2]
        s = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=perm)]), g.const(1.0 / math.sqrt(d), np.float32)])
        if causal:
            shape = g.op("Shape", [s])
            sq = g.op("Slice", [shape, g.const([-2]), g.const([2 ** 62])])  # [S, S]
            ones = g.op("ConstantOfShape", [sq], value=helper.make_tensor("one", F32, [1], [1.0]))
            keep = g.op("Trilu", [ones], upper=0)
            s = g.op("Add", [s, g.op("Mul", [g.op("Sub", [keep, g.const(1.0, np.float32)]), g.const(1e9, np.float32)])])
        y = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
        if grp > 1:
            y = g.op("Reshape", [y, g.const([0, heads, -1, d])])
        return g.model(g.op("Identity", [y], "y"))
    return build


def attn_flops(b, h, s, d):
    return 4.0 * b * h * s * s * d


# ---- whole networks (torchvision's layouts, random weights, BatchNormalization as exported) ------------
class Net:
    """Conv / BatchNormalization / activation stacks for ResNet-18 and MobileNetV2, written as torch.onnx
    exports them (eval mode: BatchNormalization nodes kept, Flatten + Gemm head), counting flops."""

    def __init__(self, g):
        self.g, self.flops = g, 0.0

    def conv_bn(self, x, cin, cout, k, s, hw, groups=1, act="relu"):
        g = self.g
        pad = k // 2
        y = g.op("Conv", [x, g.weight([cout, cin // groups, k, k])], kernel_shape=[k, k], strides=[s, s],
                 pads=[pad] * 4, group=groups)
        ho = (hw + 2 * pad - k) // s + 1
        self.flops += 2.0 * cout * (cin // groups) * k * k * ho * ho
        y = g.op("BatchNormalization", [y, g.init((1 + 0.1 * g.rng.standard_normal(cout)).astype(np.float32), "bng"),
                                        g.init((0.1 * g.rng.standard_normal(cout)).astype(np.float32), "bnb"),
                                        g.init((0.1 * g.rng.standard_normal(cout)).astype(np.float32), "bnm"),
                                        g.init(g.rng.uniform(0.5, 1.5, cout).astype(np.float32), "bnv")], epsilon=1e-5)
        if act == "relu":
            y = g.op("Relu", [y])
        elif act == "relu6":
            y = g.op("Clip", [y, g.const(0.0, np.float32), g.const(6.0, np.float32)])
        return y, ho

    def head(self, x, cin, classes=1000):
        g = self.g
        y = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
        self.flops += 2.0 * cin * classes
        return g.op("Gemm", [y, g.weight([classes, cin]), g.weight([classes], std=0.01)], "y", transB=1)


def resnet18(hw):
    def build(g):
        net = Net(g)
        x = g.input("x", F32, ["N", 3, "H", "W"])
        y, s = net.conv_bn(x, 3, 64, 7, 2, hw)
        y = g.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        s = (s + 2 - 3) // 2 + 1
        cin = 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            for b in range(2):
                st = stride if b == 0 else 1
                h, s2 = net.conv_bn(y, cin, cout, 3, st, s)
                h, _ = net.conv_bn(h, cout, cout, 3, 1, s2, act=None)
                sc = y
                if st != 1 or cin != cout:
                    sc, _ = net.conv_bn(y, cin, cout, 1, st, s, act=None)
                y = g.op("Relu", [g.op("Add", [h, sc])])
                cin, s = cout, s2
        return g.model(net.head(y, 512))
    return build


def mobilenet_v2(hw):
    def build(g):
        net = Net(g)
        x = g.input("x", F32, ["N", 3, "H", "W"])
        y, s = net.conv_bn(x, 3, 32, 3, 2, hw, act="relu6")
        cin = 32
        for t, c, n, st in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                            (6, 320, 1, 1)]:
            for i in range(n):
                stride = st if i == 0 else 1
                h, hid = y, cin * t
                if t != 1:
                    h, _ = net.conv_bn(h, cin, hid, 1, 1, s, act="relu6")
                h, s2 = net.conv_bn(h, hid, hid, 3, stride, s, groups=hid, act="relu6")
                h, _ = net.conv_bn(h, hid, c, 1, 1, s2, act=None)
                y = g.op("Add", [y, h]) if stride == 1 and cin == c else h
                cin, s = c, s2
        y, _ = net.conv_bn(y, cin, 1280, 1, 1, s, act="relu6")
        return g.model(net.head(y, 1280))
    return build


def net_flops(builder, hw):
    """Flops of one image at hw x hw (the builder's Net counts them while building)."""
    g = G(0)
    net_holder = {}
    orig = Net.__init__

    def init(self, gg):
        orig(self, gg)
        net_holder["n"] = self
    Net.__init__ = init
    try:
        builder(hw)(g)
    finally:
        Net.__init__ = orig
    return net_holder["n"].flops


# ---- the case list ------------------------------------------------------------------------------------------
def all_cases():
    C = []
    add = C.append
    # convolution: ResNet / MobileNet / audio shapes, batch 1
    for (fam, lab, cin, cout, k, st, pad, dil, grp, hw, quick) in [
        ("conv1x1", "64->256 56x56", 64, 256, 1, 1, 0, 1, 1, 56, True),
        ("conv1x1", "256->64 56x56", 256, 64, 1, 1, 0, 1, 1, 56, False),
        ("conv3x3", "64->64 56x56", 64, 64, 3, 1, 1, 1, 1, 56, True),
        ("conv3x3", "256->256 14x14", 256, 256, 3, 1, 1, 1, 1, 14, False),
        ("conv3x3", "64->64 57x57 (odd)", 64, 64, 3, 1, 1, 1, 1, 57, False),
        ("conv_strided", "3x3 s2 64->128 56x56", 64, 128, 3, 2, 1, 1, 1, 56, True),
        ("conv_strided", "7x7 s2 3->64 224x224 (stem)", 3, 64, 7, 2, 3, 1, 1, 224, True),
        ("conv_grouped", "3x3 g32 128->128 28x28", 128, 128, 3, 1, 1, 1, 32, 28, True),
        ("conv_grouped", "3x3 g10 160->160 14x14 (RegNetX)", 160, 160, 3, 1, 1, 1, 10, 14, True),
        ("conv_grouped", "3x3 g32 256->256 28x28 (ResNeXt)", 256, 256, 3, 1, 1, 1, 32, 28, True),
        ("conv_depthwise", "3x3 144ch 56x56", 144, 144, 3, 1, 1, 1, 144, 56, True),
        ("conv_depthwise", "3x3 s2 96ch 112x112", 96, 96, 3, 2, 1, 1, 96, 112, False),
        ("conv_depthwise", "5x5 s2 144ch 28x28", 144, 144, 5, 2, 2, 1, 144, 28, True),
        ("conv_dilated", "3x3 d2 64->64 56x56", 64, 64, 3, 1, 2, 2, 1, 56, True),
    ]:
        o = (hw + 2 * pad - dil * (k - 1) - 1) // st + 1
        add(Case(fam, lab, conv(cin, cout, k, st, pad, dil, grp), {"x": (1, cin, hw, hw)},
                 conv_flops(1, cin, cout, k, (o, o), grp), quick=quick))
    # EfficientNet's late depthwise 5 x 5 s2 with SiLU after it, on a small odd plane (batch 2)
    add(Case("conv_depthwise", "5x5 s2 144ch 15x11 +SiLU batch 2", conv_dw_silu(144, 5, 2), {"x": (2, 144, 15, 11)},
             conv_flops(2, 144, 144, 5, (8, 6), 144), quick=True))
    add(Case("conv1d", "k5 128->128 L=1000", conv(128, 128, 5, 1, 2, nd=1), {"x": (1, 128, 1000)},
             conv_flops(1, 128, 128, 5, (1000,))))
    add(Case("conv_transpose", "3x3 s2 64->32 28->56", conv_transpose(64, 32, 3, 2, 1, 1), {"x": (1, 64, 28, 28)},
             conv_flops(1, 64, 32, 3, (28, 28))))
    add(Case("maxpool", "3x3 s2 64ch 112x112", pool("MaxPool", 64, 3, 2, 1), {"x": (1, 64, 112, 112)}))
    add(Case("avgpool", "3x3 s1 p1 256ch 28x28", pool("AveragePool", 256, 3, 1, 1), {"x": (1, 256, 28, 28)}))
    add(Case("global_avgpool", "1280ch 7x7 batch 8", pool("GlobalAveragePool", 1280), {"x": (8, 1280, 7, 7)}))
    add(Case("global_maxpool", "512ch 14x14 batch 8", pool("GlobalMaxPool", 512), {"x": (8, 512, 14, 14)}))
    add(Case("instance_norm", "64ch 64x64 batch 2", instance_norm(64), {"x": (2, 64, 64, 64)}))
    add(Case("qlinear_conv", "3x3 64->64 28x28 u8", qlinear_conv(64, 64, 3, 1), {"x": (1, 64, 28, 28)},
             conv_flops(1, 64, 64, 3, (28, 28)), tol=0.01, dtypes={"x": U8}))
    # matmul family: a Linear's constant weight at M = 1, 7, 17 (a short prompt), 64, 512
    for m, quick in [(1, True), (7, True), (17, True), (64, True), (512, False)]:
        add(Case("matmul", f"M={m} 768x3072", matmul_const(768, 3072), {"x": (m, 768)}, 2.0 * m * 768 * 3072, quick=quick))
    # a weight that streams from memory every call (64 MB, B1's fc2): the decode / small-batch regime
    for m, quick in [(1, True), (7, True), (32, False)]:
        add(Case("matmul_stream", f"M={m} 4096x4096", matmul_const(4096, 4096), {"x": (m, 4096)}, 2.0 * m * 4096 * 4096,
                 quick=quick))
    add(Case("gemm", "M=64 768->768 +bias transB", gemm_bias(768, 768), {"x": (64, 768)}, 2.0 * 64 * 768 * 768))
    # a Linear whose out-features is not a multiple of the matmul panel: an LM head's vocabulary
    # (GPT-2's 50257), a classifier's 1000 classes (the weight packed with a zero-padded last panel)
    for k, n, m, quick in [(768, 50257, 1, True), (768, 50257, 8, True), (512, 1000, 1, True), (512, 1000, 64, True),
                           (2048, 1000, 1, True), (2048, 1000, 64, True)]:
        add(Case("matmul_odd_n", f"M={m} {k}x{n}", matmul_const(k, n), {"x": (m, k)}, 2.0 * m * k * n, quick=quick))
    # the tied LM head: the table read in place (not a second, packed copy), at 1 and 16 rows
    for m in (1, 16):
        add(Case("matmul_tied", f"M={m} 768x50257 (tied embedding)", tied_head(50257, 768),
                 {"ids": (m,), "h": (m, 768)}, 2.0 * m * 768 * 50257, dtypes={"ids": I64}, index_hi=50257))
    add(Case("batched_matmul", "4x12 128x64x128", batched_matmul(), {"a": (4, 12, 128, 64), "b": (4, 12, 64, 128)},
             2.0 * 48 * 128 * 64 * 128))
    add(Case("matmul_integer", "u8xi8 128x512x128", matmul_integer(512, 128), {"a": (128, 512)}, 2.0 * 128 * 512 * 128,
             tol=0.0, dtypes={"a": U8}))
    add(Case("qlinear_matmul", "u8xi8 128x768x768", qlinear_matmul(768, 768), {"a": (128, 768)}, 2.0 * 128 * 768 * 768,
             tol=0.01, dtypes={"a": U8}))
    add(Case("dynquant_matmul", "f32 128x768 -> i8 768x768", dynquant_matmul(768, 768), {"x": (128, 768)},
             2.0 * 128 * 768 * 768, tol=0.02))
    # elementwise chains
    for e, lab in [(2.0, "x^2"), (3.0, "x^3"), (0.5, "x^0.5")]:
        add(Case("pow", f"{lab} 16x128x768", pow_const(e), {"x": (16, 128, 768)}, positive=True))
    add(Case("pow", "x^e (tensor) 16x128x768", pow_tensor(), {"x": (16, 128, 768), "e": (16, 128, 768)}, positive=True,
             quick=False))
    add(Case("gelu_erf", "8x128x3072", gelu_erf(), {"x": (8, 128, 3072)}))
    add(Case("gelu_tanh", "8x128x3072 (Pow 3)", gelu_tanh(), {"x": (8, 128, 3072)}))
    add(Case("gelu_op", "Gelu 8x128x3072", gelu_op(), {"x": (8, 128, 3072)}))
    add(Case("silu", "x*sigmoid(x) 8x128x3072", silu(), {"x": (8, 128, 3072)}))
    add(Case("tanh", "tanh(x+b)*2 8x128x3072", tanh_chain(), {"x": (8, 128, 3072)}))
    add(Case("activation", "LeakyRelu 8x128x3072", activation("LeakyRelu", alpha=0.1), {"x": (8, 128, 3072)}))
    add(Case("activation", "HardSwish 8x128x3072", activation("HardSwish"), {"x": (8, 128, 3072)}, quick=False))
    add(Case("softmax", "8x12x128x128", softmax(), {"x": (8, 12, 128, 128)}))
    # over the channels of a classifier's (batch, classes, positions) map: kept axes after the axis
    add(Case("softmax", "axis 1 of 8x1000x49", softmax(("B", 1000, "S"), axis=1), {"x": (8, 1000, 49)}))
    add(Case("softmax", "LogSoftmax last 32x128x1000", softmax(("B", "S", 1000), op="LogSoftmax"), {"x": (32, 128, 1000)}))
    add(Case("layernorm", "16x128x768", layer_norm(), {"x": (16, 128, 768)}))
    add(Case("rmsnorm", "16x128x768", rms_norm(), {"x": (16, 128, 768)}))
    add(Case("reduce", "ReduceSum last 16x128x768", reduce("ReduceSum", [-1]), {"x": (16, 128, 768)}))
    add(Case("reduce", "ReduceMean mid 16x128x768", reduce("ReduceMean", [1]), {"x": (16, 128, 768)}, quick=False))
    add(Case("reduce", "ReduceMax last 16x128x768", reduce("ReduceMax", [-1]), {"x": (16, 128, 768)}, quick=False))
    add(Case("reduce", "ReduceMax channels 8x256x56x56", reduce("ReduceMax", [1], ("N", 256, "H", "W")),
             {"x": (8, 256, 56, 56)}))
    add(Case("reduce", "ReduceSum planes 8x256x56x56", reduce("ReduceSum", [2, 3], ("N", 256, "H", "W")),
             {"x": (8, 256, 56, 56)}, quick=False))
    add(Case("gather", "embedding 32000x768, 8x128 ids", gather_embedding(32000, 768), {"ids": (8, 128)},
             dtypes={"ids": I64}, index_hi=32000, count_weights=False))
    add(Case("concat", "3x 8x128x256 last axis", concat(), {"a": (8, 128, 256), "b": (8, 128, 256), "c": (8, 128, 256)}))
    add(Case("split", "8x128x2304 -> 3 parts, added", split_add(), {"x": (8, 128, 2304)}))
    add(Case("slice", "8x128x768 [:, 1:-1:2, :]", slice_(), {"x": (8, 128, 768)}))
    add(Case("transpose", "8x128x12x64 -> 8x12x128x64", transpose(), {"x": (8, 128, 12, 64)}))
    # the last axis moves: a 2-D transpose, ViT's flatten(2).transpose(1, 2), NCHW <-> NHWC
    add(Case("transpose_2d", "768x3072 -> 3072x768", transpose((1, 0)), {"x": (768, 3072)}))
    add(Case("transpose_2d", "1x768x196 -> 1x196x768", transpose((0, 2, 1)), {"x": (1, 768, 196)}, quick=False))
    add(Case("transpose_2d", "NCHW->NHWC 1x64x56x56", transpose((0, 2, 3, 1)), {"x": (1, 64, 56, 56)}))
    add(Case("transpose_2d", "NHWC->NCHW 1x64x64x512", transpose((0, 3, 1, 2)), {"x": (1, 64, 64, 512)}, quick=False))
    add(Case("resize", "nearest 2x 64x56x56", resize("nearest"), {"x": (1, 64, 56, 56)}))
    add(Case("resize", "linear 2x 64x56x56", resize("linear"), {"x": (1, 64, 56, 56)}, quick=False))
    add(Case("einsum", "bhqd,bhkd->bhqk 1x12x128x64", einsum(), {"q": (1, 12, 128, 64), "k": (1, 12, 128, 64)},
             2.0 * 12 * 128 * 128 * 64))
    for s, quick in [(128, True), (512, True), (1024, True), (2048, True)]:
        add(Case("attention", f"12 heads s={s}", attention(12, 12, 64, False),
                 {"q": (1, 12, s, 64), "k": (1, 12, s, 64), "v": (1, 12, s, 64)}, attn_flops(1, 12, s, 64), quick=quick))
    # a decode step: one query over a long K / V (read once)
    add(Case("attention_decode", "12 heads 1 query, 2048 keys", attention(12, 12, 64, False, kv_len="T"),
             {"q": (1, 12, 1, 64), "k": (1, 12, 2048, 64), "v": (1, 12, 2048, 64)}, 4.0 * 12 * 2048 * 64))
    add(Case("attention_decode", "GQA 32q/8kv d=128, 1 query, 2048 keys", attention(32, 8, 128, False, kv_len="T"),
             {"q": (1, 32, 1, 128), "k": (1, 8, 2048, 128), "v": (1, 8, 2048, 128)}, 4.0 * 32 * 2048 * 128,
             quick=False))
    add(Case("attention_causal", "12 heads s=512", attention(12, 12, 64, True),
             {"q": (1, 12, 512, 64), "k": (1, 12, 512, 64), "v": (1, 12, 512, 64)}, attn_flops(1, 12, 512, 64)))
    add(Case("attention_gqa", "32q/8kv heads d=128 s=512", attention(32, 8, 128, True),
             {"q": (1, 32, 512, 128), "k": (1, 8, 512, 128), "v": (1, 8, 512, 128)}, attn_flops(1, 32, 512, 128)))
    add(Case("topk", "k=50 of 16x32000", topk(50), {"x": (16, 32000)}))
    add(Case("cumsum", "16x4096 axis 1", cumsum(), {"x": (16, 4096)}))
    add(Case("cumsum", "axis 1 of 8x2048x64", cumsum(("B", "S", 64)), {"x": (8, 2048, 64)}))
    # whole networks: one compilation, 224 x 224 and an odd size (the weights do not depend on the size)
    for fam, builder in [("resnet18", resnet18), ("mobilenet_v2", mobilenet_v2)]:
        add(Case(fam, "1x3x224x224", builder(224), {"x": (1, 3, 224, 224)}, net_flops(builder, 224), tol=1e-3, quick=False,
                 model=True, variants=[("1x3x193x193", {"x": (1, 3, 193, 193)}, net_flops(builder, 193))]))
    return C


def cases(quick):
    return [c for c in all_cases() if c.quick or not quick]
