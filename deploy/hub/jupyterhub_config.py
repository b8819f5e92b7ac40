"""JupyterHub for one course: system users, nbgrader's exchange, the nbgrader panels per role.

Started by `hubctl.py start` (`make hub`), which sets MLMCOURSE_HUB to the hub folder that
`hubctl.py setup` prepared: class.json (who is instructor, TA, student), roles/ (each role's
Jupyter configuration), python/ (the course package, no solutions), exchange/ and state/.
What a real deployment changes is in the README ("The course on a JupyterHub").
"""

import json
import os
import pwd
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (provided by traitlets when JupyterHub loads this file)

HUB = Path(os.environ["MLMCOURSE_HUB"])
REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent  # the hub runs in the course's virtual environment
CLASS = json.loads((HUB / "class.json").read_text())
STAFF = {CLASS["instructor"], *CLASS["tas"]}
# The course folder (hubctl.py setup made it): the instructor's, shared with TAs by group.
COURSE_DIR = os.path.join(pwd.getpwnam(CLASS["instructor"]).pw_dir, CLASS["course_id"])


def port(name: str, default: int) -> int:
    return int(os.environ.get(f"MLMCOURSE_HUB_{name}", default))


# Local only: the proxy, the hub and every user's server listen on 127.0.0.1 (no TLS here).
c.JupyterHub.bind_url = f"http://127.0.0.1:{port('PORT', 8000)}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{port('HUB_PORT', 8081)}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port('API_PORT', 8001)}"
c.ConfigurableHTTPProxy.command = [
    str(REPO / "build/node/node_modules/.bin/configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(HUB / "state" / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{HUB / 'state' / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(HUB / "state" / "cookie_secret")
c.JupyterHub.pid_file = str(HUB / "state" / "jupyterhub.pid")

# Who may log in: the class list. One shared password (at least 8 characters) stands in for the
# school's login; a real deployment uses PAM, LDAP or OAuth (README).
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = os.environ["MLMCOURSE_HUB_PASSWORD"]
c.Authenticator.allowed_users = STAFF | set(CLASS["students"])

# Each user's JupyterLab runs as that Unix user in their home folder (the local process spawner;
# the hub runs as root). Which nbgrader panels a user gets is decided by the role's folder.
c.JupyterHub.spawner_class = "localprocess"
PYTHON = CLASS["python"]  # the venv's interpreter, or the system's with the venv's packages
c.Spawner.cmd = [PYTHON["executable"], "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120


def role(spawner) -> str:
    return "instructor" if spawner.user.name in STAFF else "student"


def home(spawner) -> str:
    return pwd.getpwnam(spawner.user.name).pw_dir


c.Spawner.environment = {
    # the venv's commands (or, with the system's Python, wrappers of them in bin/) come first
    "PATH": f"{HUB / 'bin'}:{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
    **PYTHON["env"],
    "PYTHONPATH": os.pathsep.join(
        filter(None, [str(HUB / "python"), PYTHON["env"].get("PYTHONPATH")])),
    "MLMCOURSE_COURSE_ID": CLASS["course_id"],
    "MLMCOURSE_COURSE_DIR": COURSE_DIR,
    "MLMCOURSE_EXCHANGE": str(HUB / "exchange"),
    # Server extensions, lab plugins and nbgrader settings of the role (read-only, shared) ...
    "JUPYTER_CONFIG_DIR": lambda spawner: str(HUB / "roles" / role(spawner)),
    # ... and each user's own JupyterLab settings in their home folder.
    "JUPYTERLAB_SETTINGS_DIR": lambda spawner: f"{home(spawner)}/.jupyter/lab/user-settings",
    "JUPYTERLAB_WORKSPACES_DIR": lambda spawner: f"{home(spawner)}/.jupyter/lab/workspaces",
}


def staff_server(spawner) -> None:
    """TAs work in the course folder itself (the formgrader needs the course inside the
    server's root, and a TA cannot list the instructor's home); staff share what they write
    there with the group (umask 007)."""
    if spawner.user.name not in STAFF:
        return
    if spawner.user.name != CLASS["instructor"]:
        spawner.notebook_dir = COURSE_DIR
    spawner.cmd = ["/bin/sh", "-c", 'umask 007 && exec "$0" "$@"', *c.Spawner.cmd]


c.Spawner.pre_spawn_hook = staff_server
