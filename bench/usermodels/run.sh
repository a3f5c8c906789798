#!/usr/bin/env bash
# bench/usermodels/run.sh — models Loom does not ship, exported by torch as a user would (torchvision's CNNs
# and transformers, small torch.nn models), each compared with ONNX Runtime at two shapes (one compilation
# each), 1 thread: error and Loom ÷ ORT. torchvision goes into bench/out/tvlib (no-deps, matching bench/.venv's
# torch) the first time.   bench/usermodels/run.sh [NAME ...]   (default: all)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/setup.sh
bench_setup ort
export USERMODELS_OUT=bench/out/usermodels
TV=bench/out/tvlib
if [ ! -d "$TV/torchvision" ]; then
  tvv=$("$BENCH_PYTHON" - <<'PY'
import torch; v = torch.__version__.split("+")[0].split("."); print(f"0.{int(v[1]) + 15}.*")
PY
)
  "$BENCH_PYTHON" -m pip install -q --no-deps --target "$TV" "torchvision==$tvv" || "$BENCH_PYTHON" -m pip install -q --no-deps --target "$TV" torchvision
fi
TVM="efficientnet_b0 mobilenet_v3_small mnasnet0_5 regnet_y_400mf shufflenet_v2_x1_0 squeezenet1_1 googlenet densenet121 resnet50 convnext_tiny swin_t vit_b_16 maxvit_t resnext50_32x4d regnet_x_400mf mobilenet_v3_large inception_v3 deeplabv3_mobilenet_v3_large ssdlite320_mobilenet_v3_large"
NN="lstm gru tenc sdpa audio unet yolo sdunet"
want="${*:-$TVM $NN}"
for n in $want; do
  case " $NN " in
    *" $n "*) f=$USERMODELS_OUT/nn_$n.onnx; [ -f "$f" ] || PYTHONPATH=$TV "$BENCH_PYTHON" bench/usermodels/export_nn.py "$n" ;;
    *) f=$USERMODELS_OUT/$n.onnx; [ -f "$f" ] || PYTHONPATH=$TV "$BENCH_PYTHON" bench/usermodels/export_torchvision.py "$n" ;;
  esac
  case $n in
    lstm|gru) shapes="2x17x64 1x101x64" ;;
    tenc) shapes="2x33x128" ;;
    sdpa) shapes="2x33x128 3x129x128" ;;
    audio) shapes="2x80x301 1x80x1000" ;;
    unet) shapes="1x3x64x48 2x3x97x61" ;;
    yolo) shapes="1x3x256x256 2x3x320x192" ;;
    sdunet) shapes="1x4x32x32 2x4x48x40" ;;
    swin_t|maxvit_t) shapes="1x3x224x224" ;;
    vit_b_16) shapes="1x3x224x224 2x3x224x224" ;;
    inception_v3) shapes="1x3x299x299 2x3x331x307" ;;
    ssdlite320_mobilenet_v3_large) shapes="3x320x320 3x480x360" ;;
    *) shapes="1x3x224x224 2x3x199x157" ;;
  esac
  "$BENCH_PYTHON" bench/usermodels/check.py "$f" $shapes
done
