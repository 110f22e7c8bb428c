"""The declared public API: each stage's ``__all__`` imports, is documented, and importing a stage stays cheap.

Also the optional features: each names the extra that installs its dependency when that is missing (checked in
a subprocess with the dependency blocked: ``sys.modules[name] = None``), and ``docs/api.md`` is what
``docs/make_api.py`` writes from the code now.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_api", ROOT / "docs" / "make_api.py")
make_api = importlib.util.module_from_spec(_spec)  # docs/make_api.py: the page generator and its docstring lookups
_spec.loader.exec_module(make_api)

NUMPYDOC_SECTIONS = {
    "Parameters",
    "Returns",
    "Yields",
    "Receives",
    "Raises",
    "Warns",
    "Other Parameters",
    "Attributes",
    "Methods",
    "See Also",
    "Notes",
    "References",
    "Examples",
}
"""Section headings numpydoc knows."""

UNDESCRIBED_PARAMETERS = frozenset()
"""Public functions whose docstrings predate this check and lack a ``Parameters`` section: add one, then remove
the name here (the test fails while a listed name has one, so the list only shrinks)."""


def public_names() -> list[tuple[str, str]]:
    """``(package, name)`` for every name of every stage's ``__all__``."""
    return [(stage, name) for stage in make_api.STAGES for name in importlib.import_module(stage).__all__]


def numpydoc_problems(doc: str | None, value: object, qualified: str) -> list[str]:
    """What keeps ``doc`` from being a numpydoc docstring of ``value`` (empty when nothing does).

    Parameters
    ----------
    doc : str or None
        The cleaned docstring.
    value : object
        What it documents: a function with parameters must describe them in a ``Parameters`` section.
    qualified : str
        ``package.name``, for :data:`UNDESCRIBED_PARAMETERS`.

    Returns
    -------
    list of str
    """
    if not doc or not doc.strip():
        return ["no docstring"]
    lines = doc.splitlines()
    problems = []
    if not lines[0].strip():
        problems.append("the summary line is empty")
    for heading, underline in zip(lines, lines[1:], strict=False):
        if underline.strip() and set(underline.strip()) == {"-"}:
            if heading.strip() not in NUMPYDOC_SECTIONS:
                problems.append(f"unknown section {heading.strip()!r}")
            elif len(underline.strip()) != len(heading.strip()):
                problems.append(f"the underline of {heading.strip()!r} is not as long as the heading")
    if inspect.isfunction(value):
        params = [p for p in inspect.signature(value).parameters if p not in ("self", "cls")]
        described = "Parameters" in [line.strip() for line in lines]
        if params and not described and qualified not in UNDESCRIBED_PARAMETERS:
            problems.append(f"no Parameters section for {params}")
        if described and qualified in UNDESCRIBED_PARAMETERS:
            problems.append("now has a Parameters section: remove it from UNDESCRIBED_PARAMETERS")
    return problems


@pytest.mark.parametrize("stage", make_api.STAGES)
def test_every_public_name_imports_and_is_documented_in_numpydoc_form(stage):
    package = importlib.import_module(stage)
    assert package.__all__ == sorted(package.__all__) or stage == "sss_viewer", f"{stage}.__all__ is not sorted"
    assert len(set(package.__all__)) == len(package.__all__), f"{stage}.__all__ repeats a name"
    wrong = []
    for name in package.__all__:
        value = getattr(package, name)  # raises when a lazy name's module lacks it
        problems = numpydoc_problems(make_api.own_docstring(package, name, value), value, f"{stage}.{name}")
        wrong += [f"{stage}.{name}: {problem}" for problem in problems]
    assert not wrong, "\n".join(wrong)


def test_every_name_excused_from_a_parameters_section_is_public():
    stale = UNDESCRIBED_PARAMETERS - {f"{stage}.{name}" for stage, name in public_names()}
    assert not stale, f"not public (remove from UNDESCRIBED_PARAMETERS): {sorted(stale)}"


@pytest.mark.parametrize("stage", make_api.STAGES)
def test_no_public_name_is_also_a_submodule(stage):
    """Importing a submodule binds its name on the package, which would hide a public name of the same spelling."""
    clashes = [n for n in importlib.import_module(stage).__all__ if importlib.util.find_spec(f"{stage}.{n}")]
    assert not clashes, f"{stage}: public names that are also submodules: {clashes}"


def test_models_exports_every_registered_backbone():
    import sss_viewer.models as models

    missing = [cls.__name__ for cls in models.MODEL_REGISTRY.values() if cls.__name__ not in models.__all__]
    assert not missing, f"backbones missing from sss_viewer.models.__all__: {missing}"


