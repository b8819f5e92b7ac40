"""JupyterHub for one course: Unix logins, the class as hub groups, nbgrader per group.

Started by `hubctl.py start` (`make hub`), which sets MLMCOURSE_HUB to the hub folder that
`hubctl.py setup` prepared: course.json (the course id, its instructor, the users' Python),
roles/ (each role's Jupyter configuration), python/ (the course package, no solutions),
exchange/, logs/ and state/. Who is in the class is kept by the system, not by a file here:
the Unix groups <course_id>-staff and <course_id>-students say who may log in (checked at
each login), and the hub groups of the same names (loaded from them at start, changed by
`hubctl.py roster` through the hub's REST API while it runs) say which role each server gets.
What a real deployment changes is in the README ("The course on a JupyterHub").
"""

import grp
import json
import os
import pwd
import shlex
import subprocess
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (provided by traitlets when JupyterHub loads this file)

HUB = Path(os.environ["MLMCOURSE_HUB"])
REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent  # the hub runs in the course's virtual environment
COURSE = json.loads((HUB / "course.json").read_text())
COURSE_ID = COURSE["course_id"]
STAFF, STUDENTS = f"{COURSE_ID}-staff", f"{COURSE_ID}-students"
# The course folder (hubctl.py setup made it): the instructor's, shared with TAs by group.
COURSE_DIR = os.path.join(pwd.getpwnam(COURSE["instructor"]).pw_dir, COURSE_ID)
LOGS = HUB / "logs"


def port(name: str, default: int) -> int:
    return int(os.environ.get(f"MLMCOURSE_HUB_{name}", default))


def unix_members(group: str) -> list[str]:
    try:
        return sorted(grp.getgrnam(group).gr_mem)
    except KeyError:
        return []


