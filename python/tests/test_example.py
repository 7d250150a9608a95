"""The notebook-style example runs headless and saves its chart."""

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "compare_schedulers.py"


def test_compare_schedulers_example_writes_a_png(tmp_path):
    # Proves the example runs end to end with matplotlib's Agg backend and writes a PNG.
    png = tmp_path / "schedulers.png"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    out = subprocess.run([sys.executable, str(EXAMPLE), str(png)], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
