"""Grades back to the LMS (LTI AGS) against a simulated platform on 127.0.0.1: the exact score
per student (a late penalty, a manual grade), idempotence, the dry run, errors per student."""

from __future__ import annotations

import json
import shutil
import stat
from datetime import datetime, timedelta

import pytest
from lms_platform import SimulatedPlatform
from nbgrader.api import Gradebook

from mlmcourse import cli
from mlmcourse.lms.keys import JWKS, PRIVATE_KEY, KeyFolderError, ensure_keys
from mlmcourse.lms.passback import (
    PassbackError,
    Platform,
    passback,
    read_lti_ids,
    read_names,
    read_scores,
    read_staff,
    sent_record,
)

DUE = datetime(2026, 12, 1, 12, 0)
EXPECTED = {"ann": 9.0, "bob": 5.0, "cy": 7.0}  # ann full auto; bob 7 late less 2; cy manual


def make_gradebook(url: str) -> None:
    with Gradebook(url) as gb:
        gb.add_assignment("bert_mlm", duedate=DUE)
        gb.add_notebook("01_corruption", "bert_mlm")
        gb.add_grade_cell("auto", "01_corruption", "bert_mlm", max_score=6, cell_type="code")
        gb.add_grade_cell("written", "01_corruption", "bert_mlm", max_score=3,
                          cell_type="markdown")
        for student, late in (("ann", 0), ("bob", 3600), ("cy", 0)):
            gb.add_student(student, first_name=student.title(), last_name="Example")
            gb.add_submission("bert_mlm", student, timestamp=DUE + timedelta(seconds=late - 60))
        points = {"ann": (6, 3), "bob": (5, 2), "cy": (6, None)}
        for student, (auto, manual) in points.items():
            gb.find_grade("auto", "01_corruption", "bert_mlm", student).auto_score = auto
            written = gb.find_grade("written", "01_corruption", "bert_mlm", student)
            written.auto_score, written.manual_score = manual, (1 if student == "cy" else None)
            for cell in ("auto", "written"):  # graded, as after autograde and the TA's pass
                grade = gb.find_grade(cell, "01_corruption", "bert_mlm", student)
                grade.needs_manual_grade = False
        gb.find_submission_notebook("01_corruption", "bert_mlm", "bob").late_submission_penalty = 2
        gb.db.commit()


@pytest.fixture(scope="module")
def gradebook_file(tmp_path_factory):
    """Made once (nbgrader's gradebook takes seconds to create); each test gets a copy."""
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    make_gradebook(f"sqlite:///{path}")
    return path


@pytest.fixture
def course(tmp_path, gradebook_file):
    shutil.copy(gradebook_file, tmp_path / "gradebook.db")
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    ensure_keys(tmp_path / "keys")
    tool_jwks = json.loads((tmp_path / "keys" / JWKS).read_text())
    with SimulatedPlatform(tool_jwks) as lms:
        (tmp_path / "lti.json").write_text(json.dumps({
            "issuer": lms.issuer, "client_id": lms.client_id, "deployment_id": lms.deployment_id,
            "token_url": lms.token_url, "lineitem_url": lms.lineitem_url,
            "key_folder": "keys"}))
        (tmp_path / "lti-users.json").write_text(json.dumps(
            {s: {"sub": f"lms-{s}", "name": s} for s in EXPECTED}))
        yield tmp_path, url, lms


def run(folder, url, *extra) -> int:
    return cli.main(["passback", "--config", str(folder / "lti.json"), "--db-url", url, *extra])


def test_the_gradebooks_scores_land_on_the_line_item(course, capsys):
    folder, url, lms = course
    assert {s.student: s.given for s in read_scores(url, "bert_mlm")} == EXPECTED
    assert run(folder, url) == 0
    got = {s["userId"]: (s["scoreGiven"], s["scoreMaximum"]) for s in lms.scores}
    assert got == {f"lms-{s}": (score, 9.0) for s, score in EXPECTED.items()}
    assert all(s["activityProgress"] == "Completed" and s["gradingProgress"] == "FullyGraded"
               and s["timestamp"].endswith("+00:00") for s in lms.scores)
    # again, nothing changed: nothing sent, and it says so
    assert run(folder, url) == 0
    assert len(lms.scores) == 3
    assert capsys.readouterr().out.count("unchanged, not sent") == 3


