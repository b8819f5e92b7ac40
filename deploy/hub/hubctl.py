"""Prepare, start and change the course's JupyterHub (`make hub`; tests/test_hub.py uses the same
steps). Run as root: the hub starts each user's server as that Unix user.

    python deploy/hub/hubctl.py setup --hub /srv/mlmcourse-hub --instructor alice \
        (--roster roster.csv | --students bob,carol [--tas dave]) [--notebooks 01_corruption] \
        [--create-users]
    python deploy/hub/hubctl.py setup --hub /srv/mlmcourse-hub --instructor alice \
        --spawner containers --auth lti --lti lti.json   (logins by launch from the LMS)
    python deploy/hub/hubctl.py start [--hub DIR]
    python deploy/hub/hubctl.py roster [--hub DIR] roster.csv [--create-users]
    python deploy/hub/hubctl.py lti [--hub DIR] lti.json   (new LMS values, the hub running or not)
    python deploy/hub/hubctl.py stop [--hub DIR]   (every server and container, the hub, its
                                                    services, the proxy)

Without --hub: MLMCOURSE_HUB_DIR, else the hub set up last from this clone (build/hub-folder),
else /srv/mlmcourse-hub; so `make hub` and `make hub-stop` mean the hub that was set up.

Who is in the class is kept by the system: the Unix groups <course_id>-staff (the instructor and
the TAs) and <course_id>-students say who may log in, and the hub groups of the same names which
role each server gets. `roster` makes the class what a roster CSV says (columns id, first_name,
last_name, email and role, `student` or `ta`), while the hub runs: Unix groups, the hub's groups
and users through its REST API (as the service `hubctl`, with a token in state/), and the
gradebook's names and e-mail. It never restarts the hub, never stops another user's server and
never touches the course folder's files. Logins are the users' own Unix passwords (PAM): set
them with `passwd NAME` (or chpasswd); nothing here makes or prints one.

`setup` makes, under --hub (and may be run again: it keeps what is there and never overwrites
the instructor's course files; it refuses while the hub runs):
  course.json  the course id, its instructor and how users' servers run Python;
  roles/       each role's Jupyter configuration (copied from deploy/hub/roles/);
  python/      the course package `mlmcourse` (helpers and the grader; no solutions) and the
               hub's own modules (mlmcourse_hub.py: the grading log; formgrader_tab.py);
  runtime/     the venv's packages and Jupyter files (hard links), and the interpreter where
               users cannot reach it: what users' servers run (the repository is closed);
  bin/         the venv's commands for the users' interpreter (nbgrader, jupyter, python...);
  exchange/    nbgrader's exchange root (1777, sticky), with the course's inbound/, outbound/
               and feedback/ owned by the staff group, so TAs collect and release too;
  logs/        the hub's, each server's and the grading runs' logs (staff only);
  state/       the hub's database, cookie secret and API token (root only);
and the instructor's course folder ~instructor/<course_id> (2770, staff group): source/ with the
chosen notebooks, nbgrader_config.py (the repository's, which grades through the sandboxed
engine, plus the hub's exchange) and the gradebook (the class, with names and e-mail).

`setup` and every `start` also close this repository to other users (close_repository): users'
servers run from the hub's runtime/ (the venv's packages and Jupyter files, hard-linked), its
python/ and bin/. What a student can read is decided here, not by the clone's umask.
"""

from __future__ import annotations

import argparse
import compileall
import grp
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from mlmcourse.course.roster import Member, RosterError, read_roster

REPO = Path(__file__).resolve().parents[2]
DEPLOY = Path(__file__).resolve().parent
DEFAULT_HUB = Path("/srv/mlmcourse-hub")
LAST_HUB = REPO / "build" / "hub-folder"  # the hub set up last: what `make hub` starts
COURSE_ID = "bert_mlm_course"
PROXY = REPO / "build" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"


