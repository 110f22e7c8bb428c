"""The prepared GPU scripts, checked where there is no GPU.

A GPU machine is lent rarely and by the minute (``benchmarks/README.md``): a misspelt option or a
renamed test file in ``benchmarks/gpu_check.sh`` or ``benchmarks/gpu_issue33.sh`` would cost a call's
device time to find. Here, on the CPU: both scripts parse (``bash -n``); every Python script they run
exists and accepts each option they pass it (its own ``--help``); every test file they name exists;
every part ``gpu_issue33.sh``'s usage line lists has a branch of its own. The same for the training
scripts meant for GPU machines (``training/paper_*_gpu.sh``): they parse, and each ``sss-viewer``
command they run accepts the options they pass it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "benchmarks" / "gpu_check.sh", ROOT / "benchmarks" / "gpu_issue33.sh"]
TRAINING_SCRIPTS = sorted((ROOT / "training").glob("paper_*_gpu.sh"))
COMMAND_CALL = re.compile(r"(?:\$SSS\"?|-m sss_viewer)\s+(\w+)(.*)")
SCRIPT_CALL = re.compile(r"(benchmarks/\w+\.py)(.*?)(?=\$PY|&&|;|$)")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def logical_lines(path: Path) -> list[str]:
    """The script's lines with backslash continuations joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", path.read_text(encoding="utf-8"))
    return [line for line in text.splitlines() if not line.lstrip().startswith("#")]


def script_calls() -> dict[str, set[str]]:
    """``{benchmarks/NAME.py: options passed to it}`` over both scripts."""
    calls: dict[str, set[str]] = {}
    for path in SCRIPTS:
        for line in logical_lines(path):
            for script, args in SCRIPT_CALL.findall(line):
                calls.setdefault(script, set()).update(OPTION.findall(args))
    return calls


@pytest.mark.parametrize("script", SCRIPTS + TRAINING_SCRIPTS, ids=lambda p: p.name)
def test_the_gpu_scripts_parse(script):
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_every_benchmark_the_gpu_scripts_run_accepts_the_options_they_pass():
    calls = script_calls()
    assert {"benchmarks/evidence_kernel.py", "benchmarks/gpu_training.py", "benchmarks/gpu_check.py"} <= set(calls)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    unknown = {}
    for script, options in sorted(calls.items()):
        assert (ROOT / script).is_file(), f"{script} is run by a GPU script and does not exist"
        result = subprocess.run(
            [sys.executable, script, "--help"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, f"{script} --help failed: {result.stderr[-2000:]}"
        accepted = set(OPTION.findall(result.stdout))
        if options - accepted:
            unknown[script] = sorted(options - accepted)
    assert not unknown, f"options the GPU scripts pass that the benchmarks do not accept: {unknown}"


def test_every_test_file_the_gpu_scripts_name_exists():
    named = {m for path in SCRIPTS for m in re.findall(r"tests/[\w/]+\.py", path.read_text(encoding="utf-8"))}
    assert named, "the GPU scripts name no test file"
    assert sorted(n for n in named if not (ROOT / n).is_file()) == []


def test_every_listed_part_of_gpu_issue33_has_a_branch():
    text = (ROOT / "benchmarks" / "gpu_issue33.sh").read_text(encoding="utf-8")
    listed = set(re.search(r'PARTS: any of "([^"]+)"', text).group(1).split())
    branches = {name.strip() for label in re.findall(r"^\s+([\w |]+)\)", text, re.M) for name in label.split("|")}
    default = set(re.search(r"PARTS=\$\{1:-([^}]+)\}", text).group(1).split())
    assert listed - branches == set() and default <= listed, (listed, branches, default)


def test_every_command_the_gpu_training_scripts_run_accepts_the_options_they_pass():
    calls: dict[str, set[str]] = {}
    for path in TRAINING_SCRIPTS:
        for line in logical_lines(path):
            for command, args in COMMAND_CALL.findall(line):
                calls.setdefault(command, set()).update(OPTION.findall(args))
    assert {"experiment", "train", "synth"} <= set(calls) and "--gpu-kernels" in calls["experiment"], calls
    unknown = {}
    for command, options in sorted(calls.items()):
        result = subprocess.run(
            [sys.executable, "-m", "sss_viewer", command, "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"sss-viewer {command} --help failed: {result.stderr[-2000:]}"
        if options - set(OPTION.findall(result.stdout)):
            unknown[command] = sorted(options - set(OPTION.findall(result.stdout)))
    assert not unknown, f"options the GPU training scripts pass that sss-viewer does not accept: {unknown}"
