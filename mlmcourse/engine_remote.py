"""Student code in a sandboxed worker; the hidden tests in a trusted kernel that calls it.

The trusted kernel (see :mod:`mlmcourse.engine`) executes the notebook rebuilt from ``source/``:
locked cells and hidden tests are the instructor's; in place of each of the student's solution
cells it runs ``__mlm_grader__.solution_cell(GRADE_ID)``, which binds the names the reference
solution defines (``make_mlm_inputs``, ``MaskedLMLoss``, ...) to *proxies*. The student's code
itself runs only in a worker process (:mod:`mlmcourse.engine_sandbox`): plain Python, the
notebook's ``setup`` cell and the student's solution cells exec'd into one namespace.

A call crosses the boundary in a small format of its own (``_dumps`` / ``_loads``): a JSON
description of the tree (tuples, lists, dicts, numbers, strings, dtypes, devices) and the raw bytes
of each tensor storage once, so that views keep their storage sharing. Trusted -> worker: the
arguments (detached; ``requires_grad`` flags, the global RNG state when it changed, the default
dtype, grad mode and the torch functions the test has patched travel along; other objects, e.g. a
``torch.Generator``, are pickled for the worker). Worker -> trusted: the results (plain tensors,
numbers, strings, containers -- never pickle, never code; every tensor is checked against the bytes
it came with), plus what the call did to its inputs: changed bytes of an input's storage are
written back into the caller's tensor, an output that is a view of an input becomes the same view
of the caller's tensor, a ``torch.Generator`` argument comes back advanced. Outputs that require
grad are returned through a trusted ``torch.autograd.Function`` whose backward asks the worker for
the gradients (``torch.autograd.grad`` over the student's graph, so a hand-written ``backward``
runs there). An exception is re-raised with the builtin type it derives from and its message; the
student's traceback is attached as a note. A worker that dies or overruns its time raises
``StudentCodeCrashed`` / ``StudentCodeTimeout`` in the test cell that called it, and is started
afresh for the next call.

A test that patches a torch function (``F.cross_entropy = refuse``) is honoured: every call
compares ``torch``, ``torch.nn.functional``, ``torch.special``, ``torch.linalg``, ``torch.nn``,
``torch.autograd``, ``torch.Tensor`` and ``math`` with a snapshot taken when the kernel started,
and the worker replaces each patched attribute by a stub for the duration of the call. The stub
first calls the test's replacement in the trusted kernel (with copies of the arguments): when that
raises, the exception is raised in the student's code; when it returns, the worker's original
function runs (so spies and refusals work; a replacement that returns a different value is not
reproduced).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import linecache
import os
import re
import socket
import struct
import sys
import time
import traceback
import weakref
from pathlib import Path
from typing import Any

from .engine_sandbox import ChannelClosed, connect, recv_msg, send_msg

OUTPUT_CAP = 20_000  # characters of the student's stdout / stderr kept per cell or call
MAX_DEPTH = 64

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
_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8",
           "int8", "int16", "int32", "int64", "bool", "uint16", "uint32", "uint64")
MAX_DIMS = 64


def _dumps(obj: Any, allow_pickle: bool = False) -> bytes:
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
        if dtype not in _DTYPES:
            raise TypeError(f"tensors of dtype {t.dtype} cannot be passed")
        shape, stride = list(t.shape), list(t.stride())
        if t.device.type == "meta":
            return ["meta", dtype, shape, stride]
        key = (str(t.device), t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        if key not in seen or key[1] == 0:
            data = _byte_view(t).cpu().numpy().tobytes() if key[2] else b""
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


def _loads(blob: bytes | bytearray, allow_pickle: bool = False) -> Any:
    """Decode `_dumps`. Without `allow_pickle` (the trusted side) nothing but tensors and plain
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
        if name not in _DTYPES:
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


def _loads_trusted(blob: bytes) -> Any:
    """Load what the worker sent: tensors and plain data only, never code."""
    return _loads(blob, allow_pickle=False)


def _loads_any(blob: bytes) -> Any:
    """Load what the trusted kernel sent (worker side)."""
    return _loads(blob, allow_pickle=True)


def _has_data(tensor) -> bool:
    """A tensor with real bytes behind it (not meta, not empty)."""
    try:
        storage = tensor.untyped_storage()
        return tensor.device.type != "meta" and storage.nbytes() > 0 and storage.data_ptr() != 0
    except (RuntimeError, NotImplementedError):
        return False


def _indices(values, size: int) -> list[int]:
    """The valid, distinct indices in an untrusted list."""
    if not isinstance(values, list):
        return []
    return list(dict.fromkeys(k for k in values if type(k) is int and 0 <= k < size))


def _fits(tensor, dtype, offset, shape, stride) -> bool:
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


def _byte_view(tensor):
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


def _fail(error: BaseException):
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
    text = _relative_paths("".join(lines))
    return {
        "mro": [[c.__module__, c.__qualname__] for c in type(err).__mro__][:32],
        "name": type(err).__name__,
        "message": message[:OUTPUT_CAP],
        "traceback": text[-OUTPUT_CAP:],
    }


