"""The hub's configuration, without a hub: who gets which nbgrader panels, what the hub starts.

(tests/test_hub.py runs the whole term on a real hub; this file needs no browser or npm.)
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

from conftest import ROOT, copy_course, run_course
from jupyterhub.spawner import LocalProcessSpawner
from traitlets.config import Config

DEPLOY = ROOT / "deploy" / "hub"
INSTRUCTOR_ONLY = ("nbgrader.server_extensions.formgrader",
                   "nbgrader.server_extensions.course_list")
EVERYONE = ("nbgrader.server_extensions.assignment_list",
            "nbgrader.server_extensions.validate_assignment")


def role_files(role: str) -> tuple[dict, dict]:
    folder = DEPLOY / "roles" / role
    server = json.loads((folder / "jupyter_server_config.json").read_text())
    page = json.loads((folder / "labconfig" / "page_config.json").read_text())
    return server["ServerApp"]["jpserver_extensions"], page["disabledExtensions"]


def test_students_get_the_assignment_list_and_validate_only():
    extensions, disabled = role_files("student")
    assert all(extensions[name] for name in EVERYONE)
    assert not any(extensions[name] for name in INSTRUCTOR_ONLY)
    for plugin in ("formgrader", "create-assignment", "course-list"):
        assert disabled.get(f"@jupyter/nbgrader:{plugin}") is True, plugin
    assert not any(disabled.get(f"@jupyter/nbgrader:{p}") for p in ("assignment-list",
                                                                     "validate-assignment"))


def test_instructors_and_tas_get_the_formgrader_too():
    extensions, disabled = role_files("instructor")
    assert all(extensions[name] for name in EVERYONE + INSTRUCTOR_ONLY)
    assert not any(name.startswith("@jupyter/nbgrader") for name in disabled)


def test_nobody_gets_the_news_popup():
    for role in ("student", "instructor"):
        assert role_files(role)[1]["@jupyterlab/apputils-extension:announcements"] is True


def hub_config(tmp_path, monkeypatch) -> Config:
    """deploy/hub/jupyterhub_config.py, run as JupyterHub runs it, on a made-up course."""
    (tmp_path / "course.json").write_text(json.dumps({
        "course_id": "bert_mlm_course", "instructor": "root",
        "python": {"executable": "/usr/bin/python3", "env": {}},
    }))
    (tmp_path / "state").mkdir()
    (tmp_path / "logs").mkdir()
    (tmp_path / "state" / "hubctl_token").write_text("a-test-token\n")
    (tmp_path / "state" / "proxy_token").write_text("a-proxy-token\n")
    monkeypatch.setenv("MLMCOURSE_HUB", str(tmp_path))
    config = Config()
    runpy.run_path(str(DEPLOY / "jupyterhub_config.py"), {"get_config": lambda: config})
    return config


class Spawner:
    """What the hub hands the environment's callables and the pre-spawn hook."""

    def __init__(self, name, groups=()):
        group = lambda g: type("Group", (), {"name": g})()  # noqa: E731
        self.user = type("User", (), {"name": name, "groups": [group(g) for g in groups]})()
        self.cmd, self.notebook_dir, self.popen_kwargs = None, None, {}
        self.volumes, self.environment, self.extra_host_config = {}, {}, {}


def test_the_hub_spawns_system_users_on_localhost(tmp_path, monkeypatch):
    c = hub_config(tmp_path, monkeypatch)
    assert issubclass(c.JupyterHub.spawner_class, LocalProcessSpawner)  # and its user's cgroup
    assert c.JupyterHub.bind_url.startswith("http://127.0.0.1:")
    assert c.Spawner.cmd == ["/usr/bin/python3", "-m", "jupyterhub.singleuser"]
    env = c.Spawner.environment
    assert env["MLMCOURSE_EXCHANGE"] == str(tmp_path / "exchange")
    assert env["PYTHONPATH"] == str(tmp_path / "python")  # the package only, no course folder
    assert env["MLMCOURSE_HUB_LOGS"] == str(tmp_path / "logs")


def test_each_user_logs_in_with_their_own_unix_password(tmp_path, monkeypatch):
    """PAM, no shared password; only the course's two Unix groups (read at each login)."""
    c = hub_config(tmp_path, monkeypatch)
    assert c.JupyterHub.authenticator_class == "pam"
    assert c.PAMAuthenticator.allowed_groups == {"bert_mlm_course-staff",
                                                 "bert_mlm_course-students"}
    assert "allowed_users" not in c.Authenticator and "allow_all" not in c.Authenticator
    assert "SharedPasswordAuthenticator" not in c


