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
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (provided by traitlets when JupyterHub loads this file)

HUB = Path(os.environ["MLMCOURSE_HUB"])
REPO = Path(__file__).resolve().parents[2]
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
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{port('HUB_PORT', 8081)}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port('API_PORT', 8001)}"
c.ConfigurableHTTPProxy.command = [
    str(REPO / "build/node/node_modules/.bin/configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(HUB / "state" / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{HUB / 'state' / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(HUB / "state" / "cookie_secret")
c.JupyterHub.pid_file = str(HUB / "state" / "jupyterhub.pid")

# The one switch of logins (course.json's "auth"): Unix users with PAM (the default), or
# launches from the school's LMS (LTI 1.3: lti_auth.py, README "From the LMS and back").
AUTH = COURSE.get("auth", "pam")
SPAWNER = COURSE.get("spawner", "local")
sys.path.insert(0, str(Path(__file__).resolve().parent))
if AUTH not in ("pam", "lti"):
    raise SystemExit(f"course.json: auth must be pam or lti, not {AUTH!r}")
if AUTH == "lti":
    import lti_auth

    lti_auth.configure(c, HUB, COURSE_ID, SPAWNER, set(COURSE.get("admins", [])))
else:
    # Who may log in: each user with their own Unix password (PAM, the `login` service), and only
    # members of the course's two Unix groups; root and every other account of the machine are
    # refused. The groups are read at each login, so `hubctl.py roster` admits or turns away a user
    # without a restart.
    c.JupyterHub.authenticator_class = "pam"
    c.PAMAuthenticator.allowed_groups = {STAFF, STUDENTS}
    c.PAMAuthenticator.open_sessions = False

# The roles as hub groups (what the spawner reads to pick a user's nbgrader panels), loaded from
# the Unix groups at start; hubctl.py roster keeps them in step while the hub runs. (In LTI mode
# each launch sets its user's group: the authenticator manages them, and none is loaded.)
if AUTH == "pam":
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

# The instructor is the hub's admin (the Admin page: every user's server, stop or start it);
# TAs are not, like students they use only their own server. In LTI mode nobody logs in with
# a Unix name: the hub names in course.json's "admins" (as lti-users.json names them), none by
# default; each launch sets it again, so a name taken out of the list is no admin next time.
c.Authenticator.admin_users = (set(COURSE.get("admins", [])) if AUTH == "lti"
                               else {COURSE["instructor"]})

# Idle culling, as TLJH does: a server with no activity (no kernel busy, no page open) for an
# hour is stopped, kernels and all; the home folder and the work in it stay. 0: never.
IDLE_SECONDS = int(os.environ.get("MLMCOURSE_HUB_IDLE_SECONDS", 3600))
if IDLE_SECONDS > 0:
    c.JupyterHub.services.append({"name": "idle-culler", "command": [
        sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE_SECONDS}",
        f"--cull-every={max(5, min(300, IDLE_SECONDS // 4))}"]})
    c.JupyterHub.load_roles.append({
        "name": "idle-culler", "services": ["idle-culler"],
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]})

# LTI mode: the tool's service, its JWKS for the LMS and the staff's page that sends grades back.
if AUTH == "lti":
    lti_auth.add_tool_service(c, HUB, STAFF, port("LTI_PORT", 8083))

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

def role(spawner) -> str:
    """The role of the hub group the user is in: staff (instructor and TAs) or student. Staff
    must also be in the Unix staff group now: a TA turned student while the hub was down is
    still in the hub's staff group (load_groups only adds), and must not get the formgrader."""
    in_hub_group = STAFF in {g.name for g in spawner.user.groups}
    return "instructor" if in_hub_group and spawner.user.name in unix_members(STAFF) else "student"


def home(spawner) -> str:
    return pwd.getpwnam(spawner.user.name).pw_dir


# The one switch (course.json's "spawner", set by `hubctl.py setup --spawner`): each user's
# server as a process of their own Unix user (local_spawner.py), or as a container of the
# course image (containers.py: podman, the ngshare exchange, no shared folder).
if AUTH == "lti":  # the launch's hub group decides; there is no Unix staff group to ask
    role = lti_auth.role_from_hub_group(STAFF)  # noqa: F811
if SPAWNER == "containers":
    import containers

    containers.configure(c, HUB, COURSE, role, {"hub": port("HUB_PORT", 8081),
                                                 "ngshare": port("NGSHARE_PORT", 8082)})
else:
    import local_spawner

    local_spawner.configure(c, HUB, COURSE, COURSE_DIR, role, home)

# Where hubctl.py finds the running hub's API (the ports may come from the environment; on
# containers the hub listens on the containers' gateway).
(HUB / "state" / "api_url").write_text(f"{c.JupyterHub.hub_bind_url}/hub/api\n")
