"""Where things live in the course directory (the repository root)."""

from __future__ import annotations

import os
from pathlib import Path

ASSIGNMENT = "bert_mlm"
PRIVATE = 0o700  # a folder of solutions, submissions or grades: its owner's alone


def private_folder(folder: Path) -> Path:
    """Make `folder` (and its parents) and give it mode 0700 whatever the umask: what a student
    on the same machine can read is decided here, not by the umask of whoever made it."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, PRIVATE)
    return folder


def find_root(start: Path | None = None) -> Path:
    """The course root: the nearest folder above `start` that holds nbgrader_config.py."""
    env_root = os.environ.get("MLMCOURSE_ROOT")
    if env_root:
        return Path(env_root).resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "nbgrader_config.py").is_file() and (folder / "source").is_dir():
            return folder
    raise FileNotFoundError(
        f"no course directory (a folder with nbgrader_config.py and source/) above {here}"
    )


def installed_course_root() -> Path | None:
    """The course folder this package was installed from (`pip install -e`, as `make lab` and
    `make test` do), or None where the package stands alone (a wheel, the hub's copy)."""
    folder = Path(__file__).resolve().parents[2]
    is_course = (folder / "nbgrader_config.py").is_file() and (folder / "source").is_dir()
    return folder if is_course else None


def find_course(start: Path | None = None) -> Path:
    """The course around `start` (or the working folder), else the one this package came from:
    a learner's copy of a notebook may live anywhere on the machine."""
    try:
        return find_root(start)
    except FileNotFoundError as missing:
        installed = installed_course_root()
        if installed is None:
            raise FileNotFoundError(
                f"{missing}; run this from the course folder or set MLMCOURSE_ROOT to it"
            ) from None
        return installed


def source_notebooks(root: Path) -> list[Path]:
    """The instructor notebooks of the series, in order."""
    return sorted((root / "source" / ASSIGNMENT).glob("[0-9][0-9]_*.ipynb"))


def notebook_names(root: Path) -> list[str]:
    return [path.stem for path in source_notebooks(root)]
