"""The engine's side of the zygote: this process's fork server, started once, and stopped.

`get_zygote()` starts ``python -m mlmcourse.grader.processes.zygote zygote DIR FD`` on first use (a
few seconds: it imports torch), reads the one line it writes when it is ready (its socket, the
sandbox it could have, its cgroups) and says once what a TA should know (no sandbox, no cgroups).
The zygote exits when this process closes its end of the pipe (`ZygoteHandle.close`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time

from mlmcourse.grader.processes.sandbox import UNSAFE, SandboxRefused, refusal_text
from mlmcourse.grader.processes.zygote import zygote_env


class ZygoteHandle:
    def __init__(self, process, folder: str, info: dict, watch_fd: int):
        self.process = process
        self.folder = folder
        self.info = info
        self.socket_path = info["socket"]
        self.watch_fd = watch_fd

    @property
    def sandbox(self) -> str:
        return self.info["sandbox"]

    def alive(self) -> bool:
        return self.process.poll() is None and os.path.exists(self.socket_path)

    def close(self) -> None:
        try:
            os.close(self.watch_fd)
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.process.kill()


_ZYGOTE: ZygoteHandle | None = None
_ZYGOTE_LOCK = threading.Lock()
_LOGGED: set[str] = set()


def log_once(message: str) -> None:
    if message not in _LOGGED:
        _LOGGED.add(message)
        import logging

        logging.getLogger("mlmcourse.grader.engine.submission").warning(message)
        sys.stderr.write(f"mlmcourse engine: {message}\n")


def get_zygote(timeout: float = 180) -> ZygoteHandle:
    """This process's zygote, started on first use (a few seconds: it imports torch)."""
    global _ZYGOTE
    import atexit
    import subprocess

    with _ZYGOTE_LOCK:
        if _ZYGOTE is not None and _ZYGOTE.alive():
            return _ZYGOTE
        folder = tempfile.mkdtemp(prefix="mlm-zygote-")
        os.chmod(folder, 0o700)
        reader, writer = os.pipe()  # the zygote exits when this process closes `writer`
        os.set_inheritable(reader, True)
        process = subprocess.Popen(
            [sys.executable, "-m", "mlmcourse.grader.processes.zygote", "zygote", folder,
             str(reader)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=zygote_env(),
            pass_fds=(reader,), start_new_session=True, cwd=folder,
        )
        os.close(reader)
        deadline = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the grading engine's fork server did not start")
            chunk = process.stdout.read1(4096) if hasattr(process.stdout, "read1") else b""
            line += chunk
            if not chunk:
                time.sleep(0.05)
        info = json.loads(line.decode())
        handle = ZygoteHandle(process, folder, info, writer)
        if info.get("threads", 1) > 1:
            log_once(f"the grading fork server runs {info['threads']} threads after its imports; "
                     "forking it is only safe with one (check the versions of torch/IPython)")
        if handle.sandbox == "refused":
            handle.close()
            raise SandboxRefused(refusal_text(info.get("reason") or "unknown reason"))
        if handle.sandbox == UNSAFE:
            log_once(f"MLMCOURSE_SANDBOX={UNSAFE}: student code runs WITHOUT the sandbox, as "
                     "plain processes with resource limits only")
        if info.get("cgroups", "none") == "none":
            log_once("no cgroups for workers here: a student's children are limited by "
                     "RLIMIT_CPU each and by RLIMIT_NPROC, not by a CPU quota")
        if _ZYGOTE is None:
            atexit.register(_stop_zygote)
        _ZYGOTE = handle
        atexit.register(shutil.rmtree, folder, True)
        return handle


def _stop_zygote() -> None:
    if _ZYGOTE is not None:
        _ZYGOTE.close()


def stop_zygote() -> None:
    """Stop this process's zygote (the next grading starts a new one, e.g. with another
    MLMCOURSE_SANDBOX)."""
    global _ZYGOTE
    with _ZYGOTE_LOCK:
        if _ZYGOTE is not None:
            _ZYGOTE.close()
            _ZYGOTE = None
