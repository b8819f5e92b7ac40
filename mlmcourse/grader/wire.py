"""The wire between the trusted side and a worker: framing, the tensor codec, errors.

Framing: ``[u32 header length][u64 blob length][JSON header][blob]`` over a stream socket; the
trusted side sends under a deadline (`GuardedSocket`) and caps and cleans replies (`clean_reply`).

The codec (``dumps`` / ``loads``): a JSON description of a tree (tuples, lists, dicts, numbers,
strings, dtypes, devices) and the raw bytes of each tensor storage once, so that views keep their
storage sharing. Only the trusted side may send pickles (its arguments may hold other objects,
e.g. a ``torch.Generator``); what a worker sends back is never unpickled, and every tensor is
checked against the bytes it came with.

Errors: an exception in the student's code travels as the names of its classes, its message and
the student's part of the traceback; the trusted side re-raises it as the first builtin class in
that list (``decode_error``), from a frame with a fixed name.
"""

from __future__ import annotations

import builtins
import json
import linecache
import re
import socket
import struct
import time
import traceback
from collections.abc import Callable
from typing import Any

OUTPUT_CAP = 20_000  # characters of the student's stdout / stderr kept per cell or call
TRUNCATED = "\n... (output truncated)\n"  # what follows output cut at OUTPUT_CAP
NOTEBOOK_OUTPUT_CAP = 200_000  # characters of the student's output shown in one notebook
MAX_DEPTH = 64

# ---------------------------------------------------------------------------------------------
# Framing: [u32 header length][u64 blob length][JSON header][blob] over a stream socket.

_FRAME = struct.Struct("!IQ")
MAX_HEADER = 16 * 1024 * 1024  # a request (the cells of every notebook travel in one)
MAX_REPLY_HEADER = 4 << 20  # a worker's reply (an honest one is far smaller): more is a crash


class ChannelClosed(EOFError):
    """The other end of a socket went away."""


def send_msg(sock: socket.socket, header: dict, blob: bytes = b"", fds: list[int] = ()) -> None:
    """One message (the trusted side's worker socket, a `GuardedSocket`, has a deadline)."""
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
    max_header: int = MAX_HEADER,
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
    """The trusted end of a worker's socket: every send has a deadline (`send_timeout()`
    seconds), so a worker that stops reading cannot hold the trusted kernel. A send that fails
    (past its deadline, or the worker gone) is handed to `on_failure(error, started)`, which
    charges the student and stops the worker; the error is raised when that returns."""

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


# ---------------------------------------------------------------------------------------------
# Trees of arguments and results: tuples, lists, dicts and leaves.


def flatten(obj: Any, leaves: list, depth: int = 0) -> Any:
    """A JSON-able spec of `obj` with its leaves appended to `leaves`."""
    import torch

    if depth > MAX_DEPTH:
        raise ValueError("the value is nested too deeply")
    if isinstance(obj, torch.Size):
        return ["S", [int(x) for x in obj]]
    if isinstance(obj, tuple):
        return ["T", [flatten(x, leaves, depth + 1) for x in obj]]
    if isinstance(obj, list):
        return ["L", [flatten(x, leaves, depth + 1) for x in obj]]
    if isinstance(obj, dict) and all(isinstance(k, str | int) for k in obj):
        return ["D", list(obj), [flatten(v, leaves, depth + 1) for v in obj.values()]]
    leaves.append(obj)
    return ["X", len(leaves) - 1]


def unflatten(spec: Any, leaves: list, depth: int = 0) -> Any:
    """Rebuild a tree; `spec` may come from the untrusted side, so it is checked as it is read."""
    import torch

    if depth > MAX_DEPTH or not isinstance(spec, list) or not spec:
        raise ValueError("malformed reply")
    kind = spec[0]
    if kind == "X" and len(spec) == 2 and type(spec[1]) is int and 0 <= spec[1] < len(leaves):
        return leaves[spec[1]]
    if kind == "S" and len(spec) == 2 and all(type(x) is int for x in spec[1]):
        return torch.Size(spec[1])
    if kind in ("T", "L") and len(spec) == 2 and isinstance(spec[1], list):
        items = [unflatten(x, leaves, depth + 1) for x in spec[1]]
        return tuple(items) if kind == "T" else items
    if kind == "D" and len(spec) == 3 and isinstance(spec[1], list) and isinstance(spec[2], list):
        if len(spec[1]) != len(spec[2]) or not all(type(k) in (str, int) for k in spec[1]):
            raise ValueError("malformed reply")
        pairs = zip(spec[1], spec[2], strict=True)
        return {k: unflatten(v, leaves, depth + 1) for k, v in pairs}
    raise ValueError("malformed reply")


