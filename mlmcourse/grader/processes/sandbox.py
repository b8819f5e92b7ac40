"""The sandbox of the student processes: bubblewrap's namespaces, resource limits, cgroups.

The student processes of one grading process are forked by a fork server that runs inside one
bubblewrap sandbox (`bwrap_argv`; :mod:`mlmcourse.grader.processes.zygote`): uid 65534 with no
capability, a PID namespace of its own, no network, a read-only root made of the system folders, the
Python
installation, the virtual environment and the ``mlmcourse`` package, plus small writable tmpfs
folders -- never the course directory, the gradebook, ``source/``, other students or the
network. Each student process also gets resource limits (`limit_student_process`) and, where the
machine lets the grader make them, cgroups of its own (`StudentCgroups`). Where bubblewrap is
missing or refused no student code runs (`refusal_text`), unless the TA names the risk
(``MLMCOURSE_SANDBOX=unsafe-no-sandbox``): then a student process is a plain process with the same
limits, as a user of its own that owns nothing (`plain_child_drop`).
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import sys
from pathlib import Path

from mlmcourse.grader.limits import Limits

# ---------------------------------------------------------------------------------------------
# Resource limits.


def vm_data_bytes() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _setlimit(which: int, value: int) -> None:
    try:
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        pass


def _limit_memory(memory_bytes: int) -> None:
    # Private writable memory beyond what this fork already holds (torch and friends).
    _setlimit(resource.RLIMIT_DATA, vm_data_bytes() + memory_bytes)
    _setlimit(resource.RLIMIT_CORE, 0)


def limit_trusted_kernel(limits: Limits) -> None:
    """Resource limits of a trusted kernel (this process): its memory, no core files."""
    _limit_memory(limits.trusted_kernel_memory_bytes)


def limit_student_process(limits: Limits) -> None:
    """Resource limits of a student process (this process): memory, CPU time, file size, open
    files."""
    _limit_memory(limits.memory_bytes)
    _setlimit(resource.RLIMIT_CPU, limits.cpu_seconds)
    _setlimit(resource.RLIMIT_FSIZE, 64 * 1024 * 1024)
    _setlimit(resource.RLIMIT_NOFILE, 256)


# ---------------------------------------------------------------------------------------------
# The sandbox: bubblewrap's namespaces, a read-only root, no privileges.

NOBODY = 65534
SANDBOX_HOME = "/home/student"
BWRAP = "bwrap"  # Debian's bubblewrap; found on PATH or in /usr/bin
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36


class SandboxError(OSError):
    pass


def _prctl(option: int, value: int) -> None:
    """prctl(2), where there is one (Linux); nothing elsewhere."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def readonly_paths() -> list[str]:
    """Host paths the student process may read: system folders, Python, the venv, the mlmcourse
    package."""
    import mlmcourse

    paths = [p for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                         "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                         "/etc/localtime", "/etc/alternatives", "/etc/fonts")
             if os.path.lexists(p)]
    package = str(Path(mlmcourse.__file__).resolve().parent)
    for prefix in {sys.base_prefix, sys.prefix, sys.exec_prefix}:
        paths.append(os.path.realpath(prefix))
        paths.append(os.path.abspath(prefix))
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        if os.path.isdir(os.path.join(real, "mlmcourse")) and not real.endswith("site-packages"):
            continue  # a project root on sys.path: only its package is bound, below
        if "site-packages" in real or "dist-packages" in real:
            paths.append(real)
    paths.append(package)
    unique: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == kept or path.startswith(kept.rstrip("/") + "/") for kept in unique):
            unique.append(path)
    return unique


def bwrap_path() -> str | None:
    """bubblewrap's program, or None where it is not installed."""
    import shutil

    return shutil.which(BWRAP) or (f"/usr/bin/{BWRAP}" if os.access(f"/usr/bin/{BWRAP}", os.X_OK)
                                   else None)


