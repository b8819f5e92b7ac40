"""Feedback names each check by the notebook's heading above it, and sums up a blank notebook
in one "not attempted" line (rendered from committed autograded notebooks, without nbgrader)."""

from __future__ import annotations

import html
import re

import nbformat
import pytest
from conftest import ROOT

from mlmcourse.course.cells import grade_id, is_graded, is_solution
from mlmcourse.course.headings import check_headings
from mlmcourse.course.layout import SERIES
from mlmcourse.grader.results.feedback import FeedbackExporter, ReadableFeedback
from mlmcourse.grader.results.verdict import verdict_of

AUTOGRADED = ROOT / "autograded"
FIRST = "01_corruption"


def graded_notebook(student: str, name: str = FIRST) -> nbformat.NotebookNode:
    """An autograded notebook with the scores nbgrader's GetGrades would fill in."""
    path = AUTOGRADED / student / SERIES / f"{name}.ipynb"
    if not path.is_file():
        pytest.skip(f"{path.relative_to(ROOT)} is not built (make build)")
    nb = nbformat.read(path, as_version=4)
    points = {c.grade_id: c.points for c in verdict_of(nb).checks}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            meta["score"] = points[meta["grade_id"]]
    return nb


def feedback_text(nb: nbformat.NotebookNode, student: str) -> tuple[str, dict]:
    resources = {"nbgrader": {"notebook": FIRST, "student": student, "assignment": SERIES,
                              "score": 0.0, "max_score": 24.0, "late_penalty": 0.0}}
    nb, resources = ReadableFeedback().preprocess(nb, resources)
    page, _ = FeedbackExporter().from_notebook_node(nb, resources=resources)
    body = re.sub(r"<(style|script)\b.*?</\1>", "", page, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", "", body))
    return re.sub(r"[ \t]*\n[ \t]*(?=\S)(?![A-Z0-9])", " ", text), resources["mlm_feedback"]


def test_checks_are_named_by_the_heading_above_them():
    source = nbformat.read(ROOT / "source" / SERIES / f"{FIRST}.ipynb", as_version=4)
    headings = check_headings(source)
    tests = [grade_id(c) for c in source.cells if is_graded(c) and not is_solution(c)]
    assert sorted(headings) == sorted(tests), "every graded test cell needs a heading"
    labels = headings["test_labels"]
    assert labels.title == "B1 · Labels: the original token at every selected site"
    assert labels.label == "B1" and labels.points == 2
    assert labels.what.startswith("labels hold the original token")


def test_feedback_names_the_failed_check_by_its_heading():
    text, summary = feedback_text(graded_notebook("wrong_labels_every_token"),
                                  "wrong_labels_every_token")
    to_fix = text.split("To fix", 1)[1].split("All checks", 1)[0]
    assert "B1 · Labels: the original token at every selected site (0 / 2)" in to_fix
    assert "B3 · A custom ignore_index (0 / 1)" in to_fix
    assert "test_labels" not in to_fix, "the feedback should name checks by heading, not grade id"
    assert summary["not_attempted"] is None, "a written function is not 'not attempted'"
    assert "Check B1 · Labels" in text, "the graded cell's label should carry its heading"


def test_blank_notebook_is_summed_up_in_one_line():
    nb = graded_notebook("blank")
    checks = sum(1 for cell in nb.cells if is_graded(cell))  # the notebook's graded cells
    text, summary = feedback_text(nb, "blank")
    assert summary["not_attempted"].startswith(f"Not attempted: all {checks} checks failed")
    to_fix = text.split("To fix", 1)[1].split("All checks", 1)[0]
    lines = [line for line in to_fix.splitlines() if line.strip()]
    assert len(lines) == 1 and "Not attempted" in lines[0], lines
    assert "YOUR CODE HERE" in lines[0]


def test_one_shared_reason_is_said_once():
    from mlmcourse.grader.results.feedback import not_attempted

    reason = ("NotebookNotReady: `make_mlm_inputs` in 01_corruption.ipynb still raises "
              "NotImplementedError. Finish notebook 1 first.")
    checks = [{"passed": False, "message": reason}] * 3
    assert not_attempted(checks) == f"Not attempted: all 3 checks failed with {reason}"
    half = [{"passed": True, "message": ""}, {"passed": False, "message": reason}]
    assert not_attempted(half) is None, "a check that passed means the notebook was attempted"
    other = [{"passed": False, "message": "AssertionError: labels are wrong"}] * 2
    assert not_attempted(other) is None
