"""The class as the grader left it, read back: one `Submission` per student and notebook.

The verdict of each check is the engine's (`grader.results.verdict`): the one the autograded
notebook carries in its metadata (written by `make grade` and by the formgrader's Autograde alike,
through the one gradebook writer). Scores come from the gradebook when there is one (a TA's
manual grades and the late penalty are there), else from the verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat

from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    grade_id,
    is_graded,
    is_solution,
    points,
    release_stub,
    source_text,
    without_solution_markers,
)
from mlmcourse.course.headings import CheckHeading, check_headings
from mlmcourse.course.layout import assignments, notebook_names
from mlmcourse.grader.results.verdict import Check, Incident, Kind, Status, verdict_of


@dataclass
class Submission:
    """One student's notebook as graded."""

    student: str
    notebook: str
    score: float
    max_score: float
    status: Status = Status.OK
    tests: list[Check] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)  # grade_id -> the answer cell's code
    manual: bool = False  # a TA's manual score is in the gradebook


@dataclass
class Student:
    student: str
    submissions: dict[str, Submission] = field(default_factory=dict)  # notebook -> submission
    late_seconds: float = 0.0  # past the due date (0: on time or no due date)
    late_penalty: float = 0.0

    @property
    def submitted(self) -> bool:
        return any(s.status is not Status.MISSING for s in self.submissions.values())


@dataclass
class Release:
    """What every student received: per notebook, each check's heading, the answer cells' stubs
    and the instructor's solutions (the similarity check leaves both out).

    A notebook is named by its file name where the course has one assignment, else as
    "assignment/name"; `where` gives its assignment and file name."""

    notebooks: list[str]
    headings: dict[str, dict[str, CheckHeading]]
    max_scores: dict[str, float]
    stubs: dict[tuple[str, str], str]
    solutions: dict[tuple[str, str], str]
    where: dict[str, tuple[str, str]] = field(default_factory=dict)

    def path(self, root: Path, folder: str, student: str, notebook: str) -> Path:
        """`notebook`'s file in root/<folder>/<student>/<assignment>/."""
        assignment, name = self.where[notebook]
        return root / folder / student / assignment / f"{name}.ipynb"


@dataclass
class ClassData:
    release: Release
    students: dict[str, Student]
    graded_at: str = ""


def release_notebooks(root: Path) -> dict[str, tuple[str, str]]:
    """Each notebook of the course (see `Release`) -> (assignment, file name)."""
    found = assignments(root)
    return {name if len(found) == 1 else f"{assignment}/{name}": (assignment, name)
            for assignment in found for name in notebook_names(root, assignment)}


def read_release(root: Path) -> Release:
    where = release_notebooks(root)
    names = list(where)
    headings, max_scores, stubs, solutions = {}, {}, {}, {}
    for name in names:
        assignment, file_name = where[name]
        nb = nbio.read(root / "source" / assignment / f"{file_name}.ipynb")
        headings[name] = check_headings(nb)
        max_scores[name] = sum(points(cell) for cell in nb.cells if is_graded(cell))
        for cell in nb.cells:
            if is_solution(cell) and cell.cell_type == "code":
                text = source_text(cell.source)
                stubs[(name, grade_id(cell))] = release_stub(text, "code")
                solutions[(name, grade_id(cell))] = without_solution_markers(text)
    return Release(names, headings, max_scores, stubs, solutions, where)


def read_notebook(path: Path):
    """An autograded notebook, parsed without nbformat's validation: the grader wrote it (as
    `grader.class_run.coordinator.as_recorded` reads it), and validating a class's notebooks is most
    of the time a report takes."""
    try:
        return nbformat.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a notebook the grader wrote ({err}); grade it "
                         "again") from err


