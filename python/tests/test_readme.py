"""The README's "Python" section, run as a new user would: its ``pip install`` is what the
test command does; its Python blocks run in order, in one process, against a zone named
``weft`` (the default name, as in the README's paths), found through WEFT_URL/WEFT_TOKEN."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import REPO, Zone


def python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 3, "the README's Python section lost its examples"
    return blocks


def test_the_readme_python_examples_run(zone_root, tmp_path) -> None:
    z = Zone.start("weft", zone_root)
    try:
        env = dict(os.environ, WEFT_URL=z.url, WEFT_TOKEN=z.token)
        script = "\n".join(python_blocks())
        out = subprocess.run(
            [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == "logged in as admin"
        assert "['results.csv']" in lines
        assert "b'step 1 done\\n'" in lines
        assert any(line.startswith("not_found - ") and "missing.csv" in line for line in lines), lines
        assert "[0. 1. 2. 3. 4.]" in lines
        assert "succeeded" in lines
        assert (tmp_path / "copy.csv").read_text() == "station,t\nlrz,281.5\nit4i,279.0\n"
    finally:
        z.stop()
