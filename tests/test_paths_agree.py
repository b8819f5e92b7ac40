"""Every way in resolves a submission the same way, under one TA configuration.

One small class, in two scratch copies of the course whose nbgrader_config.py a TA has edited
(a lower memory limit with `c.Grading`, nbgrader's late policy "zero", a due date): one graded by
`make grade` (`python -m mlmcourse grade`), the other by plain `nbgrader autograde bert_mlm`, and
two notebooks also checked with `make check` in the course. Each student stands for one finding
of issue 18, on the first notebook of the series (the truncated one hands in two):

- a_pasted: a pasted answer cell (two cells with one grade_id; both run, in order), graded
  first, so that the students after it show the class is not stopped there;
- b_late: the reference, two weeks late: the late policy takes every point on both paths;
- c_big_buffer: a correct answer that reserves 1 GiB, past the TA's `memory_bytes` of 768 MiB
  (full marks under the default 2 GiB: the sample's EXPECTED);
- d_truncated: a truncated first notebook and a correct second one: 0 and full marks;
- e_bad_timestamp: the reference, its timestamp.txt not a time: it counts as handed in when the
  file was written (today, past the due date), so the late policy takes every point on both
  paths, and nbgrader grades the class instead of failing on it;
- f_huge: a make_mlm_inputs that returns a 16 MB tensor: its messages show the value's size and
  first entries, and its autograded notebook, feedback page and the class report stay under 1 MB.

(A memory limit, not a time limit, makes the configured limit bite: it costs no waiting and does
not depend on the machine's load. Every limit travels the same way: `c.Grading` -> `Limits`.)
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

FIRST, SECOND = notebook_names(ROOT)[:2]
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


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Plain `nbgrader ...` in the course (its command line, as a TA types it)."""
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course,
                          env=course_env(ROOT), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}{done.stderr[-6000:]}"
    return done


