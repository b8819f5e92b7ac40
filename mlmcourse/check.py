"""Self-check: run the hidden tests on a learner's own notebook, offline, without touching it."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import nbclean
from .cells import grade_id, is_graded, points
from .course import ASSIGNMENT, notebook_names
from .grading import run_nbgrader

STUDENT = "self_check"


@dataclass(frozen=True)
class TestResult:
    grade_id: str
    passed: bool
    points: float
    max_points: float
    message: str


def cell_result(cell) -> TestResult:
    """Pass/fail of one autograded test cell, and the first line that explains a failure."""
    message = ""
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            message = f"{output.ename}: {output.evalue}".strip().rstrip(":")
            break
        if output.output_type == "stream" and output.name == "stderr":
            message = "wrote to stderr: " + output.text.strip().splitlines()[0][:200]
            break
    full = points(cell)
    return TestResult(grade_id(cell), not message, 0.0 if message else full, full, message)


def check_notebook(root: Path, notebook: Path) -> list[TestResult]:
    """Grade one learner notebook in a scratch course; its siblings travel with it (loaders)."""
    name = notebook.stem
    if name not in notebook_names(root):
        series = ", ".join(notebook_names(root))
        raise ValueError(f"{notebook.name} is not a notebook of this series ({series})")
    with tempfile.TemporaryDirectory(prefix="mlm-check-") as scratch:
        course = Path(scratch)
        shutil.copytree(root / "source", course / "source")
        shutil.copy(root / "nbgrader_config.py", course / "nbgrader_config.py")
        submission = course / "submitted" / STUDENT / ASSIGNMENT
        submission.mkdir(parents=True)
        for sibling in notebook.parent.glob("[0-9][0-9]_*.ipynb"):
            if sibling.stem in notebook_names(root) and sibling.stem <= name:
                shutil.copyfile(sibling, submission / sibling.name)
        run_nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
        run_nbgrader(course, "autograde", ASSIGNMENT, "--force", "--create",
                     f"--student={STUDENT}", f"--notebook={name}")
        graded = nbclean.read(course / "autograded" / STUDENT / ASSIGNMENT / f"{name}.ipynb")
    return [cell_result(cell) for cell in graded.cells if is_graded(cell)]


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
