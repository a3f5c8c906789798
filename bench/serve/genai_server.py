#!/usr/bin/env python3
"""bench/serve/genai_server.py — baseline (b) of bench/serve: the same decoder run by ONNX Runtime
GenAI (make_model.py's genai/ folder: the ONNX model with an attention_mask input and its
genai_config.json), one og.Generator per request (greedy), behind the same threaded HTTP server as
ort_server.py. GenAI is not in bench/.venv: run.py runs this with bench/out/genai-venv's Python
(`python3 -m venv bench/out/genai-venv && bench/out/genai-venv/bin/pip install onnxruntime-genai`).

    bench/out/genai-venv/bin/python bench/serve/genai_server.py GENAI_DIR PORT
"""
import os
import sys

import onnxruntime_genai as og

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sse_server import serve  # noqa: E402


def main():
    model = og.Model(sys.argv[1])
    port = int(sys.argv[2])

    def generate(prompt, max_tokens):
        p = og.GeneratorParams(model)
        p.set_search_options(max_length=len(prompt) + max_tokens, do_sample=False)
        g = og.Generator(model, p)
        g.append_tokens(prompt)
        n = 0
        while not g.is_done() and n < max_tokens:
            g.generate_next_token()
            n += 1
            yield int(g.get_next_tokens()[0])

    serve(generate, port, "genai baseline")


if __name__ == "__main__":
    main()
