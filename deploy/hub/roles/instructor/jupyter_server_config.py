"""The staff's servers on the course's hub (instructor and TAs), beside jupyter_server_config.json.

The formgrader: Nbgrader > Formgrader opens it in a browser tab of its own (the server
extension formgrader_tab, enabled in jupyter_server_config.json: JupyterHub forbids framing).

Terminals: a non-login shell, so the server's PATH (the course's nbgrader first) holds in a
JupyterLab terminal; a login shell resets it from /etc/profile ("nbgrader: command not found").
"""

import os

c = get_config()  # noqa: F821  (provided by traitlets when the server loads this file)

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
