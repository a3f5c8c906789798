"""export_nn.py [NAME ...]: small torch.nn models (random weights) to OUT/nn_NAME.onnx with dynamic axes, as a user
exports them: an LSTM tagger, a GRU, a TransformerEncoder, causal SDPA attention, a conv1d audio front end, a tiny UNet
(ConvTranspose + bilinear upsample to the input's size), a YOLO-style detector (C2f, SPPF, nearest upsample) and a
Stable-Diffusion-style UNet block (GroupNorm, spatial attention). OUT: $USERMODELS_OUT or bench/out/usermodels."""
import os, sys, warnings
import torch, torch.nn as nn, torch.nn.functional as F

warnings.filterwarnings("ignore")
torch.manual_seed(0)
out = os.environ.get("USERMODELS_OUT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "out", "usermodels"))
os.makedirs(out, exist_ok=True)
class LSTMTagger(nn.Module):
    def __init__(s): super().__init__(); s.l = nn.LSTM(64, 128, num_layers=2, batch_first=True, bidirectional=True); s.o = nn.Linear(256, 10)
    def forward(s, x): return s.o(s.l(x)[0])
class GRUNet(nn.Module):
    def __init__(s): super().__init__(); s.g = nn.GRU(64, 96, batch_first=True); s.o = nn.Linear(96, 5)
    def forward(s, x): return s.o(s.g(x)[0][:, -1])
class Enc(nn.Module):
    def __init__(s):
        super().__init__(); l = nn.TransformerEncoderLayer(128, 4, 512, batch_first=True, dropout=0.0, activation="gelu", norm_first=True)
        s.e = nn.TransformerEncoder(l, 2, enable_nested_tensor=False); s.o = nn.Linear(128, 3)
    def forward(s, x): return s.o(s.e(x).mean(1))
class SDPA(nn.Module):
    def __init__(s): super().__init__(); s.qkv = nn.Linear(128, 384); s.p = nn.Linear(128, 128)
    def forward(s, x):
        b, t, c = x.shape; q, k, v = s.qkv(x).split(128, 2)
        q, k, v = [z.view(b, t, 4, 32).transpose(1, 2) for z in (q, k, v)]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.p(y.transpose(1, 2).reshape(b, t, c))
class Audio(nn.Module):
    def __init__(s):
        super().__init__(); s.c1 = nn.Conv1d(80, 128, 3, padding=1); s.c2 = nn.Conv1d(128, 128, 3, stride=2, padding=1); s.n = nn.GroupNorm(8, 128); s.o = nn.Linear(128, 32)
    def forward(s, x): return s.o(F.gelu(s.n(s.c2(F.gelu(s.c1(x))))).transpose(1, 2))
class Unet(nn.Module):
    def __init__(s):
        super().__init__(); s.d = nn.Conv2d(3, 16, 3, 2, 1); s.b = nn.BatchNorm2d(16); s.u = nn.ConvTranspose2d(16, 8, 4, 2, 1); s.f = nn.Conv2d(11, 2, 1)
    def forward(s, x): return s.f(torch.cat([F.interpolate(s.u(F.relu(s.b(s.d(x)))), size=x.shape[2:], mode="bilinear", align_corners=False), x], 1))
def cbs(i, o, k=1, s=1): return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, bias=False), nn.BatchNorm2d(o), nn.SiLU())
class C2f(nn.Module):
    def __init__(s, c, n=2):
        super().__init__(); s.cv1 = cbs(c, c); s.m = nn.ModuleList(nn.Sequential(cbs(c // 2, c // 2, 3), cbs(c // 2, c // 2, 3)) for _ in range(n)); s.cv2 = cbs(c // 2 * (2 + n), c)
    def forward(s, x):
        y = list(s.cv1(x).chunk(2, 1)); y.extend(m(y[-1]) for m in s.m); return s.cv2(torch.cat(y, 1))
class SPPF(nn.Module):
    def __init__(s, c): super().__init__(); s.cv1 = cbs(c, c // 2); s.cv2 = cbs(c * 2, c); s.m = nn.MaxPool2d(5, 1, 2)
    def forward(s, x):
        x = s.cv1(x); y1 = s.m(x); y2 = s.m(y1); return s.cv2(torch.cat((x, y1, y2, s.m(y2)), 1))
class Yolo(nn.Module):
    def __init__(s):
        super().__init__(); s.stem = nn.Sequential(cbs(3, 16, 3, 2), cbs(16, 32, 3, 2), C2f(32), cbs(32, 64, 3, 2), C2f(64), cbs(64, 128, 3, 2), SPPF(128))
        s.up = nn.Upsample(scale_factor=2, mode="nearest"); s.head = C2f(192); s.out = nn.Conv2d(192, 85, 1)
    def forward(s, x):
        f = s.stem[:5](x); g = s.stem[5:](f)
        return s.out(s.head(torch.cat([s.up(g), f], 1))).flatten(2).transpose(1, 2)
class ResBlock(nn.Module):
    def __init__(s, c):
        super().__init__(); s.n1 = nn.GroupNorm(8, c); s.c1 = nn.Conv2d(c, c, 3, 1, 1); s.n2 = nn.GroupNorm(8, c); s.c2 = nn.Conv2d(c, c, 3, 1, 1)
    def forward(s, x): return x + s.c2(F.silu(s.n2(s.c1(F.silu(s.n1(x))))))
class SpatialAttn(nn.Module):
    def __init__(s, c): super().__init__(); s.n = nn.GroupNorm(8, c); s.qkv = nn.Linear(c, 3 * c); s.o = nn.Linear(c, c); s.h = 4
    def forward(s, x):
        b, c, hh, ww = x.shape; t = s.n(x).flatten(2).transpose(1, 2); q, k, v = s.qkv(t).chunk(3, -1)
        q, k, v = [z.reshape(b, -1, s.h, c // s.h).transpose(1, 2) for z in (q, k, v)]
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, -1, c)
        return x + s.o(y).transpose(1, 2).reshape(b, c, hh, ww)
class SDUnet(nn.Module):
    def __init__(s):
        super().__init__(); s.i = nn.Conv2d(4, 64, 3, 1, 1); s.r1 = ResBlock(64); s.d = nn.Conv2d(64, 64, 3, 2, 1); s.r2 = ResBlock(64); s.a = SpatialAttn(64)
        s.u = nn.Conv2d(64, 64, 3, 1, 1); s.r3 = ResBlock(128); s.o = nn.Conv2d(128, 4, 3, 1, 1)
    def forward(s, x):
        h1 = s.r1(s.i(x)); h2 = s.a(s.r2(s.d(h1)))
        u = s.u(F.interpolate(h2, scale_factor=2.0, mode="nearest"))
        return s.o(s.r3(torch.cat([u, h1], 1)))
M = {"lstm": (LSTMTagger, (2, 17, 64), {0: "b", 1: "t"}), "gru": (GRUNet, (2, 17, 64), {0: "b", 1: "t"}),
     "tenc": (Enc, (2, 33, 128), {0: "b"}), "sdpa": (SDPA, (2, 33, 128), {0: "b", 1: "t"}),
     "audio": (Audio, (2, 80, 301), {0: "b", 2: "t"}), "unet": (Unet, (1, 3, 64, 48), {0: "b", 2: "h", 3: "w"}),
     "yolo": (Yolo, (1, 3, 256, 256), {0: "b", 2: "h", 3: "w"}), "sdunet": (SDUnet, (1, 4, 32, 32), {0: "b", 2: "h", 3: "w"})}
for n in sys.argv[1:] or M:
    cls, shp, dyn = M[n]
    m = cls().eval()
    torch.onnx.export(m, (torch.randn(*shp),), os.path.join(out, f"nn_{n}.onnx"), input_names=["x"], output_names=["y"], opset_version=17,
                      dynamo=False, dynamic_axes={"x": dyn})
    print("exported", n, flush=True)