def test_a_dry_run_sends_nothing_and_shows_each_student(course, capsys):
    folder, url, lms = course
    assert run(folder, url, "--dry-run") == 0
    out = capsys.readouterr().out
    assert not lms.scores and not lms.tokens
    for student, late in (("ann", ""), ("bob", ", 7 less a late penalty of 2"), ("cy", "")):
        assert f"{student}: {EXPECTED[student]:g} / 9 (LTI lms-{student}{late}): would send" in out
    assert not (folder / "passback-sent.json").exists()


def test_a_student_without_an_lti_id_fails_alone(course, capsys):
    folder, url, lms = course
    (folder / "ids.csv").write_text("user,sub\nann,lms-ann\ncy,lms-cy\n")
    assert run(folder, url, "--ids", str(folder / "ids.csv")) == 1
    assert sorted(s["userId"] for s in lms.scores) == ["lms-ann", "lms-cy"]
    captured = capsys.readouterr()
    assert "bob: FAILED, no LTI id" in captured.out
    assert "1 student(s) not sent: bob" in captured.err


def test_a_score_not_final_yet_or_a_user_now_staff_is_not_sent(course, capsys):
    """Waiting for manual grading, collected and not autograded (no score in the gradebook
    yet), staff at their last launch: each says so, and nothing of theirs is sent."""
    folder, url, lms = course
    with Gradebook(url) as gb:
        gb.find_grade("written", "01_corruption", "bert_mlm", "ann").needs_manual_grade = True
        gb.add_student("dee")  # collected, not autograded yet
        gb.add_student("eli")  # nothing handed in: a 0 goes
        gb.db.commit()
        first_time = gb.find_submission("bert_mlm", "bob").timestamp
    (folder / "submitted" / "dee" / "bert_mlm").mkdir(parents=True)
    again = folder / "submitted" / "bob" / "bert_mlm"  # bob handed in again, collected
    again.mkdir(parents=True)
    (again / "timestamp.txt").write_text(f"{first_time + timedelta(hours=1)} UTC")
    (folder / "submitted" / "eli").mkdir()  # (a folder of another assignment)
    users = json.loads((folder / "lti-users.json").read_text())
    users.update(dee={"sub": "lms-dee"}, eli={"sub": "lms-eli"},
                 cy={"sub": "lms-cy", "staff": True})
    (folder / "lti-users.json").write_text(json.dumps(users))
    scores = read_scores(url, "bert_mlm", submitted=folder / "submitted")
    outcome = passback(Platform.load(folder / "lti.json"), scores,
                       read_lti_ids(folder / "lti-users.json"), folder / "sent.json",
                       staff=read_staff(folder / "lti-users.json"))
    assert "ann: waits for manual grading, not sent" in outcome.lines
    assert "dee: collected, not autograded yet, not sent" in outcome.lines
    assert "cy: staff in the LMS now, not sent" in outcome.lines
    assert "bob: collected again, not autograded yet, not sent" in outcome.lines
    assert {s["userId"]: s["scoreGiven"] for s in lms.scores} == {"lms-eli": 0.0}


def test_a_refused_token_is_a_clear_error(course, capsys):
    folder, url, lms = course
    lms.refuse_tokens = True
    assert run(folder, url) == 2
    assert "the LMS refused the token request" in capsys.readouterr().err
    assert not lms.scores


def test_the_platform_refuses_an_assertion_signed_by_another_key(course, tmp_path_factory):
    folder, url, lms = course
    other = tmp_path_factory.mktemp("other")
    ensure_keys(other)
    platform = Platform.load(folder / "lti.json")
    forged = Platform(**{**platform.__dict__, "key_folder": other})
    with pytest.raises(PassbackError, match="HTTP 401.*bad client assertion"):
        passback(forged, read_scores(url, "bert_mlm"), read_lti_ids(folder / "lti-users.json"),
                 folder / "sent.json")
    assert not lms.scores


