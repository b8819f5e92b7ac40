"""`make lab` (a student's lab) and `make lab-ta` (a TA's lab): JupyterLab on 127.0.0.1.

The student's lab serves the student kit, `work/` (git-ignored): copies of the release
notebooks and nothing else. The server's root is the kit, so its file browser cannot reach
`source/` (solutions, hidden tests), `notebooks/` or `submitted/`; nbgrader's instructor
extensions (formgrader, create assignment, course list) are off; Validate and the Assignment
List stay. This hides the answers from the lab's pages, not from a kernel that opens files by
path: a class where students must not read the course runs the hub (one Unix account each).

The TA's lab serves the whole course with every nbgrader extension. Both start from the course
root (nbgrader's Validate and formgrader read nbgrader_config.py from the server's working
folder) and both silence JupyterLab's news and update popups.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from mlmcourse.course import nbio
from mlmcourse.course.environment import install_environment_config
from mlmcourse.course.layout import assignments
from mlmcourse.grader.config import course_config, with_interpreter_bin

WORK = "work"  # the student kit: their own copies of the release notebooks (git-ignored)
STUDENT, TA = "student", "ta"
SETTINGS = Path("build") / "lab"  # per-role JupyterLab app settings (git-ignored, regenerated)

# nbgrader's parts a student does not get: the formgrader and the course list (server and
# page), and the Create Assignment toolbar (page only).
INSTRUCTOR_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.course_list",
)
INSTRUCTOR_PLUGINS = (
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:create-assignment",
)
# Defaults for every user of either lab (overrides.json sets defaults; a user's own settings
# still win): no "get notified about official Jupyter news?" toast, no update check.
QUIET_SETTINGS = {
    "@jupyterlab/apputils-extension:notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def kernel_language_info() -> dict:
    """The language_info the course's kernel reports (ipykernel, this interpreter).

    JupyterLab writes the kernel's language_info into a notebook's metadata when the kernel
    connects; a notebook that holds less (the release keeps only the name, the same on every
    machine) changes on opening and shows as modified."""
    from ipykernel.ipkernel import IPythonKernel

    return json.loads(json.dumps(IPythonKernel.language_info))


def ensure_work_copies(root: Path) -> list[Path]:
    """Copy release notebooks (release/<assignment>/ of every assignment, into
    work/<assignment>/) that the learner does not have yet; never overwrite their work.

    Each copy carries this machine's kernel language_info, so it opens unmodified."""
    created = []
    for assignment, notebook in release_notebooks(root):
        target = root / WORK / assignment
        target.mkdir(parents=True, exist_ok=True)
        destination = target / notebook.name
        if not destination.exists():
            nb = nbio.read(notebook)
            nb.metadata["language_info"] = kernel_language_info()
            nbio.write(nb, destination)
            created.append(destination)
    return created


def release_notebooks(root: Path) -> list[tuple[str, Path]]:
    """(assignment, notebook) of the student release, assignment by assignment: what release/
    holds (a student's kit may have no source/)."""
    return [(assignment, notebook) for assignment in assignments(root, "release")
            for notebook in sorted((root / "release" / assignment).glob("*.ipynb"))]


def write_app_settings(root: Path, role: str) -> Path:
    """The role's JupyterLab app settings folder: overrides.json, page_config.json."""
    folder = root / SETTINGS / role
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "overrides.json").write_text(json.dumps(QUIET_SETTINGS, indent=2) + "\n")
    disabled = {plugin: True for plugin in INSTRUCTOR_PLUGINS} if role == STUDENT else {}
    page_config = {"disabledExtensions": disabled}
    (folder / "page_config.json").write_text(json.dumps(page_config, indent=2) + "\n")
    return folder


def ensure_exchange(root: Path) -> Path | None:
    """Create the exchange folder nbgrader_config.py names, when missing: the formgrader warns
    that it "does not exist and could not be created" otherwise (it only checks)."""
    folder = course_config(root).Exchange.get("root")
    if not folder:
        return None
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    return path


def lab_command(root: Path, port: int | None = None, open_browser: bool = True,
                role: str = STUDENT) -> list[str]:
    """The JupyterLab command line of a role's lab (writes the role's app settings; the TA's
    lab gets the exchange folder it needs)."""
    if role not in (STUDENT, TA):
        raise ValueError(f"lab: unknown role {role!r}; choose {STUDENT!r} or {TA!r}")
    if role == TA:
        ensure_exchange(root)
    served = root / WORK if role == STUDENT else root
    if role == STUDENT:  # the first notebook of the kit (the copies bear the release's names)
        first = release_notebooks(root)[:1]
        landing = "/lab" if not first else f"/lab/tree/{first[0][0]}/{first[0][1].name}"
    else:  # the course's instructor notebooks, where a TA starts (the formgrader: Nbgrader menu)
        landing = "/lab/tree/source" + "".join(f"/{a}" for a in assignments(root)[:1])
    command = [
        sys.executable, "-m", "jupyterlab",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={served}",
        f"--LabApp.default_url={landing}",
        f"--LabApp.app_settings_dir={write_app_settings(root, role)}",
    ]
    if role == STUDENT:
        command += [f"--ServerApp.jpserver_extensions={name}=False"
                    for name in INSTRUCTOR_SERVER_EXTENSIONS]
    if port is not None:
        command.append(f"--port={port}")
    if not open_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--ServerApp.allow_root=True")  # containers and CI run as root
    return command


def main(root: Path, port: int | None, open_browser: bool, dry_run: bool,
         role: str = STUDENT) -> int:
    from mlmcourse.build.editions import build, stale_stages

    stale = stale_stages(root, ("release", "notebooks"))  # the samples' grading is no concern
    if dry_run:  # starts nothing and leaves the course and the learner's work/ as they are
        if stale:
            print(f"lab: would rebuild {', '.join(stale)} first")
        print(" ".join(lab_command(root, port, open_browser, role)))
        return 0
    if stale:
        build(root, stale)
    install_environment_config()  # an environment made without make (conda) gets it here
    if role == STUDENT:
        for created in ensure_work_copies(root):
            print(f"lab: your copy to work in: {created.relative_to(root)}")
    command = lab_command(root, port, open_browser, role)
    env = dict(os.environ)
    env["PATH"] = with_interpreter_bin(env.get("PATH"))  # JupyterLab finds nbgrader's tools
    os.chdir(root)  # nbgrader's Validate and formgrader read nbgrader_config.py from here
    os.execve(sys.executable, command, env)
    return 0  # not reached
