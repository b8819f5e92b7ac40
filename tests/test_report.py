"""The class report (mlmcourse/report/) on the committed sample class: autograded/ as `make
build` graded it. Groups, incidents and pairs are asserted by check and by membership, never by
a failure's wording (the messages may change; who fails together with whom may not)."""

from __future__ import annotations

import copy
import csv
import re

import pytest
from conftest import ROOT

from mlmcourse.build.samples import committed_verdicts, load_samples
from mlmcourse.grader.results.verdict import Status
from mlmcourse.report.build import PAGE, analyse, write_class_report
from mlmcourse.report.changes import changes, snapshot
from mlmcourse.report.collect import ClassData, read_autograded, read_notebook, read_release
from mlmcourse.report.figures import describe_scores, score_histograms
from mlmcourse.report.groups import cause, class_lines
from mlmcourse.report.similarity import fingerprints

# Samples that make one mistake the same way: (check, students who must share a cause group).
SAME_CAUSE = [
    ("test_custom_ignore_index", {"wrong_hardcoded_ignore_index", "hostile_deleted_tests"}),
    ("test_forward_stable", {"wrong_log_of_softmax", "wrong_raw_exp"}),
    ("test_loss_token_mean", {"wrong_mean_all_tokens", "wrong_loss_own_mean_all_tokens"}),
    ("test_loss_token_mean", {"wrong_mean_of_means", "wrong_loss_own_mean_of_means"}),
    ("test_inputs_unchanged", {"wrong_mutates_input", "hostile_hides_mutation"}),
]
# ... and samples whose causes differ on one check: two mistakes the check's message tells apart
# (issue 19: a message names its mistake).
OTHER_CAUSE = [("test_labels", "wrong_labels_every_token", "wrong_labels_from_corrupted"),
               ("test_forward_token_mean", "wrong_mean_all_tokens", "wrong_mean_of_means")]
COPIED_PAIR = {"copied_log_probs_a", "copied_log_probs_b"}


@pytest.fixture(scope="module")
def sample_class() -> ClassData:
    release = read_release(ROOT)
    return ClassData(release, read_autograded(ROOT, release), "test")


@pytest.fixture(scope="module")
def report(sample_class):
    return analyse(sample_class)


@pytest.fixture(scope="module")
def samples():
    return {sample.student_id: sample for sample in load_samples(ROOT)}


def groups_of(report, grade_id: str) -> list[set[str]]:
    return [set(group.students) for check in report.checks if check.grade_id == grade_id
            for group in check.groups]


def test_every_failure_lands_in_one_group_of_its_check(report, sample_class):
    for check in report.checks:
        failing = {student.student for student in sample_class.students.values()
                   for test in getattr(student.submissions.get(check.notebook), "tests", [])
                   if test.grade_id == check.grade_id and not test.passed}
        members = [name for group in check.groups for name in group.students]
        assert sorted(members) == sorted(failing), check.title
        assert check.failed == len(failing) <= check.graded


def test_each_wrong_sample_lands_in_the_group_of_its_cause(report, samples):
    wrong = {name for name in samples if name.startswith("wrong_")}
    placed = {name for check in report.checks for group in check.groups
              for name in group.students}
    assert wrong <= placed  # every sample with a mistake fails some check
    for grade_id, together in SAME_CAUSE:
        assert any(together <= group for group in groups_of(report, grade_id)), grade_id
    for grade_id, first, second in OTHER_CAUSE:
        assert not any({first, second} <= group for group in groups_of(report, grade_id))


def test_a_blank_notebook_is_one_cause_everywhere(report):
    for check in report.checks:
        with_blank = [group for group in check.groups if "blank" in group.students]
        assert len(with_blank) <= 1
        if with_blank and check.notebook < "04":  # 04 imports notebook 1's answers instead
            assert "NotImplementedError" in with_blank[0].cause


def test_the_checks_carry_their_headings(report):
    titles = {check.grade_id: check.title for check in report.checks}
    assert re.match(r"B3 · ", titles["test_custom_ignore_index"])
    assert all(check.title for check in report.checks)


