"""What can still differ between `make grade` and `nbgrader autograde`, under one TA configuration.

Both commands read a submission with `coordinator.submission_files`, grade it with
`coordinator.grade_task` and record it with `coordinator.record` (nbgrader_plugin.py): a score
cannot be decided twice. What each command still does its own way is held here, on one small
class in two scratch copies of a course whose nbgrader_config.py a TA has edited (a lower memory
limit with `c.Grading`, nbgrader's late policy "zero", a due date), one graded by `make grade`
(`python -m mlmcourse grade`), the other by plain `nbgrader autograde bert_mlm` then
`nbgrader export`:

- the configuration: each command loads nbgrader_config.py its own way (c_big_buffer: a correct
  answer that reserves 1 GiB, past the TA's `memory_bytes` of 768 MiB; full marks under the
  default 2 GiB);
- the notebook file: nbgrader opens it with its own exporter first (`SubmissionExporter`), and
  its sanitize step is off: d_truncated's first notebook cannot be read (0, as not handed in)
  and its second is graded; a_pasted's answer is two cells with one grade_id (both run, in
  order), graded first, so the students after it show the class is not stopped there;
- the submission's time: nbgrader reads timestamp.txt with its own CourseDirectory (the course's
  rule replaces it): b_late is two weeks late; e_bad_timestamp's timestamp.txt is not a time, so
  it counts as handed in when the file was written (past the due date); the late policy takes
  every point of both, and nbgrader grades the class instead of failing on it;
- "not handed in": g_absent is on the roster and hands in nothing: a row with score 0,
  `submitted: no`;
- what each command tells the TA (its own log) and `make check`, the third command.

f_huge (a make_mlm_inputs that returns a 16 MB tensor) keeps every page `make grade` writes
under 1 MB. (A memory limit, not a time limit, makes the configured limit bite: it costs no
waiting and does not depend on the machine's load.)
"""

from __future__ import annotations

import csv
import html
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, course_env

from mlmcourse.build.samples import load_sample, reference_notebook, sample_notebook
from mlmcourse.course import nbio
from mlmcourse.course.cells import total_points
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.class_run.grading import read_scores
from mlmcourse.grader.config import GradingConfig
from mlmcourse.grader.results.verdict import NO_RESPONSE

FIRST, SECOND = notebook_names(ROOT, SERIES)[:2]
TA_SETTINGS = """
# A TA's edits (tests/test_paths_agree.py): lower limits, nbgrader's late policy.
c.Grading.memory_bytes = 768 << 20
c.LateSubmissionPlugin.penalty_method = "zero"
"""
DUE = "2026-01-10 17:00:00 UTC"
ON_TIME = "2026-01-09 17:00:00.000000 UTC"
TWO_WEEKS_LATE = "2026-01-24 17:00:00.000000 UTC"
STUDENTS = {  # student -> (sample, timestamp)
    "a_pasted": ("honest_pasted_answer", ON_TIME),
    "b_late": ("reference", TWO_WEEKS_LATE),
    "c_big_buffer": ("honest_big_buffer", ON_TIME),
    "d_truncated": ("reference", ON_TIME),
    "e_bad_timestamp": ("reference", "handed in on time, promise"),
    "f_huge": ("hostile_huge_result", ON_TIME),
}
ABSENT = "g_absent"  # on the roster, hands in nothing
PASTED_NOTE = "cells carry the answer id"


def full(name: str) -> float:
    return total_points(nbio.read(ROOT / "source" / SERIES / f"{name}.ipynb"))


# What the TA's configuration makes each notebook worth (the same on every way in).
DESERVED = {
    ("a_pasted", FIRST): full(FIRST),  # both copies run: the later, right one stands
    ("b_late", FIRST): 0.0,  # late: nbgrader's "zero" policy
    ("c_big_buffer", FIRST): 0.0,  # its answer cell cannot allocate its buffer: nothing defined
    ("d_truncated", FIRST): 0.0,  # cannot be read: as not handed in
    ("d_truncated", SECOND): full(SECOND),
    ("e_bad_timestamp", FIRST): 0.0,  # late: its timestamp.txt was written after the due date
    ("f_huge", FIRST): 11.0,  # the input checks pass; every check that reads corrupted fails
}


