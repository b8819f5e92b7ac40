"""Prepare and start the course's JupyterHub (`make hub`; tests/test_hub.py uses the same steps).

    python deploy/hub/hubctl.py setup --hub /srv/mlmcourse-hub --instructor alice \
        --students bob,carol [--tas dave] [--notebooks 01_corruption] [--create-users]
    python deploy/hub/hubctl.py start --hub /srv/mlmcourse-hub

Run as root: the hub starts each user's server as that Unix user. `setup` makes, under --hub:
  class.json   the class list (instructor, TAs, students) and the course id;
  roles/       each role's Jupyter configuration (copied from deploy/hub/roles/);
  python/      the course package `mlmcourse` (helpers and the grader; no solutions);
  exchange/    nbgrader's exchange root, writable by everyone, sticky (nbgrader's own
               permissions inside keep students out of each other's submissions);
  state/       the hub's database, cookie secret and password (root only);
and the instructor's course folder ~instructor/<course_id> (mode 700): source/ with the chosen
notebooks, the repository's nbgrader_config.py (the sandboxed engine, the course's feedback)
and a gradebook that lists the students. TAs share it through the group <course_id>-staff.
"""

from __future__ import annotations

import argparse
import grp
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPLOY = Path(__file__).resolve().parent
COURSE_ID = "bert_mlm_course"
ASSIGNMENT = "bert_mlm"
PROXY = REPO / "build" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"


