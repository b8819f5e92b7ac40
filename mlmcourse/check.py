"""Self-check: run the hidden tests on a learner's own notebook, offline, without touching it.

The notebook goes through the same engine as the TA's grading (:mod:`mlmcourse.grader.engine`): the
tests come from ``source/``, the learner's answer cells run in a sandboxed worker, and the
learner's file is only read (its sibling notebooks too, for the notebooks that load functions
from earlier ones).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from mlmcourse.course.layout import notebook_names
from mlmcourse.grader.engine import grade_submission
from mlmcourse.grader.limits import Limits
from mlmcourse.grader.results import NotebookResult, TestResult

STUDENT = "self_check"

__all__ = ["STUDENT", "TestResult", "check_notebook", "check_result", "report"]


def check_result(root: Path, notebook: Path, limits: Limits | None = None) -> NotebookResult:
    """Grade one learner notebook (its folder is read as the submission, never written)."""
    notebook = Path(notebook)
    name = notebook.stem
    if name not in notebook_names(root):
        series = ", ".join(notebook_names(root))
        raise ValueError(f"{notebook.name} is not a notebook of this series ({series})")
    with tempfile.TemporaryDirectory(prefix="mlm-check-") as scratch:
        results = grade_submission(Path(root), STUDENT, notebook.resolve().parent, Path(scratch),
                                   limits or Limits(), notebooks=[name])
    result = results[0]
    result.autograded_path = None  # it lived in the scratch folder, now gone
    return result


def check_notebook(root: Path, notebook: Path) -> list[TestResult]:
    """Each hidden test's result for the learner's notebook."""
    return check_result(root, notebook).tests


def report(results: list[TestResult]) -> str:
    lines = []
    for result in results:
        mark = "PASS" if result.passed else "FAIL"
        lines.append(f"{mark}  {result.grade_id:<36} {result.points:g} / {result.max_points:g}")
        if result.message:
            lines.append(f"      {result.message}")
    got = sum(r.points for r in results)
    out_of = sum(r.max_points for r in results)
    lines.append(f"\nscore: {got:g} / {out_of:g}")
    return "\n".join(lines)
