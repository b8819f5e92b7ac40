"""Student processes that must not cost other students: a CPU quota, no process that outlives its
student, and no grading without the sandbox unless the TA names the risk.

Cgroup tests skip where the grader cannot make cgroups; the sandbox tests skip where Linux
namespaces are refused. The class graded with two Dask workers is marked slow.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from conftest import ROOT, sample

from mlmcourse.build.samples import load_sample, sample_notebook
from mlmcourse.course import nbio
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.engine.submission import grade_submission
from mlmcourse.grader.limits import Limits
from mlmcourse.grader.processes import sandbox, zygote, zygote_handle
from mlmcourse.grader.trusted_kernel import harness as trusted_side
from mlmcourse.grader.trusted_kernel.proxies import StudentFunction

MARKER = "MLM_SETSID_DAEMON_MARKER"
FIRST, EXPERIMENT = "01_corruption", "04_experiment"


def survivors(marker: str) -> list[int]:
    """Pids of processes with `marker` on their command line or in their environment."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        for part in ("cmdline", "environ"):
            try:
                if marker.encode() in Path("/proc", entry, part).read_bytes():
                    found.append(int(entry))
                    break
            except OSError:
                pass
    return found


def write_student(root: Path, folder: Path, sample_id: str, notebooks: list[str]) -> None:
    """Write a sample's notebooks (the reference's where the sample has none) into folder."""
    names = notebook_names(root)
    student = load_sample(root / "samples" / f"{sample_id}.py", names)
    reference = load_sample(root / "samples" / "reference.py", names)
    for name in notebooks:
        owner = student if name in student.notebooks else reference
        nbio.write(sample_notebook(root, owner, name), folder / f"{name}.ipynb")


@pytest.fixture
def fresh_zygote():
    zygote_handle.stop_zygote()
    yield
    zygote_handle.stop_zygote()


@pytest.mark.skipif(sandbox.bwrap_path() is None, reason="bubblewrap is not installed")
def test_a_course_that_lives_under_tmp_runs_in_the_sandbox(tmp_path, monkeypatch):
    """A clone under /tmp (its .venv and package there): the sandbox's own /tmp must not hide
    it, and the folders above it must open to the sandbox's user (bwrap makes them 0700)."""
    import subprocess

    if not str(tmp_path).startswith("/tmp/"):
        pytest.skip("the test folder is not under /tmp")
    tool = tmp_path / "clone" / ".venv" / "bin"
    tool.mkdir(parents=True)
    (tool / "hello").write_text("#!/bin/sh\necho inside\n")
    (tool / "hello").chmod(0o755)
    everything_else = sandbox.readonly_paths()
    monkeypatch.setattr(sandbox, "readonly_paths",
                        lambda: [*everything_else, str(tmp_path / "clone" / ".venv")])
    done = subprocess.run(sandbox.bwrap_argv([str(tool / "hello")]), capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "inside"), done.stderr


def test_limits_carry_the_cpu_share_and_task_count():
    limits = Limits(student_cpus=0.5, student_tasks=16)
    assert Limits.from_json(limits.to_json()) == limits
    assert Limits.from_json("{}").student_cpus == 1.0
    assert limits.student_group_memory_bytes == 2 * limits.memory_bytes
    with pytest.raises(ValueError):
        Limits(student_tasks=1.5)


def test_without_the_sandbox_nothing_starts_unless_the_risk_is_named(monkeypatch, fresh_zygote):
    monkeypatch.setenv("MLMCOURSE_SANDBOX", "none")  # the old name of the fallback: refused now
    with pytest.raises(sandbox.SandboxRefused, match="MLMCOURSE_SANDBOX=unsafe-no-sandbox"):
        zygote_handle.get_zygote()
    monkeypatch.setenv("MLMCOURSE_SANDBOX", zygote.UNSAFE)
    assert zygote_handle.get_zygote().sandbox == zygote.UNSAFE


@pytest.mark.skipif(os.getuid() != 0, reason="only root can run a process as another user")
def test_kill_uid_kills_a_setsid_process_of_that_user():
    uid = sandbox.student_uid(os.getpid(), 4095)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        signal.pause()
        os._exit(0)
    time.sleep(0.2)
    sandbox.kill_uid(uid)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


DAEMON_CELL = '''import os, sys

def leave_a_daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)",
                                      "MLM_SETSID_DAEMON_MARKER"])
        os._exit(0)
    os.wait()
    return True
'''


@pytest.mark.parametrize("mode", ["auto", zygote.UNSAFE])
def test_a_setsid_daemon_dies_with_its_student_process(mode, monkeypatch, fresh_zygote):
    monkeypatch.setenv("MLMCOURSE_SANDBOX", mode)
    try:
        handle = zygote_handle.get_zygote()
    except sandbox.SandboxRefused:
        pytest.skip("namespaces are refused here")
    harness = trusted_side.Harness(
        {"notebook": "t.ipynb", "bindings": {},
         "notebooks": {"t.ipynb": [{"grade_id": "d", "source": DAEMON_CELL, "filename": "<d>"}]}},
        None, Limits(call_timeout_s=20), handle.socket_path)
    try:
        assert StudentFunction(harness.client("t.ipynb"), "leave_a_daemon")() is True
        deadline = time.monotonic() + 10
        while not survivors(MARKER) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert survivors(MARKER), "the daemon never started: the test proves nothing"
    finally:
        harness.close()
    deadline = time.monotonic() + 10
    while survivors(MARKER) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not survivors(MARKER), f"{mode}: the setsid() daemon outlived its student process"


