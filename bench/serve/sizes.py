"""bench/serve/sizes.py — make_model.py's architectures for the serve benchmarks (run.py, steps.py):
the default, small enough for CI-sized runs, and GPT-2 small's dimensions (124 M parameters,
500 MB of weights: a decode step streams them, as real serving does)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench", "out", "serve")

SIZES = {
    "small": ("256 wide, 4 heads, 4 layers, vocabulary 4096", []),
    "gpt2": ("GPT-2 small's 768 wide, 12 heads, 12 layers, vocabulary 50257",
             ["--width", "768", "--heads", "12", "--layers", "12", "--vocab", "50257"]),
}


def model_dir(size):
    """The directory of make_model.py's files for `size`, written first if missing."""
    d = OUT if size == "small" else os.path.join(OUT, size)
    if not os.path.exists(os.path.join(d, "genai", "genai_config.json")):
        subprocess.check_call([sys.executable, os.path.join(HERE, "make_model.py"), d] + SIZES[size][1])
    return d


def add_argument(ap):
    ap.add_argument("--size", default="small", choices=sorted(SIZES),
                    help="make_model.py's architecture: " + "; ".join(f"{k}: {v[0]}" for k, v in SIZES.items()))