def test_roles_come_from_the_hub_groups(tmp_path, monkeypatch):
    import grp

    unix = {"bert_mlm_course-staff": ["dan", "root"], "bert_mlm_course-students": ["ann"]}
    monkeypatch.setattr(grp, "getgrnam", lambda name: type("G", (), {"gr_mem": unix[name]}))
    c = hub_config(tmp_path, monkeypatch)
    assert set(c.JupyterHub.load_groups) == {"bert_mlm_course-staff", "bert_mlm_course-students"}
    role_dir = c.Spawner.environment["JUPYTER_CONFIG_DIR"]
    assert role_dir(Spawner("ann", ["bert_mlm_course-students"])) == str(
        tmp_path / "roles" / "student")
    assert role_dir(Spawner("dan", ["bert_mlm_course-staff"])) == str(
        tmp_path / "roles" / "instructor")
    assert role_dir(Spawner("eve", [])) == str(tmp_path / "roles" / "student")
    # still in the hub's staff group, no longer in the Unix one (changed while the hub was down)
    assert role_dir(Spawner("bob", ["bert_mlm_course-staff"])) == str(
        tmp_path / "roles" / "student")


def test_the_roster_service_may_manage_users_and_groups_only(tmp_path, monkeypatch):
    c = hub_config(tmp_path, monkeypatch)
    services = {s["name"]: s for s in c.JupyterHub.services}
    assert services["hubctl"] == {"name": "hubctl", "api_token": "a-test-token"}
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    assert roles["hubctl-roster"]["services"] == ["hubctl"]
    assert set(roles["hubctl-roster"]["scopes"]) == {"admin:users", "admin:groups",
                                                     "admin:servers"}
    assert (tmp_path / "state" / "api_url").read_text().startswith("http://127.0.0.1:")


def test_the_culler_stops_idle_servers_and_the_instructor_is_the_admin(tmp_path, monkeypatch):
    """An hour idle by default (MLMCOURSE_HUB_IDLE_SECONDS; 0: never), with the culler's own
    role: it may list users and stop servers, nothing else (tests/test_hub.py watches it)."""
    c = hub_config(tmp_path, monkeypatch)
    culler = {s["name"]: s for s in c.JupyterHub.services}["idle-culler"]
    assert "--timeout=3600" in culler["command"]
    role = {r["name"]: r for r in c.JupyterHub.load_roles}["idle-culler"]
    assert set(role["scopes"]) == {"list:users", "read:users:activity", "read:servers",
                                   "delete:servers"}
    assert c.Authenticator.admin_users == {"root"}  # (course.json's instructor here)
    monkeypatch.setenv("MLMCOURSE_HUB_IDLE_SECONDS", "0")
    (tmp_path / "never").mkdir()
    c = hub_config(tmp_path / "never", monkeypatch)
    assert "idle-culler" not in {s["name"] for s in c.JupyterHub.services}


def test_a_restart_of_the_hub_leaves_users_servers_running(tmp_path, monkeypatch):
    c = hub_config(tmp_path, monkeypatch)
    assert c.JupyterHub.cleanup_servers is False and c.JupyterHub.cleanup_proxy is False
    # the running proxy accepts the restarted hub: the same token every start
    assert c.ConfigurableHTTPProxy.auth_token == "a-proxy-token"


def test_each_server_logs_to_a_staff_only_file(tmp_path, monkeypatch):
    import grp

    monkeypatch.setattr(grp, "getgrnam", lambda name: type("G", (), {"gr_mem": ["root"]}))
    c = hub_config(tmp_path, monkeypatch)
    spawner = Spawner("root", ["bert_mlm_course-staff"])
    c.Spawner.pre_spawn_hook(spawner)
    log = tmp_path / "logs" / "servers" / "root.log"
    assert spawner.popen_kwargs["stdout"].name == str(log)
    assert oct(log.stat().st_mode & 0o777) == "0o640"
    assert spawner.cmd[:2] == ["/bin/sh", "-c"] and "umask 007" in spawner.cmd[2]
    spawner.popen_kwargs["stdout"].close()
    handler = c.JupyterHub.logging_config["handlers"]["file"]
    assert handler["filename"] == str(tmp_path / "logs" / "jupyterhub.log")
    assert handler["class"] == "logging.handlers.RotatingFileHandler"


