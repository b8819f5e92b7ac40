"""The hub's configuration, without a hub: who gets which nbgrader panels, what the hub starts.

(tests/test_hub.py runs the whole term on a real hub; this file needs no root, browser or npm.)
"""

from __future__ import annotations

import json
import runpy

from conftest import ROOT
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
    """deploy/hub/jupyterhub_config.py, run as JupyterHub runs it, on a made-up class."""
    (tmp_path / "class.json").write_text(json.dumps({
        "course_id": "bert_mlm_course", "instructor": "root", "tas": [],
        "students": ["ann", "bob"], "python": {"executable": "/usr/bin/python3", "env": {}},
    }))
    monkeypatch.setenv("MLMCOURSE_HUB", str(tmp_path))
    monkeypatch.setenv("MLMCOURSE_HUB_PASSWORD", "a-test-password")
    config = Config()
    runpy.run_path(str(DEPLOY / "jupyterhub_config.py"), {"get_config": lambda: config})
    return config


def test_the_hub_spawns_system_users_on_localhost_for_the_class_list(tmp_path, monkeypatch):
    c = hub_config(tmp_path, monkeypatch)
    assert c.JupyterHub.spawner_class == "localprocess"
    assert c.JupyterHub.bind_url.startswith("http://127.0.0.1:")
    assert c.Authenticator.allowed_users == {"root", "ann", "bob"}
    assert c.Spawner.cmd == ["/usr/bin/python3", "-m", "jupyterhub.singleuser"]
    env = c.Spawner.environment
    assert env["MLMCOURSE_EXCHANGE"] == str(tmp_path / "exchange")
    assert env["PYTHONPATH"] == str(tmp_path / "python")  # the package only, no course folder

    class Spawner:  # what the environment's callables are handed
        def __init__(self, name):
            self.user = type("User", (), {"name": name})()

    assert env["JUPYTER_CONFIG_DIR"](Spawner("ann")) == str(tmp_path / "roles" / "student")
    assert env["JUPYTER_CONFIG_DIR"](Spawner("root")) == str(tmp_path / "roles" / "instructor")


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
