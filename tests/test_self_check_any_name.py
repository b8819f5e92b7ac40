"""`mlmcourse check` as a reader meets it: any file name a browser or a copy gives, and one line
that says what to do when it cannot check (a file that is no notebook, another course's
notebook, a missing file, a Python without the course's environment)."""

from __future__ import annotations

import json
import subprocess
import sys

from mlmcourse.check import identify
from tests.conftest import ROOT, course_env, run_course

REFERENCE = ROOT / "submitted" / "reference" / "bert_mlm"
RELEASE = ROOT / "release" / "bert_mlm"


def one_line_without_traceback(done: subprocess.CompletedProcess) -> str:
    said = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in said and len(said.splitlines()) == 1, said
    return said


def test_a_copy_is_known_by_its_graded_cells_not_its_name(tmp_path):
    copy = tmp_path / "my copy.ipynb"
    copy.write_bytes((RELEASE / "03_empty_mask_and_gradient.ipynb").read_bytes())
    assert identify(ROOT, copy) == "03_empty_mask_and_gradient"


def test_a_browsers_second_download_is_checked_as_its_notebook_and_left_unchanged(tmp_path):
    download = tmp_path / "01_corruption (1).ipynb"
    original = (REFERENCE / "01_corruption.ipynb").read_bytes()
    download.write_bytes(original)
    done = run_course(ROOT, "check", str(download), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("01_corruption\n") and "FAIL" not in done.stdout
    assert download.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01_corruption (1).ipynb"]


def test_a_file_that_is_no_notebook_fails_in_one_line(tmp_path):
    broken = tmp_path / "01_corruption.ipynb"
    broken.write_text('{"cells": [', encoding="utf-8")
    said = one_line_without_traceback(run_course(ROOT, "check", str(broken)))
    assert "not a notebook JupyterLab can open" in said and "Download" in said


def test_another_courses_notebook_fails_in_one_line_naming_the_series(tmp_path):
    other = tmp_path / "homework.ipynb"
    other.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": "1",
                                            "outputs": [], "execution_count": None}],
                                 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    said = one_line_without_traceback(run_course(ROOT, "check", str(other)))
    assert "homework.ipynb" in said and "01_corruption" in said


def test_a_missing_file_fails_in_one_line(tmp_path):
    said = one_line_without_traceback(run_course(ROOT, "check", str(tmp_path / "nope.ipynb")))
    assert "no such notebook" in said


def test_outside_the_course_environment_it_names_the_command_to_run(tmp_path):
    """A Python without nbformat (the system's, say) gets the command with the course's own."""
    notebook = tmp_path / "01_corruption.ipynb"
    without_nbformat = ("import runpy, sys; sys.modules['nbformat'] = None; "
                        f"sys.argv = ['mlmcourse', 'check', {str(notebook)!r}]; "
                        "runpy.run_module('mlmcourse', run_name='__main__', alter_sys=True)")
    done = subprocess.run([sys.executable, "-c", without_nbformat], cwd=ROOT,
                          env=course_env(ROOT), capture_output=True, text=True, timeout=300)
    said = one_line_without_traceback(done)
    assert "'nbformat'" in said
    assert f".venv/bin/python -m mlmcourse check {notebook}" in said and "make check" in said
