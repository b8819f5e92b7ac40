"""`make lab` serves the learner's own copy of the series from JupyterLab on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request

import pytest
from conftest import copy_course, course_env, free_port, run_course

from mlmcourse.course.layout import ASSIGNMENT
from mlmcourse.lab import WORK, ensure_work_copies, lab_command


def test_lab_never_overwrites_the_learners_work(tmp_path):
    course = copy_course(tmp_path / "course")
    created = ensure_work_copies(course)
    assert created, "the first start should create the learner's copies"
    mine = created[0]
    mine.write_text("my work")
    assert ensure_work_copies(course) == []
    assert mine.read_text() == "my work"


def test_lab_dry_run_names_the_series(tmp_path):
    course = copy_course(tmp_path / "course")
    done = run_course(course, "lab", "--dry-run", "--no-browser")
    assert done.returncode == 0, done.stderr
    assert "--ip=127.0.0.1" in done.stdout and f"{WORK}/{ASSIGNMENT}/01_" in done.stdout


@pytest.mark.slow
def test_jupyterlab_serves_the_series(tmp_path):
    course = copy_course(tmp_path / "course")
    ensure_work_copies(course)
    port = free_port()
    command = lab_command(course, port, open_browser=False) + ["--IdentityProvider.token="]
    server = subprocess.Popen(
        command, cwd=course, env=course_env(course),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        listing = wait_for_json(f"http://127.0.0.1:{port}/api/contents/{WORK}/{ASSIGNMENT}")
        names = [item["name"] for item in listing["content"]]
        assert "01_corruption.ipynb" in names
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=10).read()
        assert b"JupyterLab" in page or b"jupyter" in page.lower()
    finally:
        server.terminate()
        server.wait(timeout=30)


def wait_for_json(url: str, seconds: float = 90) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.loads(response.read())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