def test_the_private_key_is_its_owners_only(tmp_path):
    private = ensure_keys(tmp_path / "keys")
    assert private.name == PRIVATE_KEY
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    before = private.read_bytes()
    ensure_keys(tmp_path / "keys")  # made once
    assert private.read_bytes() == before
    jwks = json.loads((tmp_path / "keys" / JWKS).read_text())
    assert jwks["keys"][0]["kty"] == "RSA" and "d" not in jwks["keys"][0]
    private.chmod(0o644)
    with pytest.raises(KeyFolderError, match="readable by others"):
        ensure_keys(tmp_path / "keys")


def test_lti_json_names_what_it_lacks(tmp_path):
    (tmp_path / "lti.json").write_text(json.dumps({"issuer": "https://lms.example"}))
    with pytest.raises(PassbackError, match="lacks client_id"):
        Platform.load(tmp_path / "lti.json")


def without_line_item(folder) -> None:
    settings = json.loads((folder / "lti.json").read_text())
    del settings["lineitem_url"]
    (folder / "lti.json").write_text(json.dumps(settings))


def test_the_line_item_comes_from_the_launches_when_lti_json_names_none(course):
    """The AGS claim the hub recorded at each launch (lti-links.json beside lti.json) names
    the gradebook column; without a launch, passback says what to do; two columns, which."""
    from mlmcourse.lms.launch import AGS_CLAIM, RESOURCE_LINK_CLAIM, record_line_item

    folder, url, lms = course
    without_line_item(folder)
    with pytest.raises(PassbackError, match="no line item yet: open the assignment once"):
        passback(Platform.load(folder / "lti.json"), read_scores(url, "bert_mlm"),
                 read_lti_ids(folder / "lti-users.json"), folder / "sent.json")
    launch = {RESOURCE_LINK_CLAIM: {"id": "link-1", "title": "BERT MLM"},
              AGS_CLAIM: {"lineitem": lms.lineitem_url, "scope": []}}
    record_line_item(folder, launch)
    record_line_item(folder, {RESOURCE_LINK_CLAIM: {"id": "link-2"}})  # a link with no grade
    assert stat.S_IMODE((folder / "lti-links.json").stat().st_mode) == 0o600
    assert run(folder, url) == 0
    assert sorted(s["userId"] for s in lms.scores) == ["lms-ann", "lms-bob", "lms-cy"]
    record_line_item(folder, {**launch, RESOURCE_LINK_CLAIM: {"id": "link-3"},
                              AGS_CLAIM: {"lineitem": f"{lms.url}/lineitems/2/lineitem"}})
    with pytest.raises(PassbackError, match="several line items: set lineitem_url"):
        Platform.load(folder / "lti.json").line_item()
    (folder / "lti-links.json").unlink()
    record_line_item(folder, {RESOURCE_LINK_CLAIM: {"id": "link-4"},
                              AGS_CLAIM: {"lineitems": f"{lms.url}/lineitems"}})
    with pytest.raises(PassbackError, match="no gradebook column .* \\(Canvas: an External Tool"):
        Platform.load(folder / "lti.json").line_item()


def test_lines_name_the_student_and_the_record_is_the_owners_only(course):
    """The grades page's lines: the LMS's name beside the hub name; one record of what was sent,
    beside lti.json, that nobody else reads."""
    folder, url, lms = course
    users = folder / "lti-users.json"
    users.write_text(json.dumps({s: {"sub": f"lms-{s}", "name": f"{s.title()} Example"}
                                 for s in EXPECTED}))
    record = sent_record(folder / "lti.json")
    outcome = passback(Platform.load(folder / "lti.json"), read_scores(url, "bert_mlm"),
                       read_lti_ids(users), record, names=read_names(users))
    assert "Bob Example (bob): 5 / 9 (LTI lms-bob, 7 less a late penalty of 2): sent" in (
        outcome.lines)
    assert record == folder / "passback-sent.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
