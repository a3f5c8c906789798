"""The bundled models (models/*.loom), compiled, against Loom's reference interpreter, at
sizes 0 / 1 and at primes, with 1 and 2 runtime threads."""

from __future__ import annotations

import numpy as np
import pytest

import loom
from conftest import MODELS, random_inputs

# Symbolic dims of the bundled models: a smallest case (an empty KV cache) and primes. t, m, pg:
# serve_decoder.loom's step tokens, block-table width and page size (t >= 2: its last_index
# inputs, like every integer input here, are 0 or 1).
SIZES = [
    {"b": 1, "s": 1, "past": 0, "n": 1, "h": 5, "w": 7, "V": 5, "P": 7, "t": 2, "m": 1, "pg": 1},
    {"b": 2, "s": 7, "past": 3, "n": 2, "h": 13, "w": 11, "V": 11, "P": 13, "t": 7, "m": 3, "pg": 5},
]
MODEL_FILES = sorted(p.name for p in MODELS.glob("*.loom"))


def test_every_bundled_model_is_tested():
    assert len(MODEL_FILES) >= 6, MODEL_FILES


@pytest.mark.parametrize("name", MODEL_FILES)
def test_model_matches_interpreter(name):
    path = MODELS / name
    m = loom.compile(path, threads=1)
    fn = m.signature["main"]
    checked = 0
    for k, dims in enumerate(SIZES):
        args = random_inputs(fn, dims, np.random.default_rng(k))
        want = loom.interpret(path, *args)
        got1 = m(*args)
        m.threads = 2
        got2 = m(*args)
        m.threads = 1
        want_t = want if isinstance(want, tuple) else (want,)
        for g in (got1, got2):
            g_t = g if isinstance(g, tuple) else (g,)
            assert len(g_t) == len(want_t)
            for a, b in zip(g_t, want_t):
                assert a.shape == b.shape and a.dtype == b.dtype
                assert np.isfinite(b).all()
                # float32 sums in another order: error relative to the result's scale
                scale = max(1.0, float(np.abs(b).max()))
                np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5 * scale)
        checked += 1
    assert checked == len(SIZES)