# Local only: the proxy, the hub and every user's server listen on 127.0.0.1 (no TLS here).
c.JupyterHub.bind_url = f"http://127.0.0.1:{port('PORT', 8000)}"
# The address users' browsers use (behind a TLS proxy: https://hub.school.example); the staff's
# servers let only their own lab at that address frame the formgrader.
PUBLIC_URL = os.environ.get("MLMCOURSE_HUB_PUBLIC_URL", c.JupyterHub.bind_url).rstrip("/")
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{port('HUB_PORT', 8081)}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port('API_PORT', 8001)}"
c.ConfigurableHTTPProxy.command = [
    str(REPO / "build/node/node_modules/.bin/configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(HUB / "state" / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{HUB / 'state' / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(HUB / "state" / "cookie_secret")
c.JupyterHub.pid_file = str(HUB / "state" / "jupyterhub.pid")

# Who may log in: each user with their own Unix password (PAM, the `login` service), and only
# members of the course's two Unix groups; root and every other account of the machine are
# refused. The groups are read at each login, so `hubctl.py roster` admits or turns away a user
# without a restart.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {STAFF, STUDENTS}
c.PAMAuthenticator.open_sessions = False

# The roles as hub groups (what the spawner reads to pick a user's nbgrader panels), loaded from
# the Unix groups at start; hubctl.py roster keeps them in step while the hub runs.
c.JupyterHub.load_groups = {
    STAFF: {"users": unix_members(STAFF), "properties": {"role": "instructor"}},
    STUDENTS: {"users": unix_members(STUDENTS), "properties": {"role": "student"}},
}

# hubctl.py roster talks to the hub's REST API as a service with its own token (state/, root
# only): it may create and delete users, change groups and stop servers, nothing else.
TOKEN_FILE = HUB / "state" / "hubctl_token"
if TOKEN_FILE.is_file():
    c.JupyterHub.services = [{"name": "hubctl", "api_token": TOKEN_FILE.read_text().strip()}]
    c.JupyterHub.load_roles = [{
        "name": "hubctl-roster", "services": ["hubctl"],
        "scopes": ["admin:users", "admin:groups", "admin:servers"],
    }]
# Where hubctl.py finds the running hub's API (the ports may come from the environment).
(HUB / "state" / "api_url").write_text(f"{c.JupyterHub.hub_bind_url}/hub/api\n")

# A restart of the hub (a new configuration, an upgrade) leaves users' servers and the proxy
# running: their kernels survive it, and the hub finds them again from its database.
c.JupyterHub.cleanup_servers = False
c.JupyterHub.cleanup_proxy = False
# The proxy that keeps running must accept the next hub: one token for both, kept in state/
# (otherwise each start makes a new one, and a restarted hub is refused by the running proxy).
PROXY_TOKEN = HUB / "state" / "proxy_token"
if PROXY_TOKEN.is_file():
    c.ConfigurableHTTPProxy.auth_token = PROXY_TOKEN.read_text().strip()

# Logs with a place (README "Logs"): the hub's own log in logs/jupyterhub.log, rotated (5 x
# 10 MB), readable by the staff group only (logs/ is root:<course>-staff, 2770).
c.JupyterHub.logging_config = {
    "formatters": {"file": {
        "format": "[%(levelname)1.1s %(asctime)s.%(msecs).03d %(name)s] %(message)s",
        "datefmt": "%Y-%m-%d %H:%M:%S"}},
    "handlers": {"file": {
        "class": "logging.handlers.RotatingFileHandler", "formatter": "file", "level": "INFO",
        "filename": str(LOGS / "jupyterhub.log"), "maxBytes": 10_000_000, "backupCount": 5}},
    "loggers": {"JupyterHub": {"handlers": ["console", "file"]}},
}

# Each user's JupyterLab runs as that Unix user in their home folder (the local process spawner;
# the hub runs as root). Which nbgrader panels a user gets is decided by the role's folder.
c.JupyterHub.spawner_class = "localprocess"
PYTHON = COURSE["python"]  # the venv's interpreter, or the system's with the venv's packages
c.Spawner.cmd = [PYTHON["executable"], "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120


def role(spawner) -> str:
    """The role of the hub group the user is in: staff (instructor and TAs) or student. Staff
    must also be in the Unix staff group now: a TA turned student while the hub was down is
    still in the hub's staff group (load_groups only adds), and must not get the formgrader."""
    in_hub_group = STAFF in {g.name for g in spawner.user.groups}
    return "instructor" if in_hub_group and spawner.user.name in unix_members(STAFF) else "student"


def home(spawner) -> str:
    return pwd.getpwnam(spawner.user.name).pw_dir


c.Spawner.environment = {
    # the venv's commands (or, with the system's Python, wrappers of them in bin/) come first
    "PATH": f"{HUB / 'bin'}:{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
    **PYTHON["env"],
    "PYTHONPATH": os.pathsep.join(
        filter(None, [str(HUB / "python"), PYTHON["env"].get("PYTHONPATH")])),
    "MLMCOURSE_COURSE_ID": COURSE_ID,
    "MLMCOURSE_COURSE_DIR": COURSE_DIR,
    "MLMCOURSE_EXCHANGE": str(HUB / "exchange"),
    "MLMCOURSE_HUB_LOGS": str(LOGS),
    # the address the browser uses: the staff's formgrader may be framed by their own lab only
    "MLMCOURSE_HUB_PUBLIC_URL": PUBLIC_URL,
    # Server extensions, lab plugins and nbgrader settings of the role (read-only, shared) ...
    "JUPYTER_CONFIG_DIR": lambda spawner: str(HUB / "roles" / role(spawner)),
    # ... and each user's own JupyterLab settings in their home folder.
    "JUPYTERLAB_SETTINGS_DIR": lambda spawner: f"{home(spawner)}/.jupyter/lab/user-settings",
    "JUPYTERLAB_WORKSPACES_DIR": lambda spawner: f"{home(spawner)}/.jupyter/lab/workspaces",
}

SERVER_LOG_BYTES, SERVER_LOG_KEEP = 10_000_000, 3


def server_log(name: str):
    """logs/servers/<user>.log, opened by the hub (root) and handed to the server as its stdout
    and stderr: the user's process writes to it but cannot open it (root:staff, 0640). Rotated
    when a server starts and the file is past 10 MB (3 kept)."""
    folder = LOGS / "servers"
    folder.mkdir(exist_ok=True)  # (setup made it: root:<course>-staff, 2750)
    path = folder / f"{name}.log"
    if path.exists() and path.stat().st_size > SERVER_LOG_BYTES:
        for n in range(SERVER_LOG_KEEP - 1, 0, -1):
            older = folder / f"{name}.log.{n}"
            if older.exists():
                older.rename(folder / f"{name}.log.{n + 1}")
        path.rename(folder / f"{name}.log.1")
    handle = open(path, "ab", buffering=0)  # noqa: SIM115 (the server holds it while it runs)
    os.chmod(path, 0o640)
    return handle


def prepare_server(spawner) -> None:
    """The server's log file; for staff, the course folder and umask 007.

    TAs work in the course folder itself (the formgrader needs the course inside the server's
    root, and a TA cannot list the instructor's home; their server and terminals start there);
    staff share what they write there with the group (umask 007)."""
    previous = getattr(spawner, "_mlmcourse_log", None)
    if previous is not None:
        previous.close()  # the last server's copy: that server has stopped
    spawner._mlmcourse_log = server_log(spawner.user.name)
    spawner.popen_kwargs = {"stdout": spawner._mlmcourse_log, "stderr": subprocess.STDOUT}
    spawner.cmd = list(c.Spawner.cmd)
    spawner.notebook_dir = c.Spawner.notebook_dir
    if role(spawner) != "instructor":
        return
    start = "umask 007"
    if spawner.user.name != COURSE["instructor"]:
        # and in the course folder: a terminal opens where the server runs, and nbgrader
        # commands there read the course's nbgrader_config.py
        spawner.notebook_dir = COURSE_DIR
        start = f"cd {shlex.quote(COURSE_DIR)} && {start}"
    spawner.cmd = ["/bin/sh", "-c", f'{start} && exec "$0" "$@"', *c.Spawner.cmd]


c.Spawner.pre_spawn_hook = prepare_server