_HEAD = struct.Struct("!I")
DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8",
           "int8", "int16", "int32", "int64", "bool", "uint16", "uint32", "uint64")
MAX_DIMS = 64


def pack_tree(obj: Any, allow_pickle: bool = False) -> bytes:
    """Encode a tree of tensors and plain values: JSON for the structure, raw bytes for storages.

    Tensors keep their storage sharing (one copy of each storage; views keep offset and strides).
    Only the trusted side may set `allow_pickle` (its arguments may hold other objects: the
    worker unpickles them); the worker's replies are never unpickled.
    """
    import pickle

    import torch

    leaves: list = []
    spec = flatten(obj, leaves)
    chunks: list[bytes] = []
    storages: list[list[int]] = []
    seen: dict[tuple, int] = {}
    size = 0

    def add_bytes(data: bytes) -> list[int]:
        nonlocal size
        chunks.append(data)
        size += len(data)
        return [size - len(data), len(data)]

    def tensor_meta(t) -> list:
        t = t.detach()
        if type(t) is not torch.Tensor:
            t = t.as_subclass(torch.Tensor)
        if t.layout != torch.strided or t.is_quantized:
            t = t.to_dense() if t.layout != torch.strided else t.dequantize()
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        dtype = str(t.dtype).replace("torch.", "")
        if dtype not in DTYPES:
            raise TypeError(f"tensors of dtype {t.dtype} cannot be passed")
        shape, stride = list(t.shape), list(t.stride())
        if t.device.type == "meta":
            return ["meta", dtype, shape, stride]
        key = (str(t.device), t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        if key not in seen or key[1] == 0:
            data = byte_view(t).cpu().numpy().tobytes() if key[2] else b""
            seen[key] = len(storages)
            storages.append(add_bytes(data))
        return ["t", seen[key], dtype, t.storage_offset(), shape, stride]

    metas = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            metas.append(tensor_meta(leaf))
        elif leaf is None or isinstance(leaf, bool | str) or type(leaf) in (int, float):
            metas.append(["n", leaf])
        elif isinstance(leaf, int | float):  # int / float subclasses (numpy scalars are not)
            metas.append(["n", int(leaf) if isinstance(leaf, int) else float(leaf)])
        elif isinstance(leaf, complex):
            metas.append(["c", leaf.real, leaf.imag])
        elif isinstance(leaf, torch.dtype):
            metas.append(["dt", str(leaf).replace("torch.", "")])
        elif isinstance(leaf, torch.device):
            metas.append(["dv", str(leaf)])
        elif allow_pickle:
            metas.append(["p", *add_bytes(pickle.dumps(leaf, protocol=pickle.HIGHEST_PROTOCOL))])
        else:
            raise TypeError(f"a {type(leaf).__name__} cannot be sent back")
    head = json.dumps({"spec": spec, "leaves": metas, "storages": storages}).encode()
    return _HEAD.pack(len(head)) + head + b"".join(chunks)


def unpack_tree(blob: bytes | bytearray, allow_pickle: bool = False) -> Any:
    """Decode `pack_tree`. Without `allow_pickle` (the trusted side) nothing but tensors and plain
    values can come out, and every tensor is checked against the bytes it was given."""
    import pickle

    import torch

    view = memoryview(blob)
    if len(view) < _HEAD.size:
        raise ValueError("malformed data")
    (head_len,) = _HEAD.unpack(view[:_HEAD.size])
    body = _HEAD.size + head_len
    if body > len(view):
        raise ValueError("malformed data")
    head = json.loads(bytes(view[_HEAD.size:body]))
    data = view[body:]
    if not isinstance(head, dict):
        raise ValueError("malformed data")
    storages = head.get("storages")
    if not isinstance(storages, list):
        raise ValueError("malformed data")
    made: dict[int, Any] = {}

    def storage(index) -> Any:
        if type(index) is not int or not 0 <= index < len(storages):
            raise ValueError("malformed data")
        if index not in made:
            entry = storages[index]
            if not (isinstance(entry, list) and len(entry) == 2
                    and all(type(x) is int and x >= 0 for x in entry)
                    and entry[0] + entry[1] <= len(data)):
                raise ValueError("malformed data")
            start, length = entry
            owned = torch.empty(length, dtype=torch.uint8)
            if length:
                owned.copy_(torch.frombuffer(bytearray(data[start:start + length]),
                                             dtype=torch.uint8))
            made[index] = owned.untyped_storage()
        return made[index]

    def ints(values) -> tuple[int, ...]:
        if not (isinstance(values, list) and len(values) <= MAX_DIMS
                and all(type(x) is int and x >= 0 for x in values)):
            raise ValueError("malformed data")
        return tuple(values)

    def dtype(name) -> Any:
        if name not in DTYPES:
            raise ValueError("malformed data")
        return getattr(torch, name)

    leaves = []
    for meta in head.get("leaves", []):
        if not (isinstance(meta, list) and meta and isinstance(meta[0], str)):
            raise ValueError("malformed data")
        kind = meta[0]
        if kind == "t" and len(meta) == 6:
            dt, offset = dtype(meta[2]), meta[3]
            if type(offset) is not int or offset < 0:
                raise ValueError("malformed data")
            shape, stride = ints(meta[4]), ints(meta[5])
            if len(shape) != len(stride):
                raise ValueError("malformed data")
            store = storage(meta[1])
            item = torch.empty(0, dtype=dt).element_size()
            last = offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) \
                if all(shape) else -1
            if (last + 1) * item > store.nbytes():
                raise ValueError("malformed data")
            leaves.append(torch.empty(0, dtype=dt).set_(store, offset, shape, stride))
        elif kind == "meta" and len(meta) == 4:
            leaves.append(torch.empty_strided(ints(meta[2]), ints(meta[3]), dtype=dtype(meta[1]),
                                              device="meta"))
        elif kind == "n" and len(meta) == 2 and (meta[1] is None or type(meta[1]) in (
                int, float, str, bool)):
            leaves.append(meta[1])
        elif kind == "c" and len(meta) == 3 and all(type(x) in (int, float) for x in meta[1:]):
            leaves.append(complex(meta[1], meta[2]))
        elif kind == "dt" and len(meta) == 2:
            leaves.append(dtype(meta[1]))
        elif kind == "dv" and len(meta) == 2 and isinstance(meta[1], str):
            leaves.append(torch.device(meta[1]))
        elif kind == "p" and allow_pickle and len(meta) == 3:
            start, length = meta[1], meta[2]
            leaves.append(pickle.loads(bytes(data[start:start + length])))  # noqa: S301
        else:
            raise ValueError("malformed data")
    return unflatten(head.get("spec"), leaves)


