"""A student's server on the course's hub, beside jupyter_server_config.json.

Terminals: a non-login shell, so the server's PATH (the course's Python first) holds in a
JupyterLab terminal; a login shell resets it from /etc/profile.
"""

c = get_config()  # noqa: F821  (provided by traitlets when the server loads this file)

c.ServerApp.terminado_settings = {"shell_command": ["/bin/bash", "-i"]}
