"""The student processes' fork server: it runs inside the sandbox and forks them.

``python -m mlmcourse.grader.sandboxed.student_zygote FD ZYGOTE_SOCKET`` is what the zygote
(:mod:`mlmcourse.grader.processes.zygote`) runs in bubblewrap
(:func:`mlmcourse.grader.processes.sandbox.bwrap_argv`), once per grading process: it imports torch
once, says on FD whether its sandbox holds (uid 65534,
its own /proc, no course folder, no network), then forks one student process per request of the
zygote, kills one when asked, and reports each one's end. It is PID 1 of the sandbox's PID
namespace: a signal from inside the namespace reaches it only where it handles that signal, which
none but SIGCHLD is (not even SIGKILL), and it is not dumpable, so no student process (the same
user) may ptrace it or read its memory. When no student process is left it kills whatever they
left behind and empties the writable folders, so one submission's files and processes never meet
the next one's.
"""

from __future__ import annotations

import os
import resource
import selectors
import shutil
import signal
import socket
import sys
import time

from mlmcourse.grader.limits import Limits
from mlmcourse.grader.processes.sandbox import (
    NOBODY,
    SANDBOX_HOME,
    close_all_but,
    ended_children,
    kill_group,
    limit_student_process,
    set_undumpable,
)
from mlmcourse.grader.processes.zygote import (
    GO,
    HELLO,
    PRELOAD,
    preload,
    run_student_process,
    student_io_and_env,
    thread_count,
)
from mlmcourse.grader.wire.framing import ChannelClosed, recv_msg, send_msg


class StudentZygote:
    """The fork server in the sandbox, serving the zygote on `control`."""

    def __init__(self, control: socket.socket):
        self.control = control
        self.children: dict[int, int] = {}  # pid -> its request's number

    def probe(self, zygote_socket: str) -> str:
        """'ok', or what is wrong with this sandbox."""
        if os.getuid() != NOBODY or not os.path.isdir("/proc/self"):
            return f"uid {os.getuid()} and no /proc of its own"
        if os.path.exists(zygote_socket):
            return "the course folder is still visible"
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=1).close()
            return "the network is reachable"
        except OSError:
            return "ok"

    def serve(self) -> None:
        rfd, wfd = os.pipe()
        os.set_blocking(wfd, False)
        os.set_blocking(rfd, False)
        signal.set_wakeup_fd(wfd)
        for sig in range(1, signal.NSIG):
            if sig not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
                try:
                    signal.signal(sig, signal.SIG_IGN)  # nothing from a student is delivered
                except (OSError, ValueError):
                    pass
        signal.signal(signal.SIGCHLD, lambda *_: None)
        selector = selectors.DefaultSelector()
        selector.register(self.control, selectors.EVENT_READ, "request")
        selector.register(rfd, selectors.EVENT_READ, "sigchld")
        while True:
            for key, _ in selector.select(timeout=5):
                if key.data == "sigchld":
                    try:
                        os.read(rfd, 4096)
                    except BlockingIOError:
                        pass
                    continue
                try:
                    header, _, fds = recv_msg(self.control, deadline=time.monotonic() + 10,
                                              with_fds=1)
                except (ChannelClosed, TimeoutError, ValueError):
                    os._exit(0)  # the zygote went: so does the sandbox
                if header.get("kind") == "student" and fds:
                    self.fork(header, fds[0], (self.control.fileno(), rfd, wfd))
                elif header.get("kind") == "kill":
                    for pid in [p for p, n in self.children.items() if n == header.get("id")]:
                        kill_group(pid)
            self.reap()

    def reap(self) -> None:
        reaped = False
        for pid, _, report in ended_children():
            reaped = True
            number = self.children.pop(pid, None)
            if number is not None:
                send_msg(self.control, {"exit_of": number, **report})
        if reaped and not self.children:
            self.sweep()

    def sweep(self) -> None:
        """No student process is left: kill what they left behind, empty the writable folders."""
        try:
            os.kill(-1, signal.SIGKILL)  # every process here but this one
        except OSError:
            pass
        while True:
            try:
                os.wait()
            except ChildProcessError:
                break
        for folder in ("/tmp", "/dev/shm", SANDBOX_HOME):
            for entry in os.scandir(folder):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    try:
                        os.unlink(entry.path)
                    except OSError:
                        pass

    def fork(self, header: dict, fd: int, close: tuple[int, ...]) -> None:
        pid = os.fork()
        if pid:
            os.close(fd)
            self.children[pid] = header.get("id")
            return
        def prepare() -> tuple[socket.socket, str]:
            signal.set_wakeup_fd(-1)
            for sig in range(1, signal.NSIG):
                try:
                    signal.signal(sig, signal.SIG_DFL)
                except (OSError, ValueError):
                    pass
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it: EPIPE, not death
            close_all_but([fd])
            sock = socket.socket(fileno=fd)
            student_io_and_env()
            os.chdir(SANDBOX_HOME)
            sock.sendall(HELLO)  # the zygote outside moves us into our cgroups, then says go
            sock.settimeout(30)
            if sock.recv(1) != GO:
                os._exit(1)
            sock.settimeout(None)
            try:  # per user (every sandbox's): the cgroup's pids.max is this process's own
                resource.setrlimit(resource.RLIMIT_NPROC, (512, 512))
            except (ValueError, OSError):
                pass
            limit_student_process(Limits.from_json(header["limits"]))
            return sock, "namespaces"

        run_student_process(prepare)


def sandbox_main(fd: int, zygote_socket: str) -> None:
    set_undumpable()
    control = socket.socket(fileno=fd)
    preload(PRELOAD)  # as the zygote's: a student process imports nothing
    server = StudentZygote(control)
    send_msg(control, {"probe": server.probe(zygote_socket), "threads": thread_count()})
    server.serve()




if __name__ == "__main__":
    sandbox_main(int(sys.argv[1]), sys.argv[2])
