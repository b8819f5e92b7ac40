"""Processes for the grading engine: a fork server ("zygote"), sandboxed student processes, trusted
kernels.

Importing torch costs seconds, and every graded notebook needs two processes (a trusted Jupyter
kernel that runs the tests, and a student process that runs the student's code), so both are forked
from one zygote that imported torch, IPython and ipykernel once. The zygote is started by the engine
(one per grading process), listens on a Unix socket in a private 0700 folder, and forks:

- a *trusted kernel* for a kernel stub (``python -m mlmcourse.grader.trusted_kernel.kernel_stub -f
  FILE``, the argv of the engine's kernel spec): an ipykernel with resource limits, in the scratch
  copy
  of the submission. It runs only course code: the hidden tests and the locked cells.
- a *student process* for a trusted kernel that asks for one: a process that runs only the
  student's code. Student processes are forked by a second fork server
  (:mod:`mlmcourse.grader.sandboxed.student_zygote`)
  that runs inside one bubblewrap sandbox per zygote
  (:func:`mlmcourse.grader.processes.sandbox.bwrap_argv`: uid 65534 without capabilities, its own
  PID namespace, no network, a read-only root of the
  system folders, the Python installation, the venv and the ``mlmcourse`` package, small writable
  tmpfs folders), as PID 1 of its namespace, so no student process can kill it. When none of its
  student processes is left it kills whatever they left behind and empties the writable folders,
  so the next submission starts from a clean sandbox. Where bubblewrap is missing or refused no
  student process is started: student code is not graded without the sandbox (`SandboxRefused`
  says why and what to do) unless ``MLMCOURSE_SANDBOX=unsafe-no-sandbox`` names the risk. Then a
  student process is a plain process forked here with the same resource limits, as a user of its
  own that owns nothing (root grader, interpreter readable by others), killed with everything it
  started. ``MLMCOURSE_SANDBOX=namespaces`` makes a missing sandbox an error at start.

Every student process also gets cgroups of its own where the machine lets the grader make them
(:class:`mlmcourse.grader.processes.sandbox.StudentCgroups`, v2 or v1): a CPU quota
(`Limits.student_cpus`), a process count (`Limits.student_tasks`) and memory for it and all its
children together, and a kill of every process in it when the student process goes: the zygote
outside the sandbox learns a sandboxed student process's pid from the kernel (SO_PASSCRED on its
socket) and moves it into its cgroups before it runs any student code. The zygote is a child
subreaper, so what a fallback student process leaves behind is reaped here.

Each request carries the `Limits` as JSON (:mod:`mlmcourse.grader.limits`; a kernel stub
forwards its ``MLM_LIMITS``). Resource limits of a student process
(:mod:`mlmcourse.grader.processes.sandbox`):
RLIMIT_DATA (the memory its code may allocate beyond what it inherited), RLIMIT_CPU, RLIMIT_FSIZE,
RLIMIT_NOFILE, RLIMIT_CORE=0 and, as ``nobody``, RLIMIT_NPROC; a trusted kernel gets RLIMIT_DATA
(`Limits.trusted_kernel_memory_bytes`) and RLIMIT_CORE=0. Wall-clock limits are enforced by the
caller, which asks the zygote to kill. The exit report of a student process carries the CPU seconds
it and the children it waited for used (``cpu_s``).

The grading process's side, starting this server once and stopping it, is
:mod:`mlmcourse.grader.processes.zygote_handle`; the process jupyter_client starts for a trusted
kernel is :mod:`mlmcourse.grader.trusted_kernel.kernel_stub`.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from mlmcourse.grader.config import with_interpreter_bin
from mlmcourse.grader.limits import Limits
from mlmcourse.grader.processes.sandbox import (
    SANDBOX_HOME,
    UNSAFE,
    SandboxError,
    StudentCgroups,
    bwrap_argv,
    bwrap_path,
    close_all_but,
    ended_children,
    fallback_can_drop,
    join_cgroups,
    kill_group,
    kill_uid,
    limit_student_process,
    limit_trusted_kernel,
    plain_child_drop,
    refusal_text,
    set_child_subreaper,
    status_text,
    student_uid,
)
from mlmcourse.grader.wire.framing import ChannelClosed, recv_msg, send_msg

# ---------------------------------------------------------------------------------------------
# The zygote.

# torch._dynamo too: torch imports it (and sympy with it) on the first call of many functions
# (torch.testing.assert_close, an autograd.grad, an `out=` reference op), about 0.5 s of CPU that
# every forked kernel and student process would otherwise pay again.
PRELOAD = ("torch", "torch._dynamo", "numpy", "IPython", "ipykernel.kernelapp", "matplotlib",
           "matplotlib.pyplot", "nbformat", "mlmcourse.grader.trusted_kernel.harness",
           "mlmcourse.grader.sandboxed.student_side")

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
# A student process's environment: nothing of the grader's.
STUDENT_ENV = {**CHILD_ENV, "HOME": SANDBOX_HOME, "PATH": "/usr/local/bin:/usr/bin:/bin",
               "MPLBACKEND": "agg", "MPLCONFIGDIR": "/tmp", "TMPDIR": "/tmp"}
HELLO, GO = b"h", b"g"  # a sandboxed student process's first byte, and the zygote's answer


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
    """The fork server, run by ``python -m mlmcourse.grader.processes.zygote zygote DIR``."""

    def __init__(self, folder: str):
        self.folder = folder
        self.path = os.path.join(folder, "zygote.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        # pid (a sandboxed student process: minus its request's number) -> the connection that
        # owns it, and back
        self.children: dict[int, socket.socket] = {}
        self.owned: dict[socket.socket, int] = {}
        self.sandbox = "refused"  # or "namespaces", or UNSAFE
        self.sandbox_reason = ""
        self.inner: socket.socket | None = None  # to the fork server in the sandbox
        self.inner_process: subprocess.Popen | None = None  # bwrap
        self.inner_threads = 1  # of the fork server in the sandbox, after its imports
        self.counter = 0
        self.homes: dict[int, str] = {}  # fallback student process pid -> its own folder
        self.cgroups = StudentCgroups()
        self.groups: dict[int, list[str]] = {}  # student process key -> its cgroup folders
        self.uids: dict[int, int] = {}  # fallback student process pid -> the user of its own

    # The sandbox: bubblewrap starts the fork server inside it while this one imports; its first
    # message says whether the sandbox holds.
    def start_sandbox(self) -> None:
        wanted = os.environ.get("MLMCOURSE_SANDBOX", "auto")
        if wanted not in ("auto", "namespaces", UNSAFE):
            self.sandbox_reason = (f"MLMCOURSE_SANDBOX={wanted} is not a mode: use auto, "
                                   f"namespaces or {UNSAFE}")
            return
        if wanted == UNSAFE:
            self.sandbox, self.sandbox_reason = UNSAFE, f"MLMCOURSE_SANDBOX={UNSAFE}"
            return
        if bwrap_path() is None:
            self.refuse("bubblewrap (bwrap) is not installed")
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        program = [sys.executable, "-m", "mlmcourse.grader.sandboxed.student_zygote",
                   str(theirs.fileno()), self.path]
        env = {key: os.environ[key] for key in ("PYTHONPATH",) if key in os.environ}
        with open(os.path.join(self.folder, "sandbox.log"), "wb") as log:
            self.inner_process = subprocess.Popen(
                bwrap_argv(program), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log, pass_fds=(theirs.fileno(),), env={**STUDENT_ENV, **env})
        theirs.close()
        self.inner = ours

    def await_sandbox(self) -> None:
        if self.inner is None:
            return
        try:
            header, _, _ = recv_msg(self.inner, deadline=time.monotonic() + 300)
            text = header.get("probe", "no answer")
            self.inner_threads = int(header.get("threads", 1))
        except (ChannelClosed, TimeoutError, ValueError):
            with open(os.path.join(self.folder, "sandbox.log"), "rb") as log:
                text = log.read()[-1000:].decode(errors="replace").strip() or "it did not start"
        if text == "ok":
            self.sandbox = "namespaces"
            self.selector.register(self.inner, selectors.EVENT_READ, "sandbox")
            return
        self.inner.close()
        self.inner_process.kill()  # its end is then reaped as nobody's
        self.inner, self.inner_process = None, None
        self.refuse(f"the sandbox fails here: {text}")

    def refuse(self, reason: str) -> None:
        self.sandbox_reason = reason
        if os.environ.get("MLMCOURSE_SANDBOX") == "namespaces":
            raise SystemExit(f"MLMCOURSE_SANDBOX=namespaces, but {reason}")

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
                elif key.data == "sandbox":
                    self.hear_sandbox()
                elif key.data == "request":
                    self.handle(key.fileobj)
            self.reap()

    def shutdown(self) -> None:
        for pid in list(self.children):
            self.kill_child(pid)
        if self.inner is not None:
            self.inner.close()  # the fork server in the sandbox exits, and bwrap with it
        self.cgroups.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def reap(self) -> None:
        self.cgroups.remove([])  # groups that were still emptying
        for pid, status, report in ended_children():
            if self.inner_process is not None and pid == self.inner_process.pid:
                self.lose_sandbox(status_text(status))
                continue
            self.clean_up_student(pid)
            home = self.homes.pop(pid, None)
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)
            self.report_exit(pid, report)

    def report_exit(self, pid: int, report: dict) -> None:
        conn = self.children.pop(pid, None)
        if conn is not None:
            self.owned.pop(conn, None)
            try:
                send_msg(conn, report)
            except OSError:
                pass
            self.drop(conn)

    def hear_sandbox(self) -> None:
        """A message of the fork server in the sandbox: a student process's exit report."""
        try:
            header, _, _ = recv_msg(self.inner, deadline=time.monotonic() + 10)
        except (ChannelClosed, TimeoutError, ValueError):
            self.lose_sandbox("its fork server stopped")
            return
        key = -int(header.pop("exit_of", 0))
        self.clean_up_student(key)
        self.report_exit(key, header)

    def lose_sandbox(self, why: str) -> None:
        """The sandbox ended (it should not): its student processes are gone, no more start."""
        if self.inner is not None:
            self.selector.unregister(self.inner)
            self.inner.close()
        self.inner, self.inner_process = None, None
        self.sandbox, self.sandbox_reason = "refused", f"the sandbox ended ({why})"
        for key in [key for key in self.children if key < 0]:
            self.clean_up_student(key)
            self.report_exit(key, {"exit": self.sandbox_reason, "code": 1, "cpu_s": 0})

    def kill_child(self, pid: int) -> None:
        """Kill a child with everything it started: its process group, and for a student process its
        cgroups and its own user (setsid() escapes the first, not the others); a sandboxed student
        process is killed by its fork server too."""
        self.cgroups.kill(self.groups.get(pid, []))
        if pid < 0:
            if self.inner is not None:
                try:
                    send_msg(self.inner, {"kind": "kill", "id": -pid})
                except OSError:
                    pass
            return
        kill_group(pid)
        if pid in self.uids:
            kill_uid(self.uids[pid])

    def clean_up_student(self, pid: int) -> None:
        """A student process is gone: nothing it left behind may live on (a sandboxed student
        process's leftovers also die when its fork server has no student process left; a
        fallback student process's are killed here)."""
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
        except (ChannelClosed, TimeoutError, ValueError, OSError):
            # OSError: the connection was dropped earlier in the same round of select() (its
            # descriptor closed); the fork server serves the others, it never dies of one.
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
            pid = self.start_student(conn, header)
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
            from mlmcourse.grader.trusted_kernel import harness

            harness.run_trusted_kernel(list(header["argv"]), self.sandbox)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 0
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
        os._exit(code)

    def start_student(self, conn: socket.socket, header: dict) -> int | None:
        """A student process for the trusted kernel on `conn`: its cgroups, then the process (in
        the sandbox, or the fallback's plain process); it gets its socket's other end."""
        try:
            limits = Limits.from_json(header["limits"])
        except (KeyError, TypeError, ValueError) as err:
            send_msg(conn, {"error": f"bad limits: {err}"})
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.counter += 1
        groups = self.cgroups.create(f"w{self.counter}", limits)
        try:
            if self.sandbox == "namespaces":
                pid = self.start_sandboxed(ours, theirs, header["limits"], groups)
            else:
                pid = self.fork_plain(ours, theirs, limits, groups)
        except (OSError, TimeoutError) as err:
            self.cgroups.remove(groups)
            send_msg(conn, {"error": f"the student process did not start: {err}"})
            return None
        finally:
            theirs.close()
        self.groups[pid] = groups
        send_msg(conn, {"pid": pid, "sandbox": self.sandbox, "reason": self.sandbox_reason},
                 fds=[ours.fileno()])
        ours.close()
        return pid

    def start_sandboxed(self, ours: socket.socket, theirs: socket.socket, limits: str,
                        groups: list[str]) -> int:
        """Ask the fork server in the sandbox for a student process; its first byte on `ours`
        carries its pid as the kernel translates it for us (SO_PASSCRED), so it joins its
        cgroups before it runs anything of the student's. Its key here is minus its number."""
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        send_msg(self.inner, {"kind": "student", "id": self.counter, "limits": limits},
                 fds=[theirs.fileno()])
        ours.settimeout(30)
        try:
            hello, ancillary, _, _ = ours.recvmsg(1, socket.CMSG_SPACE(12))
            pids = [struct.unpack("3i", data[:12])[0] for level, kind, data in ancillary
                    if (level, kind) == (socket.SOL_SOCKET, socket.SCM_CREDENTIALS)]
            if hello != HELLO or not pids or pids[0] <= 0:
                raise SandboxError(0, "the sandboxed student process did not say hello")
            join_cgroups(groups, pids[0])
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 0)
            ours.sendall(GO)
        except (OSError, TimeoutError):
            send_msg(self.inner, {"kind": "kill", "id": self.counter})
            self.cgroups.kill(groups)
            raise
        finally:
            ours.settimeout(None)
        return -self.counter

    def fork_plain(self, ours: socket.socket, theirs: socket.socket, limits: Limits,
                   groups: list[str]) -> int:
        """The fallback: a plain student process forked here, in a folder of its own."""
        home = tempfile.mkdtemp(prefix="mlm-student-")
        uid = student_uid(os.getpid(), self.counter)
        pid = os.fork()
        if pid:
            self.homes[pid] = home
            if not fallback_can_drop():
                self.uids[pid] = uid
            return pid

        def prepare() -> tuple[socket.socket, str]:
            self._child_common([theirs.fileno()])
            join_cgroups(groups)  # first: everything this process starts stays inside them
            student_io_and_env()
            plain_child_drop(home, uid, limits.student_tasks)
            os.environ["HOME"] = os.getcwd()
            limit_student_process(limits)
            return theirs, self.sandbox

        run_student_process(prepare)