class HubError(RuntimeError):
    """The hub cannot be prepared, started or changed here; the message says why and what to do."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise HubError("the hub runs each user's server as that Unix user, so it must be set up "
                       "and started as root (sudo make hub ...)")


def run(*command: str, **options) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, **options)
    if done.returncode != 0:
        raise HubError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def create_user(name: str, full_name: str = "") -> bool:
    """A login with a private home folder and no password yet (useradd); False when the user
    exists already (nothing changed)."""
    if user_exists(name):
        return False
    if shutil.which("useradd") is None:
        raise HubError("useradd is missing: install the `passwd` package or create the users")
    run("useradd", "--create-home", "--shell", "/bin/bash", "--comment", full_name, name)
    os.chmod(pwd.getpwnam(name).pw_dir, 0o700)
    return True


def set_password(name: str, password: str) -> None:
    """The user's own login password, through chpasswd's standard input (never an argument)."""
    run("chpasswd", input=f"{name}:{password}\n")


def remove_user(name: str) -> None:
    subprocess.run(["userdel", "--remove", name], capture_output=True)


def home(name: str) -> Path:
    try:
        return Path(pwd.getpwnam(name).pw_dir)
    except KeyError:
        raise HubError(f"no Unix user {name!r}: create it first (`sudo useradd --create-home "
                       f"{name}`, or pass --create-users; in LTI mode the instructor's account "
                       "owns the course's files on this machine and never logs in)") from None


def staff_group(course_id: str = COURSE_ID) -> str:
    """The instructor and the TAs: a Unix group (course folder, exchange, logs) and a hub group."""
    return f"{course_id}-staff"


def student_group(course_id: str = COURSE_ID) -> str:
    return f"{course_id}-students"


def group_members(group: str) -> set[str]:
    try:
        return set(grp.getgrnam(group).gr_mem)
    except KeyError:
        return set()


def ensure_group(group: str) -> None:
    try:
        grp.getgrnam(group)
    except KeyError:
        run("groupadd", group)


def reachable_by_others(path: Path) -> bool:
    return all(os.stat(folder).st_mode & 0o001 for folder in [path, *path.parents])


def close_repository() -> None:
    """Other users may not enter the repository at all (its top folder loses every bit for
    them): source/, the worked edition, the samples and their grades, .git, whatever
    one-machine grading leaves there now or later. Users' servers run from the hub's runtime/
    (install_runtime), outside it; the one-machine sandbox needs no way in for its user."""
    os.chmod(REPO, os.stat(REPO).st_mode & ~0o007)


def inside_repository(path: Path) -> bool:
    path = Path(os.path.realpath(path))
    return path == REPO or REPO in path.parents


# The venv's packages that point back into the repository (the editable course package, the
# tools-on-PATH hook): the runtime has the package's copy in python/ instead. Their compiled
# bytecode (__pycache__) comes along: users cannot write there, so without it every server,
# kernel and grading process of theirs compiled torch and Jupyter from source (a student's
# kernel took 21 s of CPU to start, 7 s with it).
NOT_IN_RUNTIME = ("__editable__*", "mlmcourse*")


def user_python(hub: Path) -> dict:
    """How users' servers run the course's Python: the venv's base interpreter where other
    users can reach it (else a copy of it and its standard library), with the venv's packages
    and Jupyter files from hub/runtime/ (install_runtime), never from the repository."""
    if inside_repository(hub):
        raise HubError(f"the hub's folder {hub} is inside the repository, which set-up closes "
                       "to students: choose one outside it (the default: /srv/mlmcourse-hub)")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    interpreter = Path(os.path.realpath(sys.executable))
    runtime = hub / "runtime"
    env = {
        "PYTHONPATH": str(runtime / "site-packages"),
        "JUPYTER_PATH": str(runtime / "share" / "jupyter"),
        "JUPYTER_CONFIG_PATH": str(runtime / "etc" / "jupyter"),
        "JUPYTERLAB_DIR": str(runtime / "share" / "jupyter" / "lab"),
    }
    if reachable_by_others(interpreter) and not inside_repository(interpreter):
        return {"executable": str(interpreter), "env": env, "copied": False}
    env["LD_LIBRARY_PATH"] = str(runtime / "lib")
    return {"executable": str(runtime / "bin" / version), "env": env, "copied": True}


def install_runtime(hub: Path, python: dict) -> None:
    """The venv's packages and Jupyter files and, where users cannot reach the interpreter (a
    pyenv build under /root), the interpreter, libpython and the standard library: linked where
    possible (same file system) or copied, readable by every user."""
    runtime = hub / "runtime"
    shutil.rmtree(runtime, ignore_errors=True)
    venv = Path(sys.prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    shutil.copytree(venv / "lib" / version / "site-packages", runtime / "site-packages",
                    symlinks=True, copy_function=_link_or_copy,
                    ignore=shutil.ignore_patterns(*NOT_IN_RUNTIME))
    for part in ("share/jupyter", "etc/jupyter"):
        if (venv / part).is_dir():
            shutil.copytree(venv / part, runtime / part, symlinks=True,
                            copy_function=_link_or_copy)
    if not python.get("copied"):
        return
    base = Path(sys.base_prefix)
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


def write_script_wrappers(folder: Path, python: dict) -> None:
    """The venv's commands (nbgrader, alembic, jupyter...) for users' terminals: the venv's own
    scripts lie in the closed repository, so each is copied here with the users' interpreter
    in its first line; `python` and `python3` start that interpreter (a TA's terminal runs
    `python -m mlmcourse report`). The server's environment gives them the runtime's paths."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for name in ("python", "python3"):
        wrapper = folder / name
        wrapper.write_text(f'#!/bin/sh\nexec {python["executable"]} "$@"\n')
        wrapper.chmod(0o755)
    venv_python = os.path.realpath(sys.executable)
    for script in sorted(Path(sys.prefix, "bin").iterdir()):
        if script.is_dir() or script.name.startswith(("python", "activate", "pip")):
            continue
        with open(script, "rb") as handle:
            first, rest = handle.readline(), handle.read()
        if first.startswith(b"#!") and os.path.realpath(first[2:].strip().decode()) == venv_python:
            copy = folder / script.name
            copy.write_bytes(f"#!{python['executable']}\n".encode() + rest)
            copy.chmod(0o755)


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


# ---------------------------------------------------------------------------------------------
# The class: who is in it (a roster), and making the system say the same.

def gradebook_entry(member: Member) -> dict:
    """Names and e-mail for nbgrader; without a roster's names, the account's full name
    (useradd --comment, `First Last`) or else the user name as the last name."""
    first, last = member.first_name, member.last_name
    if not (first or last):
        full = pwd.getpwnam(member.id).pw_gecos.split(",")[0].strip() if user_exists(
            member.id) else ""
        first, _, last = full.rpartition(" ")
        last = last or member.id
    return {"id": member.id, "first_name": first, "last_name": last,
            "email": member.email or None}


def members_from_lists(students: list[str], tas: list[str]) -> list[Member]:
    return [*(Member(name, "ta") for name in tas), *(Member(name) for name in students)]