_LIBRARY_PATH = re.compile(r'File "/[^"]*/(?:site-packages|lib/python3\.\d+)/')
_COURSE_PATH = re.compile(r'File "/[^"]*/(mlmcourse/)')


def _relative_paths(text: str) -> str:
    """Library and course files by their short names (torch/autograd/function.py): where the
    grader keeps its environment is no business of the feedback, and must not change it."""
    return _COURSE_PATH.sub(r'File "\1', _LIBRARY_PATH.sub('File "', text))


def decode_error(info: dict, what: str) -> BaseException:
    """A trusted exception of the first builtin class in the student's exception's MRO."""
    if not isinstance(info, dict):
        info = {}
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


@contextlib.contextmanager
def _capture():
    """Capture sys.stdout / sys.stderr of the student's code (capped)."""
    out, err = _CappedIO(), _CappedIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = saved


class _CappedIO(io.StringIO):
    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.tell() < OUTPUT_CAP:
            super().write(text[: OUTPUT_CAP - self.tell()])
            if self.tell() >= OUTPUT_CAP:
                super().write("\n... (output truncated)\n")
        return len(text)

    def text(self) -> str:
        return self.getvalue()


# ---------------------------------------------------------------------------------------------
# The worker: runs only student code (plus the notebook's setup cell).

WATCHED = ("torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.special",
           "torch.linalg", "torch.autograd", "math")


def _resolve_owner(name: str):
    import importlib

    import torch

    if name == "torch.Tensor":
        return torch.Tensor
    return importlib.import_module(name)


