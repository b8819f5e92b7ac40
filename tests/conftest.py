"""Shared fixtures: the repository, and one fresh build of the whole course in a copy."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlmcourse.course.layout import SERIES
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


# The suite runs in two pytest processes (pytest-xdist's workers, `make test`'s `-n 2`): most
# tests wait (browsers, hubs, kernels starting) and leave a core idle. Each test module goes to
# one worker whole, so its module fixtures are made once; the hub's modules go together to one
# worker (a term makes Unix users and walks all a student can read), first, being the longest.
#
# The fresh build (grading the whole sample class on every core) is the suite's longest step. It
# starts in the background as the session starts, once for all workers (the first that needs it
# starts it), and the modules that read it run last: it is done, or nearly, when they begin.
# MLMCOURSE_TESTS_BUILD_AT_START=0 builds it when first needed.
BUILD_AT_START = os.environ.get("MLMCOURSE_TESTS_BUILD_AT_START", "1") != "0"


class FreshBuild:
    """`python -m mlmcourse build --full` of a copy of the course, in a process of its own, shared
    by every pytest process of the session. It writes its exit status to a file: only the
    process that started it could wait for it."""

    def __init__(self, folder: Path):
        self.copy = folder / "course"
        self.log = folder / "build.log"
        self.status = folder / "build.status"
        self.pid_file = folder / "build.pid"

    @classmethod
    def shared(cls, tmp_path_factory) -> FreshBuild:
        """The session's one build, started by whichever pytest process asks first."""
        shared = session_folder(tmp_path_factory)
        build = cls(shared / "built")
        with (shared / "built.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not build.pid_file.exists():
                build.start()
        return build

    def start(self) -> None:
        copy_course(self.copy)
        record_status = '"$@"; echo $? > "$0.part" && mv "$0.part" "$0"'
        with self.log.open("w") as log:
            process = subprocess.Popen(
                # --full: every sample regraded, whatever is committed; niced, since the tests
                # beside it wait on browsers and hubs with timeouts, and it on nothing
                ["nice", "-n", "10", "sh", "-c", record_status, str(self.status),
                 sys.executable, "-m", "mlmcourse", "build", "--full"], cwd=self.copy,
                env=course_env(self.copy), stdout=log, stderr=subprocess.STDOUT,
                # its own process group, stopped whole if abandoned, in the tests' session: the
                # kernel's autogroups share the CPU between sessions first, so in a session of
                # its own the build would take as much as the whole suite, whatever its nice
                process_group=0)
        self.pid_file.write_text(str(process.pid))

    def result(self, timeout: float = 1800) -> Path:
        """The built copy, once the build is done (and succeeded)."""
        deadline = time.monotonic() + timeout
        while not self.status.exists():
            assert time.monotonic() < deadline, f"the build took over {timeout:.0f} s"
            time.sleep(1)
        returncode = int(self.status.read_text())
        assert returncode == 0, f"the build failed:\n{self.log.read_text()[-8000:]}"
        return self.copy

    def stop(self) -> None:
        """A session that ends before the build does stops it (and all it started)."""
        if self.pid_file.exists() and not self.status.exists():
            try:
                os.killpg(int(self.pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass


def session_folder(tmp_path_factory) -> Path:
    """A folder every pytest process of the session shares: xdist gives each worker a base
    folder of its own inside the controller's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def needs_the_build(item: pytest.Item) -> bool:
    return "built_course" in getattr(item, "fixturenames", ())


def in_the_hub(module: Path) -> bool:
    """Whether a test module belongs to the hub's unit of work (`test_hub*.py`)."""
    return module.name.startswith("test_hub")


def pytest_xdist_make_scheduler(config, log):
    """xdist's units of work: each test module whole (its module fixtures made once), and the
    hub's modules (`test_hub*.py`) as one unit, so that two hub terms never run at once. Units
    go out in the suite's own order (the hub first, the fresh build's readers last)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModulesAndTheHub(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            return "the hub" if in_the_hub(Path(module)) else module

    config.option.loadscopereorder = False
    return ModulesAndTheHub(config, log)


# While a hub term runs on one worker, the other worker's tests yield the CPU to it: a term is
# many processes (a hub, servers, kernels, a browser) and the suite's longest unit, and it ran
# 3.5 times slower beside the other worker at equal priority. A worker lowers its priority for
# the tests that are not the hub's (a process's children inherit it) and, as root, raises it
# back for the hub's.
HUB_FIRST = 5


def pytest_runtest_setup(item):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    niceness = 0 if in_the_hub(item.path) else HUB_FIRST
    with contextlib.suppress(PermissionError):  # (raising it back needs root)
        os.setpriority(os.PRIO_PROCESS, 0, niceness)


@pytest.hookimpl(trylast=True)  # after deselection: only the selected tests count
def pytest_collection_modifyitems(config, items):
    """The hub's modules first (the longest unit of work), its containers last among them (the
    course image builds in the background meanwhile); the modules that read the fresh build
    last (in their order), so that the rest of the suite runs while the build does. Whole
    modules move: a module's own fixtures stay one."""
    def rank(item) -> float:
        if in_the_hub(item.path):
            return 0.5 if item.path.name == "test_hub_containers.py" else 0
        return 2 if BUILD_AT_START and getattr(item, "module", None) in late else 1

    late = {getattr(item, "module", None) for item in items if needs_the_build(item)}
    items.sort(key=rank)  # (a stable sort: the order inside each rank stays)


@pytest.fixture(scope="session", autouse=True)
def fresh_build(request, tmp_path_factory):
    """Starts the fresh build as the session starts, if a selected test reads it."""
    if BUILD_AT_START and any(needs_the_build(item) for item in request.session.items):
        FreshBuild.shared(tmp_path_factory)
    yield


def pytest_sessionfinish(session):
    """The controller (the only pytest process without xdist) stops a build left running."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        factory = session.config._tmp_path_factory
        FreshBuild(session_folder(factory) / "built").stop()


@pytest.fixture(scope="session")
def built_course(fresh_build, tmp_path_factory) -> Path:
    """A copy of the course, rebuilt from source/ and samples/ by `python -m mlmcourse build`."""
    return FreshBuild.shared(tmp_path_factory).result()




class GradedClass:
    """The sample class as the fresh build graded it (every sample once, through `make grade`):
    what every test of a sample's grading reads, instead of grading it again."""

    def __init__(self, root: Path):
        self.root = root

    def autograded(self, student: str, name: str) -> Path:
        return self.root / "autograded" / student / SERIES / f"{name}.ipynb"

    def submitted(self, student: str, name: str) -> Path:
        return self.root / "submitted" / student / SERIES / f"{name}.ipynb"

    def verdict(self, student: str, name: str):
        from mlmcourse.course import nbio
        from mlmcourse.grader.results.verdict import verdict_of

        verdict = verdict_of(nbio.read(self.autograded(student, name)))
        assert verdict is not None, f"{student}/{name} carries no verdict"
        return verdict

    def verdicts(self, student: str) -> dict:
        folder = self.root / "autograded" / student / SERIES
        return {path.stem: self.verdict(student, path.stem)
                for path in sorted(folder.glob("*.ipynb"))}


@pytest.fixture(scope="session")
def graded_class(built_course) -> GradedClass:
    return GradedClass(built_course)


def sample(student_id: str, root: Path = ROOT):
    """The sample student samples/<student_id>.py describes."""
    from mlmcourse.build.samples import load_sample
    from mlmcourse.course.layout import notebook_names

    return load_sample(root / "samples" / f"{student_id}.py", notebook_names(root))


def write_sample(root: Path, student_id: str, folder: Path, notebooks: list[str] | None = None):
    """One sample student's notebooks (all it hands in, or `notebooks`) in folder/<id>/bert_mlm/,
    made from the release of the course at `root`; returns the sample."""
    from mlmcourse.build.samples import write_notebooks

    student = sample(student_id, root)
    write_notebooks(root, student, folder / student_id / SERIES, notebooks or None)
    return student


def fingerprint(folder: Path) -> dict[str, tuple[str, int]]:
    """sha256 and mtime of every file under `folder` (a file written, even unchanged, shows)."""
    import hashlib

    return {p.relative_to(folder).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(),
                                               p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}
