"""Plain `nbgrader autograde` grades through the course's engine and writes through the course's
one gradebook writer (nbgrader_config.py plugs `EngineExecute` and `SaveVerdict` of
`mlmcourse.grader.nbgrader_plugin` in place of nbgrader's `Execute` and `SaveAutoGrades`).

A scratch course with the samples whose grading can differ between the two ways in (the
notebook file as nbgrader reads it, the gradebook, the command line's limits, the marks for a
look), the honest habits that reach the notebook file or what nbgrader reads beside an answer,
the reference and the blank release, graded once by nbgrader's command line: each notebook
scores exactly what the fresh build's `make grade` gave it (its committed verdict), a reach the
grader cannot check is marked for a look in the same cells, and nothing of the submissions, the
course or the gradebook is touched. Short time limits
(set on the command line, as a TA would) keep the hang cheap; they change no score.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, course_env, fingerprint, sample
from test_parallel import FIRST

from mlmcourse.build.samples import (
    committed_verdicts,
    expected_scores,
    write_notebooks,
)
from mlmcourse.course import nbio
from mlmcourse.course.cells import grade_id, is_graded
from mlmcourse.course.layout import SERIES
from mlmcourse.grader.class_run.grading import read_scores

pytestmark = pytest.mark.slow

# Graded here: the samples whose grading can differ between the two ways in. nbgrader reads the
# notebook file itself (cells deleted, edited or pasted, outputs and tracebacks, magics, display),
# keeps the gradebook in the course, takes the limits from its command line, and the one writer
# marks cells for a look in its gradebook. Everything else a sample does (resources, crashes,
# floods, stalls, and every reach into the student process's evidence) is decided inside one
# engine call, which `EngineExecute` makes as `make grade` does: the fresh build grades those
# once, and tests/test_attacks.py, test_sandbox_limits.py and test_engine.py read them there.
# What the student process reports, marked for a look by the writer (and named in the log).
MARKED_FOR_A_LOOK = ["hostile_ops_recorder_off", "hostile_dispatch_modes_off",
                     "hostile_hides_mutation"]
HOSTILE = ["hostile_deleted_tests", "hostile_edited_tests", "hostile_input_transformer",
           "hostile_gradebook", "hostile_patched_helpers", "hostile_traceback",
           "hostile_rt4_fake_pass_output", "hostile_stderr", "hostile_hang", *MARKED_FOR_A_LOOK]
TWINS = sorted(path.stem for path in (ROOT / "samples").glob("twin_*.py"))
# An honest habit reaches what nbgrader handles when it changes the notebook file (a transform:
# pasted, split or kept cells) or leaves what nbgrader reads beside an answer (a magic, a shell
# line, display or stderr output, a buffer under the command line's memory limit). The other
# habits and the corpus of ordinary styles (honest_style_*) differ only inside answer cells,
# which the engine runs the same way on both ways in: graded once, by the fresh build.
BESIDE_AN_ANSWER = ["honest_big_buffer", "honest_display_in_answer", "honest_habit_pip_show",
                    "honest_modulo_continuation", "honest_stderr_every_call",
                    "honest_style_magics", "honest_time_magic"]
HONEST = sorted({path.stem for path in (ROOT / "samples").glob("honest_*.py")
                 if sample(path.stem).transform is not None} | set(BESIDE_AN_ANSWER))
STUDENTS = ["reference", "blank", *HOSTILE, *TWINS, *HONEST]
LIMITS = ["--Grading.call_timeout_s=4", "--Grading.student_time_s=30"]
BREACH = "HACKED_BY_*"  # what hostile_gradebook leaves next to a file it could open for writing


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m nbgrader ...` in the course, with this repository's package importable."""
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course,
                          env=course_env(ROOT), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}{done.stderr[-6000:]}"
    return done


def course_with_release(destination) -> Path:
    """A scratch course: source/, the config, and the release nbgrader generates from them."""
    shutil.copytree(ROOT / "source", destination / "source")
    shutil.copy(ROOT / "nbgrader_config.py", destination / "nbgrader_config.py")
    nbgrader(destination, "generate_assignment", SERIES, "--force")
    return destination


def handed_in(student_id: str) -> list[str]:
    """The notebooks a sample hands in here: those its EXPECTED names (reference, blank: 01)."""
    return sorted(sample(student_id).expected) or [FIRST]


def submit(course: Path, student_id: str) -> None:
    """The sample's notebooks, made from this course's release, in submitted/."""
    write_notebooks(course, sample(student_id), course / "submitted" / student_id / SERIES,
                    handed_in(student_id))


# The class is graded as two halves, each a course of its own with its own gradebook, by two
# `nbgrader autograde` commands at once: nbgrader grades one student after another, and the
# machine has two cores.
SHARDS = 2


