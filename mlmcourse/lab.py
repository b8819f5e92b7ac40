"""`make lab`: bring the generated editions up to date, then start JupyterLab on the series."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from mlmcourse.course.layout import ASSIGNMENT
from mlmcourse.grader.config import with_interpreter_bin

WORK = "work"  # the student's own copies of the release notebooks (git-ignored)


def ensure_work_copies(root: Path) -> list[Path]:
    """Copy release notebooks that the learner does not have yet; never overwrite their work."""
    target = root / WORK / ASSIGNMENT
    target.mkdir(parents=True, exist_ok=True)
    created = []
    for notebook in sorted((root / "release" / ASSIGNMENT).glob("*.ipynb")):
        destination = target / notebook.name
        if not destination.exists():
            shutil.copyfile(notebook, destination)
            created.append(destination)
    return created


def lab_command(root: Path, port: int | None = None, open_browser: bool = True) -> list[str]:
    first = sorted((root / WORK / ASSIGNMENT).glob("*.ipynb"))
    landing = f"/lab/tree/{WORK}/{ASSIGNMENT}/{first[0].name}" if first else "/lab"
    command = [
        sys.executable, "-m", "jupyterlab",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url={landing}",
    ]
    if port is not None:
        command.append(f"--port={port}")
    if not open_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--ServerApp.allow_root=True")  # containers and CI run as root
    return command


def main(root: Path, port: int | None, open_browser: bool, dry_run: bool) -> int:
    from mlmcourse.build.editions import build, stale_stages

    stale = [stage for stage in stale_stages(root) if stage in ("release", "notebooks")]
    if stale:
        build(root, stale)
    for created in ensure_work_copies(root):
        print(f"lab: your copy to work in: {created.relative_to(root)}")
    command = lab_command(root, port, open_browser)
    if dry_run:
        print(" ".join(command))
        return 0
    env = dict(os.environ)
    env["PATH"] = with_interpreter_bin(env.get("PATH"))  # JupyterLab finds nbgrader's tools
    os.chdir(root)  # nbgrader's Validate reads nbgrader_config.py from here
    os.execve(sys.executable, command, env)
    return 0  # not reached
