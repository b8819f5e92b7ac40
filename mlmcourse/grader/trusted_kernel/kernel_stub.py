"""The kernel stub: what jupyter_client starts for the trusted kernel's kernel spec.

``python -m mlmcourse.grader.trusted_kernel.kernel_stub -f CONNECTION_FILE`` asks the engine's
zygote (``MLM_ZYGOTE``) to fork the real, trusted kernel
(:mod:`mlmcourse.grader.trusted_kernel.harness`) with the
stub's environment, working folder and `Limits`, forwards the signals jupyter_client sends (an
interrupt, a shutdown) and exits with the kernel's exit code. It imports nothing heavy: torch and
IPython are loaded once, in the zygote.
"""

from __future__ import annotations

import os
import signal
import sys

from mlmcourse.grader.wire.framing import ChannelClosed, connect, recv_msg, send_msg


def kernel_stub(argv: list[str]) -> int:
    """Stand in for a kernel process: the zygote forks the real (trusted) kernel."""
    sock = connect(os.environ["MLM_ZYGOTE"])
    send_msg(sock, {"kind": "kernel", "argv": argv, "cwd": os.getcwd(),
                    "env": dict(os.environ), "limits": os.environ["MLM_LIMITS"]})
    header, _, _ = recv_msg(sock)
    pid = header["pid"]

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
        signal.signal(sig, forward)
    while True:
        try:
            header, _, _ = recv_msg(sock)
        except ChannelClosed:
            return 1
        except InterruptedError:
            continue
        if "exit" in header:
            code = int(header.get("code", 1))
            return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(kernel_stub(sys.argv[1:]))
