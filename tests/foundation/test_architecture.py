"""The package's layering: each stage imports only from the stages before it, and nothing imports in a cycle.

Imports are read from the source (``ast``), function-local ones included, so a lazy import cannot hide
a dependency on a later stage. The stage list is the one in the README's "Architecture" section.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "sss_viewer"

STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "sss_viewer._lazy",
            "sss_viewer._thread_warnings",
            "sss_viewer._validate",
            "sss_viewer._version",
            "sss_viewer.fileio",
            "sss_viewer.metrics",
        ),
    ),
    ("io", ("sss_viewer.io",)),
    ("synth", ("sss_viewer.synth",)),
    ("preprocessing", ("sss_viewer.preprocessing",)),
    ("windows", ("sss_viewer.windows",)),
    ("models", ("sss_viewer.models",)),
    ("engine", ("sss_viewer.engine",)),
    ("biomarkers", ("sss_viewer.biomarkers",)),
    ("evaluation", ("sss_viewer.evaluation",)),
    ("baselines", ("sss_viewer.baselines",)),
    ("experiments", ("sss_viewer.experiments",)),
    ("cohort scoring", ("sss_viewer.cohort_scoring",)),
    ("viewer", ("sss_viewer.viewer",)),
    ("front door", ("sss_viewer", "sss_viewer.__main__", "sss_viewer.cli", "sss_viewer.commands", "sss_viewer._moved")),
)
"""Stages in data-flow order; a module belongs to the stage with the longest matching prefix."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def stage_of(module: str) -> int:
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(STAGES):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best is None:
        raise AssertionError(f"{module} belongs to no stage: add it to STAGES and to the README's architecture list")
    return best


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """Package modules that ``module`` imports anywhere in its source (``from X import name`` → X, or X.name when a module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] + [f"{target}.{alias.name}" for alias in node.names]
            names = [n for n in names[1:] if n in known] or [target]
        else:
            continue
        for name in names:
            while name and name not in known:  # import a.b.c of a non-module attribute: its module
                name = name.rpartition(".")[0]
            if name.startswith("sss_viewer") and name != module:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    known = set(modules)
    return {m: imports_of(m, p, known) for m, p in modules.items()}


def test_every_module_belongs_to_a_stage():
    for module in all_modules():
        stage_of(module)


def test_no_module_imports_a_later_stage():
    wrong = []
    for module, targets in import_graph().items():
        for target in sorted(targets):
            if target == "sss_viewer" and module.startswith("sss_viewer."):
                wrong.append(f"{module} imports the front door 'sss_viewer' (import the stage's module instead)")
            elif stage_of(target) > stage_of(module):
                wrong.append(
                    f"{module} ({STAGES[stage_of(module)][0]}) imports {target} ({STAGES[stage_of(target)][0]})"
                )
    assert not wrong, "\n".join(wrong)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root, targets in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(targets)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles():
    cycles = strongly_connected(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize(
    "module",
    ["sss_viewer.fileio", "sss_viewer.viewer._annotations", "sss_viewer.viewer.export", "sss_viewer.io.readers"],
)
def test_writing_files_and_reading_recordings_do_not_import_torch(module):
    code = f"import sys, {module}; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "False", f"importing {module} imports torch"


VIEWER_LIBRARIES = ("panel", "holoviews", "bokeh", "datashader", "tsdownsample", "param", "playwright", "matplotlib")
"""The ``[viewer]`` / ``[export]`` extras: an engine-only install has none of them."""


def test_only_the_viewer_imports_the_viewer_extras():
    wrong = []
    for module, path in all_modules().items():
        if module.startswith("sss_viewer.viewer") or module in ("sss_viewer.cli",):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            wrong += [f"{module} imports {root}" for root in roots if root in VIEWER_LIBRARIES]
    assert not wrong, "\n".join(wrong)


def test_an_old_import_path_still_works_with_a_future_warning_naming_the_removal():
    code = (
        "import warnings; warnings.simplefilter('error', FutureWarning)\n"
        "import sss_viewer\n"
        "try:\n    import sss_viewer.io.synthetic as old\nexcept FutureWarning as w:\n    print('module:', w)\n"
        "warnings.simplefilter('ignore')\nimport sss_viewer.io.synthetic as old\n"
        "warnings.simplefilter('error', FutureWarning)\n"
        "from sss_viewer.synth.config import SynthConfig\n"
        "try:\n    old.SynthConfig\nexcept FutureWarning as w:\n    print('name:', w)\n"
        "warnings.simplefilter('ignore')\nprint(old.SynthConfig is SynthConfig)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "module: sss_viewer.io.synthetic moved to sss_viewer.synth.config" in out
    assert "name: sss_viewer.io.synthetic.SynthConfig moved to sss_viewer.synth.config.SynthConfig" in out
    assert out.count("the old path will be removed in 0.2") == 2
    assert out.strip().endswith("True")


def test_internal_modules_carry_an_underscore_and_their_old_paths_warn():
    """Every module whose names no stage exports is private (``_name``); its old path imports with a FutureWarning."""
    from sss_viewer._moved import PRIVATISED

    for stage, names in PRIVATISED.items():
        for name in names:
            assert (PACKAGE / stage / f"_{name}.py").is_file(), f"sss_viewer/{stage}/_{name}.py"
            assert not (PACKAGE / stage / f"{name}.py").exists(), f"sss_viewer/{stage}/{name}.py is still public"
    code = (
        "import warnings; warnings.simplefilter('error', FutureWarning)\n"
        "import sss_viewer\n"
        "try:\n    import sss_viewer.preprocessing.streaming\nexcept FutureWarning as w:\n    print('module:', w)\n"
        "warnings.simplefilter('ignore')\nimport sss_viewer.preprocessing.streaming as old\n"
        "from sss_viewer.preprocessing._streaming import preprocess_into\n"
        "print(old.preprocess_into is preprocess_into)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "module: sss_viewer.preprocessing.streaming moved to sss_viewer.preprocessing._streaming" in out
    assert out.strip().endswith("True")


def test_the_front_door_names_resolve_and_importing_it_stays_light():
    code = (
        "import sys, sss_viewer as s\n"
        "print('torch' in sys.modules, 'mne' in sys.modules)\n"
        "print(all(getattr(s, n) is not None for n in s.__all__))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, check=True).stdout
    assert out.split() == ["False", "False", "True"]


def test_the_engine_runs_without_the_viewer_extras_and_the_viewer_says_what_is_missing(tmp_path):
    blocked = ", ".join(repr(n) for n in VIEWER_LIBRARIES)
    code = (
        f"import sys\nfor name in ({blocked},):\n    sys.modules[name] = None  # as if not installed\n"
        "from sss_viewer.cli import main\n"
        "from sss_viewer.engine.inference import score_recording\n"
        "from sss_viewer.experiments.runner import run_experiment\n"
        "print('cli', main(['--version']))\n"
        "try:\n    import sss_viewer.viewer.app\nexcept ImportError as exc:\n    print('viewer:', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True).stdout
    assert "cli 0" in out
    assert "viewer: The sss-viewer viewer needs panel, holoviews, bokeh, datashader, param" in out
    assert "pip install 'sss-viewer[viewer]'" in out


IMPORT_LINTER_CONFIG = PACKAGE.parent / ".importlinter"
"""import-linter's ``layers`` contract: the same stage order as ``STAGES``, checked by ``lint-imports``."""