def current_class(instructor: str, course_id: str) -> dict[str, str]:
    """Who is in the class now, as the course's Unix groups say: user -> role."""
    staff = group_members(staff_group(course_id)) - {instructor}
    return {**{name: "student" for name in group_members(student_group(course_id))},
            **{name: "ta" for name in staff}}


@dataclass
class Change:
    added: list[Member]
    removed: list[str]
    moved: list[Member]  # a student who became a TA, or the other way


def plan(instructor: str, members: list[Member], course_id: str) -> Change:
    now = current_class(instructor, course_id)
    wanted = {m.id: m for m in members if m.id != instructor}
    return Change(added=[m for name, m in wanted.items() if name not in now],
                  removed=sorted(name for name in now if name not in wanted),
                  moved=[m for name, m in wanted.items() if name in now and now[name] != m.role])


def apply_unix_groups(instructor: str, members: list[Member], change: Change,
                      course_id: str) -> None:
    staff, students = staff_group(course_id), student_group(course_id)
    for group in (staff, students):
        ensure_group(group)
    run("usermod", "--append", "--groups", staff, instructor)
    for member in [*change.added, *change.moved]:
        keep, drop = (staff, students) if member.role == "ta" else (students, staff)
        run("usermod", "--append", "--groups", keep, member.id)
        if member.id in group_members(drop):
            run("gpasswd", "--delete", member.id, drop)
    for name in change.removed:
        for group in (staff, students):
            if name in group_members(group):
                run("gpasswd", "--delete", name, group)


def apply_roster(hub: Path, instructor: str, members: list[Member],
                 create_users: bool = False) -> Change:
    """Accounts (created when asked), Unix groups, gradebook, and the running hub's groups."""
    course_id = hub_course_id(hub)
    change = plan(instructor, members, course_id)
    for member in change.added:
        if create_users:
            full = " ".join(filter(None, [member.first_name, member.last_name]))
            create_user(member.id, full)
        else:
            home(member.id)  # fails, with what to do, before anything changed
    apply_unix_groups(instructor, members, change, course_id)
    course = course_dir(hub, instructor)
    update_gradebook(hub, instructor, course,
                     add=[m for m in members if m.role == "student" and m.id != instructor],
                     remove=[*change.removed, *(m.id for m in change.moved if m.role == "ta")])
    if on_containers(hub):
        update_ngshare(hub, instructor, members)
    if hub_running(hub):
        sync_hub_groups(hub, instructor, change)
    return change


GRADEBOOK = """
import json, sys
from nbgrader.api import Gradebook, MissingEntry
change = json.load(sys.stdin)
with Gradebook(sys.argv[1]) as gradebook:
    for student in change["add"]:
        gradebook.update_or_create_student(student.pop("id"), **student)
    for name in change["remove"]:
        try:
            student = gradebook.find_student(name)
        except MissingEntry:
            continue
        if not student.submissions:  # a student with work keeps their grades
            gradebook.remove_student(name)
"""


def update_gradebook(hub: Path, instructor: str, course: Path, add: list[Member],
                     remove: list[str]) -> None:
    """As the instructor (the gradebook is theirs, group-writable for staff): the class with
    names and e-mail, so the formgrader and the export show them. On containers the course
    folder belongs to the image's user: written as root, then handed to that user."""
    python = user_python(hub)
    env = dict(os.environ, **python["env"], PATH=f"{hub / 'bin'}:{os.environ['PATH']}")
    change = {"add": [gradebook_entry(m) for m in add], "remove": remove}
    as_owner = [] if on_containers(hub) else ["runuser", "-u", instructor, "--"]
    run(*as_owner, "sh", "-c", 'umask 007 && exec "$0" "$@"',
        python["executable"], "-c", GRADEBOOK, f"sqlite:///{course / 'gradebook.db'}",
        cwd=course, env=env, input=json.dumps(change))
    # SQLite makes a new database 0644 whatever the umask allows: staff must write it too
    os.chmod(course / "gradebook.db", 0o660)
    if on_containers(hub):
        containers().own_for_containers(hub, course)


def ngshare_roster_module():
    import ngshare_roster

    return ngshare_roster


def update_ngshare(hub: Path, instructor: str, members: list[Member]) -> None:
    """The container hub's exchange learns the class: the instructor and TAs teach, the
    students take the course (ngshare decides every exchange request by these lists)."""
    ngshare_roster = ngshare_roster_module()

    def person(member: Member):
        entry = gradebook_entry(member)
        return ngshare_roster.Person(member.id, entry["first_name"] or "",
                                     entry["last_name"] or "", entry["email"] or "")

    db_url, storage = ngshare_database(hub)
    ngshare_roster.prepare(db_url, storage)
    staff = [person(Member(instructor, "ta")), *(person(m) for m in members
                                                if m.role == "ta" and m.id != instructor)]
    students = [person(m) for m in members if m.role == "student" and m.id != instructor]
    ngshare_roster.apply(db_url, hub_course_id(hub), staff, students)


def ngshare_database(hub: Path) -> tuple[str, str]:
    """ngshare's database and file store, in state/ (root only), as the service uses them."""
    return ngshare_roster_module().locations(hub)


# ---------------------------------------------------------------------------------------------
# The running hub: its pid, its REST API.

def hub_pid(hub: Path) -> int | None:
    """The running hub's process id (state/jupyterhub.pid, checked against /proc), or None."""
    pid = pid_in(hub / "state" / "jupyterhub.pid")
    return pid if pid is not None and b"jupyterhub" in command_line(pid) else None


