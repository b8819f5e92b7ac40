"""The course's settings for the Python environment itself (not for one course folder).

nbgrader reads `{sys.prefix}/etc/jupyter/nbgrader_config.py` wherever it runs, so installing the
course's student settings there makes Validate tell the truth in any folder: a student's home
on a hub, the `make lab` kit, a self-study copy of the release elsewhere.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

STUDENT_CONFIG = Path(__file__).with_name("jupyter") / "nbgrader_config.py"


def environment_config_path(prefix: str | Path = sys.prefix) -> Path:
    """Where nbgrader looks for the environment's own configuration."""
    return Path(prefix) / "etc" / "jupyter" / "nbgrader_config.py"


def install_environment_config(prefix: str | Path = sys.prefix) -> Path:
    """Copy the course's student settings into the environment (idempotent)."""
    target = environment_config_path(prefix)
    if not target.is_file() or target.read_bytes() != STUDENT_CONFIG.read_bytes():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(STUDENT_CONFIG, target)
    return target
