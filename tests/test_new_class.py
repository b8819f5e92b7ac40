"""A class of one's own (`make new-class`, README "TAs"): a folder apart from the sample
students, only its owner's, with the roster as its gradebook's students; graded there, the
report and the export count only the class and list the roster's student who handed nothing
in. One student's notebook 1 is graded (about 15 s)."""

from __future__ import annotations

import csv
import os
import shutil
import stat
import subprocess
import sys

import pytest
from conftest import ROOT

from mlmcourse.cli import sample_class_note
from mlmcourse.course.layout import SERIES
from mlmcourse.grader.class_run.new_class import ClassExists, new_class

ROSTER = ("id,first_name,last_name,email,role\n"
          "reference,Ada,Lovelace,ada@uni.example,\n"
          "absent_one,Bo,Chen,bo@uni.example,student\n"
          "dana,Dana,Tutor,dana@uni.example,ta\n")


def course_command(*args: str, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mlmcourse", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def roster(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(ROSTER)
    return path


def test_a_new_class_is_private_and_refuses_to_be_made_twice_or_inside_the_repository(
        tmp_path, roster):
    folder = tmp_path / "term" / "class"
    old = os.umask(0o022)  # an ordinary clone's umask: the class is private all the same
    try:
        assert new_class(ROOT, folder, roster) == ["reference", "absent_one"]  # not the TA
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert sorted(p.name for p in (folder / "source" / SERIES).glob("*.ipynb")) == sorted(
        p.name for p in (ROOT / "source" / SERIES).glob("*.ipynb"))
    assert not (folder / "submitted").exists(), "a new class has no sample students"
    with pytest.raises(ClassExists, match="already a class"):
        new_class(ROOT, folder, roster)
    with pytest.raises(ValueError, match="inside the course's repository"):
        new_class(ROOT, ROOT / "build" / "class", roster)


@pytest.mark.slow
def test_the_class_report_and_export_count_the_class_and_its_missing_student(tmp_path, roster):
    folder = tmp_path / "class"
    made = course_command("new-class", str(folder), "--roster", str(roster), cwd=ROOT)
    assert made.returncode == 0 and "2 students" in made.stdout, made.stderr
    handed_in = folder / "submitted" / "reference" / SERIES  # notebook 1 only: quicker
    handed_in.mkdir(parents=True)
    for name in ("01_corruption.ipynb", "timestamp.txt"):
        shutil.copy2(ROOT / "submitted" / "reference" / SERIES / name, handed_in / name)
    # `make grade CLASS=...`: the repository's course, run on the class's folder
    env = dict(os.environ, MLMCOURSE_ROOT=str(folder))
    graded = course_command("grade", cwd=ROOT, env=env)
    assert graded.returncode == 0, graded.stderr[-3000:]
    assert "sample students" not in graded.stderr, "the class is not the repository's samples"
    page = (folder / "reports" / "class-report.html").read_text(encoding="utf-8")
    assert "<b>1</b> submitted" in page and "<b>1</b> not submitted" in page, page[:3000]
    assert "<h3>Not submitted</h3><p>absent_one</p>" in page
    with (folder / "grades-lms.csv").open(newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert sorted(rows) == ["absent_one", "reference"], rows
    assert rows["reference"]["score"] == "24", rows["reference"]  # notebook 1's points, all
    assert (rows["absent_one"]["submitted"], rows["absent_one"]["score"]) == ("no", "0")
    assert rows["reference"]["first_name"] == "Ada"
    assert "sample students" in sample_class_note(ROOT), "make grade in the repository says so"