class HubError(RuntimeError):
    """The hub cannot be prepared or started here; the message says why and what to do."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise HubError("the hub runs each user's server as that Unix user, so it must be set up "
                       "and started as root (sudo make hub ...)")


def run(*command: str, **options) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, **options)
    if done.returncode != 0:
        raise HubError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def create_user(name: str) -> None:
    """A throwaway login with a private home folder (useradd; removed by remove_user)."""
    if shutil.which("useradd") is None:
        raise HubError("useradd is missing: install the `passwd` package or create the users")
    run("useradd", "--create-home", "--shell", "/bin/bash", name)
    os.chmod(pwd.getpwnam(name).pw_dir, 0o700)


def remove_user(name: str) -> None:
    subprocess.run(["userdel", "--remove", name], capture_output=True)


def home(name: str) -> Path:
    try:
        return Path(pwd.getpwnam(name).pw_dir)
    except KeyError:
        raise HubError(f"no Unix user {name!r}: create it first (or pass --create-users)") from None


def staff_group(course_id: str = COURSE_ID) -> str:
    return f"{course_id}-staff"


def reachable_by_others(path: Path) -> bool:
    return all(os.stat(folder).st_mode & 0o001 for folder in [path, *path.parents])


def user_python(hub: Path) -> dict:
    """How users' servers run the course's Python: the venv's own interpreter where other users
    can reach it; else (a Python built under root's home, as pyenv does) a copy of that same
    interpreter and its standard library in hub/runtime/ (install_runtime), with the venv's
    packages and Jupyter files on its paths."""
    venv = Path(sys.prefix)
    if reachable_by_others(Path(os.path.realpath(sys.executable))):
        return {"executable": sys.executable, "env": {}}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    if not reachable_by_others(site):
        raise HubError(f"users cannot read {site}: put the repository and its .venv where "
                       "every user can read them")
    runtime = hub / "runtime"
    return {"executable": str(runtime / "bin" / version), "env": {
        "PYTHONPATH": str(site),
        "LD_LIBRARY_PATH": str(runtime / "lib"),
        "JUPYTER_PATH": str(venv / "share" / "jupyter"),
        "JUPYTER_CONFIG_PATH": str(venv / "etc" / "jupyter"),
        "JUPYTERLAB_DIR": str(venv / "share" / "jupyter" / "lab"),
    }}


def install_runtime(hub: Path, python: dict) -> None:
    """The interpreter, libpython and the standard library (not its site-packages), linked
    where possible (same file system) or copied: their files are readable by every user, only
    a folder above them is closed."""
    runtime = hub / "runtime"
    shutil.rmtree(runtime, ignore_errors=True)
    if not python["env"]:
        return
    base = Path(sys.base_prefix)
    version = Path(python["executable"]).name
    (runtime / "bin").mkdir(parents=True)
    _link_or_copy(os.path.realpath(base / "bin" / version), runtime / "bin" / version)
    (runtime / "lib").mkdir()
    for library in (base / "lib").glob("libpython*"):
        _link_or_copy(library, runtime / "lib" / library.name)
    shutil.copytree(base / "lib" / version, runtime / "lib" / version, symlinks=True,
                    copy_function=_link_or_copy,
                    ignore=shutil.ignore_patterns("site-packages", "test", "idlelib"))


def _link_or_copy(source, target) -> None:
    try:
        os.link(source, target, follow_symlinks=True)
    except OSError:
        shutil.copy2(source, target)


def write_class(hub: Path, instructor: str, tas: list[str], students: list[str]) -> dict:
    members = {"course_id": COURSE_ID, "instructor": instructor, "tas": tas,
               "students": students, "python": user_python(hub)}
    (hub / "class.json").write_text(json.dumps(members, indent=2) + "\n")
    return members


def prepare_hub_folder(hub: Path) -> None:
    for name, mode in (("", 0o755), ("state", 0o700), ("exchange", 0o1777)):
        (hub / name).mkdir(parents=True, exist_ok=True)
        os.chmod(hub / name, mode)
    for name in ("roles", "python"):
        shutil.rmtree(hub / name, ignore_errors=True)
    shutil.copytree(DEPLOY / "roles", hub / "roles")
    for role in (hub / "roles").iterdir():
        # Jupyter writes this marker in its config folder once it has looked for an IPython 3
        # profile to migrate; the role folders are read-only to users, so it must be there.
        (role / "migrated").write_text("")
    shutil.copytree(REPO / "mlmcourse", hub / "python" / "mlmcourse",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    python = user_python(hub)
    install_runtime(hub, python)
    write_script_wrappers(hub / "bin", python)
    # (runtime/ keeps its files' own modes: they may be hard links to the original's files)
    readable = [str(hub / name) for name in ("roles", "python", "bin")]
    subprocess.run(["chmod", "-R", "a+rX,go-w", *readable], check=True)


def write_script_wrappers(folder: Path, python: dict) -> None:
    """The venv's commands (nbgrader, alembic, jupyter...) for users who run the system's Python:
    the venv's own scripts start the interpreter they cannot reach."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    if not python["env"]:
        return
    venv_python = os.path.realpath(sys.executable)
    for script in sorted(Path(sys.prefix, "bin").iterdir()):
        with open(script, "rb") as handle:
            first = handle.readline()
        if first.startswith(b"#!") and os.path.realpath(first[2:].strip().decode()) == venv_python:
            wrapper = folder / script.name
            wrapper.write_text(f'#!/bin/sh\nexec {python["executable"]} {script} "$@"\n')
            wrapper.chmod(0o755)


def prepare_course(hub: Path, instructor: str, tas: list[str], students: list[str],
                   notebooks: list[str]) -> Path:
    """The instructor's course folder: source notebooks, the course config, a gradebook."""
    course = home(instructor) / COURSE_ID
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True, exist_ok=True)
    for name in notebooks:
        copy_with_language_info(REPO / "source" / ASSIGNMENT / f"{name}.ipynb",
                                source / f"{name}.ipynb")
    shutil.copy2(REPO / "nbgrader_config.py", course / "nbgrader_config.py")
    group = share_with_tas(instructor, tas)
    run("chown", "-R", f"{instructor}:{group}", str(course))
    add_students_to_gradebook(hub, instructor, course, students)
    run("chown", "-R", f"{instructor}:{group}", str(course))  # the new gradebook too
    run("chmod", "-R", "u+rwX,g+rwX,o-rwx", str(course))
    run("find", str(course), "-type", "d", "-exec", "chmod", "g+s", "{}", "+")
    return course


def copy_with_language_info(notebook: Path, target: Path) -> None:
    """Copy a source notebook with the language_info the users' kernel reports (the same
    interpreter and ipykernel), as `make lab` does for a student's kit: JupyterLab writes it
    into a notebook when the kernel connects, so a release that held only the language's name
    opened as modified on every student's first look. The release the instructor generates
    keeps the source's metadata."""
    from mlmcourse.course import nbio
    from mlmcourse.lab import kernel_language_info

    nb = nbio.read(notebook)
    nb.metadata["language_info"] = kernel_language_info()
    nbio.write(nb, target)


