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


def calls_in(scripts: list[Path], call: re.Pattern) -> dict[str, set[str]]:
    """``{callee: options passed to it}`` over ``scripts``: ``call``'s first group names the callee, its second holds
    the arguments (``SCRIPT_CALL``: ``benchmarks/NAME.py``; ``COMMAND_CALL``: an ``sss-viewer`` command)."""
    calls: dict[str, set[str]] = {}
    for path in scripts:
        for line in logical_lines(path):
            for callee, args in call.findall(line):
                calls.setdefault(callee, set()).update(OPTION.findall(args))
    return calls


def options_not_accepted(calls: dict[str, set[str]], help_argv) -> dict[str, list[str]]:
    """``{callee: options passed to it that its --help does not list}``; ``help_argv(callee)`` is the command
    line of its ``--help``, which must succeed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    unknown = {}
    for callee, options in sorted(calls.items()):
        argv = help_argv(callee)
        result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"{' '.join(argv[1:])} failed: {result.stderr[-2000:]}"
        if options - set(OPTION.findall(result.stdout)):
            unknown[callee] = sorted(options - set(OPTION.findall(result.stdout)))
    return unknown


@pytest.mark.parametrize("script", SCRIPTS + TRAINING_SCRIPTS, ids=lambda p: p.name)
def test_the_gpu_scripts_parse(script):
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_every_benchmark_the_gpu_scripts_run_accepts_the_options_they_pass():
    calls = calls_in(SCRIPTS, SCRIPT_CALL)
    assert {"benchmarks/evidence_kernel.py", "benchmarks/gpu_training.py", "benchmarks/gpu_check.py"} <= set(calls)
    for script in calls:
        assert (ROOT / script).is_file(), f"{script} is run by a GPU script and does not exist"
    unknown = options_not_accepted(calls, lambda script: [sys.executable, script, "--help"])
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
    calls = calls_in(TRAINING_SCRIPTS, COMMAND_CALL)
    assert {"experiment", "train", "synth"} <= set(calls) and "--gpu-kernels" in calls["experiment"], calls
    unknown = options_not_accepted(calls, lambda command: [sys.executable, "-m", "sss_viewer", command, "--help"])
    assert not unknown, f"options the GPU training scripts pass that sss-viewer does not accept: {unknown}"