def test_the_instructors_sources_carry_the_kernels_language_info(tmp_path):
    """A release generated from them opens unmodified in a student's lab (JupyterLab writes
    the kernel's language_info into a notebook that lacks it, and marks it modified)."""
    from mlmcourse.lab import kernel_language_info

    hubctl = runpy.run_path(str(DEPLOY / "hubctl.py"))
    source = ROOT / "source" / "bert_mlm" / "01_corruption.ipynb"
    hubctl["copy_with_language_info"](source, tmp_path / "copy.ipynb")
    copy = json.loads((tmp_path / "copy.ipynb").read_text())
    original = json.loads(source.read_text())
    assert copy["metadata"]["language_info"] == kernel_language_info()
    assert copy["cells"] == original["cells"]


def test_the_export_carries_the_roster_and_says_what_came_and_when(tmp_path, monkeypatch):
    """`nbgrader export` and `make grade`'s export (mlmcourse/grader/results/lms_export.py): names
    and e-mail, a row for a student who handed nothing in (submitted: no), late marks, times in UTC
    with their offset."""
    import csv
    import os
    import sys
    from datetime import datetime, timedelta

    from nbgrader.api import Gradebook

    from mlmcourse.grader.results.lms_export import RosterCsvExport

    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    due = datetime(2026, 12, 1, 12, 0, 0)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gradebook:
        gradebook.add_assignment("bert_mlm", duedate=due)
        for n, name in enumerate(["ann", "bob", "cat"]):
            gradebook.add_student(name, first_name=f"First{n}", last_name=f"Last{n}",
                                  email=f"{name}@uni.example")
        gradebook.add_submission("bert_mlm", "ann", timestamp=due - timedelta(hours=1))
        gradebook.add_submission("bert_mlm", "bob", timestamp=due + timedelta(seconds=90))
        RosterCsvExport(to=str(tmp_path / "grades.csv")).export(gradebook)
    with open(tmp_path / "grades.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert rows["ann"]["first_name"] == "First0" and rows["ann"]["email"] == "ann@uni.example"
    assert (rows["ann"]["submitted"], rows["ann"]["late"]) == ("yes", "no")
    assert rows["ann"]["timestamp"] == "2026-12-01T11:00:00+00:00"
    assert rows["ann"]["duedate"] == "2026-12-01T12:00:00+00:00"
    assert (rows["bob"]["late"], rows["bob"]["seconds_late"]) == ("yes", "90")
    assert (rows["cat"]["submitted"], rows["cat"]["timestamp"], rows["cat"]["score"]) == (
        "no", "", "0")


# `make lab-ta`, the TA's lab off the hub, and `lab --dry-run` (issue 21's smaller points).

def test_lab_dry_runs_start_nothing_and_write_no_work_copies(tmp_path):
    """`--dry-run` says it starts nothing: it must not make the learner's work/ either; the
    TA's lab opens on the course's instructor notebooks, not on a student's copy."""
    course = copy_course(tmp_path / "course")
    student = run_course(course, "lab", "--dry-run", "--no-browser")
    ta = run_course(course, "lab", "--ta", "--dry-run", "--no-browser")
    assert student.returncode == 0 and ta.returncode == 0, student.stderr + ta.stderr
    assert not (course / "work").exists(), "lab --dry-run wrote work/"
    assert "/lab/tree/bert_mlm/01_corruption.ipynb" in student.stdout
    assert "--LabApp.default_url=/lab/tree/source/bert_mlm " in ta.stdout


def test_a_roster_names_each_member_once_with_a_known_role(tmp_path):
    import pytest

    hubctl = runpy.run_path(str(DEPLOY / "hubctl.py"))
    roster = tmp_path / "roster.csv"
    roster.write_text("id,first_name,last_name,email,role\n"
                      "ann,Ann,Lee,ann@uni.example,\ndan,Dan,Ross,dan@uni.example,ta\n")
    ann, dan = hubctl["read_roster"](roster)
    assert (ann.id, ann.role, ann.last_name, ann.email) == ("ann", "student", "Lee",
                                                           "ann@uni.example")
    assert (dan.id, dan.role) == ("dan", "ta")
    for bad, says in (("bob,,,,teacher\n", "role"), (",Bob,,,\n", "no id"),
                      ("ann,,,,\n", "twice")):
        roster.write_text("id,first_name,last_name,email,role\nann,,,,\n" + bad)
        with pytest.raises(hubctl["RosterError"], match=says):
            hubctl["read_roster"](roster)


# The same configuration with containers as its spawner (deploy/hub/containers.py).

def container_hub_config(tmp_path, monkeypatch) -> Config:
    import grp

    unix = {"bert_mlm_course-staff": ["dan", "root"], "bert_mlm_course-students": ["ann"]}
    monkeypatch.setattr(grp, "getgrnam", lambda name: type("G", (), {"gr_mem": unix[name]}))
    (tmp_path / "course").mkdir()
    containers = containers_module()
    hub_config(tmp_path, monkeypatch)  # writes course.json's first version and state/
    course = json.loads((tmp_path / "course.json").read_text())
    course.update(spawner="containers", image="localhost/mlmcourse:test", network={
        "name": "mlmcourse-0123abcd", "subnet": "10.89.65.0/24", "gateway": "10.89.65.1"},
        container_uid=containers.choose_user_id())
    (tmp_path / "course.json").write_text(json.dumps(course))
    config = Config()
    runpy.run_path(str(DEPLOY / "jupyterhub_config.py"), {"get_config": lambda: config})
    return config


def containers_module():
    import sys

    sys.path.insert(0, str(DEPLOY))
    import containers

    return containers


def test_the_containers_user_id_is_no_host_accounts_and_a_collision_is_refused(monkeypatch):
    """The image's jovyan is 1000, a real account on many machines: the containers run as an
    id chosen at set-up that no account, group or subordinate range holds, checked again at
    every start (an account made since with that id stops the hub, saying what to do)."""
    import pytest

    containers = containers_module()
    monkeypatch.setattr(containers, "FIRST_USER_ID", 0)  # root holds 0: the next free one
    uid = containers.choose_user_id()
    assert uid > 0 and not containers.id_holders(uid)
    assert containers.choose_user_id({"container_uid": 1234}) == 1234  # kept from course.json
    with pytest.raises(containers.ContainerError, match="id 0, which the account root, the group"):
        containers.check_user_id(0)
    # rootless podman's users hold 65,536 ids each: the search steps over a range whole
    monkeypatch.setattr(containers, "FIRST_USER_ID", 200_000)
    ranges = [(f"user{k}", "/etc/subuid", 100_000 + k * 65_536, 165_536 + k * 65_536)
              for k in range(1_000)]
    monkeypatch.setattr(containers, "subordinate_ranges", lambda: ranges)
    past = ranges[-1][3]
    uid = containers.choose_user_id()
    assert uid >= past and not containers.id_holders(uid, ranges), uid


def test_one_switch_puts_every_server_in_a_container_of_the_course_image(tmp_path, monkeypatch):
    """Same logins, groups, roster service, proxy on 127.0.0.1; the servers are containers
    reaching the hub and ngshare on the course network's gateway, with limits per role."""
    c = container_hub_config(tmp_path, monkeypatch)
    containers = containers_module()
    assert c.JupyterHub.spawner_class == "dockerspawner.DockerSpawner"
    assert c.JupyterHub.authenticator_class == "pam"
    assert c.JupyterHub.bind_url.startswith("http://127.0.0.1:")  # browsers: the proxy only
    assert c.JupyterHub.hub_bind_url.startswith("http://10.89.65.1:")  # the hub's own bridge
    assert (tmp_path / "state" / "api_url").read_text().startswith("http://10.89.65.1:")
    assert c.DockerSpawner.network_name == "mlmcourse-0123abcd"
    assert c.DockerSpawner.name_template == "mlmcourse-0123abcd-{raw_username}"
    assert c.DockerSpawner.image == "localhost/mlmcourse:test"
    assert c.DockerSpawner.pull_policy == "never" and c.DockerSpawner.remove is True
    uid = containers.user_id(tmp_path)
    assert c.DockerSpawner.extra_create_kwargs == {"user": f"{uid}:{uid}"}
    services = {s["name"]: s for s in c.JupyterHub.services}
    assert set(services) == {"hubctl", "idle-culler", "podman", "ngshare"}
    assert services["ngshare"]["url"].startswith("http://10.89.65.1:")
    assert "--admins" in services["ngshare"]["command"]

    student, staff = Spawner("ann", ["bert_mlm_course-students"]), Spawner(
        "dan", ["bert_mlm_course-staff"])
    for spawner in (student, staff):
        c.Spawner.pre_spawn_hook(spawner)
        home = tmp_path / "homes" / spawner.user.name
        assert spawner.volumes[str(home)] == "/home/jovyan"
        uid = containers.user_id(tmp_path)  # no account of the host holds it
        assert home.stat().st_uid == uid and oct(home.stat().st_mode & 0o777) == "0o700"
        assert not containers.id_holders(uid)
        passwd = Path(next(host for host, inside in spawner.read_only_volumes.items()
                           if inside == "/etc/passwd")).read_text()
        assert f"jovyan:x:{uid}:{uid}::/home/jovyan:" in passwd
        assert spawner.environment["MLMCOURSE_NGSHARE_URL"].endswith("/services/ngshare/")
        assert "MLMCOURSE_EXCHANGE" not in spawner.environment
    assert str(tmp_path / "course") not in student.volumes, "a student got the course folder"
    assert staff.volumes[str(tmp_path / "course")] == "/home/jovyan/bert_mlm_course"
    assert (student.mem_limit, student.cpu_limit) == ("2G", 1.0)
    assert student.extra_host_config == {}, "students' containers keep podman's restrictions"
    assert staff.extra_host_config["security_opt"] == ["unmask=/proc/*"]
    assert student.environment["JUPYTER_CONFIG_DIR"] == "/opt/course/roles/student"
    assert staff.environment["JUPYTER_CONFIG_DIR"] == "/opt/course/roles/instructor"


def test_the_grading_log_keeps_grading_runs_at_info_and_above_only():
    """logs/grading.log: what collect, autograde, feedback, export and the engine say at INFO or
    above; not DEBUG, not the Assignment List's polling of the exchange, not requests."""
    import logging
    import sys

    sys.path.insert(0, str(DEPLOY))
    from mlmcourse_hub import GradingRecords

    site = "/venv/lib/python3.11/site-packages"

    def kept(path: str, level: int = logging.INFO) -> bool:
        record = logging.LogRecord("ServerApp", level, path, 1, "message", None, None)
        return GradingRecords().filter(record)

    assert kept(f"{site}/nbgrader/converters/autograde.py")
    assert kept(f"{site}/nbgrader/exchange/default/collect.py", logging.WARNING)
    assert kept("/srv/hub/python/mlmcourse/grader/engine/submission.py")
    assert not kept(f"{site}/nbgrader/converters/autograde.py", logging.DEBUG)
    assert not kept(f"{site}/nbgrader/exchange/default/list.py")
    assert not kept(f"{site}/nbgrader/server_extensions/assignment_list/handlers.py")
    assert not kept(f"{site}/jupyter_server/serverapp.py")


def test_the_hubs_folder_lies_outside_the_repository_which_set_up_closes():
    """Users' servers run from the hub's runtime/, never from the repository, which set-up and
    every start close to other users (tests/test_hub.py walks the machine as a student)."""
    import pytest

    hubctl = runpy.run_path(str(DEPLOY / "hubctl.py"))
    with pytest.raises(hubctl["HubError"], match="inside the repository"):
        hubctl["user_python"](ROOT / "build" / "hub")
    python = hubctl["user_python"](Path("/srv/some-hub"))
    assert all(not value.startswith(str(ROOT)) for value in python["env"].values()), python
    assert not python["executable"].startswith(str(ROOT))


def test_two_container_hubs_get_their_own_bridges(tmp_path):
    """Names from each hub's folder, subnets the first that no podman network uses: a second
    hub on the machine (another course, a test beside a class) collides with neither."""
    import sys

    import pytest

    sys.path.insert(0, str(DEPLOY))
    import containers

    if containers.why_not_here():
        pytest.skip(containers.why_not_here())
    first, second = tmp_path / "one", tmp_path / "two"
    made = []
    try:
        for hub in (first, second):
            network = containers.choose_network(hub)
            containers.ensure_network(network)
            made.append(network)
        assert made[0]["name"] != made[1]["name"] and made[0]["subnet"] != made[1]["subnet"]
        assert containers.choose_network(first) == made[0], "the same hub keeps its bridge"
        assert containers.container_name(made[0], "ann") != containers.container_name(
            made[1], "ann")
    finally:
        for network in made:
            containers.remove_network(network)


def test_hub_stop_ends_the_services_a_hub_left_behind(tmp_path):
    """`make hub-stop` needs no answer from the hub: a service still running with the hub's
    folder on its command line (a hub killed before its clean-up), or the idle culler running in
    the hub's folder, is ended by its pid, and
    a process's descendants are found from /proc (what the stop ends after the hub)."""
    import subprocess
    import sys

    hubctl = runpy.run_path(str(DEPLOY / "hubctl.py"))
    service = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                                str(tmp_path / "ngshare_service.py"), "--database",
                                f"sqlite:///{tmp_path}/state/ngshare.sqlite"])
    # the idle culler names no folder: it is the hub's by running in it (another hub's is not)
    (tmp_path / "state").mkdir(exist_ok=True)
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)", "jupyterhub_idle_culler"]
    culler = subprocess.Popen(sleeper, cwd=tmp_path / "state")
    others = subprocess.Popen(sleeper, cwd=tmp_path.parent)
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run("
                               "[sys.executable, '-c', 'import time; time.sleep(60)'])"])
    try:
        deadline = 50
        while not hubctl["descendants"](parent.pid) and deadline:
            __import__("time").sleep(0.1)
            deadline -= 1
        assert len(hubctl["descendants"](parent.pid)) == 1
        assert sorted(hubctl["services_of"](tmp_path)) == sorted([service.pid, culler.pid])
        assert hubctl["stop_everything"](tmp_path) == []
        assert service.wait(timeout=15) == -15 and culler.wait(timeout=15) == -15  # SIGTERM
        assert hubctl["services_of"](tmp_path) == [] and others.poll() is None
    finally:
        others.kill()
        for child in hubctl["descendants"](parent.pid):
            __import__("os").kill(child, 9)
        for process in (service, parent):
            process.kill()
            process.wait()


