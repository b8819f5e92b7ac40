"""Grading through nbgrader itself: every sample student gets exactly the score it should.

The tests that grade are marked slow; the run's configuration (`grader.config`) and the
reports are checked quickly, without grading.
"""

from __future__ import annotations

import csv

import pytest
from conftest import ROOT

from mlmcourse.build.graded import samples_config
from mlmcourse.build.samples import committed_verdicts, expected_scores, load_samples
from mlmcourse.course import nbio
from mlmcourse.course.cells import total_points
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.class_run.grading import Score, read_scores, score_table, write_csv
from mlmcourse.grader.config import GradingConfig, with_interpreter_bin
from mlmcourse.grader.limits import Limits
from mlmcourse.grader.results.verdict import Check, Status, Verdict, verdict_of


def test_every_committed_verdict_scores_the_samples_expected():
    """Quick: what the last `make build` recorded (samples/verdicts/) gives every sample its
    EXPECTED score, so an author's loop (`make build`, then `make test-quick`) learns a wrong
    score in seconds; the slow tests below hold a fresh regrade to the same scores."""
    off = []
    for sample in load_samples(ROOT):
        recorded = committed_verdicts(ROOT, sample.student_id)
        for name, points in expected_scores(ROOT, sample).items():
            got = recorded.get(name, {}).get("score")
            if got is None or abs(got - points) > 1e-9:
                off.append(f"{sample.student_id}/{name}: expected {points}, recorded {got}")
    assert not off, "run `make build` (or fix EXPECTED):\n" + "\n".join(off)


@pytest.fixture(scope="module")
def scores(built_course):
    return {(s.student, s.notebook): s for s in read_scores(samples_config(built_course))}


@pytest.fixture(scope="module")
def samples(built_course):
    return {s.student_id: s for s in load_samples(built_course)}


def full_points(root, name):
    return total_points(nbio.read(root / "source" / SERIES / f"{name}.ipynb"))


@pytest.mark.slow
def test_reference_scores_full_marks(built_course, scores):
    for name in notebook_names(built_course):
        got = scores[("reference", name)]
        assert got.score == got.max_score == full_points(built_course, name), name


@pytest.mark.slow
def test_blank_release_scores_zero(built_course, scores):
    for name in notebook_names(built_course):
        assert scores[("blank", name)].score == 0, f"the untouched release earns points in {name}"


@pytest.mark.slow
def test_every_sample_scores_exactly_as_expected(built_course, scores, samples):
    wrong = []
    for student in samples.values():
        for name, points in expected_scores(built_course, student).items():
            got = scores.get((student.student_id, name))
            if got is None or got.score != points:
                wrong.append(f"{student.student_id}/{name}: got {got and got.score}, want {points}"
                             + first_failures(built_course, student.student_id, name))
    assert not wrong, "\n".join(wrong)


def first_failures(root, student: str, name: str, shown: int = 4) -> str:
    """The first failure messages of a graded notebook, so that a wrong score says why."""
    path = root / "autograded" / student / SERIES / f"{name}.ipynb"
    if not path.is_file():
        return f" (no autograded notebook at {path})"
    verdict = verdict_of(nbio.read(path))
    messages = [f"{c.grade_id}: {c.message}" for c in verdict.checks if not c.passed]
    return "".join(f"\n    {m[:300]}" for m in messages[:shown])


@pytest.mark.slow
def test_each_wrong_student_loses_points(built_course, samples):
    for student in samples.values():
        if not student.student_id.startswith("wrong_"):
            continue
        lost = [
            name for name, points in student.expected.items()
            if points < full_points(built_course, name)
        ]
        assert lost, f"{student.student_id} ({student.summary}) loses no points anywhere"


@pytest.mark.slow
def test_every_submission_folder_is_a_known_sample(built_course, samples):
    folders = {p.name for p in (built_course / "submitted").iterdir()}
    assert folders == set(samples), "submitted/ and samples/ disagree"


# Whatever a student prints or sends back, an autograded notebook stays small: the trusted side
# shows at most 200,000 characters of a notebook's output and charges every one (a relabelled
# reply once made notebook 4's 30.2 MB).
MOST_AUTOGRADED_BYTES = 2 << 20


@pytest.mark.slow
def test_no_autograded_notebook_grows_past_2_mb(built_course):
    large = {str(path.relative_to(built_course)): path.stat().st_size
             for path in (built_course / "autograded").rglob("*.ipynb")
             if path.stat().st_size > MOST_AUTOGRADED_BYTES}
    assert not large, large


# ---- quick: the run's configuration and what it renders -----------------------------------------


def write_config(root, *lines):
    (root / "nbgrader_config.py").write_text("c = get_config()\n" + "\n".join(lines) + "\n")


def test_config_resolves_a_relative_sqlite_gradebook_in_the_course(tmp_path):
    write_config(tmp_path, "c.CourseDirectory.db_url = 'sqlite:///books/grades.db'",
                 "c.CourseDirectory.course_id = 'mlm'")
    config = GradingConfig.load(tmp_path / ".")
    assert config.root == tmp_path.resolve()
    assert config.db_url == f"sqlite:///{tmp_path.resolve()}/books/grades.db"
    assert config.course_id == "mlm"
    assert config.limits == Limits()
    assert (config.workers, config.scheduler) == (None, None)


def test_config_db_url_given_wins_and_defaults_hold(tmp_path):
    config = GradingConfig.load(tmp_path, "postgresql://grader@db/mlm", workers=3)
    assert config.db_url == "postgresql://grader@db/mlm"
    assert config.course_id == "default_course"
    assert config.workers == 3
    assert GradingConfig.load(tmp_path).db_url == f"sqlite:///{tmp_path.resolve()}/gradebook.db"


