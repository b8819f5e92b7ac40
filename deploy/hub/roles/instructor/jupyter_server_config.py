"""The staff's servers on the course's hub (instructor and TAs), beside jupyter_server_config.json.

The formgrader: JupyterLab shows it in a frame of the lab's page (Nbgrader > Formgrader).
JupyterHub forbids framing a user's server (`frame-ancestors 'none'`), because every server of
the hub shares one origin and a page of one user could frame another's; the staff's servers
allow it for their own lab's address only (the hub's public URL and the user's own prefix), so
no other user's page can frame them.

Terminals: a non-login shell, so the server's PATH (the course's nbgrader first) holds in a
JupyterLab terminal; a login shell resets it from /etc/profile ("nbgrader: command not found").
"""

import os

c = get_config()  # noqa: F821  (provided by traitlets when the server loads this file)

origin = os.environ.get("MLMCOURSE_HUB_PUBLIC_URL", "").rstrip("/")
prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/")
if origin:
    c.ServerApp.tornado_settings = {
        "headers": {"Content-Security-Policy": f"frame-ancestors {origin}{prefix}"}}
c.ServerApp.terminado_settings = {"shell_command": ["/bin/bash", "-i"]}

# Grading runs (the formgrader's buttons: collect, autograde, feedback) also go to the hub's
# logs/grading.log, which only staff can read (the server's whole log is logs/servers/<user>.log).
logs = os.environ.get("MLMCOURSE_HUB_LOGS")
if logs:
    user = os.environ.get("JUPYTERHUB_USER", "?")
    c.ServerApp.logging_config = {
        "filters": {"grading": {"()": "mlmcourse_hub.GradingRecords"}},
        "formatters": {"grading": {
            "format": f"[%(asctime)s {user} %(levelname)s] %(message)s",
            "datefmt": "%Y-%m-%d %H:%M:%S%z"}},
        "handlers": {"grading": {
            "class": "logging.handlers.WatchedFileHandler", "formatter": "grading",
            "filters": ["grading"], "filename": os.path.join(logs, "grading.log")}},
        "loggers": {"ServerApp": {"handlers": ["console", "grading"]}},
    }