def share_with_tas(instructor: str, tas: list[str]) -> str:
    """The staff group owns the course folder; TAs reach it through the instructor's home."""
    group = staff_group()
    try:
        grp.getgrnam(group)
    except KeyError:
        run("groupadd", group)
    for user in [instructor, *tas]:
        run("usermod", "--append", "--groups", group, user)
    instructor_home = home(instructor)
    run("chgrp", group, str(instructor_home))
    os.chmod(instructor_home, 0o710)  # staff may pass through to the course, not list the home
    return group


GRADEBOOK = """
import sys
from nbgrader.api import Gradebook
with Gradebook(sys.argv[1]) as gradebook:
    for student in sys.argv[2:]:
        gradebook.update_or_create_student(student, last_name=student, first_name="")
"""


def add_students_to_gradebook(hub: Path, instructor: str, course: Path,
                              students: list[str]) -> None:
    """As the instructor (the gradebook is theirs): the class list, so the formgrader knows it."""
    python = user_python(hub)
    env = dict(os.environ, **python["env"], PATH=f"{hub / 'bin'}:{os.environ['PATH']}")
    run("runuser", "-u", instructor, "--", python["executable"], "-c", GRADEBOOK,
        f"sqlite:///{course / 'gradebook.db'}", *students, cwd=course, env=env)


def setup(hub: Path, instructor: str, students: list[str], tas: list[str] = (),
          notebooks: list[str] = ("01_corruption",), create_users: bool = False) -> dict:
    require_root()
    user_python(hub)  # fails early, with the reason, where users could not run the course
    if create_users:
        for user in [instructor, *tas, *students]:
            create_user(user)
    prepare_hub_folder(hub)
    prepare_course(hub, instructor, list(tas), students, list(notebooks))
    return write_class(hub, instructor, list(tas), students)


def hub_password(hub: Path) -> str:
    """MLMCOURSE_HUB_PASSWORD, or one made once and kept in state/password (root only)."""
    given = os.environ.get("MLMCOURSE_HUB_PASSWORD")
    if given:
        return given
    kept = hub / "state" / "password"
    if not kept.exists():
        kept.write_text(secrets.token_urlsafe(12))
        os.chmod(kept, 0o600)
    return kept.read_text()


def hub_command(hub: Path) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that start the hub (run it with cwd=hub/state)."""
    require_root()
    if not (hub / "class.json").is_file():
        raise HubError(f"{hub} is not set up: run `hubctl.py setup --hub {hub} ...` first")
    if not PROXY.is_file():
        raise HubError(f"{PROXY} is missing: `make hub` installs configurable-http-proxy there "
                       "from npm (deploy/hub/package-lock.json)")
    env = dict(os.environ, MLMCOURSE_HUB=str(hub), MLMCOURSE_HUB_PASSWORD=hub_password(hub))
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    command = [sys.executable, "-m", "jupyterhub", "-f", str(DEPLOY / "jupyterhub_config.py")]
    return command, env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["setup", "start"])
    parser.add_argument("--hub", type=Path, default=REPO / "build" / "hub",
                        help="the hub's folder (default build/hub)")
    parser.add_argument("--instructor", help="the instructor's Unix user (setup)")
    parser.add_argument("--students", default="", help="comma-separated Unix users (setup)")
    parser.add_argument("--tas", default="", help="comma-separated Unix users (setup)")
    parser.add_argument("--notebooks", default="01_corruption,02_stable_log_softmax,"
                        "03_empty_mask_and_gradient,04_experiment,05_why_80_10_10,06_real_bert")
    parser.add_argument("--create-users", action="store_true",
                        help="create the users with useradd first (setup)")
    args = parser.parse_args(argv)
    split = lambda text: [name for name in text.split(",") if name]  # noqa: E731
    hub = args.hub.resolve()
    try:
        if args.action == "setup":
            if not args.instructor or not args.students:
                raise HubError("setup needs --instructor NAME and --students A,B,...")
            setup(hub, args.instructor, split(args.students), split(args.tas),
                  split(args.notebooks), args.create_users)
            print(f"hub prepared in {hub}; start it with: make hub")
            return 0
        command, env = hub_command(hub)
        print(f"JupyterHub on http://127.0.0.1:{env.get('MLMCOURSE_HUB_PORT', 8000)}/ "
              f"(password: {env['MLMCOURSE_HUB_PASSWORD']}); Ctrl-C stops it")
        os.chdir(hub / "state")
        os.execve(command[0], command, env)
    except HubError as err:
        print(f"hub: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
