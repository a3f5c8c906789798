"""export_torchvision.py NAME [NAME ...]: torchvision models (random weights) to OUT/NAME.onnx with dynamic
batch, height and width (TorchScript exporter, opset 17), as a user exports them. OUT: $USERMODELS_OUT or
bench/out/usermodels."""
import os, sys, warnings
import torch, torchvision

warnings.filterwarnings("ignore")
out = os.environ.get("USERMODELS_OUT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "out", "usermodels"))
os.makedirs(out, exist_ok=True)
SEGMENTATION = {"deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large", "fcn_resnet50"}
DETECTION = {"ssdlite320_mobilenet_v3_large"}  # one image (3, h, w) in, boxes / scores / labels out
torch.manual_seed(0)
for name in sys.argv[1:]:
    if name in SEGMENTATION:
        m = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None).eval()
    elif name in DETECTION:
        m = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None).eval()
    else:
        m = getattr(torchvision.models, name)(**({"aux_logits": False, "init_weights": True} if name == "inception_v3" else {})).eval()
    with torch.no_grad():  # a zero-initialised head (ViT's) would make every output 0 and the check vacuous
        for p in m.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0, 0.02)
    if name in DETECTION:
        torch.onnx.export(m, ([torch.rand(3, 320, 320)],), os.path.join(out, f"{name}.onnx"), input_names=["x"],
                          opset_version=17, dynamo=False, dynamic_axes={"x": {1: "h", 2: "w"}})
    else:
        torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), os.path.join(out, f"{name}.onnx"), input_names=["x"], output_names=["y"],
                          opset_version=17, dynamo=False, dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}, "y": {0: "b"}})
    print("exported", name, flush=True)
