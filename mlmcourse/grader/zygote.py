"""Processes for the grading engine: a fork server ("zygote"), sandboxed student processes, trusted
kernels.

Importing torch costs seconds, and every graded notebook needs two processes (a trusted Jupyter
kernel that runs the tests, and a student process that runs the student's code), so both are forked
from one zygote that imported torch, IPython and ipykernel once. The zygote is started by the engine
(one per grading process), listens on a Unix socket in a private 0700 folder, and forks:

- a *trusted kernel* for a kernel stub (``python -m mlmcourse.grader.kernel_stub -f FILE``,
  the argv of the engine's kernel spec): an ipykernel with resource limits, in the scratch copy
  of the submission. It runs only course code: the hidden tests and the locked cells.
- a *student process* for a trusted kernel that asks for one: a process that runs only the student's
  code. Where the platform allows, the student process enters new mount, PID, network, IPC and UTS
  namespaces (a user namespace too when not root), sees a read-only root made of the system folders,
  the Python installation, the virtual environment and the ``mlmcourse`` package, plus small
  writable tmpfs folders -- never the course directory, the gradebook, ``source/``, other students
  or the network -- and drops to the ``nobody`` user (root) or to no capabilities (user namespace).
  Where namespaces are refused (a container without the rights, a kernel without user namespaces) no
  student process is started: student code is not graded without the sandbox (`SandboxRefused` says
  why and what to do) unless ``MLMCOURSE_SANDBOX=unsafe-no-sandbox`` names the risk. Then a student
  process is a plain forked process with the same resource limits, as a user of its own that owns
  nothing (root grader, interpreter readable by others), killed with everything it started.
  ``MLMCOURSE_SANDBOX=namespaces`` makes a missing sandbox an error at start.

Every student process also gets cgroups of its own where the machine lets the grader make them
(:class:`mlmcourse.grader.sandbox.StudentCgroups`, v2 or v1): a CPU quota
(`Limits.student_cpus`), a process count (`Limits.student_tasks`) and memory for it and all its
children together, and a kill of every process in it when the student process goes. The zygote is a
child subreaper, so what a student process leaves behind is reaped here.

Each request carries the `Limits` as JSON (:mod:`mlmcourse.grader.limits`; a kernel stub forwards
its ``MLM_LIMITS``). Resource limits of a student process (:mod:`mlmcourse.grader.sandbox`):
RLIMIT_DATA (the memory its code may allocate beyond what it inherited), RLIMIT_CPU, RLIMIT_FSIZE,
RLIMIT_NOFILE, RLIMIT_CORE=0 and, as ``nobody``, RLIMIT_NPROC; a trusted kernel gets RLIMIT_DATA
(`Limits.trusted_kernel_memory_bytes`) and RLIMIT_CORE=0. Wall-clock limits are enforced by the
caller, which asks the zygote to kill. The exit report of a student process carries the CPU seconds
it and the children it waited for used (``cpu_s``).

The grading process's side, starting this server once and stopping it, is
:mod:`mlmcourse.grader.zygote_handle`; the process jupyter_client starts for a trusted kernel is
:mod:`mlmcourse.grader.kernel_stub`.
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

from .config import with_interpreter_bin
from .framing import ChannelClosed, recv_msg, send_msg
from .limits import Limits
from .sandbox import (
    NOBODY,
    SANDBOX_HOME,
    UNSAFE,
    StudentCgroups,
    close_all_but,
    exit_code,
    fallback_can_drop,
    join_cgroups,
    kill_group,
    kill_uid,
    limit_student_process,
    limit_trusted_kernel,
    plain_child_drop,
    readonly_paths,
    refusal_text,
    sandbox_child,
    set_child_subreaper,
    status_text,
    student_uid,
)

# ---------------------------------------------------------------------------------------------
# The zygote.

PRELOAD = ("torch", "numpy", "IPython", "ipykernel.kernelapp", "matplotlib", "matplotlib.pyplot",
           "nbformat", "mlmcourse.grader.harness", "mlmcourse.grader.student_side")

CHILD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "CUDA_VISIBLE_DEVICES": "",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
}


def zygote_env(extra_path: str | None = None) -> dict[str, str]:
    """A clean environment for the zygote: no secrets of the grader's shell travel on."""
    keep = ("PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "PYTHONPATH", "JUPYTER_PATH",
            "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR",
            "MLMCOURSE_SANDBOX", "VIRTUAL_ENV", "TERM")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(CHILD_ENV)
    env["PATH"] = with_interpreter_bin(env.get("PATH") or "/usr/bin:/bin")
    return env