def unpack_reply(blob: bytes) -> Any:
    """Load what the worker sent: tensors and plain data only, never code."""
    return unpack_tree(blob, allow_pickle=False)


def unpack_request(blob: bytes) -> Any:
    """Load what the trusted kernel sent (worker side)."""
    return unpack_tree(blob, allow_pickle=True)


def has_data(tensor) -> bool:
    """A tensor with real bytes behind it (not meta, not empty)."""
    try:
        storage = tensor.untyped_storage()
        return tensor.device.type != "meta" and storage.nbytes() > 0 and storage.data_ptr() != 0
    except (RuntimeError, NotImplementedError):
        return False


def valid_indices(values, size: int) -> list[int]:
    """The valid, distinct indices in an untrusted list."""
    if not isinstance(values, list):
        return []
    return list(dict.fromkeys(k for k in values if type(k) is int and 0 <= k < size))


def view_fits(tensor, dtype, offset, shape, stride) -> bool:
    """Whether a view (offset, shape, stride) of `tensor`'s storage lies inside that storage."""
    import torch

    ints = [offset, *shape, *stride]
    if not (all(type(x) is int and x >= 0 for x in ints) and len(shape) == len(stride)
            and len(shape) <= MAX_DIMS):
        return False
    item = torch.empty(0, dtype=dtype).element_size()
    last = offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) \
        if all(shape) else offset - 1
    return (last + 1) * item <= tensor.untyped_storage().nbytes()