def test_samples_that_reach_past_their_answer_appear_under_incidents(report, samples):
    tampering = {name for name, sample in samples.items() if _twin(sample) and any(
        kind == "unchecked" for held in committed_verdicts(ROOT, name).values()
        for kind, _ in held["incidents"])}  # (a reach that gains nothing may go unnoted)
    assert len(tampering) >= 6
    flagged = {incident.student for incident in report.incidents if incident.kind == "unchecked"}
    assert tampering <= flagged
    honest = {name for name in samples if name.startswith("honest_")} | {"reference"}
    assert len(flagged & honest) * 20 <= len(honest)  # advice: everyday habits are no finding
    kinds = {(incident.student, incident.kind) for incident in report.incidents}
    assert ("hostile_hang", "timeout") in kinds
    assert ("hostile_segfault", "crash") in kinds
    assert ("honest_pasted_answer", "pasted") in kinds


def test_the_copied_pair_and_no_unrelated_pair(report, samples):
    pairs = {frozenset((pair.first, pair.second)) for pair in report.similarity.pairs}
    assert frozenset(COPIED_PAIR) in pairs
    families = {}
    for name, sample in samples.items():  # a tampering sample is its twin's code by design
        families[name] = _twin(sample) or name
    for pair in pairs - {frozenset(COPIED_PAIR)}:
        first, second = sorted(pair)
        if first.startswith("hostile_") and second.startswith("hostile_"):
            continue  # red-team variants of one attack (threads, the dispatch modes...)
        assert families[first] == families[second], f"unrelated pair flagged: {first}, {second}"
    copied = next(p for p in report.similarity.pairs if {p.first, p.second} == COPIED_PAIR)
    assert copied.grade_id == "target_log_probs" and copied.overlap > 0.9
    assert "row_max" in copied.first_code + copied.second_code  # both cells, side by side


def test_answers_equal_to_the_solution_are_a_note_not_pairs(report):
    as_solution = report.similarity.as_solution[("02_stable_log_softmax", "masked_mean_nll")]
    assert {"reference", "copied_log_probs_a"} <= set(as_solution)
    assert not any(pair.grade_id == "masked_mean_nll" for pair in report.similarity.pairs)


def test_renaming_and_layout_do_not_change_fingerprints():
    code = "def f(x, y):\n    total = x.exp().sum(dim=-1)\n    return (total.log() - y) * 2\n"
    renamed = ("def g(a, b):\n    s = a.exp().sum(dim=-1)   # comment\n\n"
               "    return (s.log() - b) * 2\n")
    assert fingerprints(code) == fingerprints(renamed)
    assert fingerprints(code) != fingerprints(code.replace(".log()", ".exp()"))


def test_causes_strip_numbers_and_sites():
    assert cause("CheckFailed: off by 1.7e-07 (tolerance 1e-12): expected [[5, 6]], got [[9, 2]]") \
        == cause("CheckFailed: off by 0.375 (tolerance 1e-6): expected [[1]], got [[0]]")
    assert cause("X: reaches (cell f, line 2: imports (torch.library)), so no") == \
        cause("X: reaches (cell g, line 9: exec), so no")
    assert cause("got nan") != cause("got 0.0")