def run_in_student_process(handle, cell: str, function: str, *args, limits=None):
    """Call `function` of `cell` in a fresh student process of the zygote `handle`, then end it."""
    harness = trusted_side.Harness(
        {"notebook": "t.ipynb", "bindings": {},
         "notebooks": {"t.ipynb": [{"grade_id": "c", "source": cell, "filename": "<c>"}]}},
        None, limits or Limits(call_timeout_s=20), handle.socket_path)
    try:
        return StudentFunction(harness.client("t.ipynb"), function)(*args)
    finally:
        harness.close()


ATTACK_THE_FORK_SERVER = '''import os, signal

def attack():
    for folder in ("/tmp", os.path.expanduser("~"), "/dev/shm"):
        with open(os.path.join(folder, "left-behind"), "w") as handle:
            handle.write("for the next student")
    sent = []
    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            os.kill(1, sig)  # the fork server: PID 1 of the sandbox
            sent.append(sig.name)
        except OSError:
            pass
    return sent

def look():
    return sorted(name for folder in ("/tmp", os.path.expanduser("~"), "/dev/shm")
                  for name in os.listdir(folder))
'''


def test_a_student_process_cannot_stop_the_fork_server_nor_leave_files_for_the_next(
        fresh_zygote):
    try:
        handle = zygote_handle.get_zygote()
    except sandbox.SandboxRefused:
        pytest.skip("bubblewrap is missing or refused here")
    sent = run_in_student_process(handle, ATTACK_THE_FORK_SERVER, "attack")
    assert "SIGKILL" in sent, "the signals never went out: the test proves nothing"
    # the sandbox's own skeleton of a course that lives under /tmp (its read-only venv, package)
    skeleton = {Path(folder).parts[2] for folder in
                sandbox.folders_above(sandbox.readonly_paths(), ("/tmp",))}
    left = run_in_student_process(handle, ATTACK_THE_FORK_SERVER, "look")
    assert [name for name in left if name not in skeleton] == []


FORK_MANY = '''import os, time

def spawn(count):
    children = []
    try:
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return len(children)
'''


def test_a_sandboxed_student_process_is_in_its_own_cgroup_from_its_start(fresh_zygote):
    """The zygote outside the sandbox moves each student process into its cgroups: its process
    count (`Limits.student_tasks`) holds for it and its children."""
    try:
        handle = zygote_handle.get_zygote()
    except sandbox.SandboxRefused:
        pytest.skip("bubblewrap is missing or refused here")
    if "pids" not in handle.info.get("cgroups", ""):
        pytest.skip("no pids cgroup for student processes on this machine")
    limits = Limits(call_timeout_s=20, student_tasks=8)
    assert run_in_student_process(handle, FORK_MANY, "spawn", 32, limits=limits) < 8


@pytest.mark.slow
def test_setsid_daemon_sample_scores_exactly_and_nothing_survives(tmp_path, fresh_zygote):
    folder = tmp_path / "submission"
    write_student(ROOT, folder, "hostile_setsid_daemon", [FIRST])
    [result] = grade_submission(ROOT, "hostile_setsid_daemon", folder, tmp_path / "scratch",
                                Limits(), notebooks=[FIRST])
    assert result.score == 24  # right answers, flagged for a look (it starts processes)
    assert result.needs_a_look()
    time.sleep(1)
    assert not survivors(MARKER)
    assert not list(Path("/tmp").glob("HACKED_BY_hostile_setsid_daemon"))


@pytest.mark.slow
def test_a_class_with_attackers_costs_the_honest_students_nothing(tmp_path, fresh_zygote):
    """Two Dask workers, as `make grade --workers 2`: a CPU hog (8 spinning children, in
    notebook 1 and, through its loaded functions, in notebook 4), an output flood and a stalled
    reply beside the reference and an honest student who prints to stderr on every call. The
    honest ones keep every point, each attacker gets exactly its score, the stall ended by the
    grader's own deadline."""
    from mlmcourse.grader.class_run.coordinator import dask_client, grade_class

    handle = zygote_handle.get_zygote()
    if "cpu" not in handle.info.get("cgroups", ""):
        pytest.skip("no CPU cgroup for workers on this machine (the fallback has no CPU quota)")
    root = tmp_path / "course"
    for folder in ("source", "release"):
        shutil.copytree(ROOT / folder, root / folder)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(ROOT / "samples", root / "samples")
    full = [FIRST, "03_empty_mask_and_gradient", EXPERIMENT]
    handed_in = {"hostile_cpu_hog": full, "reference": full, "honest_stderr_every_call": full,
                 "hostile_output_flood": [FIRST], "hostile_stalled_reply": [FIRST]}
    for student, notebooks in handed_in.items():
        write_student(root, root / "submitted" / student / SERIES, student, notebooks)
    started = time.monotonic()
    with dask_client(workers=2) as client:
        outcome = grade_class(root, list(handed_in), client=client,
                              notebooks=[FIRST, EXPERIMENT], progress=False)
    seconds = time.monotonic() - started
    assert not outcome.failed, outcome.failed
    scores = {(student, v.notebook): v.score for student, done in outcome.outcomes.items()
              for v in done.verdicts}
    print(f"class of {len(handed_in)} graded in {seconds:.0f} s: {scores}")
    for honest in ("reference", "honest_stderr_every_call"):
        assert scores[(honest, FIRST)] == 24, honest
        assert scores[(honest, EXPERIMENT)] == 5, honest
    for hostile in ("hostile_cpu_hog", "hostile_output_flood", "hostile_stalled_reply"):
        assert scores[(hostile, FIRST)] == sample(hostile).expected[FIRST], hostile  # as the build
    # Bounded by the grader's own deadlines, not by this test's clock: the stall ended as a
    # timeout of the call it stalled (how long the class took is printed above, not judged).
    stalled = {v.notebook: v for v in outcome.outcomes["hostile_stalled_reply"].verdicts}
    assert stalled[FIRST].status == "timeout", stalled[FIRST]