class _Worker:
    def __init__(self, sock: socket.socket):
        global _CURRENT_WORKER
        _CURRENT_WORKER = self
        self.sock = sock
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.handles: dict[int, tuple[list, list]] = {}
        self.next_handle = 1
        self.deadline_hint = None

    # -- messages -------------------------------------------------------------------------
    def reply(self, header: dict, blob: bytes = b"") -> None:
        send_msg(self.sock, header, blob)

    def serve(self) -> None:
        while True:
            try:
                header, blob, _ = recv_msg(self.sock)
            except ChannelClosed:
                os._exit(0)
            op = header.get("op")
            try:
                if op == "init":
                    self.init(header)
                elif op == "call":
                    self.call(header, blob)
                elif op == "backward":
                    self.backward(header, blob)
                elif op == "release":
                    for handle in header.get("handles", []):
                        self.handles.pop(handle, None)
                elif op == "exit":
                    os._exit(0)
            except (ChannelClosed, BrokenPipeError, ConnectionError):
                os._exit(0)
            except BaseException as exc:  # noqa: BLE001  (say what went wrong, keep serving)
                if op in ("init", "call", "backward"):
                    self.reply({"op": "error", "error": encode_error(exc, ()), "stdout": "",
                                "stderr": ""}, _dumps({}))

    # -- cells ----------------------------------------------------------------------------
    def init(self, header: dict) -> None:
        results = []
        for cell in header["cells"]:
            filename = cell["filename"]
            source = cell["source"]
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            error = None
            with _capture() as (out, err):
                try:
                    exec(compile(source, filename, "exec"), self.namespace)  # noqa: S102
                except BaseException as exc:  # noqa: BLE001  (the student's cell failed)
                    error = encode_error(exc, (__file__,))
            results.append({"grade_id": cell["grade_id"], "error": error,
                            "stdout": out.text(), "stderr": err.text()})
        names, values = {}, {}
        wanted = set(header.get("values") or [])
        for name, value in list(self.namespace.items()):
            if name.startswith("__"):
                continue
            kind, doc = self.kind(value)
            names[name] = {"kind": kind, "doc": doc}
            if kind == "value" and name in wanted:
                values[name] = value
        try:
            blob = _dumps(values)
        except Exception:  # noqa: BLE001
            blob = _dumps({})
        self.reply({"op": "ready", "cells": results, "names": names}, blob)

    @staticmethod
    def kind(value: Any) -> tuple[str, str]:
        import types

        import torch

        doc = ""
        try:
            doc = value.__doc__ if isinstance(value.__doc__, str) else ""
        except Exception:  # noqa: BLE001
            pass
        if isinstance(value, types.ModuleType):
            return "module", ""
        if isinstance(value, type):
            if issubclass(value, torch.autograd.Function):
                return "autograd_function", doc
            return "class", doc
        if callable(value):
            return "function", doc
        if isinstance(value, torch.Tensor | int | float | str | bool | complex | type(None)):
            return "value", ""
        return "object", ""

    # -- calls ----------------------------------------------------------------------------
    def target(self, path: str):
        parts = path.split(".")
        obj = self.namespace[parts[0]]
        for part in parts[1:]:
            obj = getattr(obj, part)
        return obj

    def call(self, header: dict, blob: bytes) -> None:
        import torch

        payload = _loads_any(blob)
        leaves = payload["leaves"]
        for index, flag in zip(header["tensors"], header["grad"], strict=False):
            if flag and isinstance(leaves[index], torch.Tensor):
                leaves[index].requires_grad_(True)
        args, kwargs = unflatten(header["spec"], leaves)
        tensor_leaves = [(i, t) for i, t in enumerate(leaves) if isinstance(t, torch.Tensor)]
        storages, snapshots = {}, {}
        for i, t in tensor_leaves:
            key = (t.device.type, t.untyped_storage().data_ptr())
            if _has_data(t) and key not in storages:
                storages[key] = i
                snapshots[i] = _byte_view(t).clone()
        if payload.get("rng") is not None:
            torch.set_rng_state(payload["rng"])
        rng_before = torch.get_rng_state()
        torch.set_default_dtype(getattr(torch, header["dtype"].replace("torch.", "")))
        restore = self.install_patches(header.get("patches", []))
        result, error = None, None
        with _capture() as (out, err):
            try:
                function = self.target(header["target"])
                with torch.set_grad_enabled(bool(header["grad_enabled"])):
                    result = function(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001
                error = encode_error(exc, (__file__,))
            finally:
                restore()
        reply = {"stdout": out.text(), "stderr": err.text()}
        back: dict[str, Any] = {}
        rng_after = torch.get_rng_state()
        if not torch.equal(rng_after, rng_before):  # the code drew from the global generator
            back["rng"] = rng_after
        mutations = {}
        for i, snapshot in snapshots.items():
            try:
                now = _byte_view(leaves[i])
                if now.numel() == snapshot.numel() and not torch.equal(now, snapshot):
                    mutations[i] = now.detach().clone()
            except RuntimeError:
                continue
        back["mutations"] = mutations
        back["generators"] = {i: g.get_state() for i, g in enumerate(leaves)
                              if isinstance(g, torch.Generator)}
        if error is not None:
            reply.update(op="error", error=error)
            self.reply(reply, _dumps(back))
            return
        try:
            self.pack_result(result, storages, leaves, reply, back, bool(header["grad_enabled"]))
            blob = _dumps(back)
        except BaseException as exc:  # noqa: BLE001
            reply.update(op="error", error=encode_error(exc, (__file__,)))
            back.pop("outputs", None)
            self.reply(reply, _dumps(back))
            return
        self.reply(reply, blob)

    def pack_result(self, result, storages, in_leaves, reply, back, grad_enabled) -> None:
        import torch

        out_leaves: list = []
        spec = flatten(result, out_leaves)
        aliases, diff, grad_leaf = {}, [], []
        packed = []
        for k, leaf in enumerate(out_leaves):
            if isinstance(leaf, torch.Tensor):
                tensor = leaf
                if type(tensor) not in (torch.Tensor, torch.nn.Parameter):
                    tensor = tensor.as_subclass(torch.Tensor)
                key = (tensor.device.type, tensor.untyped_storage().data_ptr())
                if tensor.requires_grad:
                    (diff if grad_enabled and tensor.grad_fn is not None else grad_leaf).append(k)
                elif _has_data(tensor) and key in storages:
                    aliases[k] = [storages[key], tensor.storage_offset(), list(tensor.shape),
                                  list(tensor.stride()), str(tensor.dtype)]
                    packed.append(None)
                    continue
                packed.append(tensor.detach())
            elif isinstance(leaf, int | float | str | bool | complex | type(None)
                            | torch.dtype | torch.device):
                packed.append(leaf)
            else:
                try:
                    text = repr(leaf)[:200]
                except BaseException:  # noqa: BLE001
                    text = "?"
                packed.append(["__student_value__", type(leaf).__qualname__, text])
        handle = None
        if diff:
            inputs = [t for t in in_leaves if isinstance(t, torch.Tensor) and t.requires_grad]
            handle = self.next_handle
            self.next_handle += 1
            self.handles[handle] = ([out_leaves[k] for k in diff], inputs)
        reply.update(op="result", spec=spec, aliases=aliases, diff=diff, grad_leaf=grad_leaf,
                     handle=handle)
        back["outputs"] = packed

    def backward(self, header: dict, blob: bytes) -> None:
        import torch

        handle = self.handles.get(header.get("handle"))
        if handle is None:
            err = RuntimeError("the graph of this result is gone (the worker was restarted)")
            self.reply({"op": "error", "error": encode_error(err, ()), "stdout": "",
                        "stderr": ""})
            return
        outputs, inputs = handle
        grads = _loads_any(blob)["grads"]
        with _capture() as (out, err):
            try:
                got = torch.autograd.grad(outputs, inputs, grads, allow_unused=True,
                                          retain_graph=True) if inputs else ()
                result = [None if g is None else g.detach() for g in got]
                error = None
            except BaseException as exc:  # noqa: BLE001
                error, result = encode_error(exc, (__file__,)), None
        reply = {"stdout": out.text(), "stderr": err.text()}
        if error is not None:
            reply.update(op="error", error=error)
            self.reply(reply)
            return
        reply.update(op="grads")
        self.reply(reply, _dumps({"grads": result}))

    # -- the test's patches -------------------------------------------------------------
    def install_patches(self, patches: list):
        missing = object()
        saved = []
        for owner_name, attr in patches:
            try:
                owner = _resolve_owner(owner_name)
            except Exception:  # noqa: BLE001
                continue
            original = vars(owner).get(attr, missing)
            current = getattr(owner, attr, None)
            if current is None:
                continue
            saved.append((owner, attr, original))
            try:
                setattr(owner, attr, self.stub(owner_name, attr, current))
            except (AttributeError, TypeError):
                saved.pop()

        def restore() -> None:
            for owner, attr, original in reversed(saved):
                try:
                    if original is missing:
                        delattr(owner, attr)
                    else:
                        setattr(owner, attr, original)
                except (AttributeError, TypeError):
                    pass

        return restore

    def stub(self, owner_name: str, attr: str, original):
        worker = self

        def patched(*args, **kwargs):
            worker.callback(owner_name, attr, args, kwargs)
            return original(*args, **kwargs)

        patched.__name__ = attr
        return patched

    def callback(self, owner_name: str, attr: str, args, kwargs) -> None:
        import torch

        leaves: list = []
        try:
            spec = flatten((args, kwargs), leaves)
            leaves = [x.detach() if isinstance(x, torch.Tensor) else x for x in leaves]
            leaves = [x if isinstance(x, torch.Tensor | int | float | str | bool | type(None)
                                      | torch.dtype | torch.device) else None for x in leaves]
            blob = _dumps({"leaves": leaves})
        except Exception:  # noqa: BLE001
            spec, blob = None, b""
        send_msg(self.sock, {"op": "callback", "owner": owner_name, "attr": attr, "spec": spec},
                 blob)
        header, _, _ = recv_msg(self.sock)
        if header.get("op") == "callback_error":
            raise decode_error(header["error"], f"{owner_name}.{attr}")


def worker_main(sock: socket.socket, sandbox: str) -> None:
    import torch

    torch.set_num_threads(1)
    if "matplotlib" in sys.modules:
        try:
            import matplotlib

            matplotlib.use("agg", force=True)
        except Exception:  # noqa: BLE001
            pass
    sys.argv = ["student"]
    # A warning names its category and message only: the grader's file paths would make the
    # feedback depend on where the course lives (and say nothing useful to the student).
    import warnings

    warnings.formatwarning = _short_warning
    _Worker(sock).serve()


def _short_warning(message, category, filename, lineno, line=None) -> str:
    return f"{category.__name__}: {message}\n"


# ---------------------------------------------------------------------------------------------
# The trusted side: a client of one worker, the proxies, and the harness of the kernel.


class WorkerClient:
    """One sandboxed worker that runs a notebook's setup and solution cells."""

    def __init__(self, harness: Harness, label: str, cells: list[dict]):
        self.harness = harness
        self.label = label  # e.g. '01_corruption.ipynb'
        self.cells = cells
        self.sock: socket.socket | None = None
        self.control: socket.socket | None = None
        self.ready: dict | None = None  # the first successful init: cell results and names
        self.values: dict = {}
        self.start_failures = 0
        self.generation = 0
        self.pending_release: list[int] = []
        self.rng = None  # the global RNG state the worker holds, when known

    # -- life -----------------------------------------------------------------------------
    def alive(self) -> bool:
        return self.sock is not None

    def stop(self, reason: str = "") -> str:
        """Kill the worker; return how it ended ('signal SIGKILL', 'exit code 1', ...)."""
        status = ""
        if self.control is not None:
            try:
                send_msg(self.control, {"kind": "kill"})
            except OSError:
                pass
            try:
                header, _, _ = recv_msg(self.control, deadline=time.monotonic() + 5)
                status = str(header.get("exit", ""))
            except (ChannelClosed, TimeoutError, ValueError):
                pass
            self.control.close()
        if self.sock is not None:
            self.sock.close()
        self.sock = self.control = None
        self.pending_release.clear()
        self.rng = None
        return status

    def exit_status(self) -> str:
        """After the data socket closed: how did the worker end?"""
        status = ""
        if self.control is not None:
            try:
                header, _, _ = recv_msg(self.control, deadline=time.monotonic() + 5)
                status = str(header.get("exit", ""))
            except (ChannelClosed, TimeoutError, ValueError):
                pass
        return status

    def start(self) -> None:
        __tracebackhide__ = True
        harness = self.harness
        if self.start_failures >= 3:
            _fail(StudentCodeCrashed(
                f"your code in {self.label} could not be started (it failed {self.start_failures}"
                " times while its cells ran): nothing of it can be tested"))
        control = connect(harness.zygote)
        send_msg(control, {"kind": "worker", "limits": harness.limits})
        header, _, fds = recv_msg(control, deadline=time.monotonic() + 30, with_fds=1)
        if not fds:
            control.close()
            raise RuntimeError("the grading engine could not start a worker")
        self.control = control
        self.sock = socket.socket(fileno=fds[0])
        self.generation += 1
        started = time.monotonic()
        try:
            wanted = sorted({n for names in harness.config.get("bindings", {}).values()
                             for n in names})
            send_msg(self.sock, {"op": "init", "cells": self.cells, "values": wanted})
            reply, blob = self.receive("the cells of " + self.label, started)
        except (StudentCodeCrashed, StudentCodeTimeout):
            self.start_failures += 1
            raise
        if reply.get("op") != "ready":
            self.stop()
            self.start_failures += 1
            _fail(StudentCodeCrashed(f"the worker for {self.label} sent a malformed reply"))
        self.start_failures = 0
        for cell in reply.get("cells", []):
            if cell.get("grade_id") == "setup" and cell.get("error"):
                # The instructor's setup cell failed in the worker: the sandbox lacks something.
                error = cell["error"]
                harness.incident("setup", f"{self.label}: {error.get('name')}: "
                                          f"{error.get('message')}")
        if self.ready is None:
            self.ready = reply
            try:
                values = _loads_trusted(blob)
                self.values = values if isinstance(values, dict) else {}
            except Exception:  # noqa: BLE001
                self.values = {}

    def ensure(self) -> None:
        __tracebackhide__ = True
        if self.sock is None:
            self.start()

    def names(self) -> dict:
        self.ensure()
        names = self.ready.get("names", {}) if self.ready else {}
        return names if isinstance(names, dict) else {}

    # -- one exchange ---------------------------------------------------------------------
    def receive(self, what: str, started: float, patches: list | None = None):
        """Wait for the worker's answer, serving callbacks; enforce the time limits."""
        __tracebackhide__ = True
        harness = self.harness
        deadline = started + harness.call_timeout()
        while True:
            try:
                header, blob, _ = recv_msg(self.sock, deadline=deadline,
                                           max_blob=harness.max_reply_bytes)
            except TimeoutError:
                harness.charge(time.monotonic() - started)
                self.stop()
                limit = deadline - started
                harness.incident("timeout", what)
                _fail(StudentCodeTimeout(
                    f"your code did not finish {what} within {limit:.0f} s (an endless loop, or "
                    "far too slow); it was stopped"))
            except ChannelClosed:
                harness.charge(time.monotonic() - started)
                status = self.exit_status()
                self.stop()
                harness.incident("crash", f"{what}: {status}")
                _fail(StudentCodeCrashed(_crash_message(what, status, harness.limits)))
            except BaseException:  # an interrupt (cell timeout): the worker is mid-call, drop it
                harness.charge(time.monotonic() - started)
                self.stop()
                raise
            if header.get("op") == "callback":
                self.serve_callback(header, blob, patches or [])
                continue
            harness.charge(time.monotonic() - started)
            return header, blob

    def serve_callback(self, header: dict, blob: bytes, patches: list) -> None:
        owner, attr = header.get("owner"), header.get("attr")
        if [owner, attr] not in patches:
            send_msg(self.sock, {"op": "callback_ok"})
            return
        args, kwargs = (), {}
        try:
            if header.get("spec") is not None and blob:
                leaves = _loads_trusted(blob)["leaves"]
                args, kwargs = unflatten(header["spec"], leaves)
        except Exception:  # noqa: BLE001
            args, kwargs = (), {}
        try:
            replacement = getattr(_resolve_owner(owner), attr)
            replacement(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001  (the test's stub refused: say so over there)
            send_msg(self.sock, {"op": "callback_error", "error": encode_error(exc, ())})
            return
        send_msg(self.sock, {"op": "callback_ok"})

    def call(self, target: str, args: tuple, kwargs: dict):
        __tracebackhide__ = True
        import torch

        harness = self.harness
        harness.check_budget(target)
        self.ensure()
        if self.pending_release:
            send_msg(self.sock, {"op": "release", "handles": self.pending_release})
            self.pending_release = []
        leaves: list = []
        try:
            spec = flatten((tuple(args), dict(kwargs)), leaves)
        except ValueError as err:
            _fail(TypeError(f"cannot pass these arguments to {target}: {err}"))
        tensors = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
        grad = [bool(leaves[i].requires_grad) for i in tensors]
        sent = [x.detach() if isinstance(x, torch.Tensor) else x for x in leaves]
        patches = harness.patched()
        rng = torch.get_rng_state()
        changed = self.rng is None or not torch.equal(rng, self.rng)  # the worker has self.rng
        try:
            blob = _dumps({"leaves": sent, "rng": rng if changed else None}, allow_pickle=True)
        except Exception as err:  # noqa: BLE001
            _fail(TypeError(f"cannot pass these arguments to {target}: {err}"))
        started = time.monotonic()
        send_msg(self.sock, {
            "op": "call", "target": target, "spec": spec, "tensors": tensors, "grad": grad,
            "dtype": str(torch.get_default_dtype()), "grad_enabled": torch.is_grad_enabled(),
            "patches": patches,
        }, blob)
        header, blob = self.receive(f"in {target}", started, patches)
        harness.show_output(header)
        try:
            back = _loads_trusted(blob)
        except Exception:  # noqa: BLE001
            self.stop()
            _fail(StudentCodeCrashed(f"{target} sent back something that is not plain data"))
        self.rng = rng
        self.apply_effects(leaves, back)
        if header.get("op") == "error":
            _fail(decode_error(header.get("error", {}), target))
        if header.get("op") != "result":
            _fail(StudentCodeCrashed(f"{target}: malformed reply from the worker"))
        return self.rebuild(header, back, leaves, tensors, target)

    def apply_effects(self, leaves: list, back: dict) -> None:
        import torch

        rng = back.get("rng")
        if isinstance(rng, torch.Tensor) and rng.dtype == torch.uint8:
            try:
                torch.set_rng_state(rng)
                self.rng = rng
            except RuntimeError:
                pass
        for index, data in (back.get("mutations") or {}).items():
            if not (isinstance(index, int) and 0 <= index < len(leaves)):
                continue
            target = leaves[index]
            if isinstance(target, torch.Tensor) and isinstance(data, torch.Tensor) \
                    and _has_data(target):
                view = _byte_view(target)
                if data.dtype == torch.uint8 and data.shape == view.shape:
                    with torch.no_grad():
                        view.copy_(data)
        for index, state in (back.get("generators") or {}).items():
            if isinstance(index, int) and 0 <= index < len(leaves):
                generator = leaves[index]
                if isinstance(generator, torch.Generator) and isinstance(state, torch.Tensor):
                    try:
                        generator.set_state(state)
                    except RuntimeError:
                        pass

    def rebuild(self, header: dict, back: dict, in_leaves: list, tensors: list, target: str):
        import torch

        outputs = list(back.get("outputs") or [])
        aliases = header.get("aliases") or {}
        for key, entry in (aliases.items() if isinstance(aliases, dict) else ()):
            try:
                k = int(key)
                index, offset, shape, stride, dtype = entry
                caller = in_leaves[index] if type(index) is int and 0 <= index < len(in_leaves) \
                    else None
            except (TypeError, ValueError):
                continue
            if not (0 <= k < len(outputs)) or not isinstance(caller, torch.Tensor):
                continue
            name = str(dtype).replace("torch.", "")
            dt = getattr(torch, name, None) if name in _DTYPES else None
            if not isinstance(dt, torch.dtype) or not _fits(caller, dt, offset, shape, stride):
                continue  # an impossible view: the output stays as it came (a copy)
            try:
                view = torch.empty(0, dtype=dt, device=caller.device).set_(
                    caller.untyped_storage(), int(offset), tuple(shape), tuple(stride))
            except (RuntimeError, TypeError, ValueError):
                continue
            outputs[k] = view
        for k, leaf in enumerate(outputs):
            if isinstance(leaf, list) and len(leaf) == 3 and leaf[0] == "__student_value__":
                outputs[k] = StudentValue(str(leaf[1]), str(leaf[2]))
        for k in _indices(header.get("grad_leaf"), len(outputs)):
            if isinstance(outputs[k], torch.Tensor) and outputs[k].is_floating_point():
                outputs[k].requires_grad_(True)
        diff = [k for k in _indices(header.get("diff"), len(outputs))
                if isinstance(outputs[k], torch.Tensor) and outputs[k].is_floating_point()]
        grad_inputs = [in_leaves[i] for i in tensors if in_leaves[i].requires_grad]
        if diff:
            if grad_inputs and torch.is_grad_enabled():
                box = _RemoteGraph(self, header.get("handle"), len(grad_inputs))
                made = _RemoteBackward.apply(box, *grad_inputs, *[outputs[k] for k in diff])
                for k, tensor in zip(diff, made, strict=False):
                    outputs[k] = tensor
            else:
                for k in diff:
                    outputs[k].requires_grad_(True)
        try:
            return unflatten(header["spec"], outputs)
        except (ValueError, RecursionError):
            _fail(StudentCodeCrashed(f"{target}: malformed reply from the worker"))

    def backward(self, handle: int, grads: list, count: int) -> list:
        __tracebackhide__ = True
        import torch

        if self.sock is None or handle is None:
            _fail(StudentCodeCrashed(
                "the worker that computed this result has died, so its gradient is lost"))
        started = time.monotonic()
        send_msg(self.sock, {"op": "backward", "handle": handle},
                 _dumps({"grads": [g.detach() for g in grads]}, allow_pickle=True))
        header, blob = self.receive("in the backward pass", started)
        self.harness.show_output(header)
        if header.get("op") == "error":
            _fail(decode_error(header.get("error", {}), "backward"))
        got = _loads_trusted(blob).get("grads") or []
        result = []
        for g in list(got)[:count]:
            result.append(g if isinstance(g, torch.Tensor) else None)
        return result + [None] * (count - len(result))

    def release(self, handle: int, generation: int) -> None:
        if handle is not None and generation == self.generation and self.sock is not None:
            self.pending_release.append(handle)


def _crash_message(what: str, status: str, limits: dict) -> str:
    hint = ""
    if "SIGKILL" in status or "SIGSEGV" in status or "SIGABRT" in status:
        hint = (f" (it was killed: perhaps it used more than its memory limit of "
                f"{int(limits.get('memory_bytes', 0)) >> 20} MiB, or crashed the interpreter)")
    elif "SIGXCPU" in status:
        hint = f" (it used more than its CPU-time limit of {limits.get('cpu_seconds')} s)"
    elif status.startswith("exit code"):
        hint = " (the code ended its own process: os._exit, sys.exit at the wrong place...)"
    return f"the process running your code died {what}: {status or 'no status'}{hint}"


class _RemoteGraph:
    def __init__(self, client: WorkerClient, handle: int, count: int):
        self.client, self.handle, self.count = client, handle, count
        self.generation = client.generation
        weakref.finalize(self, client.release, handle, self.generation)


def _make_remote_backward():
    import torch

    class RemoteBackward(torch.autograd.Function):
        """Outputs computed by the student's code; the backward asks the worker."""

        @staticmethod
        def forward(ctx, box, *tensors):
            ctx.box = box
            outputs = tensors[box.count:]
            return tuple(o.detach().clone() for o in outputs)

        @staticmethod
        def backward(ctx, *grads):
            __tracebackhide__ = True
            box = ctx.box
            if box.generation != box.client.generation:
                _fail(StudentCodeCrashed(
                    "the worker that computed this result was restarted, so its gradient is lost"))
            got = box.client.backward(box.handle, list(grads), box.count)
            return (None, *got, *[None] * (len(ctx.needs_input_grad) - 1 - box.count))

    return RemoteBackward


class _LazyBackward:
    cls = None

    def apply(self, *args):
        if self.cls is None:
            self.cls = _make_remote_backward()
        return self.cls.apply(*args)


_RemoteBackward = _LazyBackward()


class StudentFunction:
    """Stands for a function of the student's: calling it runs it in the worker."""

    def __init__(self, client: WorkerClient, target: str, doc: str = ""):
        self._client, self._target = client, target
        self.__name__ = self.__qualname__ = target.split(".")[-1]
        self.__doc__ = doc or None
        self.__module__ = "__main__"

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True
        return self._client.call(self._target, args, kwargs)

    def __repr__(self) -> str:
        return f"<function {self._target} (the student's, run in the grading sandbox)>"

    def __reduce__(self):
        return (_student_object, (self._target,))


def _student_object(path: str):
    """Worker side: unpickled stand-in for a proxy passed back as an argument."""
    worker = _CURRENT_WORKER
    if worker is None:
        raise RuntimeError(f"{path} is not available here")
    return worker.target(path)


_CURRENT_WORKER: _Worker | None = None


def autograd_function_proxy(client: WorkerClient, name: str, doc: str):
    """A trusted torch.autograd.Function subclass whose apply runs the student's in the worker."""
    import torch

    def forward(ctx, *args, **kwargs):
        raise RuntimeError(f"call {name}.apply(...), not {name}.forward")

    def backward(ctx, *grads):
        raise RuntimeError(f"{name}.backward is called by autograd, not directly")

    def apply(*args, **kwargs):
        __tracebackhide__ = True
        return client.call(f"{name}.apply", args, kwargs)

    namespace = {"forward": staticmethod(forward), "backward": staticmethod(backward),
                 "__doc__": doc or None, "__module__": "__main__"}
    cls = type(name, (torch.autograd.Function,), namespace)
    cls.apply = staticmethod(apply)
    return cls


class Harness:
    """Installed in the trusted kernel as ``__mlm_grader__``."""

    def __init__(self, config: dict, shell):
        import torch

        self.config = config
        self.shell = shell
        self.zygote = os.environ["MLM_ZYGOTE"]
        self.limits = config["limits"]
        self.budget = float(self.limits.get("student_time_s", 120))
        self.used = 0.0
        self.per_call = float(self.limits.get("call_timeout_s", 30))
        self.max_reply_bytes = int(self.limits.get("memory_bytes", 1 << 30)) + (64 << 20)
        self.incidents_path = config.get("incidents")
        self.notebook = config["notebook"]  # the file name of the notebook being graded
        self.clients: dict[str, WorkerClient] = {}
        self.snapshot = {}
        for owner in WATCHED:
            try:
                self.snapshot[owner] = dict(vars(_resolve_owner(owner)))
            except Exception:  # noqa: BLE001
                pass
        torch.set_num_threads(1)

    # -- time -----------------------------------------------------------------------------
    def charge(self, seconds: float) -> None:
        self.used += max(0.0, seconds)

    def call_timeout(self) -> float:
        return max(0.5, min(self.per_call, self.budget - self.used))

    def check_budget(self, target: str) -> None:
        __tracebackhide__ = True
        if self.used >= self.budget:
            self.incident("budget", target)
            _fail(StudentCodeTimeout(
                f"your code has used up its time for this notebook ({self.budget:.0f} s in "
                f"all), so {target} was not run"))

    def incident(self, kind: str, detail: str) -> None:
        if self.incidents_path:
            with open(self.incidents_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"kind": kind, "detail": detail}) + "\n")

    # -- patches --------------------------------------------------------------------------
    def patched(self) -> list:
        """[owner, name] of every watched attribute that differs from the snapshot."""
        changed = []
        missing = object()
        for owner, snap in self.snapshot.items():
            current = vars(_resolve_owner(owner))
            try:
                if current == snap:  # the usual case, compared in C (identity first)
                    continue
            except Exception:  # noqa: BLE001  (an attribute with an odd __eq__)
                pass
            found = [name for name, value in snap.items()
                     if current.get(name, missing) is not value and name in current]
            if not found:  # only additions (a lazily imported submodule): the new baseline
                for name, value in current.items():
                    snap.setdefault(name, value)
            changed.extend([owner, name] for name in found)
        return changed

    # -- output ---------------------------------------------------------------------------
    @staticmethod
    def show_output(header: dict) -> None:
        out, err = str(header.get("stdout") or ""), str(header.get("stderr") or "")
        if out:
            sys.stdout.write(out)
        if err:
            note = err if err.endswith("\n") else err + "\n"
            sys.stdout.write("[your code wrote to stderr; this costs no points]\n" + note)
        if out or err:
            sys.stdout.flush()

    # -- workers --------------------------------------------------------------------------
    def client(self, label: str) -> WorkerClient | None:
        if label not in self.clients:
            cells = self.config["notebooks"].get(label)
            if cells is None:
                return None
            self.clients[label] = WorkerClient(self, label, cells)
        return self.clients[label]

    def solution_cell(self, grade_id: str) -> None:
        """Run in place of the student's cell: show what it printed, bind the reference's names."""
        __tracebackhide__ = True
        client = self.client(self.notebook)
        try:
            client.ensure()
        except (StudentCodeCrashed, StudentCodeTimeout) as err:
            if client.ready is None:
                _fail(type(err)(f"{err}"))
        if client.ready is None:
            return
        for cell in client.ready.get("cells", []):
            if cell.get("grade_id") == grade_id:
                self.show_output(cell)
                if cell.get("error"):
                    self.bind(client, grade_id)
                    _fail(decode_error(cell["error"], f"cell {grade_id}"))
        self.bind(client, grade_id)

    def bind(self, client: WorkerClient, grade_id: str) -> None:
        wanted = self.config["bindings"].get(grade_id, [])
        names = client.names()
        for name in wanted:
            info = names.get(name)
            if not isinstance(info, dict):
                continue
            kind, doc = info.get("kind"), str(info.get("doc") or "")
            if kind == "function":
                self.shell.user_ns[name] = StudentFunction(client, name, doc)
            elif kind == "autograd_function":
                self.shell.user_ns[name] = autograd_function_proxy(client, name, doc)
            elif kind == "class":
                self.shell.user_ns[name] = StudentFunction(client, name, doc)
            elif kind == "value" and name in client.values:
                self.shell.user_ns[name] = client.values[name]

    def load_notebook(self, path: Path) -> dict:
        """The hook of mlmcourse.loader: proxies for the functions of a sibling notebook."""
        __tracebackhide__ = True
        from .loader import NotebookNotReady, _label

        label = Path(path).name
        client = self.client(label)
        if client is None:
            raise NotebookNotReady(
                f"{label} was not found next to this notebook. Finish {_label(Path(label))} "
                "first and keep it in the same folder as this notebook.")
        try:
            client.ensure()
        except (StudentCodeCrashed, StudentCodeTimeout) as err:
            raise NotebookNotReady(
                f"Running the cells of {label} failed: {err}. Fix {_label(Path(label))} first."
            ) from None
        for cell in (client.ready or {}).get("cells", []):
            error = cell.get("error")
            if error:
                raise NotebookNotReady(
                    f"Running cell '{cell.get('grade_id')}' of {label} failed with "
                    f"{error.get('name')}: {error.get('message')}. Fix {_label(Path(label))} "
                    "first, then run this cell again.")
        namespace = {}
        for name, info in client.names().items():
            if isinstance(info, dict) and info.get("kind") == "function":
                namespace[name] = StudentFunction(client, name, str(info.get("doc") or ""))
            elif isinstance(info, dict) and info.get("kind") == "autograd_function":
                namespace[name] = autograd_function_proxy(client, name, "")
        return namespace

    def close(self) -> None:
        for client in self.clients.values():
            client.stop()


def install(shell, config_path: str) -> Harness:
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    harness = Harness(config, shell)
    shell.user_ns["__mlm_grader__"] = harness
    shell.user_ns_hidden["__mlm_grader__"] = harness
    from . import loader

    loader.GRADED_LOADER = harness.load_notebook
    return harness


def run_trusted_kernel(argv: list[str], sandbox: str) -> None:
    """The body of a trusted kernel forked by the zygote."""
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(["--HistoryManager.enabled=False", "--IPKernelApp.log_level=ERROR", *argv])
    config = os.environ.get("MLM_HARNESS")
    if config:
        install(app.shell, config)
    app.start()