def run_student_process(prepare) -> None:
    """A forked student process, to its end: `prepare` readies it and names its socket and
    sandbox mode, then the student side serves; exit 0, SystemExit's code, or 70 when it fell
    over (never back into the fork server's loop)."""
    try:
        sock, mode = prepare()
        from mlmcourse.grader.sandboxed import student_side

        student_side.serve(sock, mode)
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0
    except BaseException:  # noqa: BLE001
        code = 70
    os._exit(code)


def student_io_and_env() -> None:
    """A student process's own process group, no terminal streams, `STUDENT_ENV`."""
    os.setpgid(0, 0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    os.environ.clear()
    os.environ.update(STUDENT_ENV)


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
    set_child_subreaper()  # orphans (setsid() daemons) are reaped here
    zygote = Zygote(folder)
    zygote.start_sandbox()  # its fork server imports torch while this one does
    preload(PRELOAD)
    zygote.await_sandbox()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    info = {"socket": zygote.path, "sandbox": zygote.sandbox, "reason": zygote.sandbox_reason,
            "threads": max(thread_count(), zygote.inner_threads),
            "cgroups": zygote.cgroups.describe()}
    sys.stdout.write(json.dumps(info) + "\n")
    sys.stdout.flush()
    os.dup2(devnull, 1)
    zygote.serve(watch)


def preload(modules: tuple[str, ...]) -> None:
    import gc

    for name in modules:
        __import__(name)
    from mlmcourse.grader.sandboxed import student_side

    student_side.warm_up()  # what a student process's calls would import lazily, imported once here
    # Everything imported so far lives as long as the process: keep the collector off it (every
    # collection in a torch process would otherwise walk millions of objects), and let forked
    # children share those pages instead of copying them when the collector touches them.
    gc.collect()
    gc.freeze()


def thread_count() -> int:
    threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
    return max(threads, threading.active_count())


if __name__ == "__main__":
    if sys.argv[1] == "zygote":
        zygote_main(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(f"unknown command {sys.argv[1]!r}")
