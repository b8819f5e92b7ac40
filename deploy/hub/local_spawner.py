"""The course's hub with each user's server a process of their own Unix user (the default).

jupyterhub_config.py calls `configure` when course.json's spawner is "local": each user's
JupyterLab runs as that Unix user in their home folder (the hub runs as root); the exchange is
the shared folder exchange/ under the hub (modes and the staff group keep students apart); the
staff's servers grade in the sandbox on this machine. Which nbgrader panels a user gets is
decided by the role's folder.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner
from user_limits import LIMITS, UserCgroups

SERVER_LOG_BYTES, SERVER_LOG_KEEP = 10_000_000, 3


def server_log(logs: Path, name: str):
    """logs/servers/<user>.log, opened by the hub (root) and handed to the server as its stdout
    and stderr: the user's process writes to it but cannot open it (root:staff, 0640). Rotated
    when a server starts and the file is past 10 MB (3 kept)."""
    folder = logs / "servers"
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


def configure(c, hub: Path, course: dict, course_dir: str, role, home) -> None:
    """The spawner's settings (c: the hub's traitlets config; role and home: the hub's)."""
    logs = hub / "logs"
    cgroups = UserCgroups(course["course_id"])
    no_limits = cgroups.why_not()  # (None: limits can be set here)

    class CourseSpawner(LocalProcessSpawner):
        """A process of the user, in the user's cgroup with the role's memory and CPU."""

        async def start(self):
            url = await super().start()
            if no_limits is None:
                cgroups.place(self.user.name, self.pid, LIMITS[role(self)])
            return url

    if no_limits:
        print(f"mlmcourse hub: no memory or CPU limit per user here: {no_limits}",
              file=sys.stderr)
    c.JupyterHub.spawner_class = CourseSpawner
    python = course["python"]  # the users' interpreter, with the hub's runtime/ (hubctl)
    command = [python["executable"], "-m", "jupyterhub.singleuser"]
    c.Spawner.cmd = command
    c.Spawner.default_url = "/lab"
    c.Spawner.notebook_dir = "~"
    c.Spawner.start_timeout = 120
    c.Spawner.http_timeout = 120
    c.Spawner.environment = {
        # the venv's commands, copied for the users' interpreter (hubctl.write_script_wrappers)
        "PATH": f"{hub / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        **python["env"],
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(hub / "python"), python["env"].get("PYTHONPATH")])),
        # One thread per kernel: many users share the cores, and torch's default of one thread
        # per core made three Validates at once miss their 120 s cell timeout on a 2-core hub.
        "OMP_NUM_THREADS": "1",
        "MLMCOURSE_COURSE_ID": course["course_id"],
        "MLMCOURSE_COURSE_DIR": course_dir,
        "MLMCOURSE_EXCHANGE": str(hub / "exchange"),
        "MLMCOURSE_HUB_LOGS": str(logs),
        # Server extensions, lab plugins and nbgrader settings of the role (read-only) ...
        "JUPYTER_CONFIG_DIR": lambda spawner: str(hub / "roles" / role(spawner)),
        # ... and each user's own JupyterLab settings in their home folder.
        "JUPYTERLAB_SETTINGS_DIR": lambda spawner: f"{home(spawner)}/.jupyter/lab/user-settings",
        "JUPYTERLAB_WORKSPACES_DIR": lambda spawner: f"{home(spawner)}/.jupyter/lab/workspaces",
    }

    def prepare_server(spawner) -> None:
        """The server's log file; for staff, the course folder and umask 007.

        TAs work in the course folder itself (the formgrader needs the course inside the
        server's root, and a TA cannot list the instructor's home; their server and terminals
        start there); staff share what they write there with the group (umask 007)."""
        previous = getattr(spawner, "_mlmcourse_log", None)
        if previous is not None:
            previous.close()  # the last server's copy: that server has stopped
        spawner._mlmcourse_log = server_log(logs, spawner.user.name)
        spawner.popen_kwargs = {"stdout": spawner._mlmcourse_log, "stderr": subprocess.STDOUT}
        spawner.cmd = list(command)
        spawner.notebook_dir = "~"
        if role(spawner) != "instructor":
            return
        start = "umask 007"
        if spawner.user.name != course["instructor"]:
            # and in the course folder: a terminal opens where the server runs, and nbgrader
            # commands there read the course's nbgrader_config.py
            spawner.notebook_dir = course_dir
            start = f"cd {shlex.quote(course_dir)} && {start}"
        spawner.cmd = ["/bin/sh", "-c", f'{start} && exec "$0" "$@"', *command]

    c.Spawner.pre_spawn_hook = prepare_server
