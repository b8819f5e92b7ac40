"""`make build` regrades only the samples whose inputs changed: each sample's key (build/graded.py)
moves with what its grading reads and with nothing else. No grading here: keys only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from mlmcourse.build.graded import departed, sample_inputs, sample_keys, to_regrade
from mlmcourse.build.samples import VERDICTS, load_samples, loaded_siblings
from mlmcourse.course.layout import SERIES


@pytest.fixture
def course(tmp_path) -> Path:
    """source/, samples/ and the configuration in a scratch course (the keys read no more)."""
    for folder in ("source", "samples"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copy2(ROOT / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    return tmp_path


def changed_keys(course: Path, edit) -> set[str]:
    samples = load_samples(course)
    before = sample_keys(course, samples)
    edit(course)
    after = sample_keys(course, load_samples(course))
    return {student for student in before if before[student] != after[student]}


def handing_in(course: Path, notebook: str) -> set[str]:
    """The samples whose grading reads `notebook`'s source (theirs, or a sibling they load)."""
    source = f"source/{SERIES}/{notebook}.ipynb"
    return {s.student_id for s in load_samples(course) if source in sample_inputs(course, s)}


def append_to(relative: str):
    def edit(course: Path) -> None:
        path = course / relative
        path.write_bytes(path.read_bytes() + b"\n")
    return edit


def test_a_source_notebook_regrades_only_the_samples_that_read_it(course):
    changed = changed_keys(course, append_to(f"source/{SERIES}/02_stable_log_softmax.ipynb"))
    assert changed == handing_in(course, "02_stable_log_softmax")
    assert {"reference", "blank"} <= changed
    assert "wrong_no_validation" not in changed  # hands in notebook 1 only


def test_a_shared_sample_module_regrades_only_the_samples_that_import_it(course):
    changed = changed_keys(course, append_to("samples/_library_loss.py"))
    importers = {path.stem for path in (course / "samples").glob("[a-z]*.py")
                 if "from _library_loss import" in path.read_text(encoding="utf-8")}
    assert changed == importers and changed


def test_the_grader_configuration_regrades_every_sample(course):
    changed = changed_keys(course, append_to("nbgrader_config.py"))
    assert changed == {s.student_id for s in load_samples(course)}


def test_a_sample_is_regraded_when_its_key_or_its_verdicts_are_missing(course):
    keys = {"a": "1", "b": "2", "c": "3"}
    (course / VERDICTS).mkdir(parents=True, exist_ok=True)
    for stale in (course / VERDICTS).glob("*.json"):
        stale.unlink()
    for student in ("a", "b", "gone"):
        (course / VERDICTS / f"{student}.json").write_text("{}\n")
    assert to_regrade(course, {"a": "1", "b": "old", "c": "3"}, keys) == ["b", "c"]
    assert departed(course, {"a": "1", "left": "9"}, set(keys)) == {"gone", "left"}


def test_notebooks_that_load_answers_are_found_from_their_code():
    assert loaded_siblings(ROOT, "04_experiment") == ("01_corruption",
                                                      "03_empty_mask_and_gradient")
    assert loaded_siblings(ROOT, "01_corruption") == ()