def byte_view(tensor):
    """A uint8 tensor over the whole storage of `tensor`."""
    import torch

    storage = tensor.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(
        storage, 0, (storage.nbytes(),), (1,))


# ---------------------------------------------------------------------------------------------
# Exceptions across the boundary.


class StudentCodeCrashed(RuntimeError):
    """The process running the student's code died."""


class StudentCodeTimeout(TimeoutError):
    """The student's code ran past its time."""


class StudentValue:
    """Stands for an object the student's code returned that cannot cross the boundary."""

    def __init__(self, type_name: str, text: str):
        self._type_name, self._text = type_name, text

    def __repr__(self) -> str:
        return f"<{self._type_name} object returned by your code: {self._text}>"


# The error a test sees is raised from here: a frame with a fixed name (no path of this file, so
# autograded notebooks are the same wherever the course lives) that says where the code ran.
_RAISE_FILE = "<your code, run in the grading sandbox>"
_RAISE_LINES = ["def _raise(error):\n",
                "    raise error  # raised by (or about) your code, in the grading sandbox\n"]
linecache.cache[_RAISE_FILE] = (sum(map(len, _RAISE_LINES)), None, _RAISE_LINES, _RAISE_FILE)
_raise_namespace: dict = {}
exec(compile("".join(_RAISE_LINES), _RAISE_FILE, "exec"), _raise_namespace)  # noqa: S102


def raise_from_sandbox(error: BaseException):
    """Raise `error` (without the context of the exception being handled, if any)."""
    __tracebackhide__ = True
    error.__cause__ = None
    error.__suppress_context__ = True
    _raise_namespace["_raise"](error)


def encode_error(err: BaseException, hide: tuple[str, ...]) -> dict:
    """Type (as the names of its classes), message and the student's part of the traceback."""
    try:
        message = str(err)
    except BaseException:  # noqa: BLE001  (a hostile __str__)
        message = "<the message could not be read>"
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename not in hide]
    lines = traceback.format_list(frames[-12:])
    # Cut before the scrub: it only shortens paths (12 frames of paths under PATH_MAX lose less
    # than 3 * OUTPUT_CAP), so the last OUTPUT_CAP characters come out as they did uncut.
    text = _relative_paths("".join(lines)[-4 * OUTPUT_CAP:])
    return {
        "mro": [[c.__module__, c.__qualname__] for c in type(err).__mro__][:32],
        "name": type(err).__name__,
        "message": message[:OUTPUT_CAP],
        "traceback": text[-OUTPUT_CAP:],
    }


# Linear: a match starts only at 'File "/' and its path ends at the next '"', so no character is
# scanned by more than one attempt (unlike a pattern that may start at every '/').
_LIBRARY_PATH = re.compile(r'File "/[^"]*/(?:site-packages|lib/python3\.\d+)/')
_COURSE_PATH = re.compile(r'File "/[^"]*/(mlmcourse/)')


def _relative_paths(text: str) -> str:
    """Library and course files by their short names (torch/autograd/function.py): where the
    grader keeps its environment is no business of the feedback, and must not change it."""
    return _COURSE_PATH.sub(r'File "\1', _LIBRARY_PATH.sub('File "', text))