def pid_in(path: Path) -> int | None:
    """The process id a pid file holds, or None (no file, or no number in it)."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def hub_running(hub: Path) -> bool:
    return hub_pid(hub) is not None


def api(hub: Path, method: str, path: str, body: dict | None = None) -> dict | None:
    """One call to the hub's REST API as the service `hubctl` (its token is in state/)."""
    base = (hub / "state" / "api_url").read_text().strip()
    token = (hub / "state" / "hubctl_token").read_text().strip()
    request = urllib.request.Request(
        f"{base}{path}", method=method, headers={"Authorization": f"token {token}"},
        data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
    except urllib.error.HTTPError as err:
        if err.code == 404 or (err.code == 409 and method == "POST"):
            return None  # no such user (already gone), or already there
        raise HubError(f"hub API {method} {path}: {err.code} {err.read()[:300]!r}") from None
    return json.loads(text) if text else None


def sync_hub_groups(hub: Path, instructor: str, change: Change) -> None:
    """The running hub learns the change: new users and their group, removed users deleted
    (their server stops, nobody else's), a user whose role changed gets the other group and
    a stopped server (the next start has the new role's panels)."""
    course_id = hub_course_id(hub)
    groups = {"student": student_group(course_id), "ta": staff_group(course_id)}
    for member in change.added:
        api(hub, "POST", f"/users/{member.id}")
        api(hub, "POST", f"/groups/{groups[member.role]}/users", {"users": [member.id]})
    for member in change.moved:
        other = groups["student" if member.role == "ta" else "ta"]
        api(hub, "DELETE", f"/groups/{other}/users", {"users": [member.id]})
        api(hub, "POST", f"/groups/{groups[member.role]}/users", {"users": [member.id]})
        stop_server(hub, member.id)
    for name in change.removed:
        stop_server(hub, name)
        api(hub, "DELETE", f"/users/{name}")


def stop_server(hub: Path, name: str, seconds: float = 60) -> None:
    """Stop the user's server and wait until it has stopped (the hub refuses to delete a user
    whose server is still stopping)."""
    api(hub, "DELETE", f"/users/{name}/server")
    deadline = time.monotonic() + seconds
    while (user := api(hub, "GET", f"/users/{name}")) and (user.get("server")
                                                          or user.get("pending")):
        if time.monotonic() > deadline:
            raise HubError(f"{name}'s server did not stop in {seconds:.0f} s")
        time.sleep(0.3)


def stop_everything(hub: Path, seconds: float = 60) -> list[str]:
    """`make hub-stop`: every user's server (through the hub, so its database knows), then the
    hub, then whatever it started (its services: podman's API, ngshare, the LMS tool, the
    culler), then the proxy; on containers, any container of the hub that is left. A plain
    stop of the hub leaves servers and proxy running on purpose (a restart keeps every
    kernel); this is the end of a term, or of a machine's day, and does not depend on the
    hub answering."""
    stopped = []
    pid = hub_pid(hub)
    if pid is not None:
        try:
            for user in api(hub, "GET", "/users") or []:
                if user.get("server") or user.get("pending"):
                    stop_server(hub, user["name"], seconds)
                    stopped.append(user["name"])
        except (HubError, OSError) as err:  # (an API that does not answer: stopped below)
            print(f"the hub's API did not answer ({err}): its servers are stopped without it",
                  file=sys.stderr)
        started = descendants(pid)
        end_process(pid, seconds)
        for child in started:
            end_process(child, 10)
    for leftover in services_of(hub):  # (started by a hub that was killed before)
        end_process(leftover, 10)
    if on_containers(hub):
        module = containers()
        module.remove_containers(module.container_name(read_course(hub)["network"], ""))
    proxy = pid_in(hub / "state" / "proxy.pid")
    if proxy is not None and b"configurable-http-proxy" in command_line(proxy):
        end_process(proxy, seconds)
    return stopped


def descendants(pid: int) -> list[int]:
    """The processes the given one started, and theirs (from /proc's parent ids)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], list(children.get(pid, []))
    while queue:
        child = queue.pop()
        found.append(child)
        queue.extend(children.get(child, []))
    return found


# What the hub starts as its services: each names the hub's folder on its command line, but
# the idle culler, which names nothing and runs in the hub's folder.
SERVICE_MARKS = (b"ngshare_service.py", b"lti_service.py", b"system\0service")
CULLER = b"jupyterhub_idle_culler"


def services_of(hub: Path) -> list[int]:
    """Processes of this hub's services still running."""
    mark = str(hub).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        line = command_line(int(entry.name))
        if ((mark in line and any(service in line for service in SERVICE_MARKS))
                or (CULLER in line and runs_in(int(entry.name), hub))):
            found.append(int(entry.name))
    return found


def runs_in(pid: int, folder: Path) -> bool:
    """Whether the process's working folder is `folder` or inside it (even since deleted)."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd").removesuffix(" (deleted)")
    except OSError:
        return False
    return cwd == str(folder) or cwd.startswith(f"{folder}/")


def command_line(pid: int) -> bytes:
    """The process's command line; empty when it is gone (or a zombie, gone but not reaped)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def end_process(pid: int, seconds: float) -> None:
    """SIGTERM, and SIGKILL if it is still there after `seconds`."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + seconds
    while command_line(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.2)


# ---------------------------------------------------------------------------------------------
# Setting up and starting.

def default_hub() -> Path:
    """The hub `make hub` and `make hub-stop` mean: MLMCOURSE_HUB_DIR, else the one set up
    last from this clone (`hubctl.py setup --hub DIR` remembers it), else /srv/mlmcourse-hub."""
    if os.environ.get("MLMCOURSE_HUB_DIR"):
        return Path(os.environ["MLMCOURSE_HUB_DIR"])
    try:
        return Path(LAST_HUB.read_text().strip())
    except OSError:
        return DEFAULT_HUB


def remember_hub(hub: Path) -> None:
    LAST_HUB.parent.mkdir(parents=True, exist_ok=True)
    LAST_HUB.write_text(f"{hub}\n")


def source_notebooks() -> list[str]:
    """Every notebook of every assignment, as source/ has them ("assignment/notebook"): a new
    notebook or assignment joins by being there."""
    from mlmcourse.course.layout import assignments, notebook_names

    return [f"{assignment}/{name}" for assignment in assignments(REPO)
            for name in notebook_names(REPO, assignment)]


def notebook_file(entry: str) -> tuple[str, str]:
    """(assignment, notebook) of a --notebooks entry: "assignment/notebook", or a notebook's
    name alone (the first assignment that has it)."""
    assignment, _, name = entry.rpartition("/")
    if assignment:
        return assignment, name
    found = [held.partition("/")[0] for held in source_notebooks()
             if held.partition("/")[2] == name]
    if not found:
        raise SystemExit(f"--notebooks: no notebook {name!r} in source/")
    return found[0], name


def max_scores(notebooks: list[str]) -> dict[str, float]:
    """Each assignment's points over these source notebooks: the score maximum passback sends
    for that assignment once they are all released (passback sends one assignment to one line
    item), and what the LMS's assignment should be worth."""
    from mlmcourse.course import nbio
    from mlmcourse.course.cells import total_points

    points: dict[str, float] = {}
    for assignment, name in map(notebook_file, notebooks):
        path = REPO / "source" / assignment / f"{name}.ipynb"
        points[assignment] = points.get(assignment, 0.0) + total_points(nbio.read(path))
    return points


def max_score_lines(notebooks: list[str]) -> list[str]:
    """What setup tells the instructor: one line per assignment, its maximum and notebooks."""
    held = [notebook_file(entry) for entry in notebooks]
    return [f"{assignment}'s maximum score: {points:g} points "
            f"({', '.join(name for of, name in held if of == assignment)}): the LMS's "
            "assignment takes the same" for assignment, points in max_scores(notebooks).items()]

SPAWNERS = ("local", "containers")
AUTHS = ("pam", "lti")  # logins: Unix users' passwords, or launches from the LMS (LTI 1.3)
LTI_KEYS = "state/lti-keys"  # the tool's key pair, under the hub's root-only state/
LTI_SETTINGS = "state/lti.json"  # the hub's lti.json (lti_auth.SETTINGS)


def containers():
    """deploy/hub/containers.py (imported when a container hub needs it: podman's pieces)."""
    import containers as module

    return module


def on_containers(hub: Path) -> bool:
    try:
        return read_course(hub).get("spawner") == "containers"
    except HubError:
        return False


def course_dir(hub: Path, instructor: str) -> Path:
    """The course folder: the instructor's ~/<course_id>, or hub/course on containers."""
    return hub / "course" if on_containers(hub) else home(instructor) / hub_course_id(hub)


def read_course(hub: Path) -> dict:
    try:
        return json.loads((hub / "course.json").read_text())
    except FileNotFoundError:
        raise HubError(f"{hub} is not set up: run `hubctl.py setup --hub {hub} ...` "
                       "first") from None


def hub_course_id(hub: Path) -> str:
    """The course id the hub was set up for (its groups, course folder, exchange, cgroups)."""
    return read_course(hub).get("course_id", COURSE_ID)


def check_course_id(course_id: str) -> str:
    """A course id names Unix groups and folders: lower-case letters, digits, _ and -."""
    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,23}", course_id):
        raise HubError(f"course id {course_id!r}: use 1-24 lower-case letters, digits, _ or -, "
                       "starting with a letter (it names the course's Unix groups)")
    return course_id