def test_the_page_and_its_tables(tmp_path, sample_class, report):
    page = write_class_report(sample_class, tmp_path)
    assert page.name == PAGE
    text = page.read_text(encoding="utf-8")
    assert "<img" in text and "data:image/png;base64," in text  # offline: figures inline
    assert "http://" not in text and "https://" not in text
    assert 'data-pair="copied_log_probs_a copied_log_probs_b"' in text
    with (tmp_path / "checks.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert sum(int(r["in_group"]) for r in rows) == sum(c.failed for c in report.checks)
    for name in ("scores.csv", "incidents.csv", "similar.csv", "changes.csv"):
        assert (tmp_path / name).is_file()
    # each histogram is a <figure>: a named picture, what it shows, its counts behind <details>
    assert "Histogram of scores:" not in text
    assert text.count("<figure>") == text.count("<img") == len(score_histograms(sample_class))
    assert "<figcaption><p>Scores of " in text and "<summary>Students per score range: " in text


def test_each_histogram_says_what_it_shows(sample_class):
    """The words and the counts come from the scores the bars draw: the same students, the same
    median, lowest and highest, the same number under half the points."""
    histograms = score_histograms(sample_class)
    assert histograms[0].title == "Assignment total"
    out_of = sample_class.release.max_scores
    assert [h.title for h in histograms[1:]] == [n for n in sample_class.release.notebooks
                                                if out_of[n]]
    for h in histograms[1:]:
        scores = [s.submissions[h.title].score for s in sample_class.students.values()
                  if h.title in s.submissions
                  and s.submissions[h.title].status is not Status.MISSING]
        assert h.name == f"Histogram of the scores on {h.title} ({len(scores)} graded)"
        assert h.text == describe_scores(h.title, scores, out_of[h.title])
        assert h.text.startswith(f"Scores of {len(scores)} students on {h.title}, out of "
                                 f"{out_of[h.title]:g}: median ")
        below = sum(score < out_of[h.title] / 2 for score in scores)
        assert h.text.endswith(f"highest {max(scores):g}, {below} below half.")
        assert sum(count for _, count in h.bins) == len(scores)
        assert h.bins[0][0].startswith("0 to under ")
        assert h.bins[-1][0].endswith(f" to {out_of[h.title]:g}")  # the top is included
    assert describe_scores("01_corruption", [3.0, 20.0, 24.0, 11.5], 24) == (
        "Scores of 4 students on 01_corruption, out of 24: median 15.8, lowest 3, highest 24, "
        "2 below half.")
    assert describe_scores("06_real_bert", [], 4).startswith("No graded hand-in of 06_real_bert")


def test_changes_since_the_previous_grading(tmp_path, sample_class):
    write_class_report(sample_class, tmp_path)
    regraded = copy.deepcopy(sample_class)
    submission = regraded.students["wrong_raw_exp"].submissions["02_stable_log_softmax"]
    fixed = [t for t in submission.tests if not t.passed]
    submission.tests = [type(t)(t.grade_id, t.max_points, t.max_points, "")
                        for t in submission.tests]
    submission.score = submission.max_score
    moved = changes(snapshot(sample_class), snapshot(regraded))
    assert [(m.student, m.notebook) for m in moved] == [("wrong_raw_exp", "02_stable_log_softmax")]
    assert moved[0].now_passing == sorted(t.grade_id for t in fixed) and moved[0].after == 15
    write_class_report(regraded, tmp_path)
    write_class_report(regraded, tmp_path)  # built again from the same grades: still shown
    with (tmp_path / "changes.csv").open() as handle:
        assert [row["student"] for row in csv.DictReader(handle)] == ["wrong_raw_exp"]


def test_class_lines_name_nobody(report):
    lines = class_lines(report.checks)
    students = {name for check in report.checks for g in check.groups for name in g.students}
    line = lines[("01_corruption", "test_custom_ignore_index")]
    assert re.match(r"\d+% of the class failed this check; the most common cause was", line)
    assert not any(name in text for text in lines.values() for name in students)


def _twin(sample) -> str | None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"twin_{sample.student_id}",
                                                  ROOT / "samples" / f"{sample.student_id}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, "TWIN", None)


def test_feedback_gains_the_class_line_only_when_the_course_asks(tmp_path, report):
    from traitlets.config import Config

    from mlmcourse.course.layout import SERIES
    from mlmcourse.grader.results.feedback import CLASS_LINES, ReadableFeedback
    from mlmcourse.report.build import write_class_lines

    (tmp_path / CLASS_LINES).parent.mkdir()
    write_class_lines(report, tmp_path / CLASS_LINES)
    path = ROOT / "autograded" / "wrong_hardcoded_ignore_index" / SERIES / "01_corruption.ipynb"

    def summary(asked: bool) -> dict:
        config = Config()
        config.CourseDirectory.root = str(tmp_path)
        config.Grading.class_feedback = asked
        nb = read_notebook(path)
        for cell in nb.cells:  # the scores nbgrader's GetGrades fills in
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                meta["score"] = 0.0 if cell_failed(cell) else float(meta["points"])
        resources = {"nbgrader": {"notebook": "01_corruption"}}
        _, resources = ReadableFeedback(config=config).preprocess(nb, resources)
        return {c["grade_id"]: c for c in resources["mlm_feedback"]["checks"]}

    checks = summary(True)
    line = checks["test_custom_ignore_index"]["in_class"]
    assert re.match(r"\d+% of the class failed this check; the most common cause was", line)
    assert "wrong_" not in line and "hostile_" not in line
    assert "in_class" not in checks["test_unselected"]  # passed: no line
    assert not summary(False)["test_custom_ignore_index"].get("in_class")


def cell_failed(cell) -> bool:
    from mlmcourse.grader.results.verdict import failure_of

    return bool(failure_of(cell))


def test_the_gradebook_decides_scores_and_lateness(tmp_path):
    """After manual grading and a late submission: the report reads the gradebook's scores (a
    TA's manual grade, the late penalty) and marks the late one with its delay; a student of
    the roster (the gradebook's students) who handed nothing in is listed as not submitted."""
    import shutil
    import warnings
    from datetime import datetime, timedelta

    from mlmcourse.course.layout import SERIES
    from mlmcourse.grader.config import GradingConfig
    from mlmcourse.report.build import write_report
    from mlmcourse.report.collect import collect

    course = tmp_path / "course"
    shutil.copytree(ROOT / "source", course / "source")
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    for student in ("reference", "wrong_labels_every_token"):
        shutil.copytree(ROOT / "autograded" / student, course / "autograded" / student)
        shutil.copytree(ROOT / "submitted" / student, course / "submitted" / student)
    config = GradingConfig.load(course)
    release = read_release(course)
    due = datetime(2026, 1, 10, 17, 0)
    with config.gradebook() as gradebook:
        gradebook.update_or_create_assignment(SERIES, duedate=due)
        for name in release.notebooks:
            gradebook.update_or_create_notebook(name, SERIES)
            for gid, heading in release.headings[name].items():
                gradebook.update_or_create_grade_cell(gid, name, SERIES,
                                                      max_score=heading.points, cell_type="code")
        for student, late in (("reference", timedelta(0)),
                              ("wrong_labels_every_token", timedelta(hours=26))):
            gradebook.update_or_create_student(student)
            with warnings.catch_warnings():  # nbgrader 0.9 under SQLAlchemy 2: noise
                warnings.filterwarnings("ignore", message=".*not in session.*")
                gradebook.add_submission(SERIES, student, timestamp=due + late)
        for grade in gradebook.find_submission_notebook(
                "01_corruption", SERIES, "wrong_labels_every_token").grades:
            grade.auto_score = grade.max_score if grade.name != "test_labels" else 0.0
        manual = gradebook.find_grade("test_labels", "01_corruption", SERIES,
                                      "wrong_labels_every_token")
        manual.manual_score = 1.0  # a TA's partial credit
        gradebook.update_or_create_student("absent_on_roster", last_name="Absent")
        late_nb = gradebook.find_submission_notebook("01_corruption", SERIES,
                                                     "wrong_labels_every_token")
        late_nb.late_submission_penalty = 3.0
        gradebook.db.commit()
    from mlmcourse.grader.class_run.grading import read_scores, score_table

    table = score_table(read_scores(config))  # make grade's table reads the same gradebook
    assert re.search(r"^wrong_labels_every_token .* 1 d 2 h \(-3\)$", table, re.M), table
    data = collect(config)
    late = data.students["wrong_labels_every_token"]
    assert late.late_seconds == 26 * 3600
    held = late.submissions["01_corruption"]
    assert held.manual and held.score == 24 - 2 + 1 - 3  # all but B1, B1's manual 1, penalty
    assert data.students["reference"].late_seconds == 0
    assert not data.students["absent_on_roster"].submitted
    page = write_report(config).read_text(encoding="utf-8")
    assert "<h3>Not submitted</h3><p>absent_on_roster</p>" in page
    assert re.search(r"wrong_labels_every_token</td><td class=\"late\">1 d 2 h</td>", page)
    with (course / "reports" / "scores.csv").open() as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert rows["wrong_labels_every_token"]["late"] == "1 d 2 h"
    assert rows["reference"]["late"] == ""


def test_the_synthetic_class_of_the_benchmark(tmp_path, sample_class):
    """The bench's class (students mixed from the samples' notebooks): each check fails for
    exactly the synthetic students whose notebook came from a sample that failed it, and each
    incident of a sample shows once per student who got that notebook."""
    from collections import Counter

    from mlmcourse.bench.report import sample_for, synthetic_course
    from mlmcourse.grader.config import GradingConfig
    from mlmcourse.report.collect import collect

    size = 120
    course = synthetic_course(ROOT, tmp_path, size)
    report = analyse(collect(GradingConfig.load(course)))
    samples = sorted(sample_class.students)
    names = sample_class.release.notebooks
    origin = {(f"student{k:04d}", name): sample_for(samples, k, index)
              for k in range(size) for index, name in enumerate(names)}
    for check in report.checks:
        expected = sorted(student for (student, name), sample in origin.items()
                          if name == check.notebook and any(
                              t.grade_id == check.grade_id and not t.passed for t in getattr(
                                  sample_class.students[sample].submissions.get(name),
                                  "tests", [])))
        assert sorted(s for g in check.groups for s in g.students) == expected, check.title
    kinds = Counter(i.kind for i in report.incidents)
    expected_kinds = Counter(
        incident.kind for (student, name), sample in origin.items()
        for incident in sample_class.students[sample].submissions[name].incidents)
    assert kinds == expected_kinds and kinds["unchecked"] > 0