def decode_error(info: dict, what: str) -> BaseException:
    """A trusted exception of the first builtin class in the student's exception's MRO."""
    info = clean_error(info)
    message = str(info.get("message", ""))
    name = str(info.get("name", "Exception"))
    chosen = None
    for entry in info.get("mro", []):
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] == "builtins"):
            continue
        cls = getattr(builtins, str(entry[1]), None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            if not issubclass(cls, Exception):
                cls, message = RuntimeError, f"your code raised {name}({message!r}) in {what}"
            try:
                chosen = cls(message)
                break
            except Exception:  # noqa: BLE001  (a builtin that wants other arguments)
                continue
    if chosen is None:
        chosen = RuntimeError(f"{name}: {message}")
    tb = str(info.get("traceback", "")).strip("\n")
    if tb:
        chosen.add_note(f"In your code ({name}):\n{tb}")
    return chosen


# ---------------------------------------------------------------------------------------------
# What a worker's reply may put in front of a reader: capped, and plain text. The worker caps its
# own output, but its module is the student's to change; these run on the trusted side.

# Control characters but \n and \t (ESC starts terminal colour and cursor codes; a lone \r hides
# a line, and nbconvert's carriage-return pass is quadratic on a long one), bidi overrides, and
# lone surrogates (they cannot be written to a notebook as UTF-8).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_text(value: Any, cap: int = OUTPUT_CAP, note: str = TRUNCATED, tail: bool = False) -> str:
    """`value` as plain text: its first (or last) `cap` characters, `note` after a cut head; not
    a str: empty. Linear, reading about `cap` characters (an honest worker's text is unchanged)."""
    if not isinstance(value, str):
        return ""
    limit = cap + len(note)  # the longest an honest worker sends
    text = _UNSAFE.sub(_escape, value[-limit:] if tail else value[:limit])
    if len(value) <= limit and len(text) <= limit:
        return text
    return text[-cap:] if tail else text[:cap] + note


def clean_error(info: Any) -> dict:
    """An error a worker described (`encode_error`), capped and plain."""
    info = info if isinstance(info, dict) else {}
    mro = info.get("mro") if isinstance(info.get("mro"), list) else []
    return {"mro": [[clean_text(e[0], 200, ""), clean_text(e[1], 200, "")] for e in mro[:32]
                    if isinstance(e, list) and len(e) == 2],
            "name": clean_text(info.get("name"), 200, "") or "Exception",
            "message": clean_text(info.get("message", ""), note=""),
            "traceback": clean_text(info.get("traceback", ""), note="", tail=True)}


class OutputBudget:
    """What the student's code may print in one notebook, all calls together."""

    def __init__(self, chars: int = NOTEBOOK_OUTPUT_CAP):
        self.chars, self.left, self.spent = chars, chars, False

    def admit(self, text: str) -> str:
        """`text`, or as much of it as is left; the first time it runs out, a note instead."""
        if len(text) <= self.left:
            self.left -= len(text)
            return text
        kept, self.left = text[:self.left], 0
        if self.spent:
            return kept
        self.spent = True
        return kept + (f"\n... (your code has printed more than {self.chars:,} characters in "
                       "this notebook: the rest of its output is not shown)\n")


def clean_reply(header: dict, budget: OutputBudget | None) -> dict:
    """A worker's reply with its text capped and plain: the output of the call (charged to
    `budget` when it will be shown), the error, the cells' outputs and the names' docs."""
    clean = dict(header)
    for key in ("stdout", "stderr"):
        if key in header:
            text = clean_text(header[key])
            clean[key] = budget.admit(text) if budget is not None else text
    if "error" in header:
        clean["error"] = clean_error(header["error"]) if header["error"] else None
    if "cells" in header:
        cells = header["cells"] if isinstance(header["cells"], list) else []
        clean["cells"] = [clean_reply({
            "grade_id": cell.get("grade_id") if isinstance(cell.get("grade_id"), str) else "",
            "stdout": cell.get("stdout"), "stderr": cell.get("stderr"), "error": cell.get("error"),
        }, budget) for cell in cells if isinstance(cell, dict)]
    if "names" in header:
        names = header["names"] if isinstance(header["names"], dict) else {}
        clean["names"] = {name: {"kind": clean_text(info.get("kind"), 40, ""),
                                 "doc": clean_text(info.get("doc"))}
                          for name, info in names.items() if isinstance(info, dict)
                          and isinstance(name, str) and name.isidentifier()}
    return clean


def connect(socket_path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    return sock


# The torch namespaces whose functions a test may patch (e.g. F.cross_entropy = refuse).
WATCHED = ("torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.special",
           "torch.linalg", "torch.autograd", "math")


def resolve_owner(name: str):
    import importlib

    import torch

    if name == "torch.Tensor":
        return torch.Tensor
    return importlib.import_module(name)