def setup(hub: Path, instructor: str, students: list[str] = (), tas: list[str] = (),
          notebooks: list[str] = ("01_corruption",), create_users: bool = False,
          roster: list[Member] | None = None, spawner: str = "local",
          course_id: str = COURSE_ID, auth: str = "pam", lti: Path | None = None) -> dict:
    """Idempotent: a second run changes only what the arguments change, and keeps the course
    folder's files (the instructor's edits) as they are. `spawner`: "local" (each user's server
    a process of their Unix user, the exchange a shared folder) or "containers" (a container
    of the course image each, the ngshare exchange; deploy/hub/containers.py). `course_id`:
    another course (or section) on the same machine has its own, so its own Unix groups,
    course folder and roster: a roster change of one course touches nobody of the other.
    `auth`: "pam" (Unix users) or "lti" (launches from the LMS, configured by the `lti` file;
    containers only: docs/lms-admin.md)."""
    check_course_id(course_id)
    if spawner not in SPAWNERS:
        raise HubError(f"spawner {spawner!r}: use one of {', '.join(SPAWNERS)}")
    check_auth(auth, spawner, lti)
    require_root()
    if hub_running(hub):
        raise HubError(f"the hub is running (pid {hub_pid(hub)}): set-up would change files its "
                       "servers use. Change the class with `hubctl.py roster`, or stop the hub "
                       "first")
    user_python(hub)  # fails early, with the reason, where users could not run the course
    members = list(roster) if roster is not None else members_from_lists(students, tas)
    if create_users:
        create_user(instructor)
    home(instructor)
    if read_existing_instructor(hub) not in (None, instructor):
        raise HubError(f"{hub} belongs to the course of {read_existing_instructor(hub)!r}")
    if (hub / "course.json").is_file() and hub_course_id(hub) != course_id:
        raise HubError(f"{hub} is the hub of course {hub_course_id(hub)!r}, not {course_id!r}: "
                       "another course needs a hub folder of its own")
    for group in (staff_group(course_id), student_group(course_id)):
        ensure_group(group)
    prepare_hub_folder(hub, course_id)
    close_repository()
    info = write_course(hub, instructor, spawner, course_id, auth)
    if auth == "lti":
        install_lti(hub, lti)
    if spawner == "containers":
        course = prepare_course(instructor, list(notebooks), course_id, hub / "course")
    else:
        course = prepare_course(instructor, list(notebooks), course_id)
        prepare_exchange(hub, instructor, course_id)
    if auth == "lti":  # the class comes from the launches (lti_auth.py): no roster to apply
        update_gradebook(hub, instructor, course, add=[], remove=[])
        ngshare_roster_module().prepare(*ngshare_database(hub))
    else:
        apply_roster(hub, instructor, members, create_users)
    if spawner == "containers":
        containers().own_for_containers(hub, course)
        # the staff's containers (its owner) only: no account of the machine reads the
        # solutions in source/, whatever the umask made of the files inside
        os.chmod(course, 0o700)
    else:
        run("chown", "-R", f"{instructor}:{staff_group(course_id)}", str(course))  # gradebook
    return info


