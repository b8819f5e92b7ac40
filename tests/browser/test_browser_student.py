"""A student in JupyterLab: fill in the answer cell, run the visible checks, press Validate."""

from __future__ import annotations

import re
from pathlib import Path

import labdriver as lab
import pytest
from conftest import copy_course, run_course

from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    cells_by_grade_id,
    grade_id,
    nbgrader_meta,
    without_solution_markers,
)
from mlmcourse.course.layout import SERIES
from mlmcourse.lab import WORK, ensure_work_copies

pytestmark = pytest.mark.browser

NOTEBOOK = "01_corruption"
ANSWER = "make_mlm_inputs"  # grade_id of the answer cell
# The walkthrough's two bugs: every selected site becomes [MASK], every token gets a label.
WRONG_BODY = """\
corrupted = tokens.clone()
corrupted[selected] = mask_token_id
labels = tokens.clone()
return corrupted, labels"""
WORK_COPY = f"{WORK}/{SERIES}/{NOTEBOOK}.ipynb"
CHECKS = re.compile(r"\bassert\b|\bexpect(_equal|_close|_raises)?\(")
# A failed visible check: a plain assert, or the checks helpers' CheckFailed (an AssertionError).
FAILED = ("AssertionError", "CheckFailed")


def reference_answer(course: Path) -> str:
    """The source solution with the marker lines dropped: what a correct student types."""
    source = nbio.read(course / "source" / SERIES / f"{NOTEBOOK}.ipynb")
    return without_solution_markers(cells_by_grade_id(source)[ANSWER].source)


def wrong_answer(course: Path) -> str:
    """The answer cell's signature and docstring, then a plausible but wrong body."""
    source = nbio.read(course / "source" / SERIES / f"{NOTEBOOK}.ipynb")
    text = cells_by_grade_id(source)[ANSWER].source
    head, _, rest = text.partition("### BEGIN SOLUTION")
    indent = head[head.rfind("\n") + 1:]
    body = "\n".join(indent + line for line in WRONG_BODY.splitlines())
    return head[: head.rfind("\n") + 1] + body


def check_cells(course: Path) -> list[int]:
    """Positions of the visible checks: locked, ungraded code cells that check something (with
    `assert` or the one-line helpers of `mlmcourse.teaching.checks`)."""
    nb = nbio.read(course / WORK_COPY)
    return [
        index for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and nbgrader_meta(cell).get("locked")
        and not nbgrader_meta(cell).get("grade") and CHECKS.search(cell.source)
    ]


def answer_index(course: Path) -> int:
    nb = nbio.read(course / WORK_COPY)
    return next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == ANSWER)


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    """JupyterLab on a fresh copy of the course, the student's copy of notebook 1 open."""
    course = copy_course(tmp_path_factory.mktemp("student") / "course")
    if not (course / "source" / SERIES / f"{NOTEBOOK}.ipynb").is_file():
        pytest.skip(f"source/{SERIES}/{NOTEBOOK}.ipynb is not written yet")
    if not (course / "release" / SERIES / f"{NOTEBOOK}.ipynb").is_file():
        done = run_course(course, "build", "release")
        assert done.returncode == 0, done.stderr[-3000:]
    ensure_work_copies(course)
    with lab.chromium_page() as page, lab.serve_lab(course, course.parent / "lab") as url:
        lab.open_notebook(page, url, WORK_COPY)
        yield course, page


def test_correct_answer_passes_checks_and_validate(student):
    course, page = student
    index = answer_index(course)
    lab.set_cell_source(page, index, reference_answer(course))
    lab.shoot(page, "student-1-answer-typed")

    lab.run_all(page)
    errors = lab.error_outputs(page)
    assert errors.count() == 0, (
        f"a cell failed with the reference answer:\n{errors.first.inner_text()}"
    )
    checks = check_cells(course)
    assert checks, f"{NOTEBOOK} has no visible checks (locked code cells with asserts)"
    for check in checks:
        assert re.fullmatch(r"\[\d+\]:", lab.execution_count(page, check)), (
            f"visible check in cell {check} did not run"
        )
    lab.cell(page, checks[-1]).scroll_into_view_if_needed()
    lab.shoot(page, "student-2-checks-passed")

    kind, text = lab.validate(page)
    lab.shoot(page, "student-3-validate-success")
    lab.close_dialog(page)
    assert kind == "success", f"Validate did not accept the reference answer:\n{lab.excerpt(text)}"
    assert "passes all the tests" in text.lower() or "success" in text.lower(), text


def test_wrong_answer_fails_a_check_and_validate(student):
    course, page = student
    lab.set_cell_source(page, answer_index(course), wrong_answer(course))
    lab.run_all(page)
    errors = lab.error_outputs(page)
    assert errors.count() >= 1, "the visible checks did not catch labels on every token"
    first_failure = errors.first
    first_failure.scroll_into_view_if_needed()
    message = first_failure.inner_text()
    assert any(kind in message for kind in FAILED), message
    lab.shoot(page, "student-4-check-failed")

    kind, text = lab.validate(page)
    lab.shoot(page, "student-5-validate-failed")
    lab.close_dialog(page)
    assert kind == "failed", (
        "Validate reported success for a wrong answer whose visible checks fail "
        "(nbgrader only reports graded cells unless Validator.validate_all is set):\n" + text[:1000]
    )
    assert any(kind in text for kind in FAILED), (
        f"Validate's report does not show the failed check:\n{lab.excerpt(text)}"
    )