class Zygote:
    """The fork server, run by ``python -m mlmcourse.grader.zygote zygote DIR``."""

    def __init__(self, folder: str):
        self.folder = folder
        self.path = os.path.join(folder, "zygote.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        self.children: dict[int, socket.socket] = {}  # pid -> the connection that owns it
        self.owned: dict[socket.socket, int] = {}
        self.sandbox = "refused"  # or "namespaces", or UNSAFE
        self.sandbox_reason = ""
        self.binds: list[str] = []
        self.counter = 0
        self.roots: dict[int, str] = {}  # pid -> the empty folder its sandbox root was mounted on
        self.cgroups = StudentCgroups()
        self.groups: dict[int, list[str]] = {}  # student process pid -> its cgroup folders
        self.uids: dict[int, int] = {}  # fallback student process pid -> the user of its own

    # The sandbox is probed once, in a throw-away child, before any request is served.
    def probe_sandbox(self) -> None:
        wanted = os.environ.get("MLMCOURSE_SANDBOX", "auto")
        if wanted not in ("auto", "namespaces", UNSAFE):
            self.sandbox_reason = (f"MLMCOURSE_SANDBOX={wanted} is not a mode: use auto, "
                                   f"namespaces or {UNSAFE}")
            return
        if wanted == UNSAFE:
            self.sandbox, self.sandbox_reason = UNSAFE, f"MLMCOURSE_SANDBOX={UNSAFE}"
            return
        self.binds = readonly_paths()
        reader, writer = os.pipe()
        root = tempfile.mkdtemp(prefix="root-", dir=self.folder)
        pid = os.fork()
        if pid == 0:
            os.close(reader)
            try:
                sandbox_child(root, self.binds)
                ok = os.path.isdir("/proc/self") and not os.path.exists(self.path)
                import torch  # noqa: F401  (already loaded: the sandbox must not break it)

                message = "ok" if ok else "the course folder is still visible"
                try:
                    socket.create_connection(("127.0.0.1", 9), timeout=1).close()
                    message = "the network is reachable"
                except OSError:
                    pass
            except BaseException as err:  # noqa: BLE001  (any failure means: no sandbox)
                message = f"{type(err).__name__}: {err}"
            os.write(writer, message.encode()[:1000])
            os._exit(0)
        os.close(writer)
        message = b""
        while chunk := os.read(reader, 1000):
            message += chunk
        os.close(reader)
        os.waitpid(pid, 0)
        try:
            os.rmdir(root)
        except OSError:
            pass
        text = message.decode(errors="replace") or "the probe died"
        if text == "ok":
            self.sandbox = "namespaces"
        else:
            self.sandbox_reason = f"namespaces are refused here: {text}"
            if wanted == "namespaces":
                raise SystemExit(f"MLMCOURSE_SANDBOX=namespaces, but the sandbox fails: {text}")

    def serve(self, watch_fd: int) -> None:
        rfd, wfd = os.pipe()
        os.set_blocking(wfd, False)
        os.set_blocking(rfd, False)
        signal.set_wakeup_fd(wfd)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(rfd, selectors.EVENT_READ, "sigchld")
        self.selector.register(watch_fd, selectors.EVENT_READ, "parent")
        while True:
            for key, _ in self.selector.select(timeout=5):
                if key.data == "accept":
                    conn, _ = self.listener.accept()
                    self.selector.register(conn, selectors.EVENT_READ, "request")
                elif key.data == "sigchld":
                    try:
                        os.read(rfd, 4096)
                    except BlockingIOError:
                        pass
                elif key.data == "parent":
                    if not os.read(watch_fd, 4096):
                        self.shutdown()
                        return
                elif key.data == "request":
                    self.handle(key.fileobj)
            self.reap()

    def shutdown(self) -> None:
        for pid in list(self.children):
            self.kill_child(pid)
        self.cgroups.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def reap(self) -> None:
        self.cgroups.remove([])  # groups that were still emptying
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.clean_up_student(pid)
            root = self.roots.pop(pid, None)
            if root is not None:
                if self.sandbox == "namespaces":
                    try:
                        os.rmdir(root)  # an empty mount point
                    except OSError:
                        pass
                else:
                    shutil.rmtree(root, ignore_errors=True)
            conn = self.children.pop(pid, None)
            if conn is not None:
                self.owned.pop(conn, None)
                try:
                    send_msg(conn, {"exit": status_text(status), "code": exit_code(status),
                                    "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)})
                except OSError:
                    pass
                self.drop(conn)

    def kill_child(self, pid: int) -> None:
        """Kill a child with everything it started: its process group, and for a student process its
        cgroups and its own user (setsid() escapes the first, not the others)."""
        kill_group(pid)
        self.cgroups.kill(self.groups.get(pid, []))
        if pid in self.uids:
            kill_uid(self.uids[pid])

    def clean_up_student(self, pid: int) -> None:
        """A student process is gone: nothing it left behind may live on (a sandboxed student
        process's leftovers die with its PID namespace; a fallback student process's are killed
        here)."""
        folders = self.groups.pop(pid, [])
        self.cgroups.kill(folders)
        self.cgroups.remove(folders)
        uid = self.uids.pop(pid, None)
        if uid is not None:
            kill_uid(uid)

    def drop(self, conn: socket.socket) -> None:
        try:
            self.selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        pid = self.owned.pop(conn, None)
        if pid is not None:
            self.kill_child(pid)
        conn.close()

    def handle(self, conn: socket.socket) -> None:
        try:
            header, _blob, _ = recv_msg(conn, deadline=time.monotonic() + 10)
        except (ChannelClosed, TimeoutError, ValueError):
            self.drop(conn)
            return
        kind = header.get("kind")
        if kind == "kill":
            pid = self.owned.get(conn)
            if pid is not None:
                self.kill_child(pid)
            return
        if conn in self.owned:
            return
        if kind == "info":
            send_msg(conn, {"sandbox": self.sandbox, "reason": self.sandbox_reason,
                            "pid": os.getpid(), "cgroups": self.cgroups.describe()})
            return
        if kind == "kernel":
            pid = self.fork_kernel(conn, header)
        elif kind == "student" and self.sandbox == "refused":
            send_msg(conn, {"error": refusal_text(self.sandbox_reason)})
            self.drop(conn)
            return
        elif kind == "student":
            pid = self.fork_student(conn, header)
        else:
            pid = None
        if pid is None:
            self.drop(conn)
            return
        self.children[pid] = conn
        self.owned[conn] = pid

    def _child_common(self, keep: list[int]) -> None:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it: EPIPE, not death
        try:
            self.selector.close()
        except Exception:  # noqa: BLE001
            pass
        self.listener.close()
        os.closerange(3, 65536) if not keep else close_all_but(keep)

    def fork_kernel(self, conn: socket.socket, header: dict) -> int:
        pid = os.fork()
        if pid:
            send_msg(conn, {"pid": pid})
            return pid
        code = 1
        try:
            self._child_common([conn.fileno()])
            os.setpgid(0, 0)
            env = {k: str(v) for k, v in header.get("env", {}).items()}
            env.update(CHILD_ENV)
            os.environ.clear()
            os.environ.update(env)
            os.chdir(header["cwd"])
            limit_trusted_kernel(Limits.from_json(header["limits"]))
            _watch_owner(conn)
            from mlmcourse.grader import harness

            harness.run_trusted_kernel(list(header["argv"]), self.sandbox)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 0
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
        os._exit(code)

    def fork_student(self, conn: socket.socket, header: dict) -> int | None:
        try:
            limits = Limits.from_json(header["limits"])
        except (KeyError, TypeError, ValueError) as err:
            send_msg(conn, {"error": f"bad limits: {err}"})
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.counter += 1
        if self.sandbox == "namespaces":
            root = os.path.join(self.folder, f"root-{self.counter}")
            os.makedirs(root, exist_ok=True)
        else:  # the student process's own folder, outside the zygote's private one
            root = tempfile.mkdtemp(prefix="mlm-student-")
        groups = self.cgroups.create(f"w{self.counter}", limits)
        uid = student_uid(os.getpid(), self.counter)
        pid = os.fork()
        if pid:
            theirs.close()
            self.roots[pid] = root
            self.groups[pid] = groups
            if self.sandbox == UNSAFE and not fallback_can_drop():
                self.uids[pid] = uid
            send_msg(conn, {"pid": pid, "sandbox": self.sandbox,
                            "reason": self.sandbox_reason}, fds=[ours.fileno()])
            ours.close()
            return pid
        code = 1
        try:
            self._child_common([theirs.fileno()])
            join_cgroups(groups)  # first: everything this process starts stays inside them
            os.setpgid(0, 0)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.close(devnull)
            env = dict(CHILD_ENV)
            env.update({"HOME": SANDBOX_HOME, "PATH": "/usr/local/bin:/usr/bin:/bin",
                        "MPLBACKEND": "agg", "MPLCONFIGDIR": "/tmp", "TMPDIR": "/tmp"})
            os.environ.clear()
            os.environ.update(env)
            if self.sandbox == "namespaces":
                sandbox_child(root, self.binds)
                if os.getuid() == NOBODY:  # every sandbox's: pids.max is per process
                    try:
                        resource.setrlimit(resource.RLIMIT_NPROC, (512, 512))
                    except (ValueError, OSError):
                        pass
            else:
                plain_child_drop(root, uid, limits.student_tasks)
                os.environ["HOME"] = os.getcwd()
            limit_student_process(limits)
            from mlmcourse.grader import student_side

            student_side.serve(theirs, self.sandbox)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 0
        except BaseException:  # noqa: BLE001
            code = 70
        os._exit(code)


def _watch_owner(conn: socket.socket) -> None:
    """Exit when the process that asked for us (the kernel stub) goes away."""

    def watch() -> None:
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        os._exit(1)

    threading.Thread(target=watch, name="mlm-owner-watch", daemon=True).start()


def zygote_main(folder: str, watch: int) -> None:
    import gc

    set_child_subreaper()  # orphans (setsid() daemons) are reaped here
    for name in PRELOAD:
        __import__(name)
    from mlmcourse.grader import student_side

    student_side.warm_up()  # what a student process's calls would import lazily, imported once here
    # Everything imported so far lives as long as the process: keep the collector off it (every
    # collection in a torch process would otherwise walk millions of objects), and let forked
    # children share those pages instead of copying them when the collector touches them.
    gc.collect()
    gc.freeze()
    zygote = Zygote(folder)
    zygote.probe_sandbox()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
    info = {"socket": zygote.path, "sandbox": zygote.sandbox, "reason": zygote.sandbox_reason,
            "threads": max(threads, threading.active_count()),
            "cgroups": zygote.cgroups.describe()}
    sys.stdout.write(json.dumps(info) + "\n")
    sys.stdout.flush()
    os.dup2(devnull, 1)
    zygote.serve(watch)


if __name__ == "__main__":
    if sys.argv[1] == "zygote":
        zygote_main(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(f"unknown command {sys.argv[1]!r}")
