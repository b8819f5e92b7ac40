"""The TA's path without surprises, checked quickly (no grading run): progress wherever the
output goes, no rewrite of an autograded notebook for its timings, the formgrader's names and
timestamps, and the grades through nbgrader's own CSV export."""

from __future__ import annotations

import csv
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT

from mlmcourse.build.samples import SUBMITTED_AT
from mlmcourse.course.cells import TIMING_TAG
from mlmcourse.course.layout import SERIES
from mlmcourse.grader.class_run import coordinator
from mlmcourse.grader.class_run.grading import export_for_lms
from mlmcourse.grader.config import GradingConfig
from mlmcourse.grader.results.lms_export import COLUMNS
from mlmcourse.grader.results.verdict import Check, Verdict

STUDENT = "some_student"


def outcome(student: str, score: float, out_of: float) -> coordinator.Outcome:
    verdict = Verdict("01_x", checks=[Check("t", score, out_of)])
    return coordinator.Outcome(student, verdicts=[verdict])


# ---- progress -----------------------------------------------------------------------------------


def test_progress_writes_a_line_per_student_when_not_on_a_terminal(capsys):
    with coordinator.Progress(3, None, workers=2) as shown:
        opening = capsys.readouterr().err
        shown.graded(outcome("ann", 24, 24))
        shown.failed("bob", "KilledWorker: lost\nmore")
        shown.graded(outcome("cy", 3, 24))
    lines = capsys.readouterr().err.splitlines()
    assert opening.startswith("grading 3 submissions on 2 workers"), opening
    assert len(lines) == 3, lines
    assert lines[0].startswith("grading 1/3  ann: 24 / 24") and "left)" in lines[0]
    assert "bob: not graded (KilledWorker: lost)" in lines[1] and "more" not in lines[1]
    assert lines[2].endswith("(done)")


def test_progress_stays_quiet_when_asked(capsys):
    with coordinator.Progress(2, False) as shown:
        shown.graded(outcome("ann", 1, 2))
    assert capsys.readouterr().err == ""


# ---- autograded notebooks: rewritten only for a reason ------------------------------------------


def graded_notebook(timing_text: str, answer_text: str) -> nbformat.NotebookNode:
    timing = nbformat.v4.new_code_cell("measure()", id="timing", metadata={"tags": [TIMING_TAG]})
    timing.outputs = [nbformat.v4.new_output("stream", name="stdout", text=timing_text)]
    answer = nbformat.v4.new_code_cell("answer()", id="answer")
    answer.outputs = [nbformat.v4.new_output("stream", name="stdout", text=answer_text)]
    return nbformat.v4.new_notebook(cells=[timing, answer])


def write_graded(root: Path, nb: nbformat.NotebookNode) -> bytes:
    outcome = coordinator.Outcome(STUDENT, autograded={"01_x": nbformat.writes(nb).encode()},
                                  assignment=SERIES)
    coordinator.write_autograded(root, outcome)
    return (root / "autograded" / STUDENT / SERIES / "01_x.ipynb").read_bytes()


def test_a_regrade_that_changes_only_timings_keeps_the_file(tmp_path):
    first = write_graded(tmp_path, graded_notebook("12.1 ms\n", "ok\n"))
    assert write_graded(tmp_path, graded_notebook("15.7 ms\n", "ok\n")) == first
    changed = write_graded(tmp_path, graded_notebook("15.7 ms\n", "now wrong\n"))
    assert b"now wrong" in changed and b"15.7 ms" in changed


# ---- the gradebook's student rows, and the export -----------------------------------------------


@pytest.fixture
def course(tmp_path) -> GradingConfig:
    """A course folder with the course's nbgrader_config.py and an empty SQLite gradebook."""
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    config = GradingConfig.load(tmp_path, f"sqlite:///{tmp_path / 'gradebook.db'}")
    with config.gradebook() as gradebook:
        gradebook.add_assignment(SERIES)
    return config


def submit(root: Path, student: str, timestamp: str | None) -> None:
    folder = root / "submitted" / student / SERIES
    folder.mkdir(parents=True)
    if timestamp:
        (folder / "timestamp.txt").write_text(timestamp + "\n")


def test_students_get_a_name_and_the_submissions_timestamp(course):
    submit(course.root, STUDENT, SUBMITTED_AT)
    with course.gradebook() as gradebook:
        gradebook.update_or_create_student("named", first_name="Ada", last_name="Lovelace")
        submit(course.root, "named", None)
        for student in (STUDENT, "named"):
            coordinator.record(gradebook, course, coordinator.Outcome(student, assignment=SERIES))
        unnamed, named = gradebook.find_student(STUDENT), gradebook.find_student("named")
        assert (unnamed.last_name, unnamed.first_name) == (STUDENT, ""), (
            "a student without a roster name must show as '<id>, ', not 'None'"
        )
        assert (named.last_name, named.first_name) == ("Lovelace", "Ada"), "a roster name is kept"
        stamp = gradebook.find_submission(SERIES, STUDENT).timestamp
        assert stamp is not None and stamp.strftime("%Y-%m-%d %H:%M") == SUBMITTED_AT[:16]


def test_export_for_lms_is_the_one_layout_of_nbgrader_export(course):
    submit(course.root, STUDENT, SUBMITTED_AT)
    with course.gradebook() as gradebook:
        coordinator.record(gradebook, course, coordinator.Outcome(STUDENT, assignment=SERIES))
    path = export_for_lms(course)
    assert path == course.root / "grades-lms.csv", "nbgrader_config.py names the export's file"
    rows = list(csv.DictReader(path.open()))
    assert [row["student_id"] for row in rows] == [STUDENT]
    row = rows[0]
    assert row["assignment"] == SERIES and row["last_name"] == STUDENT
    assert row["score"] == "0" and row["submitted"] == "yes"
    assert row["timestamp"].endswith("+00:00"), "times in UTC, with their offset"
    assert list(row) == COLUMNS, "one layout: the hub's `nbgrader export` writes these too"
    assert not (course.root / "grades.csv").exists(), "the export must not replace grades.csv"


def test_the_readmes_roster_import_runs_as_written_in_a_fresh_shell(tmp_path):
    """`.venv/bin/nbgrader db student import roster.csv` (README, TAs, step 1) from a shell that
    never activated the environment: nbgrader starts `alembic` by name to make the gradebook,
    and the environment puts its own bin/ on PATH (course/environment.py), so it is found."""
    shutil.copy2(ROOT / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    (tmp_path / "roster.csv").write_text(
        "id,first_name,last_name,email\nann,Ann,Lee,ann@example.edu\nbo,Bo,Chen,bo@example.edu\n")
    done = subprocess.run([".venv/bin/nbgrader", "db", "student", "import", "roster.csv"],
                          cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(tmp_path / "gradebook.db") as db:
        students = {row[0] for row in db.execute("SELECT id FROM student")}
        versions = list(db.execute("SELECT version_num FROM alembic_version"))
    assert students == {"ann", "bo"} and len(versions) == 1
