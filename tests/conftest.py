"""Shared fixtures: the repository, and one fresh build of the whole course in a copy."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mlmcourse.grader.config import with_interpreter_bin

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ("release", "notebooks", "submitted", "autograded", "feedback")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the system picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def project_files(root: Path = ROOT) -> list[Path]:
    """What a fresh clone holds: tracked files plus new files git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout
    return [Path(name) for name in listed.split("\0") if name and (root / name).is_file()]


def copy_course(destination: Path) -> Path:
    for relative in project_files():
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target)
    return destination


def course_env(root: Path) -> dict[str, str]:
    """Run the copy's own package (and let its notebook kernels import it too)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    env["PATH"] = with_interpreter_bin(env["PATH"])
    env.pop("NBGRADER_EXECUTION", None)
    return env


def run_course(root: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mlmcourse", *args],
        cwd=root, env=course_env(root), capture_output=True, text=True, timeout=timeout,
    )


@pytest.fixture(scope="session")
def built_course(tmp_path_factory) -> Path:
    """A copy of the course, rebuilt from source/ and samples/ by `python -m mlmcourse build`."""
    copy = copy_course(tmp_path_factory.mktemp("built") / "course")
    done = run_course(copy, "build")
    assert done.returncode == 0, f"the build failed:\n{done.stdout}\n{done.stderr[-5000:]}"
    return copy


