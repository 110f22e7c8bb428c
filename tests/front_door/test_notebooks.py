"""The notebooks run top to bottom on a fresh kernel, with the command the README gives a user."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
JUPYTER = Path(sys.executable).with_name("jupyter")


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes_with_jupyter_nbconvert(path, tmp_path):
    """``jupyter nbconvert --to notebook --execute`` from the installed environment (README), kernel python3."""
    assert JUPYTER.is_file(), (
        f"{JUPYTER} missing: the set-up must install nbconvert and a kernel (pip install -e '.[dev]')"
    )
    cmd = [
        str(JUPYTER),
        "nbconvert",
        "--to",
        "notebook",
        "--execute",
        str(path),
        "--output-dir",
        str(tmp_path),
        "--ExecutePreprocessor.timeout=600",
        "--ExecutePreprocessor.kernel_name=python3",
    ]
    run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    executed = json.loads((tmp_path / path.name).read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert any(c.get("outputs") for c in executed["cells"] if c["cell_type"] == "code")
