#!/usr/bin/env python3
"""Issue 27 repro cases (ONNX Conv with kernel >= 8 and padding, 1-D and 2-D, wav2vec2 positional conv),
compiled by `loom run` at 1 and 2 threads against ONNX Runtime; prints the relative error of each.

    bench/.venv/bin/python tests/fuzz/conv_repro_ort.py zig-out/bin/loom
"""
import os, subprocess, sys, tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, TensorProto, numpy_helper
L = os.path.abspath(sys.argv[1])
os.chdir(tempfile.mkdtemp(prefix='loom-conv-'))
bad = 0
rng = np.random.default_rng(0)
def case(name, xshape, wshape, pads, group=1, strides=None, dyn=True):
    n = len(xshape) - 2
    W = (rng.standard_normal(wshape) * 0.1).astype(np.float32)
    inshape = ['b', xshape[1]] + [f's{i}' for i in range(n)] if dyn else list(xshape)
    attrs = dict(pads=pads, group=group)
    if strides: attrs['strides'] = strides
    node = helper.make_node('Conv', ['x', 'w'], ['y'], **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info('x', TensorProto.FLOAT, inshape)],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)], [numpy_helper.from_array(W, 'w')])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]); m.ir_version = 8
    onnx.save(m, f'{name}.onnx')
    x = rng.standard_normal(xshape).astype(np.float32); np.save('x.npy', x)
    ref = ort.InferenceSession(f'{name}.onnx', providers=['CPUExecutionProvider']).run(None, {'x': x})[0]
    global bad
    res = []
    for t in (1, 2):
        r = subprocess.run([L, 'run', f'{name}.onnx', '--threads', str(t), '--input', 'x=@x.npy', '--output', 'y.npy'], capture_output=True, text=True)
        if r.returncode != 0: res.append(f'rc={r.returncode} {r.stderr.strip()[-200:]}'); bad += 1; continue
        y = np.load('y.npy')
        if y.shape != ref.shape: res.append(f'shape {y.shape} vs {ref.shape}'); bad += 1; continue
        err = np.abs(y - ref).max() / np.abs(ref).max()
        bad += not err < 1e-4
        res.append(f'{err:.2e}')
    print(f'{name:28s} x{xshape} w{wshape} pads{pads} g{group}: rel err 1t {res[0]}, 2t {res[1]}')
for K, P in [(32,16),(32,1),(16,8),(9,4),(8,4),(7,3),(3,2),(13,0)]:
    case(f'c1_k{K}_p{P}', (2,16,64), (16,16,K), [P,P])
for K, P in [(8,4),(9,4),(11,5),(7,3)]:
    case(f'c2_k{K}_p{P}', (1,3,33,29), (8,3,K,K), [P,P,P,P])
case('c2_k11_p5_16ch', (1,16,37,31), (16,16,11,11), [5,5,5,5])
case('c2_k9_p1_16ch', (2,16,23,19), (16,16,9,9), [1,1,1,1])
case('alexnet1', (1,3,67,67), (64,3,11,11), [2,2,2,2], strides=[4,4])
case('wav2vec2_pos', (2,64,50), (64,4,32), [16,16], group=16)
case('wav2vec2_pos_t101', (1,64,101), (64,4,32), [16,16], group=16)
case('c3_k8_p4', (1,4,11,12,10), (6,4,8,8,8), [4,4,4,4,4,4])
case('c3_k9_p3_g2', (2,4,13,9,10), (4,2,9,3,9), [3,1,3,3,1,3], group=2)
print(f'conv_repro_ort: {bad} bad results')
sys.exit(1 if bad else 0)

