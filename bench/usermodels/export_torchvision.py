"""export_torchvision.py NAME [NAME ...]: torchvision models (random weights) to OUT/NAME.onnx with dynamic
batch, height and width (TorchScript exporter, opset 17), as a user exports them. OUT: $USERMODELS_OUT or
bench/out/usermodels."""
import os, sys, warnings
import torch, torchvision

warnings.filterwarnings("ignore")
out = os.environ.get("USERMODELS_OUT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "out", "usermodels"))
os.makedirs(out, exist_ok=True)
for name in sys.argv[1:]:
    m = getattr(torchvision.models, name)().eval()
    torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), os.path.join(out, f"{name}.onnx"), input_names=["x"], output_names=["y"],
                      opset_version=17, dynamo=False, dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}, "y": {0: "b"}})
    print("exported", name, flush=True)