def make_class(course: Path) -> Path:
    """A scratch course with the TA's settings, its gradebook knowing the due date, and the
    class's submissions (with nbgrader's timestamp.txt). nbgrader's generate_assignment runs
    in-process (what `nbgrader generate_assignment` runs)."""
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
    for student, (sample_id, stamp) in STUDENTS.items():
        sample = load_sample(ROOT / "samples" / f"{sample_id}.py", notebook_names(ROOT))
        folder = course / "submitted" / student / SERIES
        nbio.write(sample_notebook(course, sample, FIRST), folder / f"{FIRST}.ipynb")
        (folder / "timestamp.txt").write_text(stamp + "\n")
    folder = course / "submitted" / "d_truncated" / SERIES
    whole = (folder / f"{FIRST}.ipynb").read_bytes()
    (folder / f"{FIRST}.ipynb").write_bytes(whole[: len(whole) // 2])  # an upload cut short
    nbio.write(reference_notebook(course, SECOND), folder / f"{SECOND}.ipynb")
    return course


@pytest.fixture(scope="module")
def the_class(tmp_path_factory) -> Path:
    return make_class(tmp_path_factory.mktemp("class").resolve() / "course")


def scores(course: Path) -> dict[tuple[str, str], float]:
    return {(s.student, s.notebook): s.score for s in read_scores(course)}


def comments(course: Path) -> dict[tuple[str, str, str], str | None]:
    """(student, notebook, answer cell) -> nbgrader's automatic comment ("No response.")."""
    found = {}
    with GradingConfig.load(course).gradebook() as gradebook:
        for student in STUDENTS:
            for name in notebook_names(ROOT):
                notebook = gradebook.find_submission_notebook(name, SERIES, student)
                for comment in notebook.comments:
                    found[(student, name, comment.name)] = comment.auto_comment
    return found


# The verdict's rules, changed in one place (the package's grader/verdict.py, in a copy of the
# package both runs import): "No response." reads otherwise, and every error message the engine
# reads from a failed check carries a mark. Both ways in, their gradebooks, the feedback and the
# class report must show the change, as they all render the one verdict.
NO_RESPONSE = "Left as released (a rule changed in one place)."
MARK = "[one rule] "
RULE_CHANGES = [
    ('NO_RESPONSE = "No response."', f"NO_RESPONSE = {NO_RESPONSE!r}"),
    ('    return message.strip().rstrip(":")',
     f"    return {MARK!r} + message.strip().rstrip(':')"),
]


def package_with_changed_rules(destination: Path) -> Path:
    shutil.copytree(ROOT / "mlmcourse", destination / "mlmcourse",
                    ignore=shutil.ignore_patterns("__pycache__"))
    verdict = destination / "mlmcourse" / "grader" / "verdict.py"
    text = verdict.read_text()
    for old, new in RULE_CHANGES:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    verdict.write_text(text)
    return destination


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory, the_class) -> dict:
    """`make grade` and plain `nbgrader autograde` then `nbgrader generate_feedback` and the
    class report, each on a copy of the class, run at once (nbgrader grades one student after
    another; the machine has two cores), both under the package with the changed rules."""
    runs = {
        "make grade": [[sys.executable, "-m", "mlmcourse", "grade", "--workers", "1"]],
        "nbgrader": [[sys.executable, "-m", "nbgrader", "autograde", SERIES, "--force"],
                     [sys.executable, "-m", "nbgrader", "generate_feedback", SERIES,
                      "--force"],
                     [sys.executable, "-m", "mlmcourse", "report"]],
    }
    env = course_env(ROOT)
    env["PYTHONPATH"] = str(package_with_changed_rules(tmp_path_factory.mktemp("package")))
    started = {}
    for name, commands in runs.items():
        course = shutil.copytree(the_class, tmp_path_factory.mktemp("run").resolve() / "c")
        submitted = {path: path.read_bytes() for path in (course / "submitted").rglob("*")
                     if path.is_file()}
        script = " && ".join(shlex.join(command) for command in commands)
        process = subprocess.Popen(["bash", "-c", script], cwd=course, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started[name] = (course, submitted, process)
    done = {}
    for name, (course, submitted, process) in started.items():
        out, err = process.communicate(timeout=900)
        assert process.returncode == 0, f"{name}:\n{out}{err[-6000:]}"
        done[name] = {"course": course, "out": out, "err": err, "submitted": submitted}
    return done


@pytest.fixture(scope="module")
def by_make_grade(both_runs):
    run = both_runs["make grade"]
    course = run["course"]
    return {"course": course, "log": run["err"], "scores": scores(course),
            "comments": comments(course)}


@pytest.fixture(scope="module")
def by_nbgrader(both_runs):
    run = both_runs["nbgrader"]
    course = run["course"]
    return {"course": course, "log": run["out"] + run["err"], "scores": scores(course),
            "comments": comments(course), "submitted": run["submitted"]}


@pytest.mark.slow
def test_make_grade_gives_what_the_ta_configured(by_make_grade):
    got = {key: by_make_grade["scores"].get(key) for key in DESERVED}
    assert got == DESERVED


@pytest.mark.slow
def test_nbgrader_autograde_gives_the_same_scores(by_nbgrader, by_make_grade):
    got = {key: by_nbgrader["scores"].get(key) for key in DESERVED}
    assert got == DESERVED
    assert by_nbgrader["scores"] == by_make_grade["scores"]


@pytest.mark.slow
def test_no_response_is_decided_alike(by_nbgrader, by_make_grade):
    """"No response." by one rule: an unreadable notebook's answers read as left, a right one's
    not, and a notebook not handed in gets no comment, through either path."""
    got = by_make_grade["comments"]
    assert got == by_nbgrader["comments"]
    assert got[("d_truncated", FIRST, "make_mlm_inputs")] == NO_RESPONSE
    assert got[("a_pasted", FIRST, "make_mlm_inputs")] is None


@pytest.mark.slow
def test_a_rule_changed_in_one_place_shows_on_both_paths_in_feedback_and_report(by_nbgrader,
                                                                                  by_make_grade):
    """The verdict's rules changed in grader/verdict.py alone: the gradebooks of both ways in
    say the new "No response." (above); the feedback pages and the class report of both show
    the failed checks' messages as the changed rule makes them."""
    for run in (by_make_grade, by_nbgrader):
        course = run["course"]
        feedback = course / "feedback" / "c_big_buffer" / SERIES / f"{FIRST}.html"
        assert html.unescape(feedback.read_text()).count(MARK) >= 1, feedback
        report = (course / "reports" / "class-report.html").read_text()
        assert html.escape(MARK) in report or MARK in report, course


@pytest.mark.slow
def test_make_check_reads_the_course_limits(by_make_grade, monkeypatch, capsys):
    """`make check` (its command line, run in the course with the TA's lower memory limit) scores
    the notebook the limit bites as the other ways in do."""
    from mlmcourse import cli

    course = by_make_grade["course"]
    monkeypatch.chdir(course)
    monkeypatch.delenv("MLMCOURSE_ROOT", raising=False)
    notebook = course / "submitted" / "c_big_buffer" / SERIES / f"{FIRST}.ipynb"
    cli.main(["check", str(notebook)])
    want = DESERVED[("c_big_buffer", FIRST)]
    shown = capsys.readouterr().out
    assert f"score: {want:g} / {full(FIRST):g}" in shown, shown[-3000:]


@pytest.mark.slow
def test_the_late_policy_reaches_the_export(by_make_grade):
    rows = {row["student_id"]: row for row in
            csv.DictReader((by_make_grade["course"] / "grades-lms.csv").open())}
    late = rows["b_late"]
    assert float(late["raw_score"]) == full(FIRST) and float(late["score"]) == 0.0
    assert float(rows["a_pasted"]["score"]) == full(FIRST)


@pytest.mark.slow
def test_the_ta_is_told_of_pasted_cells_and_late_penalties(by_make_grade, by_nbgrader):
    for log in (by_make_grade["log"], by_nbgrader["log"]):
        noted = [line for line in log.splitlines() if f"a_pasted/{FIRST}" in line
                 and PASTED_NOTE in line]
        assert noted, log[-3000:]
    assert f"b_late: {full(FIRST):g} / " in by_make_grade["log"]
    assert f"(late: -{full(FIRST):g})" in by_make_grade["log"], by_make_grade["log"][-3000:]


@pytest.mark.slow
def test_make_grade_prints_the_table_and_writes_what_a_ta_needs(both_runs):
    """`make grade`'s table fits a terminal and names nothing for a look (a pasted answer cell is
    a layout JupyterLab makes, not a doubt); grades.csv, the feedback and the class report are
    written."""
    run = both_runs["make grade"]
    course, out = run["course"], run["out"]
    assert "total" in out and "class mean" in out
    table = out.split("\n\n")[0].splitlines()
    assert max(map(len, table)) <= 100, table
    assert "needs a look:" not in out
    rows = list(csv.DictReader((course / "grades.csv").open()))
    assert {"student", "notebook", "score", "max_score"} <= set(rows[0])
    assert any(r["student"] == "a_pasted" and r["score"] == r["max_score"] for r in rows)
    assert (course / "feedback" / "a_pasted" / SERIES).is_dir()
    assert (course / "reports" / "class-report.html").is_file()


PAGE_BYTES = 1 << 20  # what a student's value may make of any page, at most


@pytest.mark.slow
def test_a_huge_result_leaves_every_page_under_a_megabyte(by_make_grade, by_nbgrader):
    """A function that returns 16 MB: each message shows the value's size and first entries
    (never the value whole), on both ways in; the autograded notebook, the feedback page and the
    class report each stay under 1 MB."""
    for run in (by_make_grade, by_nbgrader):
        course = run["course"]
        pages = [course / "autograded" / "f_huge" / SERIES / f"{FIRST}.ipynb",
                 course / "feedback" / "f_huge" / SERIES / f"{FIRST}.html",
                 course / "reports" / "class-report.html"]
        sizes = {page.relative_to(course).as_posix(): page.stat().st_size for page in pages}
        assert max(sizes.values()) < PAGE_BYTES, sizes
        feedback = html.unescape(pages[1].read_text())
        assert "got a list of 2000000 items: [99, 99, 0, 0, 0, 0, ...]" in feedback


@pytest.mark.slow
def test_nbgrader_changes_no_submitted_file(by_nbgrader):
    course = by_nbgrader["course"]
    now = {path: path.read_bytes() for path in (course / "submitted").rglob("*") if path.is_file()}
    assert now == by_nbgrader["submitted"]


# ---- quick: the one configuration, read by every way in ----------------------------------------


def write_config(root: Path, *lines: str) -> None:
    (root / "nbgrader_config.py").write_text("c = get_config()\n" + "\n".join(lines) + "\n")


def test_grading_settings_are_read_once_for_every_way_in(tmp_path):
    from mlmcourse.grader.config import course_settings, grading_settings
    from mlmcourse.grader.limits import Limits

    write_config(tmp_path, "c.Grading.call_timeout_s = 5", "c.Grading.student_tasks = 16",
                 "c.Grading.student_time_s = 40", "c.Grading.sandbox = 'namespaces'")
    want = Limits(call_timeout_s=5, student_time_s=40, student_tasks=16)
    config = GradingConfig.load(tmp_path)
    assert config.limits == want and config.sandbox == "namespaces"
    assert course_settings(tmp_path).limits() == want
    assert grading_settings(config.nbgrader).limits() == want  # what EngineExecute reads


def test_the_old_spelling_is_refused_with_the_new_name(tmp_path):
    write_config(tmp_path, "c.EngineExecute.student_time_s = 40")
    with pytest.raises(ValueError, match="c.Grading.student_time_s instead"):
        GradingConfig.load(tmp_path)
    write_config(tmp_path, "c.Grading.worker_cpus = 0.5")  # "worker" is a Dask worker now
    with pytest.raises(ValueError, match="c.Grading.student_cpus instead"):
        GradingConfig.load(tmp_path)


def test_every_limit_is_a_setting_with_its_declared_default():
    """`c.Grading` is made from `Limits`: one declaration of each limit, its default and help."""
    from dataclasses import fields

    from mlmcourse.grader.config import Grading
    from mlmcourse.grader.limits import Limits

    traits = Grading.class_traits(config=True)
    for spec in fields(Limits):
        assert traits[spec.name].default_value == spec.default, spec.name
        assert traits[spec.name].help == spec.metadata["help"], spec.name


def test_grading_settings_from_nbgraders_command_line():
    """`nbgrader autograde --Grading.memory_bytes=...`: the command line's strings take each
    setting's type."""
    from traitlets.config.loader import KVArgParseConfigLoader

    from mlmcourse.grader.config import grading_settings
    from mlmcourse.grader.limits import Limits

    loaded = KVArgParseConfigLoader(["--Grading.memory_bytes=805306368",
                                     "--Grading.call_timeout_s=4"]).load_config()
    assert grading_settings(loaded).limits() == Limits(memory_bytes=805306368, call_timeout_s=4)


def test_a_misspelt_setting_is_an_error(tmp_path):
    write_config(tmp_path, "c.Grading.call_timeout = 5")
    with pytest.raises(ValueError, match="c.Grading.call_timeout"):
        GradingConfig.load(tmp_path)
    write_config(tmp_path, "c.Grading.sandbox = 'none'")
    with pytest.raises(ValueError, match="not a mode"):
        GradingConfig.load(tmp_path)


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



def test_no_response_is_one_rule_written_by_the_one_writer(tmp_path):
    """`verdict.unanswered` decides "No response." (a left answer with blank lines added still
    reads as left) and the one gradebook writer writes exactly that, on both paths."""
    import copy

    from mlmcourse.course.cells import grade_id, is_solution
    from mlmcourse.grader.results.gradebook import record_student, record_verdict
    from mlmcourse.grader.results.verdict import NO_RESPONSE, Verdict, unanswered

    source = nbio.read(ROOT / "source" / SERIES / f"{FIRST}.ipynb")
    release = nbio.read(ROOT / "release" / SERIES / f"{FIRST}.ipynb")
    [gid] = [grade_id(cell) for cell in release.cells if is_solution(cell)]

    def with_answer(edit):
        nb = copy.deepcopy(release)
        for cell in nb.cells:
            if is_solution(cell):
                cell.source = edit(cell.source)
        return nb

    cases = [(release, (gid,)), (with_answer(lambda text: "\n" + text + "\n\n"), (gid,)),
             (with_answer(lambda text: "x = 1"), ())]
    write_config(tmp_path)
    config = GradingConfig.load(tmp_path)
    with config.gradebook() as gradebook:
        gradebook.update_or_create_assignment(SERIES)
        gradebook.add_notebook(FIRST, SERIES)
        gradebook.add_solution_cell(gid, FIRST, SERIES)
        for index, (nb, want) in enumerate(cases):
            assert unanswered(nb, source) == want
            student = f"s{index}"
            record_student(gradebook, student, assignment=SERIES)
            record_verdict(gradebook, student, Verdict(FIRST, unanswered=want), assignment=SERIES)
            [comment] = gradebook.find_submission_notebook(FIRST, SERIES, student).comments
            assert comment.auto_comment == (NO_RESPONSE if want else None)
