"""The course's settings for the Python environment itself (not for one course folder).

nbgrader reads `{sys.prefix}/etc/jupyter/nbgrader_config.py` wherever it runs, so installing the
course's student settings there makes Validate tell the truth in any folder: a student's home
on a hub, the `make lab` kit, a self-study copy of the release elsewhere.

Every Jupyter server started from the environment also loads the course's front for nbgrader's
Validate (`validate_front`: the dialog opens with how many checks fail, each message before its
code), enabled by a file in `{sys.prefix}/etc/jupyter/jupyter_server_config.d/`, the folder
where nbgrader enables its own server extensions.

And the environment's tools find each other when one is started by its path from a shell that
never activated the environment: nbgrader starts `alembic` by name when it makes a gradebook, so
`.venv/bin/nbgrader db student import roster.csv` (the README's command) failed with
FileNotFoundError and left a gradebook without its version table.
"""

from __future__ import annotations

import json
import shutil
import sys
import sysconfig
from pathlib import Path

STUDENT_CONFIG = Path(__file__).with_name("jupyter") / "nbgrader_config.py"


def environment_config_path(prefix: str | Path = sys.prefix) -> Path:
    """Where nbgrader looks for the environment's own configuration."""
    return Path(prefix) / "etc" / "jupyter" / "nbgrader_config.py"


def install_environment_config(prefix: str | Path = sys.prefix) -> Path:
    """Copy the course's student settings into the environment and enable the Validate front
    (idempotent). Returns the settings' path."""
    target = environment_config_path(prefix)
    if not target.is_file() or target.read_bytes() != STUDENT_CONFIG.read_bytes():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(STUDENT_CONFIG, target)
    install_validate_front(prefix)
    return target


VALIDATE_FRONT = "mlmcourse.course.validate_front"
VALIDATE_FRONT_CONFIG = json.dumps(
    {"ServerApp": {"jpserver_extensions": {VALIDATE_FRONT: True}}}, indent=2) + "\n"


def validate_front_config_path(prefix: str | Path = sys.prefix) -> Path:
    """The file that enables the Validate front for every Jupyter server of the environment."""
    return Path(prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "mlmcourse.json"


def install_validate_front(prefix: str | Path = sys.prefix) -> Path:
    """Enable `validate_front` in the environment's Jupyter servers (idempotent)."""
    target = validate_front_config_path(prefix)
    if not target.is_file() or target.read_text() != VALIDATE_FRONT_CONFIG:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(VALIDATE_FRONT_CONFIG)
    return target


# A line that Python's `site` runs at every start of the environment's interpreter (a `.pth`
# line that begins with `import`): the environment's bin/ first on PATH, as activating it does,
# each entry once and no empty one (an empty entry would mean the current folder).
TOOLS_ON_PATH = "mlmcourse-tools-on-path.pth"
TOOLS_ON_PATH_LINE = (
    "import os, sys; os.environ['PATH'] = os.pathsep.join(dict.fromkeys(["
    "os.path.join(sys.prefix, 'bin'), "
    "*(entry for entry in os.environ.get('PATH', '').split(os.pathsep) if entry)]))\n"
)


def install_tools_on_path(prefix: str | Path = sys.prefix) -> Path:
    """Write `TOOLS_ON_PATH` into the environment's site-packages (idempotent)."""
    purelib = sysconfig.get_paths(vars={"base": str(prefix), "platbase": str(prefix)})["purelib"]
    target = Path(purelib) / TOOLS_ON_PATH
    if not target.is_file() or target.read_text() != TOOLS_ON_PATH_LINE:
        target.write_text(TOOLS_ON_PATH_LINE)
    return target