def read_existing_instructor(hub: Path) -> str | None:
    try:
        return json.loads((hub / "course.json").read_text())["instructor"]
    except (OSError, ValueError, KeyError):
        return None


def check_auth(auth: str, spawner: str, lti: Path | None) -> None:
    if auth not in AUTHS:
        raise HubError(f"auth {auth!r}: use one of {', '.join(AUTHS)}")
    if auth == "lti" and spawner != "containers":
        raise HubError("--auth lti needs --spawner containers: the local spawner runs each "
                       "server as a Unix account, and none is made from a launch")
    if auth == "lti" and (lti is None or not lti.is_file()):
        raise HubError("--auth lti needs --lti FILE: the platform's values (docs/lms-admin.md)")


def install_lti(hub: Path, lti: Path) -> Path:
    """The hub's lti.json (state/, root only: beside the launches' records and what passback
    sent) from the platform's values, checked, replaced whole (a running hub reads it again at
    its next launch), and the tool's key pair, made once: its JWKS is what the LMS registers."""
    from mlmcourse.lms.keys import ensure_keys
    from mlmcourse.lms.launch import write_private
    from mlmcourse.lms.settings import (
        HUB_FIELDS,
        PASSBACK_FIELDS,
        LtiSettingsError,
        read_lti_settings,
    )

    fields = tuple(dict.fromkeys([*HUB_FIELDS, *PASSBACK_FIELDS]))
    try:
        values = read_lti_settings(lti, tuple(f for f in fields if f != "key_folder"))
    except LtiSettingsError as err:
        raise HubError(str(err)) from None
    settings = hub / LTI_SETTINGS
    values["key_folder"] = os.path.relpath(hub / LTI_KEYS, settings.parent)
    ensure_keys(hub / LTI_KEYS)
    write_private(settings, values)
    return settings


def change_lti(hub: Path, lti: Path) -> str:
    """`hubctl.py lti FILE`: new LMS values for a set-up LTI hub, running or not."""
    require_root()
    if read_course(hub).get("auth") != "lti":
        raise HubError(f"{hub} logs in with Unix passwords: set it up with --auth lti first")
    if not lti.is_file():
        raise HubError(f"no file {lti}: the platform's values (lti.json)")
    settings = install_lti(hub, lti)
    when = ("the running hub takes them at the next launch, its grades page at the next look"
            if hub_running(hub) else "the hub takes them when it starts")
    return f"{settings} changed: {when}"