def contract_layers(text: str) -> list[list[str]]:
    """The ``layers`` of ``.importlinter``, lowest stage first, each as the full module names it holds."""
    import configparser

    parser = configparser.ConfigParser()
    parser.read_string(text)
    section = parser["importlinter:contract:stages"]
    container = section["containers"].strip()
    rows = [row.strip() for row in section["layers"].strip().splitlines() if row.strip()]
    return [[f"{container}.{name.strip()}" for name in row.split(":")] for row in reversed(rows)]


def test_the_import_linter_contract_lists_the_stages_in_order():
    want = [sorted(prefixes) for _, prefixes in STAGES[:-1]]  # the front door is the container itself + cli
    got = [sorted(layer) for layer in contract_layers(IMPORT_LINTER_CONFIG.read_text())]
    assert got[:-1] == want, "keep .importlinter's layers and STAGES in the same order"
    assert set(got[-1]) == set(STAGES[-1][1]) - {"sss_viewer"}


def _lint_imports(config: Path) -> subprocess.CompletedProcess:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed (pip install import-linter; the dev extra lists it)")
    return subprocess.run(
        [str(lint), "--no-cache", str(config)], cwd=PACKAGE.parent, capture_output=True, text=True, timeout=300
    )


def test_import_linter_keeps_the_stage_contract():
    result = _lint_imports(IMPORT_LINTER_CONFIG)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "1 kept, 0 broken" in result.stdout


def test_import_linter_breaks_a_contract_that_puts_a_stage_below_one_it_imports(tmp_path):
    text = IMPORT_LINTER_CONFIG.read_text()
    swapped = (
        text.replace("    viewer\n", "    @@\n").replace("    io\n", "    viewer\n").replace("    @@\n", "    io\n")
    )
    assert swapped != text
    config = tmp_path / "swapped.importlinter"
    config.write_text(swapped)
    result = _lint_imports(config)
    assert result.returncode != 0 and "1 broken" in result.stdout and "sss_viewer.viewer" in result.stdout
