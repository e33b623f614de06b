"""The README's "Python" and "S3" sections, run as a new user would, against a zone named
``weft`` (the default name, as in the README's paths), found through WEFT_URL/WEFT_TOKEN.
"Python": its ``pip install`` is what the test command does; its Python blocks run in
order, in one process. "S3": its shell blocks run in order in one shell, then its Python
block, with the gateway's address in place of the README's 127.0.0.1:8641."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from s3_helpers import S3Zone, tool_env
from zonelib import REPO, TOOLS_BIN, Zone, weft_bin


def section(title: str) -> str:
    text = (REPO / "README.md").read_text()
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def python_blocks() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", section("Python"), re.S)
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


def test_the_readme_s3_commands_run(zone_root, tmp_path) -> None:
    text = section("S3")
    shell = re.findall(r"```sh\n(.*?)```", text, re.S)
    python = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(shell) >= 4 and len(python) == 1, "the README's S3 section lost its examples"
    z = S3Zone("weft", zone_root / "readme-s3")
    z.run()
    try:
        address = z.s3_url.removeprefix("http://")
        script = "set -euo pipefail\n" + "\n".join(shell) + f"\npython3 - <<'PYTHON'\n{python[0]}PYTHON\n"
        script = script.replace("127.0.0.1:8641", address)
        env = tool_env(
            tmp_path / "home",
            WEFT_URL=z.url,
            WEFT_TOKEN=z.token,
            RCLONE_CONFIG=str(tmp_path / "rclone.conf"),
            PATH=os.pathsep.join([os.path.dirname(weft_bin()), str(TOOLS_BIN), os.path.dirname(sys.executable)])
            + os.pathsep
            + os.environ["PATH"],
        )
        out = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        # What the section says the commands show.
        assert "hello.txt" in out.stdout, out.stdout
        assert re.search(r"^home-admin +/weft/home/admin +\(home\)$", out.stdout, re.M), out.stdout
        assert re.search(r"^open-data +/weft/projects/open +\(public-read\)$", out.stdout, re.M), out.stdout
        assert "0 differences found" in out.stderr, out.stderr
        assert "{'station': 'lrz'}" in out.stdout, out.stdout
        assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in out.stdout, out.stdout
        assert "281.5" in out.stdout, out.stdout
        assert (tmp_path / "back.dat").read_bytes() == (tmp_path / "run42/raw/frame0.dat").read_bytes()
        stat = z.weft("stat", "--json", "/weft/projects/climate/run42/raw/frame0.dat")
        assert stat.returncode == 0 and '"size": 20000000' in stat.stdout, stat.stdout + stat.stderr
    finally:
        z.stop()
