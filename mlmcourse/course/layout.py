"""Where things live in the course directory (the repository root)."""

from __future__ import annotations

import os
from pathlib import Path

SERIES = "bert_mlm"  # the worked series: the assignment the samples answer, the reading edition
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


def assignments(root: Path, edition: str = "source") -> list[str]:
    """The course's assignments: every folder of ``source/`` (or of another edition, such as
    ``release/``, which a student's kit holds without source/) that holds a notebook, by name (a
    hidden folder, such as ``.ipynb_checkpoints``, is none)."""
    folder = Path(root) / edition
    if not folder.is_dir():
        return []
    return sorted(path.name for path in folder.iterdir()
                  if path.is_dir() and not path.name.startswith((".", "_"))
                  and any(_notebooks_in(path)))


def only_assignment(root: Path) -> str:
    """The course's assignment where it has exactly one; else a ValueError naming them (the
    caller must then say which)."""
    found = assignments(root)
    if len(found) != 1:
        named = ", ".join(found) or "none"
        raise ValueError(f"the course at {root} has {len(found)} assignments ({named}): "
                         "say which one")
    return found[0]


def source_notebooks(root: Path, assignment: str | None = None) -> list[Path]:
    """The instructor notebooks of `assignment` (default: the course's only one), in the order
    their names sort in (``01_...``, ``02_...``; any names will do)."""
    return _notebooks_in(Path(root) / "source" / (assignment or only_assignment(root)))


def notebook_names(root: Path, assignment: str | None = None) -> list[str]:
    return [path.stem for path in source_notebooks(root, assignment)]


def _notebooks_in(folder: Path) -> list[Path]:
    return sorted(path for path in folder.glob("*.ipynb")
                  if path.is_file() and not path.name.startswith("."))
