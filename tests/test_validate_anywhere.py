"""Validate tells the truth anywhere (issue 12): in a student's own folder on a hub, with no course
configuration beside the notebook, `nbgrader validate` passes the reference, fails a typical wrong
answer with the public part's plain message, and never warns that an output "cannot be converted
to a float" (a released graded cell holding only its docstring echoed it as Out[n], and nbgrader
reads an Out[n] of a graded cell as a partial grade)."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT

from mlmcourse.bench.validate import run_validate
from mlmcourse.build.editions import build_release
from mlmcourse.build.samples import load_samples, sample_home
from mlmcourse.course import nbio
from mlmcourse.course.cells import is_graded
from mlmcourse.course.layout import source_notebooks

pytestmark = pytest.mark.slow  # one release build, then Validate twice per notebook

PASSED = "Success! Your notebook passes all the tests."
FAILED = "VALIDATION FAILED ON"
FLOAT_WARNING = "cannot be converted to"  # "... a float": nbgrader wraps the line there

# One typical wrong answer per graded notebook, and a phrase of the public-part message its
# Validate must show (so it fails for the right reason, not because the notebook broke).
WRONG = {
    "01_corruption": ("wrong_no_validation", "expected ValueError"),
    "02_stable_log_softmax": ("wrong_raw_exp", "float32 logits near 1e4"),
    "03_empty_mask_and_gradient": ("wrong_no_range_check", "a label equal to V = 5"),
    "04_experiment": ("wrong_labels_from_corrupted", "at seed 163"),  # 04 runs 01's answer
    "06_real_bert": ("wrong_selects_special_tokens", "special_ids"),
}


def graded_notebooks() -> list[str]:
    return [path.stem for path in source_notebooks(ROOT)
            if any(is_graded(cell) for cell in nbio.read(path).cells)]


def test_every_graded_notebook_has_a_typical_wrong_sample():
    assert sorted(WRONG) == graded_notebooks()


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """source/ and the course config in a scratch course directory, released there."""
    root = tmp_path_factory.mktemp("course")
    shutil.copytree(ROOT / "source", root / "source")
    shutil.copytree(ROOT / "samples", root / "samples")
    shutil.copy2(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    build_release(root)
    return root


def student_home(course: Path, home: Path, name: str, student_id: str) -> Path:
    """A hub home with notebook `name` as `student_id` hands it in (`samples.sample_home`)."""
    samples = {sample.student_id: sample for sample in load_samples(course)}
    notebook = sample_home(course, samples[student_id], name, home)
    assert not list(home.rglob("nbgrader_config.py"))
    return notebook


STDERR_NOTEBOOKS = ("01_corruption", "03_empty_mask_and_gradient")
RUNS = [(name, student) for name in sorted(WRONG) for student in ("reference", WRONG[name][0])]
RUNS += [(name, "honest_stderr_every_call") for name in STDERR_NOTEBOOKS]


@pytest.fixture(scope="module")
def validated(course, tmp_path_factory) -> dict[tuple[str, str], str]:
    """What Validate printed for each (notebook, student) of RUNS, each in a home of its own:
    `nbgrader validate` as the Validate button runs it (`bench.validate.run_validate`), two at
    a time (one kernel each; the machine has two cores)."""
    base = tmp_path_factory.mktemp("homes")
    # the homes first, in this thread: CPython 3.11's ast module is not safe in two threads at
    # once ("AST constructor recursion depth mismatch"), and a sample's notebook is built with it
    homes = {key: base / f"{key[0]}-{key[1]}" for key in RUNS}
    notebooks = {key: student_home(course, homes[key], *key) for key in RUNS}

    def run(key: tuple[str, str]) -> str:
        return run_validate(notebooks[key], homes[key], ROOT)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(RUNS, pool.map(run, RUNS), strict=True))


@pytest.mark.parametrize("name", [
    pytest.param(name, id=name) for name in sorted(WRONG)
])
def test_validate_tells_the_truth_without_course_config(validated, name):
    reference = validated[(name, "reference")]
    assert PASSED in reference, f"the reference fails Validate:\n{reference[-3000:]}"
    assert FLOAT_WARNING not in reference, f"Validate warns about an Out[n]:\n{reference[-3000:]}"

    student_id, phrase = WRONG[name]
    wrong = validated[(name, student_id)]
    assert FAILED in wrong, f"{student_id} passes Validate:\n{wrong[-3000:]}"
    assert phrase in wrong, (
        f"{student_id} fails Validate without {phrase!r}:\n{wrong[-3000:]}")
    assert FLOAT_WARNING not in wrong, f"Validate warns about an Out[n]:\n{wrong[-3000:]}"


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in STDERR_NOTEBOOKS])
def test_a_right_answer_that_writes_to_stderr_passes_validate(validated, name):
    """nbgrader fails a graded cell with stderr output; the grader gives full marks, so the
    setup cell's import of the checks shows stderr as ordinary output under Validate."""
    output = validated[(name, "honest_stderr_every_call")]
    assert PASSED in output, f"a right answer that warns fails Validate:\n{output[-3000:]}"
