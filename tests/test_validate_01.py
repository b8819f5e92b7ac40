"""Notebook 1's Validate tells the truth with no course beside it (issues 12 and 13).

The student's copy is rebuilt here from source/ the way the release makes it (answers become the
student's, every hidden region goes), so these tests need no `make build`. The reference passes
every cell; each typical wrong answer in samples/ fails at least one graded cell's public part,
which is what nbgrader's Validate reports in a student's home (no nbgrader_config.py there, so
it checks only the graded cells).
"""

from __future__ import annotations

import shutil

import matplotlib
import nbformat
import pytest
from conftest import ROOT

from mlmcourse.build.samples import apply_patches, load_samples
from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    grade_id,
    has_markers,
    is_graded,
    is_hidden_helper,
    is_solution,
    run_cell,
    without_hidden_tests,
    without_solution_markers,
)
from mlmcourse.course.layout import SERIES

NAME = "01_corruption"
SOURCE = ROOT / "source" / SERIES / f"{NAME}.ipynb"
WRONG = [s for s in load_samples(ROOT)
         if s.student_id.startswith(("wrong_", "free_")) and NAME in s.notebooks]


def student_copy(sample=None) -> nbformat.NotebookNode:
    """The release with the reference answer (or a sample student's), as a student holds it."""
    nb = nbio.read(SOURCE)
    for cell in nb.cells:
        if is_solution(cell):
            cell.source = without_solution_markers(cell.source)
        elif is_graded(cell) or is_hidden_helper(cell):
            cell.source = without_hidden_tests(cell.source)
    if sample is not None:
        apply_patches(sample, NAME, nb)
    return nb


def failing_cells(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Run every code cell in one fresh namespace, as Run All does; grade_id -> error."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace: dict = {"__name__": "__main__"}
    failed = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            run_cell(cell.source, namespace, f"<{grade_id(cell)}>")
        except Exception as err:  # noqa: BLE001 - every failure is a finding
            failed[grade_id(cell)] = f"{type(err).__name__}: {err}"
    plt.close("all")
    return failed


def test_the_student_copy_holds_no_hidden_line():
    nb = student_copy()
    assert not any(has_markers(cell.source) for cell in nb.cells)
    helpers = [cell for cell in nbio.read(SOURCE).cells if is_hidden_helper(cell)]
    assert helpers, "notebook 1 defines the helpers its graded tests share once, in a hidden cell"


def test_the_reference_passes_every_cell():
    assert failing_cells(student_copy()) == {}
    assert failing_cells(graders_copy()) == {}, "the reference fails a hidden test"


@pytest.mark.parametrize("sample", WRONG, ids=lambda s: s.student_id)
def test_a_typical_wrong_answer_fails_a_graded_cell(sample):
    failed = failing_cells(student_copy(sample))
    # a graded cell, or a check Validate runs that no point rests on (what only the student's own
    # kernel can see: an output sharing the inputs' memory)
    checks = {grade_id(c) for c in nbio.read(SOURCE).cells
              if is_graded(c) or (grade_id(c) or "").startswith("test_")}
    assert set(failed) & checks, (
        f"{sample.student_id} ({sample.summary}) passes every graded cell's public part, so "
        f"Validate in a student's home would say nothing; cells that failed: {failed}"
    )


def graders_copy(sample=None) -> nbformat.NotebookNode:
    """What grading runs, with each graded cell cut down to its hidden tests (no public part)."""
    nb = nbio.read(SOURCE)
    for cell in nb.cells:
        if is_solution(cell):
            cell.source = without_solution_markers(cell.source)
        elif is_graded(cell):
            hidden = cell.source.split("### BEGIN HIDDEN TESTS\n", 1)[1]
            cell.source = hidden.split("### END HIDDEN TESTS", 1)[0]
    if sample is not None:
        apply_patches(sample, NAME, nb)
    return nb


@pytest.mark.parametrize("sample", WRONG, ids=lambda s: s.student_id)
def test_a_public_part_fails_only_where_the_hidden_tests_fail(sample):
    """The public part runs under grading too: it may cost a wrong answer nothing more than the
    hidden tests already do, so every sample keeps its EXPECTED score."""
    graded = {grade_id(c) for c in nbio.read(SOURCE).cells if is_graded(c)}
    public = set(failing_cells(student_copy(sample))) & graded
    hidden = set(failing_cells(graders_copy(sample))) & graded
    assert public <= hidden, f"{sample.student_id}: public parts alone fail {public - hidden}"


def test_graded_cells_echo_nothing():
    """The public part of a graded cell ends in a statement, so the release shows no Out[n]."""
    import ast

    for cell in student_copy().cells:
        if is_graded(cell):
            last = ast.parse(cell.source).body[-1]
            assert not isinstance(last, ast.Expr) or isinstance(last.value, ast.Call), (
                f"{grade_id(cell)} ends with an expression that echoes a value"
            )


def test_the_last_cell_says_not_yet_while_a_cell_ended_in_an_error(capsys):
    """A student who runs the cells one at a time past a failure (not Run All, which stops
    there) is not told that every visible check passes: JupyterLab sends each cell's id, and the
    checks module remembers how each cell's last run ended."""
    from IPython.core.interactiveshell import InteractiveShell

    from mlmcourse.teaching import checks

    shell = InteractiveShell.instance()
    checks._follow_cell_outcomes()
    shell.run_cell("raise ValueError('a failing check')", cell_id="check-a")
    shell.run_cell("x = 1", cell_id="answer")
    capsys.readouterr()  # the traceback IPython printed
    checks.visible_checks_passed("01_corruption", 24)
    assert capsys.readouterr().out.startswith("Not yet: 1 cell(s) above ended in an error")
    shell.run_cell("x = 2", cell_id="check-a")  # fixed and run again
    checks.visible_checks_passed("01_corruption", 24)
    assert capsys.readouterr().out.startswith("Every visible check passes.")


def test_the_last_cell_says_not_yet_while_a_graded_cell_has_not_run(capsys, monkeypatch, tmp_path):
    """A student who runs only part of the notebook in JupyterLab (one Part, or "Run Selected
    Cell and All Below") is not told that every visible check passes: the graded cells of the
    saved file that the kernel never ran are named. Run All without cell ids says nothing."""
    from IPython.core.interactiveshell import InteractiveShell

    from mlmcourse.teaching import checks

    shutil.copy(ROOT / "release" / SERIES / "01_corruption.ipynb", tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(checks, "_FAILED_LAST_RUN", {})
    graded = [cell for cell in nbio.read(tmp_path / "01_corruption.ipynb").cells
              if is_graded(cell)]
    shell = InteractiveShell.instance()
    checks._follow_cell_outcomes()
    for cell in graded[-5:]:  # Part E alone
        shell.run_cell("pass", cell_id=cell.id)
    checks.visible_checks_passed("01_corruption", 24)
    said = capsys.readouterr().out
    assert said.startswith(f"Not yet: {len(graded) - 5} graded cell(s) above have not run"), said
    assert grade_id(graded[0]) in said
    for cell in graded[:-5]:
        shell.run_cell("pass", cell_id=cell.id)
    checks.visible_checks_passed("01_corruption", 24)
    assert capsys.readouterr().out.startswith("Every visible check passes.")
