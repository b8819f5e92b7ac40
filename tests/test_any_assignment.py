"""Any assignment (SPEC "Any assignment"): the course reads its assignments from source/, and a
second small assignment beside the series, with a notebook name of any form, is graded by
`python -m mlmcourse grade` and by `nbgrader autograde`, validated, given feedback and listed in
the class report and in grades-lms.csv. A folder under submitted/<student>/ that is no assignment
is named. The second assignment is built here, in a scratch course: students never get it."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT

from mlmcourse.course import nbio
from mlmcourse.course.cells import is_solution, without_solution_markers
from mlmcourse.course.layout import SERIES, assignments, notebook_names, only_assignment

SECOND = "attention_basics"
NOTEBOOK = "scaled_scores"  # no number in front: any name will do
RIGHT = "    return sum(a * b for a, b in zip(q, k, strict=True)) / len(q) ** 0.5"
WRONG = "    return sum(a * b for a, b in zip(q, k, strict=True))  # forgot the scale"
STRAY = "atention_basics"  # a student's typo: not an assignment, named by `grade`


def test_nothing_in_the_grader_names_an_assignment():
    grader = ROOT / "mlmcourse" / "grader"
    naming = [str(path.relative_to(ROOT)) for path in grader.rglob("*")
              if path.is_file() and path.suffix in (".py", ".j2", ".html", ".md")
              and SERIES in path.read_text(encoding="utf-8")]
    assert naming == [], f"the grader must serve any assignment; these name {SERIES}: {naming}"


def test_assignments_and_their_notebooks_come_from_source(tmp_path):
    for folder, names in {"b_week": ["intro", "01_more"], "a_week": ["z_last", "a_first"],
                          ".ipynb_checkpoints": ["x"], "empty": []}.items():
        (tmp_path / "source" / folder).mkdir(parents=True)
        for name in names:
            (tmp_path / "source" / folder / f"{name}.ipynb").write_text("{}")
    assert assignments(tmp_path) == ["a_week", "b_week"]
    assert notebook_names(tmp_path, "b_week") == ["01_more", "intro"]
    with pytest.raises(ValueError, match="2 assignments .*a_week, b_week.*say which"):
        only_assignment(tmp_path)
    assert assignments(ROOT) == [SERIES]


# ---- the scratch course with a second assignment ------------------------------------------------


def cell(gid: str, source: str, kind: str = "code", **nbgrader) -> nbformat.NotebookNode:
    meta = {"nbgrader": {"grade_id": gid, "locked": True, "solution": False, "grade": False,
                         "schema_version": 3, **nbgrader}}
    if kind == "markdown":
        return nbformat.v4.new_markdown_cell(source, metadata=meta)
    return nbformat.v4.new_code_cell(source, metadata=meta)


def second_notebook() -> nbformat.NotebookNode:
    """A setup cell, an answer cell and a graded cell (2 points) with hidden tests."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        cell("title", "# Scaled scores\n\nAttention's score of two vectors (2 points).",
             "markdown"),
        cell("setup", "import math"),
        cell("scaled_dot", "def scaled_dot(q, k):\n    \"\"\"q . k / sqrt(len(q)).\"\"\"\n"
             f"    ### BEGIN SOLUTION\n{RIGHT}\n    ### END SOLUTION",
             solution=True, locked=False),
        cell("test_scaled_dot", '"""scaled_dot divides by the square root of the length."""\n'
             "assert scaled_dot([1.0], [2.0]) == 2.0, 'one element: its product'\n"
             "### BEGIN HIDDEN TESTS\n"
             "got = scaled_dot([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0])\n"
             "assert math.isclose(got, 5.0), f'expected 5.0, got {got}: divide by sqrt(4)'\n"
             "### END HIDDEN TESTS", grade=True, points=2),
    ]
    return nbio.clean_source_notebook(nb)


def answered(source_nb, answer: str) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(source_nb)
    for each in nb.cells:
        if is_solution(each):
            each.source = without_solution_markers(each.source).replace(RIGHT, answer)
    return nb


