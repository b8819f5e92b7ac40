"""`make lab` serves the student kit (the learner's own copies of the release) from JupyterLab on
127.0.0.1, with nbgrader's instructor parts off; `make lab-ta` serves the course to a TA."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request

import pytest
from conftest import copy_course, course_env, free_port, run_course

from mlmcourse.course import nbio
from mlmcourse.course.layout import SERIES
from mlmcourse.lab import (
    INSTRUCTOR_PLUGINS,
    INSTRUCTOR_SERVER_EXTENSIONS,
    SETTINGS,
    STUDENT,
    TA,
    WORK,
    ensure_work_copies,
    kernel_language_info,
    lab_command,
)


def test_lab_never_overwrites_the_learners_work(tmp_path):
    course = copy_course(tmp_path / "course")
    created = ensure_work_copies(course)
    assert created, "the first start should create the learner's copies"
    mine = created[0]
    mine.write_text("my work")
    assert ensure_work_copies(course) == []
    assert mine.read_text() == "my work"


def test_work_copies_are_the_release_with_this_kernels_language_info(tmp_path):
    course = copy_course(tmp_path / "course")
    [first, *_] = ensure_work_copies(course)
    copy, release = nbio.read(first), nbio.read(course / "release" / SERIES / first.name)
    # JupyterLab writes the kernel's language_info on opening: the copy must hold it already,
    # or the notebook opens as modified.
    assert copy.metadata.language_info == kernel_language_info()
    assert copy.metadata.language_info["version"] and copy.cells == release.cells


def test_lab_dry_run_serves_the_kit_to_a_student(tmp_path):
    course = copy_course(tmp_path / "course")
    done = run_course(course, "lab", "--dry-run", "--no-browser")
    assert done.returncode == 0, done.stderr
    assert "--ip=127.0.0.1" in done.stdout
    assert f"--ServerApp.root_dir={course / WORK} " in done.stdout, "the kit is the server's root"
    assert f"/lab/tree/{SERIES}/01_" in done.stdout
    for name in INSTRUCTOR_SERVER_EXTENSIONS:
        assert f"--ServerApp.jpserver_extensions={name}=False" in done.stdout
    page = json.loads((course / SETTINGS / STUDENT / "page_config.json").read_text())
    assert sorted(page["disabledExtensions"]) == sorted(INSTRUCTOR_PLUGINS)
    quiet = json.loads((course / SETTINGS / STUDENT / "overrides.json").read_text())
    notification = quiet["@jupyterlab/apputils-extension:notification"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}


def test_lab_ta_serves_the_course_with_an_exchange(tmp_path):
    course = copy_course(tmp_path / "course")
    assert not (course / "build" / "exchange").exists()
    done = run_course(course, "lab", "--ta", "--dry-run", "--no-browser")
    assert done.returncode == 0, done.stderr
    assert f"--ServerApp.root_dir={course} " in done.stdout
    assert "jpserver_extensions" not in done.stdout, "the TA's lab keeps every nbgrader extension"
    page = json.loads((course / SETTINGS / TA / "page_config.json").read_text())
    assert page["disabledExtensions"] == {}
    assert (course / "build" / "exchange").is_dir(), "the formgrader would warn of no exchange"


def test_lab_refuses_an_unknown_role(tmp_path):
    with pytest.raises(ValueError, match="unknown role"):
        lab_command(tmp_path, role="teacher")


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
        listing = wait_for_json(f"http://127.0.0.1:{port}/api/contents/{SERIES}")
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