def test_an_unknown_name_is_an_attribute_error_naming_the_package():
    import sss_viewer.engine as engine

    with pytest.raises(AttributeError, match="'sss_viewer.engine' has no attribute 'no_such_name'"):
        engine.no_such_name  # noqa: B018
    assert "score_recording" in dir(engine)


def run_python(code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter of this environment (what it imports is its own)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize(
    ("stage", "absent"),
    [
        ("sss_viewer.io", ("panel", "torch", "mambapy")),
        ("sss_viewer.engine", ("panel", "torch", "mambapy")),
        ("sss_viewer.models", ("panel", "torch", "mambapy")),
        ("sss_viewer", ("panel", "torch", "mambapy")),
    ],
)
def test_importing_a_stage_imports_no_heavy_dependency(stage, absent):
    result = run_python(f"import sys, {stage}; print(sorted(m for m in {absent!r} if m in sys.modules))")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", f"import {stage} imports {result.stdout.strip()}"


def test_listing_the_models_does_not_import_mambapy():
    result = run_python(
        "import sys; from sss_viewer.models import MODEL_REGISTRY\n"
        "print('mamba' in MODEL_REGISTRY, 'mambapy' in sys.modules)"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True", "False"]


BLOCKED = {
    "mamba": (
        "mambapy",
        "from sss_viewer.models import build_model\nbuild_model('mamba')",
    ),
    "cohort": (
        "distributed",
        "from sss_viewer.cohort_scoring import CohortOptions, prepare_cohort\n"
        "prepare_cohort('no-model', 'no-root', 'no-out', CohortOptions())",
    ),
    "cohort-client": (
        "distributed",
        "from sss_viewer.cohort_scoring import dask_client\nwith dask_client(workers=1):\n    pass",
    ),
    "cohort-parquet": (
        "pyarrow",
        "from sss_viewer.cohort_scoring import CohortOptions, prepare_cohort\n"
        "prepare_cohort('no-model', 'no-root', 'no-out', CohortOptions())",
    ),
    "excel-read": (
        "openpyxl",
        "import pathlib, tempfile\nfrom sss_viewer.io import read_clinical_summary\n"
        "p = pathlib.Path(tempfile.mkdtemp()) / 'c.xlsx'\np.write_bytes(b'PK')\nread_clinical_summary(p)",
    ),
    "excel-write": (
        "openpyxl",
        "import pathlib, tempfile, pandas as pd\nfrom sss_viewer.io import write_clinical_summary\n"
        "rows = pd.DataFrame({'dataset_id': ['pt1'], 'soz_contacts': ['A1']})\n"
        "write_clinical_summary(rows, pathlib.Path(tempfile.mkdtemp()) / 'c.xlsx')",
    ),
}
"""A use of each optional dependency: the case's extra (before any ``-``) → (the module blocked, the code)."""


@pytest.mark.parametrize("case", sorted(BLOCKED))
def test_a_missing_optional_dependency_names_the_extra_that_installs_it(case):
    module, code = BLOCKED[case]
    extra = case.split("-")[0]
    result = run_python(f"import sys\nsys.modules[{module!r}] = None\n{code}")
    assert result.returncode != 0, f"{case}: ran without {module}"
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("sss_viewer._lazy.MissingExtraError: "), result.stderr[-2000:]
    assert f"needs {module}, which this installation lacks: pip install 'sss-viewer[{extra}]'" in last, last


def test_the_cli_says_which_extra_is_missing_in_one_line(tmp_path):
    code = (
        "import sys\nsys.modules['distributed'] = None\nfrom sss_viewer.cli import main\n"
        f"sys.exit(main(['score', 'no-model', {str(tmp_path)!r}, '--out', {str(tmp_path / 'out')!r}]))"
    )
    result = run_python(code)
    assert result.returncode == 1, result.stderr[-2000:]
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith(("INFO", "WARNING"))]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    assert "pip install 'sss-viewer[cohort]'" in lines[0]


def test_the_extras_are_declared_and_dev_installs_them_all():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    core = " ".join(project["dependencies"])
    expected = {"mamba": ["mambapy"], "cohort": ["dask[distributed]", "pyarrow"], "excel": ["openpyxl"]}
    for extra, packages in expected.items():
        assert [p for p in extras[extra] if re.split(r"[<>=]", p)[0] in packages], f"extra {extra!r} lacks {packages}"
        assert not any(p in core for p in packages), f"{packages} are still core dependencies"
        dev_extras = [e for d in extras["dev"] if d.startswith("sss-viewer[") for e in d[11:-1].split(",")]
        assert extra in dev_extras, f"dev lacks [{extra}]"


def test_the_committed_api_page_is_what_the_script_writes_now():
    page = make_api.render()
    assert make_api.PAGE.read_text(encoding="utf-8") == page, "docs/api.md is stale: run python docs/make_api.py"
