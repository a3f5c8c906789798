"""The README's Python example runs and prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import os
import re

from conftest import ROOT


def test_readme_example_prints_what_the_readme_shows():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"prints\n\n```\n(.*?)```", section, re.S).group(1)
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    finally:
        os.chdir(cwd)
    assert out.getvalue() == shown