def write_course(hub: Path, instructor: str, spawner: str, course_id: str,
                 auth: str = "pam") -> dict:
    info = {"course_id": course_id, "instructor": instructor, "python": user_python(hub),
            "spawner": spawner, "auth": auth}
    if spawner == "containers":
        info["image"] = containers().image.ensure()  # built here, or found in its cache
        before = json.loads((hub / "course.json").read_text()) if (
            hub / "course.json").is_file() else None
        info["network"] = containers().choose_network(hub, before)  # the hub's own bridge
        # the containers' user: an id no account of the machine holds, kept from then on
        info["container_uid"] = containers().choose_user_id(before)
        try:
            containers().check_user_id(info["container_uid"])
        except containers().ContainerError as err:
            raise HubError(str(err)) from None
    (hub / "course.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def prepare_hub_folder(hub: Path, course_id: str) -> None:
    for name, mode in (("", 0o755), ("state", 0o700), ("exchange", 0o1777)):
        (hub / name).mkdir(parents=True, exist_ok=True)
        os.chmod(hub / name, mode)
    # logs/: the hub (root) writes its own and each server's; staff servers add grading.log.
    for name in ("logs", "logs/servers"):
        (hub / name).mkdir(exist_ok=True)
        os.chown(hub / name, 0, grp.getgrnam(staff_group(course_id)).gr_gid)
        os.chmod(hub / name, 0o2770 if name == "logs" else 0o2750)
    for name in ("hubctl_token", "proxy_token"):  # the roster service's; the proxy's
        token = hub / "state" / name
        if not token.exists():
            token.write_text(secrets.token_hex(32) + "\n")
            os.chmod(token, 0o600)
    for name in ("roles", "python"):
        shutil.rmtree(hub / name, ignore_errors=True)
    shutil.copytree(DEPLOY / "roles", hub / "roles")
    for role in (hub / "roles").iterdir():
        # Jupyter writes this marker in its config folder once it has looked for an IPython 3
        # profile to migrate; the role folders are read-only to users, so it must be there.
        (role / "migrated").write_text("")
    shutil.copytree(REPO / "mlmcourse", hub / "python" / "mlmcourse",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # compiled here, as root: users' processes cannot write the bytecode next to it
    compileall.compile_dir(hub / "python" / "mlmcourse", quiet=1)
    for module in ("mlmcourse_hub.py", "formgrader_tab.py"):
        shutil.copy2(DEPLOY / module, hub / "python" / module)
    python = user_python(hub)
    install_runtime(hub, python)
    write_script_wrappers(hub / "bin", python)
    # (runtime/ keeps its files' own modes: they may be hard links to the original's files)
    readable = [str(hub / name) for name in ("roles", "python", "bin")]
    subprocess.run(["chmod", "-R", "a+rX,go-w", *readable], check=True)


def prepare_exchange(hub: Path, instructor: str, course_id: str) -> None:
    """The course's folders in the exchange, made before anybody releases, with the modes
    nbgrader gives them for a group-shared course and the staff group as their group (setgid):
    made by the first staff member to release, they belonged to that user's own group, and a
    TA could not collect ("no read permissions for .../inbound") nor release feedback."""
    gid = grp.getgrnam(staff_group(course_id)).gr_gid
    uid = pwd.getpwnam(instructor).pw_uid
    course = hub / "exchange" / course_id
    for folder, mode in ((course, 0o2775), (course / "outbound", 0o2775),
                         (course / "inbound", 0o2773), (course / "feedback", 0o2771)):
        folder.mkdir(exist_ok=True)
        os.chown(folder, uid, gid)
        os.chmod(folder, mode)


HUB_EXCHANGE = '''
# On the course's hub (added by deploy/hub/hubctl.py setup): the class's exchange, for every
# nbgrader command a TA runs in this folder (the formgrader gets it from the hub's role config).
if os.environ.get("MLMCOURSE_NGSHARE_URL"):  # a hub of containers: the ngshare service
    from mlmcourse.exchange.ngshare import configure as use_ngshare
    use_ngshare(c)
elif os.environ.get("MLMCOURSE_EXCHANGE"):
    c.Exchange.root = os.environ["MLMCOURSE_EXCHANGE"]
# the hub's course id (a second course or section on the machine has its own)
c.CourseDirectory.course_id = os.environ.get("MLMCOURSE_COURSE_ID", c.CourseDirectory.course_id)
# feedback names each student as the gradebook does, not by a hub name (lti-...)
c.GenerateFeedback.preprocessors = [*c.GenerateFeedback.preprocessors,
                                    "mlmcourse_hub.NamedStudent"]
c.GenerateFeedback.exporter_class = "mlmcourse_hub.NamedFeedbackExporter"
'''


def prepare_course(instructor: str, notebooks: list[str], course_id: str,
                   folder: Path | None = None) -> Path:
    """The instructor's course folder: source notebooks, the course config, shared with staff.
    Only what is missing is written: an edited notebook or nbgrader_config.py stays. `folder`:
    the course folder of a container hub (hub/course, every staff container mounts it)."""
    course = folder or home(instructor) / course_id
    for assignment, name in map(notebook_file, notebooks):
        source = course / "source" / assignment
        source.mkdir(parents=True, exist_ok=True)
        target = source / f"{name}.ipynb"
        if not target.exists():
            copy_with_language_info(REPO / "source" / assignment / f"{name}.ipynb", target)
    config = course / "nbgrader_config.py"
    if not config.exists():
        config.write_text((REPO / "nbgrader_config.py").read_text() + HUB_EXCHANGE)
    if folder is not None:
        return course  # (owned by the containers' user: setup hands it over)
    instructor_home = home(instructor)
    run("chgrp", staff_group(course_id), str(instructor_home))
    os.chmod(instructor_home, 0o710)  # staff may pass through to the course, not list the home
    run("chown", "-R", f"{instructor}:{staff_group(course_id)}", str(course))
    run("chmod", "-R", "u+rwX,g+rwX,o-rwx", str(course))
    run("find", str(course), "-type", "d", "-exec", "chmod", "g+s", "{}", "+")
    return course


def hub_command(hub: Path) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that start the hub (run it with cwd=hub/state)."""
    require_root()
    read_course(hub)
    if not PROXY.is_file():
        raise HubError(f"{PROXY} is missing: `make hub` installs configurable-http-proxy there "
                       "from npm (deploy/hub/package-lock.json)")
    env = dict(os.environ, MLMCOURSE_HUB=str(hub))
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    command = [sys.executable, "-m", "jupyterhub", "-f", str(DEPLOY / "jupyterhub_config.py")]
    return command, env


def rotate(path: Path, keep: int = 5, size: int = 10_000_000) -> None:
    """path -> path.1 -> ... (keep copies) once it is past `size` bytes."""
    if not path.exists() or path.stat().st_size <= size:
        return
    for n in range(keep - 1, 0, -1):
        if path.with_name(f"{path.name}.{n}").exists():
            path.with_name(f"{path.name}.{n}").rename(path.with_name(f"{path.name}.{n + 1}"))
    path.rename(path.with_name(f"{path.name}.1"))


def start_checks(hub: Path) -> None:
    if hub_running(hub):
        raise HubError(f"the hub is already running (pid {hub_pid(hub)}); "
                       "`hubctl.py roster` changes the class without a restart")
    close_repository()  # again: a fresh clone, or a chmod since set-up
    rotate(hub / "logs" / "grading.log")
    if on_containers(hub):
        reason = containers().why_not_here()
        if reason:
            raise HubError(f"the container hub cannot start here: {reason}")
        try:  # the image (from its cache), the containers' network and user id
            containers().prepare(hub)
        except containers().ContainerError as err:
            raise HubError(str(err)) from None
    legacy = hub / "lti.json"  # (a hub set up before its lti.json moved to state/)
    if read_course(hub).get("auth") == "lti" and legacy.is_file() and not (
            hub / LTI_SETTINGS).is_file():
        install_lti(hub, legacy)
        legacy.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["setup", "start", "roster", "stop", "lti"])
    parser.add_argument("roster_file", nargs="?", type=Path,
                        help="roster: the class as a CSV (id, first_name, last_name, email, "
                        "role); lti: the platform's new values (lti.json)")
    parser.add_argument("--hub", type=Path, default=None,
                        help="the hub's folder, outside the repository (default: the one set "
                        f"up last, else {DEFAULT_HUB}; or MLMCOURSE_HUB_DIR)")
    parser.add_argument("--instructor", help="the instructor's Unix user (setup)")
    parser.add_argument("--roster", type=Path, help="the class as a CSV (setup; as `roster`)")
    parser.add_argument("--students", default="", help="comma-separated Unix users (setup)")
    parser.add_argument("--tas", default="", help="comma-separated Unix users (setup)")
    parser.add_argument("--notebooks", default=",".join(source_notebooks()),
                        help="setup: the notebooks to release, comma-separated, each "
                        "assignment/notebook or a notebook's name (default: every notebook of "
                        "every assignment of source/, as the course's build releases them)")
    parser.add_argument("--course-id", default=COURSE_ID,
                        help="setup: the course's id (default bert_mlm_course); a second course "
                        "or section on this machine takes another, and a hub folder and ports "
                        "of its own (MLMCOURSE_HUB_PORT, _HUB_PORT, _API_PORT, _NGSHARE_PORT)")
    parser.add_argument("--spawner", choices=SPAWNERS, default="local",
                        help="setup: users' servers as their own Unix processes (local) or "
                        "as containers of the course image (containers: podman)")
    parser.add_argument("--auth", choices=AUTHS, default="pam",
                        help="setup: logins with Unix passwords (pam) or launches from the LMS "
                        "(lti: LTI 1.3, with --spawner containers and --lti FILE)")
    parser.add_argument("--lti", type=Path, help="setup --auth lti: the platform's values "
                        "(lti.json; docs/lms-admin.md)")
    parser.add_argument("--create-users", action="store_true",
                        help="create missing users with useradd (no password: set it with passwd)")
    args = parser.parse_intermixed_args(argv)  # `roster --hub H FILE` and `roster FILE --hub H`
    split = lambda text: [name for name in text.split(",") if name]  # noqa: E731
    hub = (args.hub or default_hub()).resolve()
    try:
        if args.action == "lti":
            if not args.roster_file:
                raise HubError("lti needs the platform's values: hubctl.py lti FILE.json")
            print(change_lti(hub, args.roster_file))
            return 0
        if args.action == "setup":
            if not args.instructor or not (args.students or args.roster or args.auth == "lti"):
                raise HubError("setup needs --instructor NAME and --roster FILE.csv or "
                               "--students A,B,... (in LTI mode the class comes from launches)")
            roster = read_roster(args.roster) if args.roster else None
            setup(hub, args.instructor, split(args.students), split(args.tas),
                  split(args.notebooks), args.create_users, roster, args.spawner,
                  args.course_id, args.auth, args.lti)
            remember_hub(hub)
            print(f"hub prepared in {hub}; start it with: make hub")
            print("\n".join(max_score_lines(split(args.notebooks))))
            return 0
        if args.action == "roster":
            require_root()
            if not args.roster_file:
                raise HubError("roster needs the class as a CSV: hubctl.py roster FILE.csv")
            if read_course(hub).get("auth") == "lti":
                raise HubError("this hub logs in from the LMS (LTI): the class is whoever the "
                               "LMS launches, with the roles it sends; there is no roster")
            instructor = read_course(hub)["instructor"]
            change = apply_roster(hub, instructor, read_roster(args.roster_file),
                                  args.create_users)
            for member in change.added:
                print(f"added {member.id} ({member.role})")
            for member in change.moved:
                print(f"{member.id} is now a {member.role}")
            for name in change.removed:
                print(f"removed {name} (account, home folder and grades kept)")
            if not hub_running(hub):
                print("the hub is not running: it loads the class when it starts")
            return 0
        if args.action == "stop":
            require_root()
            for name in stop_everything(hub):
                print(f"stopped {name}'s server")
            print("the hub and its proxy are stopped")
            return 0
        start_checks(hub)
        command, env = hub_command(hub)
        how = ("users come by launch from the LMS's assignment link"
               if read_course(hub).get("auth") == "lti"
               else "users log in with their own Unix password")
        print(f"JupyterHub of {hub} on http://127.0.0.1:{env.get('MLMCOURSE_HUB_PORT', 8000)}/ "
              f"({how}; logs in {hub / 'logs'}); Ctrl-C stops it, `make hub-stop` stops "
              "everything")
        os.chdir(hub / "state")
        os.execve(command[0], command, env)
    except (HubError, RosterError) as err:
        print(f"hub: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
