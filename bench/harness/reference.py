"""reference.py — the outputs every system is checked against.

The float64 NumPy implementation of each model (modeldefs.py, same weights as the ONNX file), written
independently of every system, Loom included. Loom's interpreter is not used: Loom's ONNX importer
does not read B2/B3/B5's models yet, and an independent reference also catches importer bugs that the
interpreter would share with Loom's compiled path (bench/README.md, "The reference"). Results are
cached as .npy per case.
"""
import hashlib
import os

import numpy as np

import modeldefs
import workloads

_weights = {}


def compute(workload, shape, models_dir):
    model = workloads.model_of(workload, shape)
    if model not in _weights:
        W = modeldefs.load_weights(os.path.join(models_dir, model + ".onnx"))
        _weights[model] = {k: v.astype(np.float64) for k, v in W.items()}
    F = modeldefs.NumpyOps(np.float64)
    I = {k: F.asarray(v) for k, v in workloads.inputs(workload, shape).items()}
    return modeldefs.FUNCS[model](F, _weights[model], I)


def ensure(workload, shape, models_dir, ref_dir):
    """Computes (once) and stores the reference of one case; returns its file name under ref_dir."""
    os.makedirs(ref_dir, exist_ok=True)
    cid = workloads.case_id(workload, shape)
    model = os.path.join(models_dir, workloads.model_of(workload, shape) + ".onnx")
    stamp = f"{cid}|{os.path.getsize(model)}|{os.path.getmtime(model)}"  # regenerated model, new reference
    name = hashlib.sha1(stamp.encode()).hexdigest()[:16] + ".npy"
    path = os.path.join(ref_dir, name)
    if not os.path.exists(path):
        np.save(path, compute(workload, shape, models_dir))
    return name
