"""From a PyTorch module to a Loom module in one call, through ``torch.onnx.export``."""

from __future__ import annotations

import inspect
import io
from typing import Any, Mapping, Sequence, Union

from ._module import Module, compile

DynamicShapes = Union[Sequence[Mapping[int, str]], Mapping[str, Mapping[int, str]], None]


def from_torch(
    module: Any,
    example_inputs: Any,
    dynamic_shapes: DynamicShapes = None,
    *,
    input_names: Sequence[str] | None = None,
    opset_version: int = 17,
    target: str = "cpu",
    offload: bool = False,
    threads: int | None = None,
) -> Module:
    """Exports `module` (a ``torch.nn.Module``) with ``torch.onnx.export`` and compiles it.

    `example_inputs` is a tensor or a tuple of tensors. `dynamic_shapes` declares the dims that
    vary, as one ``{axis: "name"}`` dict per input (in order) or a dict from input name to
    such a dict; every declared dim becomes a symbolic dim of that name in the module's
    signature, so one compiled module serves every size. Inputs are named ``input_names``
    (default ``x0, x1, ...``). Raises ImportError when PyTorch is not installed.
    """
    try:
        import torch
    except ImportError as e:  # torch is optional
        raise ImportError(
            f"loom.from_torch needs PyTorch, which is not installed ({e}); install it with `pip install torch`"
        ) from e
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    names = list(input_names) if input_names is not None else [f"x{i}" for i in range(len(example_inputs))]
    if len(names) != len(example_inputs):
        raise ValueError(f"{len(names)} input names for {len(example_inputs)} example inputs")
    dynamic_axes: dict[str, dict[int, str]] = {}
    if dynamic_shapes is not None:
        if isinstance(dynamic_shapes, Mapping):
            items = list(dynamic_shapes.items())
            for k, _ in items:
                if k not in names:
                    raise ValueError(f"dynamic_shapes names input '{k}'; the inputs are {names}")
        else:
            dyn = list(dynamic_shapes)
            if len(dyn) != len(names):
                raise ValueError(f"dynamic_shapes has {len(dyn)} entries for {len(names)} inputs")
            items = list(zip(names, dyn))
        for name, axes in items:
            if axes:
                dynamic_axes[name] = {int(a): str(d) for a, d in axes.items()}
    kwargs: dict[str, Any] = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter: dynamic_axes, no onnxscript needed
    buf = io.BytesIO()
    with torch.no_grad():  # exported in eval mode (torch.onnx.export's default training=EVAL)
        torch.onnx.export(
            module,
            example_inputs,
            buf,
            input_names=names,
            dynamic_axes=dynamic_axes or None,
            opset_version=opset_version,
            do_constant_folding=True,
            **kwargs,
        )
    return compile(buf.getvalue(), target=target, offload=offload, threads=threads)