def read_submission(path: Path, student: str, name: str) -> Submission:
    """An autograded notebook as a `Submission` (scores from the verdict; see `collect`)."""
    nb = read_notebook(path)
    answers = {grade_id(cell): source_text(cell.source) for cell in nb.cells
               if is_solution(cell) and cell.cell_type == "code"}
    verdict = verdict_of(nb)
    if verdict is None:
        raise ValueError(f"{path}: the grader's verdict is not in it (graded by another "
                         "grader?); grade it again")
    return Submission(student, name, verdict.score, verdict.max_score, verdict.status,
                      verdict.checks, verdict.incidents, answers)


def read_autograded(root: Path, release: Release) -> dict[str, Student]:
    """Every student with a folder in autograded/ or submitted/; a notebook of the series they
    did not hand in is a `missing` submission worth nothing."""
    students: dict[str, Student] = {}
    graded = {assignment for assignment, _ in release.where.values()}
    for folder in ("submitted", "autograded"):
        base = root / folder
        if base.is_dir():
            for path in sorted(base.iterdir()):
                if any((path / assignment).is_dir() for assignment in graded):
                    students.setdefault(path.name, Student(path.name))
    for student in students.values():
        for name in release.notebooks:
            path = release.path(root, "autograded", student.student, name)
            if path.is_file():
                student.submissions[name] = read_submission(path, student.student, name)
            else:
                student.submissions[name] = not_graded(root, student.student, name, release)
    return students


def not_graded(root: Path, student: str, name: str, release: Release) -> Submission:
    """A notebook with no autograded copy: not handed in, or handed in and unreadable (the
    engine grades that as not handed in: an incident for the TA)."""
    missing = Submission(student, name, 0.0, release.max_scores[name], Status.MISSING)
    if release.path(root, "submitted", student, name).is_file():
        missing.incidents.append(Incident(Kind.UNREADABLE, f"{name}.ipynb was handed in but "
                                          "not graded"))
    return missing


def apply_gradebook(config, students: dict[str, Student], release: Release) -> None:
    """The gradebook's word on who was expected (its students: the roster a TA imported, or the
    hub keeps), on scores (manual grades, the late penalty) and on lateness. A student of the
    roster with no folder handed nothing in: every notebook missing."""
    from nbgrader.api import MissingEntry

    with config.gradebook() as gradebook:
        for entry in gradebook.students:
            if entry.id not in students:
                students[entry.id] = Student(entry.id, {
                    name: not_graded(config.root, entry.id, name, release)
                    for name in release.notebooks})
        for student in students.values():
            for assignment in sorted({a for a, _ in release.where.values()}):
                try:
                    submission = gradebook.find_submission(assignment, student.student)
                except MissingEntry:
                    continue
                apply_submission(student, submission, release, assignment)


def apply_submission(student: Student, submission, release: Release, assignment: str) -> None:
    """One assignment's gradebook entry on the student's notebooks: scores after the late
    penalty, manual grades; the latest delay and the penalties in all."""
    student.late_seconds = max(student.late_seconds,
                               float(submission.total_seconds_late or 0.0))
    student.late_penalty += float(submission.late_submission_penalty or 0.0)
    keys = {where: key for key, where in release.where.items()}
    for nb in submission.notebooks:
        held = student.submissions.get(keys.get((assignment, nb.name), ""))
        if held is None or held.status is Status.MISSING:
            continue
        penalty = float(nb.late_submission_penalty or 0.0)
        held.score = max(0.0, float(nb.score) - penalty)
        held.max_score = float(nb.max_score)
        held.manual = any(g.manual_score is not None for g in nb.grades)


def has_gradebook(config) -> bool:
    """Whether the course's gradebook exists (a SQLite file is not created just to read it)."""
    from mlmcourse.grader.config import SQLITE_PREFIX

    if not config.db_url.startswith(SQLITE_PREFIX):
        return True
    return Path(config.db_url[len(SQLITE_PREFIX):]).is_file()


def collect(config) -> ClassData:
    """The class of the course `config` (a `grader.config.GradingConfig`) names."""
    release = read_release(config.root)
    students = read_autograded(config.root, release)
    if has_gradebook(config):
        apply_gradebook(config, students, release)
    students = dict(sorted(students.items()))
    stamp = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return ClassData(release, students, stamp)