def bwrap_argv(program: list[str]) -> list[str]:
    """The bubblewrap command that runs `program` in the sandbox: new user, PID, network, IPC,
    UTS and cgroup namespaces; uid and gid 65534 and no capability; no further user namespace; a
    read-only root of `readonly_paths` (a top-level link such as /bin -> usr/bin stays a link);
    a fresh /proc and /dev; small writable tmpfs folders for /tmp, /dev/shm and the student's
    home; its own session (no terminal to write into); killed with the process that started it.
    `program` runs as the namespace's PID 1, so nothing inside can kill it."""
    argv = [bwrap_path() or BWRAP, "--unshare-all", "--unshare-user", "--disable-userns",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            # no --hostname: a container or a staff user on the hub is refused one ("Can't set
            # hostname: Operation not permitted"); the UTS namespace is new all the same
            "--uid", str(NOBODY), "--gid", str(NOBODY), "--as-pid-1"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for folder, size in (("/tmp", 64 << 20), ("/dev/shm", 16 << 20), (SANDBOX_HOME, 64 << 20)):
        argv += ["--perms", "1777", "--size", str(size), "--tmpfs", folder]
    # the read-only paths after the writable folders: a course (its venv, its package) that lives
    # under /tmp stays visible on top of the sandbox's own /tmp; the folders above it there are
    # made readable first (bwrap would make them 0700, closed to the sandbox's user)
    paths = readonly_paths()
    for folder in folders_above(paths, ("/tmp", "/dev/shm", SANDBOX_HOME)):
        argv += ["--perms", "0755", "--dir", folder]
    for path in paths:
        if os.path.islink(path) and os.path.dirname(path) == "/":
            argv += ["--symlink", os.readlink(path), path]
        else:
            argv += ["--ro-bind", path, path]
    argv += ["--remount-ro", "/", "--chdir", SANDBOX_HOME, "--", *program]
    return argv


def folders_above(paths: list[str], writable: tuple[str, ...]) -> list[str]:
    """The folders between a writable tmpfs folder and each path below it, shallowest first."""
    above: list[str] = []
    for path in paths:
        for top in writable:
            if path.startswith(top.rstrip("/") + "/"):
                parts = Path(path).relative_to(top).parts[:-1]
                for depth in range(1, len(parts) + 1):
                    folder = str(Path(top, *parts[:depth]))
                    if folder not in above:
                        above.append(folder)
    return above


def set_undumpable() -> None:
    """No process of the same user may ptrace this one or read its memory (the fork server
    inside the sandbox: the student processes run as its user)."""
    _prctl(PR_SET_DUMPABLE, 0)


def readable_by_others(path: str) -> bool:
    """True when a user without rights can read `path` (every folder above it is o+x)."""
    path = os.path.realpath(path)
    try:
        for folder in [path, *map(str, Path(path).parents)]:
            if not os.stat(folder).st_mode & 0o001:
                return False
    except OSError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Modes, kills and exit statuses of the zygote's children.

UNSAFE = "unsafe-no-sandbox"


class SandboxRefused(RuntimeError):
    """Student code would run without the sandbox, and nobody said that is acceptable."""


def refusal_text(reason: str) -> str:
    return (f"student code is not graded without the sandbox ({reason}). Install bubblewrap "
            "(Debian/Ubuntu: apt-get install bubblewrap) on a Linux machine where user namespaces "
            "work (as root, or with unprivileged user namespaces enabled), or set "
            f"MLMCOURSE_SANDBOX={UNSAFE} to run it as plain processes: a hostile submission can "
            "then see other processes, and may reach the grader's files and other gradings.")


def kill_group(pid: int) -> None:
    """Kill a child and its process group (what a student process without namespaces may have
    started)."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def close_all_but(keep: list[int]) -> None:
    keep = sorted(set(keep))
    low = 3
    for fd in keep:
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 65536)


def exit_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def status_text(status: int) -> str:
    """'exit code 3' or 'signal SIGKILL', for a wait status."""
    code = exit_code(status)
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    if code > 128 and code - 128 in {s.value for s in signal.Signals}:
        return f"signal {signal.Signals(code - 128).name}"
    return f"exit code {code}"


# ---------------------------------------------------------------------------------------------
# The fallback's identity: a user of its own per student process.

# Student processes of the fallback run as users that exist nowhere (no passwd entry, no files):
# one per student process, so that RLIMIT_NPROC counts one student's processes only, one student
# cannot signal another's, and everything a student process started can be killed at once
# (`kill_uid`). The range sits far above any real account; the zygote's pid spreads concurrent
# zygotes apart.
STUDENT_UID_BASE = 1_000_000_000
STUDENT_UIDS_PER_ZYGOTE = 4096


def ended_children():
    """Each child process that has ended, without waiting: (pid, raw status, its exit report
    as the fork servers send it)."""
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status, {"exit": status_text(status), "code": exit_code(status),
                            "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)}


def student_uid(zygote_pid: int, counter: int) -> int:
    """The uid of the fallback student process number `counter` of the zygote `zygote_pid`."""
    return (STUDENT_UID_BASE + (zygote_pid % 500_000) * STUDENT_UIDS_PER_ZYGOTE
            + counter % STUDENT_UIDS_PER_ZYGOTE)


def fallback_can_drop() -> str:
    """Why the fallback cannot run a student process as a user of its own ('' when it can)."""
    import mlmcourse

    if os.getuid() != 0:
        return "the grader does not run as root, so a student process cannot get a user of its own"
    needed = (sys.base_prefix, sys.prefix, os.path.dirname(mlmcourse.__file__))
    unreadable = [path for path in needed if not readable_by_others(path)]
    if unreadable:
        return ("a user without rights cannot read " + ", ".join(unreadable)
                + " (a folder above it is not o+x)")
    return ""


def plain_child_drop(home: str, uid: int, tasks: int) -> None:
    """The fallback (no namespaces): in a fresh folder, drop to a user of its own that owns
    nothing (when `fallback_can_drop` allows), at most `tasks` processes and threads."""
    os.chdir(home)
    if not fallback_can_drop():
        os.chown(home, uid, uid)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        _setlimit(resource.RLIMIT_NPROC, tasks)  # before setuid: the check is at fork time
        os.setresuid(uid, uid, uid)
        if os.geteuid() != uid:
            raise SandboxError(errno.EPERM, f"could not drop to uid {uid}")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def kill_uid(uid: int) -> None:
    """Kill every process of `uid` (a fallback student process and whatever it left, setsid() or
    not).

    A child of ours takes that uid and sends SIGKILL to -1: the kernel delivers it to every
    process of that user under one lock, so nothing can fork away in between."""
    if os.getuid() != 0:
        return
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        os._exit(0)
    while True:
        try:
            os.waitpid(pid, 0)
            return
        except InterruptedError:
            continue
        except ChildProcessError:
            return


def set_child_subreaper() -> None:
    """Orphans of our children come back to us (reaped, not left to the container's init)."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


# ---------------------------------------------------------------------------------------------
# Cgroups: one per student process, for a CPU quota, a process count, memory, and a kill of
# everything.

CPU_PERIOD_US = 100_000


def _cgroup_mounts() -> list[tuple[str, frozenset[str]]]:
    """(mount point, controllers) of each cgroup hierarchy; v2 has the controller set {''}."""
    mounts = []
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        parts = line.split()
        if len(parts) < 4:
            continue
        if parts[2] == "cgroup2":
            mounts.append((parts[1], frozenset({""})))
        elif parts[2] == "cgroup":
            wanted = {"cpu", "pids", "memory"} & set(parts[3].split(","))
            if wanted:
                mounts.append((parts[1], frozenset(wanted)))
    return mounts


def _own_cgroups() -> dict[frozenset[str], str]:
    """This process's cgroup path in each hierarchy, keyed like `_cgroup_mounts`."""
    own = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and not controllers:
            own[frozenset({""})] = path  # cgroup v2
            continue
        names = frozenset(controllers.split(",")) & {"cpu", "pids", "memory"}
        if names:
            own[names] = path
    return own


def _write(path: str, text: str) -> bool:
    try:
        with open(path, "w") as handle:
            handle.write(text)
        return True
    except OSError:
        return False


class StudentCgroups:
    """The zygote's cgroups (``mlm-zygote-<pid>`` beside the zygote's own, in every hierarchy
    that lets us write) and one child group per student process in each: ``w<n>``.

    `controls` says what is enforced: 'cpu', 'pids', 'memory' (the limits) and 'kill'
    (cgroup.kill of cgroup v2: every process of a student process dies at once, setsid() or not)."""

    def __init__(self) -> None:
        self.parents: list[tuple[str, frozenset[str]]] = []  # (folder, controls in it)
        self.controls: set[str] = set()
        self.leftovers: dict[str, float] = {}  # a process's folder -> when to stop its rmdir
        own = _own_cgroups()
        for mount, controllers in _cgroup_mounts():
            key = next((k for k in own if k and (k == controllers or k & controllers)), None)
            if key is None:
                continue
            parent = os.path.join(mount, own[key].lstrip("/"), f"mlm-zygote-{os.getpid()}")
            _remove_stale(os.path.dirname(parent))
            try:
                os.mkdir(parent, 0o755)
            except FileExistsError:
                pass
            except OSError:
                continue
            controls = self._enable(parent, controllers)
            self.parents.append((parent, frozenset(controls)))
            self.controls |= controls

    @staticmethod
    def _enable(parent: str, controllers: frozenset[str]) -> set[str]:
        if controllers != {""}:
            return set(controllers)
        available = set(Path(parent, "cgroup.controllers").read_text().split())
        wanted = {"cpu", "pids", "memory"} & available
        _write(os.path.join(parent, "cgroup.subtree_control"),
               " ".join("+" + name for name in sorted(wanted)))
        enabled = set(Path(parent, "cgroup.subtree_control").read_text().split())
        kill = {"kill"} if os.path.exists(os.path.join(parent, "cgroup.kill")) else set()
        return (wanted & enabled) | kill

    def describe(self) -> str:
        return ", ".join(sorted(self.controls)) or "none"

    def create(self, name: str, limits: Limits) -> list[str]:
        """Make the student process's groups with their limits; the student process joins them
        (`join`)."""
        folders = []
        for parent, controls in self.parents:
            folder = os.path.join(parent, name)
            try:
                os.mkdir(folder, 0o755)
            except OSError:
                continue
            _limit_group(folder, controls, limits)
            folders.append(folder)
        return folders

    def kill(self, folders: list[str]) -> None:
        """Kill every process in the student process's groups."""
        for folder in folders:
            if _write(os.path.join(folder, "cgroup.kill"), "1"):
                return
        for _ in range(20):  # cgroup v1: kill what is listed until nothing is (pids.max bounds it)
            pids = {pid for folder in folders for pid in _procs(folder)}
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def remove(self, folders: list[str], patience_s: float = 30) -> None:
        """Remove the student process's groups (a group empties a moment after its last process
        dies)."""
        import time

        for folder in folders:
            self.leftovers.setdefault(folder, time.monotonic() + patience_s)
        for folder, give_up in list(self.leftovers.items()):
            try:
                os.rmdir(folder)
            except FileNotFoundError:
                pass
            except OSError:
                if time.monotonic() < give_up:
                    continue
            del self.leftovers[folder]

    def close(self) -> None:
        """At the zygote's end: kill what is left, remove every group of ours."""
        for parent, _ in self.parents:
            children = [entry.path for entry in os.scandir(parent) if entry.is_dir()]
            self.kill(children)
            self.remove(children, patience_s=2)
        import time

        deadline = time.monotonic() + 2
        while self.leftovers and time.monotonic() < deadline:
            time.sleep(0.05)
            self.remove([], patience_s=0)
        for parent, _ in self.parents:
            try:
                os.rmdir(parent)
            except OSError:
                pass


def _remove_stale(folder: str) -> None:
    """Remove the empty groups of zygotes that died without cleaning up (killed outright)."""
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith("mlm-zygote-")]
    except OSError:
        return
    for entry in entries:
        if os.path.exists(f"/proc/{entry.name.rsplit('-', 1)[1]}"):
            continue
        try:
            for child in os.scandir(entry.path):
                if child.is_dir():
                    os.rmdir(child.path)
            os.rmdir(entry.path)
        except OSError:
            pass


def _limit_group(folder: str, controls: frozenset[str], limits: Limits) -> None:
    quota = max(1000, int(limits.student_cpus * CPU_PERIOD_US))
    memory = limits.student_group_memory_bytes
    v2 = os.path.exists(os.path.join(folder, "cgroup.controllers"))
    if "cpu" in controls:
        if v2:
            _write(os.path.join(folder, "cpu.max"), f"{quota} {CPU_PERIOD_US}")
        else:
            _write(os.path.join(folder, "cpu.cfs_period_us"), str(CPU_PERIOD_US))
            _write(os.path.join(folder, "cpu.cfs_quota_us"), str(quota))
    if "pids" in controls:
        _write(os.path.join(folder, "pids.max"), str(limits.student_tasks))
    if "memory" in controls:
        if v2:
            _write(os.path.join(folder, "memory.max"), str(memory))
            _write(os.path.join(folder, "memory.swap.max"), "0")
        else:
            _write(os.path.join(folder, "memory.limit_in_bytes"), str(memory))


def _procs(folder: str) -> list[int]:
    try:
        return [int(line) for line in Path(folder, "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def join_cgroups(folders: list[str], pid: int = 0) -> None:
    """Move process `pid` (0: this one) into the student process's groups, before it runs
    anything of the student's: everything it starts stays inside. Raises SandboxError when one
    refuses."""
    for folder in folders:
        if not _write(os.path.join(folder, "cgroup.procs"), str(pid or os.getpid())):
            raise SandboxError(errno.EPERM, f"could not join the cgroup {folder}")
