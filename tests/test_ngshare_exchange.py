"""The course's nbgrader exchange through ngshare (mlmcourse/exchange/ngshare.py), against the
real ngshare server (deploy/hub/ngshare_service.py, ngshare 0.6) with the class set by the hub's
roster code (deploy/hub/ngshare_roster.py). The hub's part, telling ngshare whose token a request
carries, is played by a small stand-in of JupyterHub's /hub/api/user; everything else is the
real thing: release, fetch, submit, collect, feedback both ways, the Assignment List's records,
and what a student may not do (read or fetch another's submission or feedback, collect, release,
submit as somebody else). The whole term through the hub, in Chromium, is
tests/test_hub_containers.py."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import ROOT, free_port

pytest.importorskip("ngshare", reason="ngshare is missing: make test installs requirements/hub.txt")

sys.path.insert(0, str(ROOT / "deploy" / "hub"))
import ngshare_roster  # noqa: E402
from nbgrader.auth import Authenticator  # noqa: E402
from nbgrader.coursedir import CourseDirectory  # noqa: E402
from nbgrader.exchange import ExchangeError  # noqa: E402

from mlmcourse.exchange import ngshare as exchange  # noqa: E402

COURSE, SERIES, NOTEBOOK = "mlm_course", "bert_mlm", "01_corruption"
PREFIX = "/services/ngshare/"


class Hub:
    """The stand-in of the hub's identity endpoint: token -> user name."""

    def __init__(self):
        self.tokens: dict[str, str] = {}
        tokens = self.tokens

        class Identity(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                token = self.headers.get("Authorization", "").removeprefix("token ")
                name = tokens.get(token)
                body = json.dumps({"kind": "user", "name": name}).encode()
                self.send_response(200 if name and self.path == "/hub/api/user" else 403)
                self.end_headers()
                self.wfile.write(body if name else b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Identity)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hub/api"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, name: str) -> str:
        token = secrets.token_hex(16)
        self.tokens[token] = name
        return token


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ngshare")
    hub = Hub()
    db_url = f"sqlite:///{folder / 'ngshare.sqlite'}"
    ngshare_roster.prepare(db_url, str(folder / "files"))
    staff = [ngshare_roster.Person("prof", "Pat", "Prof", "prof@uni.example")]
    students = [ngshare_roster.Person(name, name.title(), "Student", f"{name}@uni.example")
                for name in ("ann", "bob")]
    ngshare_roster.apply(db_url, COURSE, staff, students)
    port = free_port()
    env = dict(os.environ, JUPYTERHUB_API_URL=hub.url, JUPYTERHUB_API_TOKEN="service-token",
               JUPYTERHUB_CLIENT_ID="service-ngshare", JUPYTERHUB_SERVICE_PREFIX=PREFIX,
               JUPYTERHUB_SERVICE_URL=f"http://127.0.0.1:{port}")
    log = (folder / "ngshare.log").open("w")
    process = subprocess.Popen([sys.executable, str(ROOT / "deploy/hub/ngshare_service.py"),
                                "--database", db_url, "--storage", str(folder / "files")],
                               env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}{PREFIX}"
    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(OSError):
            urllib.request.urlopen(f"{url}healthz", timeout=2)
            break
        assert process.poll() is None, (folder / "ngshare.log").read_text()
        assert time.monotonic() < deadline, "ngshare did not start"
        time.sleep(0.2)
    try:
        yield {"url": url, "hub": hub, "db": db_url, "folder": folder}
    finally:
        process.terminate()
        process.wait(10)
        log.close()
        hub.server.shutdown()


@contextlib.contextmanager
def as_user(service, name: str, monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", service["hub"].token(name))
    monkeypatch.setenv("JUPYTERHUB_USER", name)
    # each user's own submission cache (nbgrader keeps it in the Jupyter data folder)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(service["folder"] / "data" / name))
    monkeypatch.setenv(exchange.URL_VARIABLE, service["url"])
    # nbgrader's gradebook (collect adds the students) runs `alembic` from the environment
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    yield


def run(cls, root: Path, *, student: str = "*", **traits):
    """One exchange action as nbgrader's apps run it (a course directory, an authenticator)."""
    coursedir = CourseDirectory(root=str(root), course_id=COURSE, assignment_id=SERIES,
                                student_id=student)
    action = cls(coursedir=coursedir, authenticator=Authenticator(coursedir=coursedir),
                 **traits)
    return action.start()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_notebook(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": text}]}))
    return path


def test_a_term_through_ngshare(service, tmp_path, monkeypatch):
    course = tmp_path / "course"
    release = write_notebook(course / "release" / SERIES / f"{NOTEBOOK}.ipynb", "blank")
    homes = {name: tmp_path / name for name in ("ann", "bob", "eve")}
    for home in homes.values():
        home.mkdir()
    with as_user(service, "prof", monkeypatch):
        run(exchange.ReleaseAssignment, course)
        with pytest.raises(ExchangeError, match="already released"):
            run(exchange.ReleaseAssignment, course)

    handed_in = {}
    for name in ("ann", "bob"):
        monkeypatch.chdir(homes[name])
        with as_user(service, name, monkeypatch):
            [listed] = run(exchange.List, homes[name])
            assert listed["status"] == "released", listed
            run(exchange.FetchAssignment, homes[name])
            work = homes[name] / SERIES / f"{NOTEBOOK}.ipynb"
            assert digest(work) == digest(release)
            write_notebook(work, f"{name}'s answer")
            handed_in[name] = digest(work)
            run(exchange.Submit, homes[name])
            [cached] = run(exchange.List, homes[name], cached=True)
            assert cached["submissions"][0]["has_exchange_feedback"] is False

    # Another student's work is not reachable with a student's own token, whatever the path.
    monkeypatch.chdir(homes["ann"])
    with as_user(service, "ann", monkeypatch):
        client = exchange.NgshareClient(service["url"], os.environ["JUPYTERHUB_API_TOKEN"])
        for path in (f"submission/{COURSE}/{SERIES}/bob", f"submissions/{COURSE}/{SERIES}",
                     f"submissions/{COURSE}/{SERIES}/bob", f"students/{COURSE}"):
            with pytest.raises(exchange.NgshareError, match="Permission denied|403"):
                client.call("GET", path)
        with pytest.raises(ExchangeError, match="Permission denied"):
            run(exchange.Collect, tmp_path / "ann-course")
        with pytest.raises(ExchangeError, match="Permission denied"):
            run(exchange.ReleaseAssignment, course, force=True)
        # --student names somebody else: the submission is still ann's (the token says who)
        write_notebook(homes["ann"] / SERIES / f"{NOTEBOOK}.ipynb", "posing as bob")
        run(exchange.Submit, homes["ann"], student="bob")
    with as_user(service, "eve", monkeypatch):  # not in the class at all
        monkeypatch.chdir(homes["eve"])
        with pytest.raises(ExchangeError, match="Permission denied"):
            run(exchange.FetchAssignment, homes["eve"])

    with as_user(service, "prof", monkeypatch):
        monkeypatch.chdir(course)
        run(exchange.Collect, course)
        bob = course / "submitted" / "bob" / SERIES
        assert digest(bob / f"{NOTEBOOK}.ipynb") == handed_in["bob"], "bob's work changed"
        assert "posing as bob" in (course / "submitted" / "ann" / SERIES /
                                   f"{NOTEBOOK}.ipynb").read_text()
        stamp = (bob / "timestamp.txt").read_text()
        assert stamp.endswith(" UTC"), stamp
        # the gradebook learns the collected students' names from ngshare's roster
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
            found = gradebook.find_student("bob")
            assert (found.first_name, found.last_name, found.email) == (
                "Bob", "Student", "bob@uni.example")
        feedback = course / "feedback" / "bob" / SERIES
        feedback.mkdir(parents=True)
        (feedback / f"{NOTEBOOK}.html").write_text("<p>bob: 21 / 24</p>")
        (feedback / "timestamp.txt").write_text(stamp)
        run(exchange.ReleaseFeedback, course)

    monkeypatch.chdir(homes["bob"])
    with as_user(service, "bob", monkeypatch):
        [cached] = run(exchange.List, homes["bob"], cached=True)
        assert cached["submissions"][-1]["has_exchange_feedback"] is True
        run(exchange.FetchFeedback, homes["bob"])
        [got] = (homes["bob"] / SERIES / "feedback").glob(f"*/{NOTEBOOK}.html")
        assert got.read_text() == "<p>bob: 21 / 24</p>"
        assert got.parent.name == stamp
    monkeypatch.chdir(homes["ann"])
    with as_user(service, "ann", monkeypatch):
        run(exchange.FetchFeedback, homes["ann"])
        assert not (homes["ann"] / SERIES / "feedback").exists(), "ann got feedback"
        client = exchange.NgshareClient(service["url"], os.environ["JUPYTERHUB_API_TOKEN"])
        with pytest.raises(exchange.NgshareError, match="Permission denied"):
            client.call("GET", f"feedback/{COURSE}/{SERIES}/bob",
                        params={"timestamp": exchange.server_time(stamp)})


def test_the_roster_moves_people_between_lists(service):
    """A student who leaves loses the course; a student made a TA teaches it."""
    staff = [ngshare_roster.Person("prof"), ngshare_roster.Person("bob")]
    change = ngshare_roster.apply(service["db"], "other_course", staff,
                                  [ngshare_roster.Person("ann"), ngshare_roster.Person("cat")])
    assert sorted(change["added"]) == ["ann", "bob", "cat", "prof"]
    change = ngshare_roster.apply(service["db"], "other_course", [ngshare_roster.Person("prof")],
                                  [ngshare_roster.Person("ann"), ngshare_roster.Person("bob")])
    assert sorted(change["removed"]) == ["bob", "cat"] and change["added"] == ["bob"]
