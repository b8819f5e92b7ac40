"""No solution, hidden test or nbgrader marker reaches a student or the importable package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

from mlmcourse.build.editions import reading_edition
from mlmcourse.course import nbio
from mlmcourse.course.cells import grade_id, has_markers, is_graded, is_hidden_helper
from mlmcourse.course.layout import SERIES, source_notebooks

LONG_LINE = 48  # a secret line this long is distinctive on its own
SHORT_LINE = 16  # shorter lines (`return x`, `import torch`) are too common to prove anything


ANY_REGION = "SOLUTION|HIDDEN TESTS"


def region_lines(source: str, kinds: str = ANY_REGION) -> tuple[list[list[str]], set[str]]:
    """Runs of consecutive lines inside regions of `kinds` (a regex), and the lines outside."""
    runs, outside, inside = [], set(), False
    for line in source.split("\n"):
        stripped = line.strip()
        if re.fullmatch(rf"### BEGIN ({kinds})", stripped):
            inside = True
            runs.append([])
        elif re.fullmatch(rf"### END ({kinds})", stripped):
            inside = False
        elif stripped and not stripped.startswith("#"):
            (runs[-1].append(stripped) if inside else outside.add(stripped))
    return runs, outside


def secrets(kinds: str = ANY_REGION) -> tuple[set[str], set[tuple[str, str]]]:
    """Long secret lines, and pairs of consecutive secret lines, none of them shown publicly."""
    long_lines, pairs = set(), set()
    for path in source_notebooks(ROOT):
        runs, public = [], set()
        for cell in nbio.read(path).cells:
            cell_runs, cell_public = region_lines(cell.source, kinds)
            runs += cell_runs
            public |= cell_public
        for run in runs:
            private = [line if line not in public else None for line in run]
            long_lines |= {line for line in private if line and len(line) >= LONG_LINE}
            pairs |= {
                (a, b) for a, b in zip(private, private[1:])
                if a and b and max(len(a), len(b)) >= SHORT_LINE
            }
    return long_lines, pairs


def code_lines(path: Path) -> list[str]:
    if path.suffix == ".ipynb":
        text = "\n".join(cell.source for cell in nbio.read(path).cells)
    else:
        text = path.read_text(encoding="utf-8")
    return [line.strip() for line in text.split("\n") if line.strip()]


def student_facing_files() -> list[Path]:
    files = sorted((ROOT / "release").rglob("*.ipynb"))
    files += sorted(p for p in (ROOT / "mlmcourse").rglob("*.py"))
    return files


def test_there_are_secrets_to_protect():
    graded = [p for p in source_notebooks(ROOT) if any(map(is_graded, nbio.read(p).cells))]
    long_lines, pairs = secrets()
    assert graded and long_lines and len(pairs) > 10 * len(graded)


def leaks(lines: list[str], kinds: str = ANY_REGION) -> list[str]:
    long_lines, pairs = secrets(kinds)
    leaked = sorted(set(lines) & long_lines)
    return leaked + [f"{a} / {b}" for a, b in zip(lines, lines[1:]) if (a, b) in pairs]


@pytest.mark.parametrize("path", student_facing_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_solution_or_hidden_test_line_leaks(path):
    leaked = leaks(code_lines(path))
    assert not leaked, f"{path.relative_to(ROOT)} shows solution/hidden-test code: {leaked[:5]}"
    assert not has_markers(path.read_text(encoding="utf-8")), (
        f"{path.relative_to(ROOT)} carries nbgrader markers"
    )


def test_a_pasted_solution_would_be_caught():
    """The detector itself: two lines of the reference solution, pasted anywhere, are found."""
    nb = nbio.read(source_notebooks(ROOT)[0])
    runs = [run for cell in nb.cells for run in region_lines(cell.source)[0] if len(run) > 3]
    pasted = ["x = 1", *runs[0][1:3], "y = 2"]
    assert leaks(pasted), f"pasting {runs[0][1:3]} went unnoticed"


def test_release_has_every_notebook():
    release = {p.name for p in (ROOT / "release" / SERIES).glob("*.ipynb")}
    assert release == {p.name for p in source_notebooks(ROOT)}


def test_the_reading_edition_carries_no_hidden_test_line():
    """Readers see the solutions, never a hidden test nor a hidden helper cell's body (built
    from source/ here, so this holds before `make build` too)."""
    for path in source_notebooks(ROOT):
        nb = reading_edition(nbio.read(path))
        lines = [line.strip() for cell in nb.cells for line in cell.source.split("\n")
                 if line.strip()]
        leaked = leaks(lines, kinds="HIDDEN TESTS")
        assert not leaked, f"the reading edition of {path.name} shows hidden tests: {leaked[:5]}"
        assert not any(is_hidden_helper(cell) for cell in nb.cells)
        assert "HIDDEN TESTS" not in "\n".join(cell.source for cell in nb.cells)


def test_nbgrader_strips_a_hidden_helper_cell_with_the_course_config():
    """generate_assignment's ClearHiddenTests, configured by nbgrader_config.py, accepts a locked
    ungraded cell with a hidden region and leaves only its visible comment."""
    from nbgrader.preprocessors import ClearHiddenTests
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    for path in source_notebooks(ROOT):
        nb = nbio.read(path)
        helpers = [grade_id(cell) for cell in nb.cells if is_hidden_helper(cell)]
        released, _ = ClearHiddenTests(config=config).preprocess(nb, {})
        for cell in released.cells:
            assert "HIDDEN TESTS" not in cell.source, f"{path.name} {grade_id(cell)} keeps markers"
            if grade_id(cell) in helpers:
                code = [line for line in cell.source.split("\n")
                        if line.strip() and not line.lstrip().startswith("#")]
                assert not code, f"{path.name} {grade_id(cell)} shows code in the release: {code}"
