"""Framing: one message is ``[u32 header length][u64 blob length][JSON header][blob]`` over a
stream socket (and, with it, file descriptors where a message passes shared memory).

The trusted end of a student process's socket is a `GuardedSocket`: every send has a deadline, so a
student process that stops reading cannot hold the trusted kernel. Replies are bounded
(`CAPS.reply_header_bytes`, the caller's `max_blob`) before a byte of their body is read.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable

from mlmcourse.grader.limits import CAPS

_FRAME = struct.Struct("!IQ")


class ChannelClosed(EOFError):
    """The other end of a socket went away."""


def send_msg(sock: socket.socket, header: dict, blob: bytes = b"", fds: list[int] = ()) -> None:
    """One message (the trusted side's student process socket, a `GuardedSocket`, has a
    deadline)."""
    head = json.dumps(header).encode()
    data = _FRAME.pack(len(head), len(blob)) + head
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.sendall(data)
    if blob:
        sock.sendall(blob)


def _recv_exact(sock: socket.socket, size: int, deadline: float | None) -> bytearray:
    """Exactly `size` bytes (the socket's timeout is set by the caller)."""
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError
        try:
            count = sock.recv_into(view[got:], min(size - got, 1 << 22))
        except TimeoutError:
            raise
        except OSError as err:
            raise ChannelClosed(str(err)) from None
        if not count:
            raise ChannelClosed("connection closed")
        got += count
    return buffer


def recv_msg(
    sock: socket.socket, deadline: float | None = None, max_blob: int = 1 << 40, with_fds: int = 0,
    max_header: int = CAPS.request_header_bytes,
) -> tuple[dict, bytearray, list[int]]:
    """One message; TimeoutError past `deadline` (time.monotonic), ChannelClosed at EOF or when
    the message is larger than `max_header` + `max_blob` (nothing of it is read then)."""
    fds: list[int] = []
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
    try:
        if with_fds:
            try:
                first, fds, _flags, _addr = socket.recv_fds(sock, _FRAME.size, with_fds)
            except TimeoutError:
                raise
            except OSError as err:
                raise ChannelClosed(str(err)) from None
            if not first:
                raise ChannelClosed("connection closed")
            first = first + _recv_exact(sock, _FRAME.size - len(first), deadline)
        else:
            first = _recv_exact(sock, _FRAME.size, deadline)
        head_len, blob_len = _FRAME.unpack(first)
        if head_len > max_header or blob_len > max_blob:
            raise ChannelClosed(f"message too large ({head_len} + {blob_len} bytes)")
        body = _recv_exact(sock, head_len + blob_len, deadline)
    finally:
        if deadline is not None:
            sock.settimeout(None)
    try:
        header = json.loads(bytes(memoryview(body)[:head_len]))
    except ValueError:
        raise ChannelClosed("malformed message") from None
    if not isinstance(header, dict):
        raise ChannelClosed("malformed message")
    blob = body[head_len:] if blob_len else b""
    return header, blob, fds


class GuardedSocket(socket.socket):
    """The trusted end of a student process's socket: every send has a deadline (`send_timeout()`
    seconds), so a student process that stops reading cannot hold the trusted kernel. A send that
    fails (past its deadline, or the student process gone) is handed to `on_failure(error,
    started)`, which charges the student and stops the student process; the error is raised when
    that returns."""

    send_timeout: Callable[[], float] | None = None
    on_failure: Callable[[BaseException, float], None] | None = None

    def sendall(self, data, flags: int = 0) -> None:
        __tracebackhide__ = True
        if self.send_timeout is None:
            super().sendall(data, flags)
            return
        started = time.monotonic()
        self.settimeout(self.send_timeout())  # for the whole sendall, not each chunk
        try:
            super().sendall(data, flags)
        except BaseException as err:  # an interrupt too: the message is half sent
            if self.on_failure is not None:
                self.on_failure(err, started)
            raise
        self.settimeout(None)




def connect(socket_path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    return sock