def test_config_reads_nbgrader_config_once(tmp_path, monkeypatch):
    import mlmcourse.grader.config as config_module

    write_config(tmp_path, "c.CourseDirectory.course_id = 'mlm'")
    reads = []
    real = config_module.course_config
    monkeypatch.setattr(config_module, "course_config", lambda root: reads.append(root) or
                        real(root))
    config = GradingConfig.load(tmp_path)
    assert GradingConfig.of(config) is config
    converter_config = config.nbgrader_config()
    converter_config.CourseDirectory.root = "elsewhere"  # a converter's copy, not the run's
    assert config.nbgrader.CourseDirectory.get("root") != "elsewhere"
    assert len(reads) == 1


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


def test_interpreter_bin_first_and_once():
    import os
    import sys

    bindir = os.path.dirname(sys.executable)
    assert with_interpreter_bin(None) == bindir
    path = with_interpreter_bin(os.pathsep.join(["/usr/bin", bindir, "/bin"]))
    assert path.split(os.pathsep) == [bindir, "/usr/bin", "/bin"]
    assert with_interpreter_bin(path) == path


def test_score_table_and_csv_render_the_same_rows(tmp_path):
    scores = [Score("ada", "01_a", 3.0, 4.0), Score("ada", "02_b", 2.5, 2.5),
              Score("bob", "01_a", 0.0, 4.0)]
    table = score_table(scores).splitlines()
    assert table[0].split() == ["student", "01", "02", "total", "late"]
    assert table[2].split() == ["ada", "3/4", "2.5/2.5", "5.5/6.5"]
    assert table[3].split() == ["bob", "0/4", "-", "0/4"]
    assert table[5].split() == ["class", "mean", "1.5", "2.5", "2.8"]  # per notebook handed in
    assert table[6] == "columns: 01 = 01_a, 02 = 02_b"
    write_csv(scores, tmp_path / "grades.csv")
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [(r["student"], r["notebook"], r["score"], r["max_score"]) for r in rows] == [
        ("ada", "01_a", "3", "4"), ("ada", "02_b", "2.5", "2.5"), ("bob", "01_a", "0", "4")]


def test_score_table_fits_a_terminal_and_marks_late_work(tmp_path):
    names = ["01_corruption", "02_stable_log_softmax", "03_empty_mask_and_gradient",
             "04_experiment", "05_why_80_10_10", "06_real_bert"]
    scores = [Score(student, name, 3.0, 31.0, 2.0 if student == "late" else 0.0,
                    26 * 3600.0 if student == "late" else 0.0)
              for student in ("hostile_resolve_name_recorder_off", "late") for name in names]
    table = score_table(scores)
    assert max(map(len, table.splitlines())) <= 100
    late_row = next(line for line in table.splitlines() if line.startswith("late "))
    assert late_row.endswith("1 d 2 h (-12)")
    write_csv(scores, tmp_path / "grades.csv")
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert {(r["student"], r["late"], r["late_penalty"]) for r in rows} == {
        ("late", "1 d 2 h", "2"), ("hostile_resolve_name_recorder_off", "", "0")}
    assert "hostile_resolve_name_record…" in table


def test_check_report_renders_the_engines_results():
    from mlmcourse.check import all_passed, report

    tests = [Check("test_shape", 2.0, 2.0), Check("test_values", 0.0, 3.0,
                                                  "AssertionError: fix the mask")]
    result = Verdict("01_a", Status.OK, tests)
    text = report(result)
    assert "PASS  2 / 2  test_shape" in text and "FAIL  0 / 3  test_values" in text
    assert "      AssertionError: fix the mask" in text
    assert text.endswith("score: 2 / 5")
    assert not all_passed(result)
    assert all_passed([Verdict("01_a", Status.OK, tests[:1])])
    named = report(result, {"test_shape": "A1 · The shape"})
    assert "PASS  2 / 2  A1 · The shape" in named and "FAIL  0 / 3  test_values" in named
    crashed = Verdict("01_a", Status.CRASHED, [], detail="the kernel died")
    assert "did not run to the end: the kernel died" in report([crashed])


def test_no_response_is_one_rule_written_by_the_one_writer(tmp_path):
    """`verdict.unanswered` decides "No response." (a left answer with blank lines added still
    reads as left) and the one gradebook writer writes exactly that, on both paths."""
    import copy

    from mlmcourse.course.cells import grade_id, is_solution
    from mlmcourse.grader.results.gradebook import record_student, record_verdict
    from mlmcourse.grader.results.verdict import NO_RESPONSE, Verdict, unanswered

    first = notebook_names(ROOT, SERIES)[0]
    source = nbio.read(ROOT / "source" / SERIES / f"{first}.ipynb")
    release = nbio.read(ROOT / "release" / SERIES / f"{first}.ipynb")
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
        gradebook.add_notebook(first, SERIES)
        gradebook.add_solution_cell(gid, first, SERIES)
        for index, (nb, want) in enumerate(cases):
            assert unanswered(nb, source) == want
            student = f"s{index}"
            record_student(gradebook, student, assignment=SERIES)
            record_verdict(gradebook, student, Verdict(first, unanswered=want), assignment=SERIES)
            [comment] = gradebook.find_submission_notebook(first, SERIES, student).comments
            assert comment.auto_comment == (NO_RESPONSE if want else None)