def make_class(course: Path) -> Path:
    """A scratch course with the TA's settings, its gradebook knowing the due date and the
    roster, and the class's submissions (with nbgrader's timestamp.txt). nbgrader's
    generate_assignment runs in-process (what `nbgrader generate_assignment` runs)."""
    from nbgrader.converters import GenerateAssignment

    from mlmcourse.grader.config import nbgrader_converter, run_converter

    shutil.copytree(ROOT / "source", course / "source")
    config = (ROOT / "nbgrader_config.py").read_text() + TA_SETTINGS
    (course / "nbgrader_config.py").write_text(config)
    grading = GradingConfig.load(course)
    run_converter(nbgrader_converter(GenerateAssignment, grading, {
        "CourseDirectory.assignment_id": SERIES, "GenerateAssignment.force": True,
    }), "generate_assignment")
    with grading.gradebook() as gradebook:
        gradebook.update_or_create_assignment(SERIES, duedate=DUE)
        for student in [*STUDENTS, ABSENT]:
            gradebook.update_or_create_student(student)
    for student, (sample_id, stamp) in STUDENTS.items():
        sample = load_sample(ROOT / "samples" / f"{sample_id}.py", notebook_names(ROOT, SERIES))
        folder = course / "submitted" / student / SERIES
        nbio.write(sample_notebook(course, sample, FIRST), folder / f"{FIRST}.ipynb")
        (folder / "timestamp.txt").write_text(stamp + "\n")
    folder = course / "submitted" / "d_truncated" / SERIES
    whole = (folder / f"{FIRST}.ipynb").read_bytes()
    (folder / f"{FIRST}.ipynb").write_bytes(whole[: len(whole) // 2])  # an upload cut short
    nbio.write(reference_notebook(course, SECOND), folder / f"{SECOND}.ipynb")
    return course


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory) -> dict:
    """`make grade` and plain `nbgrader autograde` then `nbgrader export`, each on a copy of the
    class (timestamps and file times kept), run at once: nbgrader grades one student after
    another; the machine has two cores."""
    the_class = make_class(tmp_path_factory.mktemp("class").resolve() / "course")
    runs = {
        "make grade": [[sys.executable, "-m", "mlmcourse", "grade", "--workers", "1"]],
        "nbgrader": [[sys.executable, "-m", "nbgrader", "autograde", SERIES, "--force"],
                     [sys.executable, "-m", "nbgrader", "export"]],
    }
    started = {}
    for name, commands in runs.items():
        course = shutil.copytree(the_class, tmp_path_factory.mktemp("run").resolve() / "c")
        script = " && ".join(shlex.join(command) for command in commands)
        started[name] = (course, subprocess.Popen(
            ["bash", "-c", script], cwd=course, env=course_env(ROOT),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    done = {}
    for name, (course, process) in started.items():
        out, err = process.communicate(timeout=900)
        assert process.returncode == 0, f"{name}:\n{out}{err[-6000:]}"
        done[name] = {"course": course, "out": out, "log": out + err}
    return done


def gradebook_of(course: Path) -> dict:
    """What a gradebook says of the class: each notebook's score after the late policy, each
    answer cell's automatic comment ("No response."), and grades-lms.csv's rows."""
    scores = {(s.student, s.notebook): s.score for s in read_scores(course)}
    comments = {}
    with GradingConfig.load(course).gradebook() as gradebook:
        for student in STUDENTS:
            for name in notebook_names(ROOT, SERIES):
                notebook = gradebook.find_submission_notebook(name, SERIES, student)
                for comment in notebook.comments:
                    comments[(student, name, comment.name)] = comment.auto_comment
    with (course / "grades-lms.csv").open() as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    return {"scores": scores, "comments": comments, "lms": rows}


@pytest.mark.slow
def test_both_commands_give_the_same_gradebook(both_runs):
    """Scores, "No response.", the late penalty, the submission times and "not handed in": the
    gradebook and grades-lms.csv of `nbgrader autograde` are those of `make grade`, and they give
    what the TA's configuration deserves."""
    made = gradebook_of(both_runs["make grade"]["course"])
    assert gradebook_of(both_runs["nbgrader"]["course"]) == made
    assert {key: made["scores"].get(key) for key in DESERVED} == DESERVED
    assert made["comments"][("d_truncated", FIRST, "make_mlm_inputs")] == NO_RESPONSE
    assert made["comments"][("a_pasted", FIRST, "make_mlm_inputs")] is None
    rows = made["lms"]
    assert float(rows["b_late"]["raw_score"]) == full(FIRST)
    assert float(rows["b_late"]["score"]) == 0.0 and rows["b_late"]["late"] == "yes"
    assert rows["e_bad_timestamp"]["late"] == "yes"
    assert float(rows["a_pasted"]["score"]) == full(FIRST) and rows["a_pasted"]["late"] == "no"
    absent = rows[ABSENT]
    assert (absent["submitted"], float(absent["score"] or 0)) == ("no", 0.0)


@pytest.mark.slow
def test_each_command_tells_the_ta_of_pasted_cells_and_late_penalties(both_runs):
    made, by_nbgrader = both_runs["make grade"]["log"], both_runs["nbgrader"]["log"]
    for log in (made, by_nbgrader):
        noted = [line for line in log.splitlines()
                 if f"a_pasted/{FIRST}" in line and PASTED_NOTE in line]
        assert noted, log[-3000:]
    assert f"b_late: {full(FIRST):g} / " in made
    assert f"(late: -{full(FIRST):g})" in made, made[-3000:]
    assert "late by" in by_nbgrader and "the late policy applies" in by_nbgrader
    assert "needs a look:" not in both_runs["make grade"]["out"]  # a pasted cell is no doubt


@pytest.mark.slow
def test_make_check_reads_the_course_limits(both_runs, monkeypatch, capsys):
    """`make check` (its command line, run in the course with the TA's lower memory limit) scores
    the notebook the limit bites as the other ways in do."""
    from mlmcourse import cli

    course = both_runs["make grade"]["course"]
    monkeypatch.chdir(course)
    monkeypatch.delenv("MLMCOURSE_ROOT", raising=False)
    notebook = course / "submitted" / "c_big_buffer" / SERIES / f"{FIRST}.ipynb"
    cli.main(["check", str(notebook)])
    want = DESERVED[("c_big_buffer", FIRST)]
    shown = capsys.readouterr().out
    assert f"score: {want:g} / {full(FIRST):g}" in shown, shown[-3000:]


PAGE_BYTES = 1 << 20  # what a student's value may make of any page, at most


@pytest.mark.slow
def test_a_huge_result_leaves_every_page_under_a_megabyte(both_runs):
    """A function that returns 16 MB: each message shows the value's size and first entries
    (never the value whole); the autograded notebook, the feedback page and the class report
    `make grade` writes each stay under 1 MB (nbgrader's autograde records the same notebook:
    `graded_notebook` is `coordinator.as_recorded`)."""
    course = both_runs["make grade"]["course"]
    pages = [course / "autograded" / "f_huge" / SERIES / f"{FIRST}.ipynb",
             course / "feedback" / "f_huge" / SERIES / f"{FIRST}.html",
             course / "reports" / "class-report.html"]
    sizes = {page.relative_to(course).as_posix(): page.stat().st_size for page in pages}
    assert max(sizes.values()) < PAGE_BYTES, sizes
    feedback = html.unescape(pages[1].read_text())
    assert "got a list of 2000000 items: [99, 99, 0, 0, 0, 0, ...]" in feedback


# ---- quick: the late policy on make grade's path -----------------------------------------------


def write_config(root: Path, *lines: str) -> None:
    (root / "nbgrader_config.py").write_text("c = get_config()\n" + "\n".join(lines) + "\n")


def test_the_late_policy_is_nbgraders_on_make_grades_path(tmp_path):
    """The one writer's late policy runs nbgrader's AssignLatePenalties with the course's
    settings: a late submission loses its points under "zero", keeps them under "none"."""
    from mlmcourse.grader.results.gradebook import apply_late_policy
    from mlmcourse.grader.results.verdict import Verdict

    write_config(tmp_path)
    with GradingConfig.load(tmp_path).gradebook() as gradebook:
        gradebook.update_or_create_assignment(SERIES, duedate=DUE)
        gradebook.add_notebook("nb", SERIES)
        gradebook.add_grade_cell("t", "nb", SERIES, max_score=3, cell_type="code")
        gradebook.add_student("late")
        gradebook.add_submission(SERIES, "late", timestamp=TWO_WEEKS_LATE)
        gradebook.find_grade("t", "nb", SERIES, "late").auto_score = 3.0
        gradebook.db.commit()
    for method, want in (("zero", 0.0), ("none", 3.0), ("zero", 0.0)):
        write_config(tmp_path, f"c.LateSubmissionPlugin.penalty_method = {method!r}")
        config = GradingConfig.load(tmp_path)
        verdict = Verdict("nb")
        with config.gradebook() as gradebook:
            apply_late_policy(gradebook, config.nbgrader_config(), config.db_url, "late", verdict,
                              assignment=SERIES)
        assert read_scores_of(config, "late") == [want], method
        assert verdict.late_penalty == 3.0 - want


def read_scores_of(config: GradingConfig, student: str) -> list[float]:
    with config.gradebook() as gradebook:
        nb = gradebook.find_submission_notebook("nb", SERIES, student)
        return [max(0.0, nb.score - (nb.late_submission_penalty or 0.0))]