def make_course(course: Path) -> Path:
    """The series' source and a second assignment; students `right` and `wrong` hand in the
    second one only (the cheapest notebook), and `right` also a folder of a typo's name."""
    shutil.copytree(ROOT / "source" / SERIES, course / "source" / SERIES)
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    source_nb = second_notebook()
    nbio.write(source_nb, course / "source" / SECOND / f"{NOTEBOOK}.ipynb")
    for student, answer in (("right", RIGHT), ("wrong", WRONG)):
        folder = course / "submitted" / student / SECOND
        nbio.write(answered(source_nb, answer), folder / f"{NOTEBOOK}.ipynb")
        (folder / "timestamp.txt").write_text("2026-01-09 17:00:00.000000 UTC\n")
    stray = course / "submitted" / "right" / STRAY
    nbio.write(answered(source_nb, RIGHT), stray / f"{NOTEBOOK}.ipynb")
    return course


def run(course: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MLMCOURSE_ROOT=str(course))
    return subprocess.run([sys.executable, *args], cwd=course, env=env, capture_output=True,
                          text=True, timeout=900)


def gradebook_scores(course: Path) -> dict[str, float]:
    from mlmcourse.grader.config import GradingConfig

    with GradingConfig.load(course).gradebook() as gradebook:
        return {student: gradebook.find_submission_notebook(NOTEBOOK, SECOND, student).score
                for student in ("right", "wrong")}


@pytest.mark.slow
def test_a_second_assignment_is_graded_validated_reported_and_exported(tmp_path):
    course = make_course(tmp_path / "course")
    graded = run(course, "-m", "mlmcourse", "grade", "--workers", "1")
    assert graded.returncode == 0, graded.stderr[-4000:]
    assert f"submitted/right/{STRAY} is not graded" in graded.stderr, graded.stderr[-2000:]
    assert gradebook_scores(course) == {"right": 2.0, "wrong": 0.0}
    for student in ("right", "wrong"):
        assert (course / "autograded" / student / SECOND / f"{NOTEBOOK}.ipynb").is_file()
        assert (course / "feedback" / student / SECOND / f"{NOTEBOOK}.html").is_file()
    feedback = (course / "feedback" / "wrong" / SECOND / f"{NOTEBOOK}.html").read_text()
    assert "divide by sqrt(4)" in feedback
    with (course / "grades-lms.csv").open(newline="") as handle:
        rows = {(row["assignment"], row["student_id"]): row for row in csv.DictReader(handle)}
    for student, score in (("right", "2"), ("wrong", "0")):
        row = rows[(SECOND, student)]
        assert (row["submitted"], row["score"]) == ("yes", score), row
    report = (course / "reports" / "class-report.html").read_text(encoding="utf-8")
    assert f"{SECOND}/{NOTEBOOK}" in report

    # nbgrader's own command grades it the same (one way in)
    again = run(course, "-m", "nbgrader", "autograde", SECOND, "--force")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert gradebook_scores(course) == {"right": 2.0, "wrong": 0.0}

    # Validate on the released notebook, answered, in a student's own folder (no course there)
    released = run(course, "-m", "nbgrader", "generate_assignment", SECOND, "--force")
    assert released.returncode == 0, released.stderr[-3000:]
    release_nb = nbio.read(course / "release" / SECOND / f"{NOTEBOOK}.ipynb")
    assert "HIDDEN" not in nbformat.writes(release_nb)
    home = tmp_path / "home"
    home.mkdir()
    for each in release_nb.cells:
        if is_solution(each):
            each.source = each.source.replace("# YOUR CODE HERE\n    raise NotImplementedError()",
                                              RIGHT.strip())
    nbio.write(release_nb, home / f"{NOTEBOOK}.ipynb")
    validated = subprocess.run([sys.executable, "-m", "nbgrader", "validate", f"{NOTEBOOK}.ipynb"],
                               cwd=home, capture_output=True, text=True, timeout=300)
    assert "passes all the tests" in validated.stdout, validated.stdout + validated.stderr