def test_feedback_on_a_hub_names_the_student_and_is_written_for_the_id(tmp_path):
    """On a hub of LMS launches the id is a hub name (lti-...): feedback shows the gradebook's
    name, and nbgrader still gets the id back (it names the folder the page is written to)."""
    import sys

    from nbgrader.api import Gradebook

    from mlmcourse.grader.results.feedback import ReadableFeedback

    sys.path.insert(0, str(DEPLOY))
    from mlmcourse_hub import NamedFeedbackExporter, NamedStudent
    from test_feedback_names import FIRST, graded_notebook

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gradebook:
        gradebook.add_student("lti-stu-103", first_name="Ann", last_name="Example")
    given = {"student": "lti-stu-103", "db_url": url, "notebook": FIRST,
             "assignment": "bert_mlm", "score": 0.0, "max_score": 24.0, "late_penalty": 0.0}
    nb, resources = ReadableFeedback().preprocess(graded_notebook("reference"),
                                                  {"nbgrader": given})
    nb, resources = NamedStudent()(nb, resources)  # (as nbconvert calls it: enabled)
    assert resources["nbgrader"]["student"] == "Ann Example"
    assert given["student"] == "lti-stu-103"  # (the converter's own dict is left alone)
    page, back = NamedFeedbackExporter().from_notebook_node(nb, resources=resources)
    assert "Feedback for <b>Ann Example</b>" in page and "lti-stu-103" not in page
    assert back["nbgrader"]["student"] == "lti-stu-103"
    _, unknown = NamedStudent()(nb, {"nbgrader": {**given, "student": "nobody"}})
    assert unknown["nbgrader"]["student"] == "nobody"


