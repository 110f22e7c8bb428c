"""``sss_viewer.cli`` parses; each command runs in its own module of ``sss_viewer.commands``, imported when it runs."""

import importlib
import inspect
import subprocess
import sys

from sss_viewer.cli import COMMANDS, build_parser


def test_every_parsed_command_has_a_module_with_run():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == set(COMMANDS)
    for command, name in COMMANDS.items():
        module = importlib.import_module(f"sss_viewer.commands.{name}")
        assert list(inspect.signature(module.run).parameters) == ["args", "progress"], command


def test_help_imports_no_command_module():
    code = (
        "import sys\nfrom sss_viewer.cli import main\n"
        "for argv in (['--help'], ['train', '--help'], ['score', '--help']):\n    assert main(argv) == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith('sss_viewer.commands.')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "['sss_viewer.commands._shared']"