@pytest.fixture(scope="module")
def autograded(tmp_path_factory):
    """The scratch courses after plain `nbgrader autograde`, and what they held before."""
    base = tmp_path_factory.mktemp("nbgrader").resolve()
    courses = [course_with_release(base / f"course{k}") for k in range(SHARDS)]
    for index, student in enumerate(STUDENTS):
        submit(courses[index % SHARDS], student)
    before = [{"submitted": fingerprint(course / "submitted"),
               "source": fingerprint(course / "source"),
               "config": (course / "nbgrader_config.py").read_bytes()} for course in courses]
    running = [subprocess.Popen([sys.executable, "-m", "nbgrader", "autograde", SERIES,
                                 "--force", *LIMITS], cwd=course, env=course_env(ROOT),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for course in courses]
    logs = []
    for process in running:
        output, _ = process.communicate(timeout=900)
        assert process.returncode == 0, f"nbgrader autograde:\n{output[-6000:]}"
        logs.append(output)
    return [{"course": course, "log": log, **held}
            for course, log, held in zip(courses, logs, before, strict=True)]


def course_of(autograded, student: str) -> Path:
    return autograded[STUDENTS.index(student) % SHARDS]["course"]


def test_every_sample_scores_what_make_grade_gives(autograded):
    scores = {(s.student, s.notebook): s.score
              for shard in autograded for s in read_scores(shard["course"])}
    wrong = [f"{student}/{name}: got {scores.get((student, name))}, want {want}"
             for student in STUDENTS
             for name, want in expected_scores(ROOT, sample(student)).items()
             if name in handed_in(student) and scores.get((student, name)) != want]
    assert not wrong, "\n".join(wrong)
    made = [f"{student}/{name}" for student in STUDENTS
            for name, held in committed_verdicts(ROOT, student).items()
            if name in handed_in(student) and scores.get((student, name)) != held["score"]]
    assert not made, f"make grade gave these otherwise: {made}"


def test_no_cell_is_set_to_manual_grading_by_the_grader(autograded):
    """No point rests on what the student's process reports, so the grader sets no cell of any
    sample to manual grading (a scan's note is advice for the TA, listed in the log)."""
    marked = set()
    for student in STUDENTS:
        with course_gradebook(course_of(autograded, student)) as gradebook:
            for name in handed_in(student):
                notebook = gradebook.find_submission_notebook(name, SERIES, student)
                marked |= {(student, name, g.name) for g in notebook.grades
                           if g.needs_manual_grade}
    assert not marked


def test_deleted_tests_are_graded_from_the_source(autograded):
    """nbgrader's Execute runs the notebook as submitted; the engine rebuilds it from source/."""
    course = course_of(autograded, "hostile_deleted_tests")
    wanted = graded_ids(nbio.read(course / "source" / SERIES / f"{FIRST}.ipynb"))
    graded = course / "autograded" / "hostile_deleted_tests" / SERIES / f"{FIRST}.ipynb"
    assert graded_ids(nbio.read(graded)) == wanted


def graded_ids(nb) -> list[str]:
    return [grade_id(cell) for cell in nb.cells if is_graded(cell)]


def course_gradebook(course):
    """The scratch course's gradebook (SQLite in the course, as nbgrader_config.py says)."""
    from nbgrader.api import Gradebook
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return Gradebook(f"sqlite:///{course / 'gradebook.db'}", config.CourseDirectory.course_id)


def test_an_untouched_answer_reads_no_response(autograded):
    """The one writer says "No response." for the blank release's answers, as the verdict
    decided (no checksum is compared)."""
    comments = {}
    for student in ("blank", "reference"):
        with course_gradebook(course_of(autograded, student)) as gradebook:
            comments[student] = [
                c.auto_comment
                for c in gradebook.find_submission_notebook(FIRST, SERIES, student).comments]
    assert comments["blank"] and set(comments["blank"]) == {"No response."}
    assert comments["reference"] and set(comments["reference"]) == {None}


def test_submitted_files_are_untouched(autograded):
    for shard in autograded:
        assert fingerprint(shard["course"] / "submitted") == shard["submitted"]


def test_the_course_and_its_gradebook_are_not_reached(autograded):
    students = set()
    for shard in autograded:
        course = shard["course"]
        assert not list(course.parent.rglob(BREACH)), "a submission wrote next to the TA's files"
        assert fingerprint(course / "source") == shard["source"]
        assert (course / "nbgrader_config.py").read_bytes() == shard["config"]
        students |= {s.student for s in read_scores(course)}
    assert students == set(STUDENTS), "the gradebooks hold other students than were submitted"


def test_the_log_names_each_submission_that_needs_a_look(autograded):
    """What a TA reads of `nbgrader autograde` (and of the formgrader's Autograde) says which
    submissions do what the grader cannot check, without accusing anyone."""
    log = "\n".join(shard["log"] for shard in autograded)
    for student in MARKED_FOR_A_LOOK:
        assert f"{student}/" in log and "needs a look: an answer cell does something the " \
            "grader cannot check" in log, student
    assert "reference/01_corruption needs a look" not in log
    assert "reached into the grader" not in log