def test_a_wait_for_the_course_image_lends_the_build_its_priority(tmp_path, monkeypatch):
    """`make test` builds the image at the lowest CPU priority, in a process group of its own;
    a container test that must wait for it raises the whole build to the test's own priority
    (raising a priority needs root, as the image's podman does)."""
    import os
    import subprocess
    import sys

    import pytest

    if os.geteuid() != 0:
        pytest.skip("raising a process's priority needs root")
    image = containers_module().image
    monkeypatch.setattr(image, "BUILD", tmp_path)
    holder = subprocess.Popen(
        ["nice", "-n", "19", sys.executable, "-c",
         "import sys, time; sys.path.insert(0, sys.argv[1]); import image;"
         "image.BUILD = __import__('pathlib').Path(sys.argv[2])\n"
         "with image._one_at_a_time():\n print('held', flush=True); time.sleep(3);"
         " print(__import__('os').getpriority(0, 0))",
         str(image.HERE), str(tmp_path)],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert os.getpriority(os.PRIO_PROCESS, holder.pid) == 19
        with image._one_at_a_time():  # waits for the holder, having raised it
            assert holder.wait(timeout=10) == 0
        assert int(holder.stdout.read()) == os.getpriority(os.PRIO_PROCESS, 0) < 19
        assert (tmp_path / ".lock").read_text().strip() == str(os.getpgrp())
    finally:
        holder.kill()
