"""The student process: the untrusted side. It runs only the student's code (and the setup cell).

A student process is forked by the zygote (:mod:`mlmcourse.grader.processes.zygote`), sandboxed
where the platform allows, and serves one trusted kernel over a socket in the messages of
:mod:`mlmcourse.grader.wire.protocol`: ``init`` runs the notebook's setup cell and the student's
answer cells into one namespace; ``call`` runs one of the student's functions on the arguments the
kernel
put in shared memory (:mod:`mlmcourse.grader.wire.shared_inputs`: what the code writes into them,
the kernel sees for itself) and sends back the results; ``backward`` runs autograd over the
student's
graph.

Everything this process says about a call is a claim (the student's code runs here and can change
this module): the trusted side decides what each claim is worth (the README's threat model).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import mmap
import os
import socket
import sys
from typing import Any

import torch

from mlmcourse.course import cells
from mlmcourse.course.cells import run_cell
from mlmcourse.grader.limits import CAPS
from mlmcourse.grader.wire import protocol
from mlmcourse.grader.wire.codec import flatten, pack_tree, unflatten, unpack_request
from mlmcourse.grader.wire.hygiene import TRUNCATED
from mlmcourse.grader.wire.protocol import ChannelClosed, error_info, recv_msg, send_msg

# What the student process asks of tensors, autograd and the random generator to say what a call
# did, taken before any student code runs and from PyTorch's C types where there are: a student's
# patched `torch.Tensor.device`, `torch.autograd.grad` or `torch.get_rng_state` changes none of them
# (reaching these names themselves is what the trusted side's scan looks for: scan.py).
_TENSOR = torch._C.TensorBase
_REQUIRES_GRAD = _TENSOR.requires_grad.__get__
_GRAD_FN = _TENSOR.grad_fn.__get__
_AUTOGRAD_GRAD = torch.autograd.grad
_GLOBAL_GENERATOR = torch.default_generator
_EQUAL = torch.equal
_SET_GRAD_ENABLED = torch.set_grad_enabled
_SET_DEFAULT_DTYPE = torch.set_default_dtype
_NO_SUBCLASS_FUNCTIONS = torch._C.DisableTorchFunctionSubclass


# Frames of these files are the grader's, not the student's: left out of tracebacks.
_GRADER_FILES = (__file__, cells.__file__)

class _Stream(io.TextIOBase):
    """The student process's sys.stdout / sys.stderr: writes go to the capture of the call
    running now, so a stream the student's code kept (a logging handler made in an answer cell)
    still shows under the test that ran it, as in JupyterLab."""

    def __init__(self) -> None:
        super().__init__()
        self.target: io.StringIO | None = None

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        return self.target.write(text) if self.target is not None else len(text)


_STDOUT, _STDERR = _Stream(), _Stream()


@contextlib.contextmanager
def _capture():
    """Capture sys.stdout / sys.stderr of the student's code (capped). This spares the student
    process's memory and the socket; the cap that counts is the trusted side's
    (`hygiene.clean_reply`), since the student's code can change this module."""
    out, err = _CappedIO(), _CappedIO()
    saved = _STDOUT.target, _STDERR.target
    _STDOUT.target, _STDERR.target = out, err
    sys.stdout, sys.stderr = _STDOUT, _STDERR
    try:
        yield out, err
    finally:
        _STDOUT.target, _STDERR.target = saved


class _CappedIO(io.StringIO):
    """Keeps the first `CAPS.output_chars` characters written, then TRUNCATED once."""

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        cap = CAPS.output_chars
        if self.tell() < cap:
            super().write(text[: cap - self.tell()])
            if self.tell() >= cap:
                super().write(TRUNCATED)
        return len(text)

    def text(self) -> str:
        return self.getvalue()


# ---------------------------------------------------------------------------------------------
# The student process: runs only student code (plus the notebook's setup cell).


class _StudentSide:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.handles: dict[int, tuple[list, list]] = {}
        self.next_handle = 1
        protocol.set_student_object_resolver(self.target)

    # -- messages -------------------------------------------------------------------------
    def reply(self, header: dict, blob: bytes = b"") -> None:
        send_msg(self.sock, header, blob)

    def serve(self) -> None:
        while True:
            try:
                header, blob, fds = recv_msg(self.sock, with_fds=1)
            except ChannelClosed:
                os._exit(0)
            op = header.get("op")
            try:
                if op == protocol.INIT:
                    self.init(header)
                elif op == protocol.CALL:
                    self.call(header, self.shared_blob(header, fds) if fds else blob)
                elif op == protocol.BACKWARD:
                    self.backward(header, blob)
                elif op == protocol.RELEASE:
                    for handle in header.get("handles", []):
                        self.handles.pop(handle, None)
                elif op == protocol.EXIT:
                    os._exit(0)
            except (ChannelClosed, BrokenPipeError, ConnectionError):
                os._exit(0)
            except BaseException as exc:  # noqa: BLE001  (say what went wrong, keep serving)
                if op in protocol.REPLIES:
                    self.reply({"op": protocol.ERROR, "error": error_info(exc, ()), "stdout": "",
                                "stderr": ""}, pack_tree({}))
            finally:
                for fd in fds:
                    os.close(fd)

    @staticmethod
    def shared_blob(header: dict, fds: list[int]) -> memoryview:
        """The request's arguments, in the memory the trusted side shares (its mapping stays
        alive as long as the tensors made from it)."""
        size = int(header["shared"])
        return memoryview(mmap.mmap(fds[0], max(1, size)))[:size]

    # -- cells ----------------------------------------------------------------------------
    def init(self, header: dict) -> None:
        results = []
        for cell in header["cells"]:
            error = None
            with _capture() as (out, err):
                try:
                    run_cell(cell["source"], self.namespace, cell["filename"])
                except BaseException as exc:  # noqa: BLE001  (the student's cell failed)
                    error = error_info(exc, _GRADER_FILES)
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
            blob = pack_tree(values)
        except Exception:  # noqa: BLE001
            blob = pack_tree({})
        self.reply({"op": protocol.READY, "cells": results, "names": names}, blob)

    @staticmethod
    def kind(value: Any) -> tuple[str, str]:
        import types

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

    def call(self, header: dict, blob) -> None:
        payload = unpack_request(blob, shared="shared" in header)
        leaves = payload["leaves"]
        for index, flag in zip(header["tensors"], header["grad"], strict=False):
            if flag and isinstance(leaves[index], torch.Tensor):
                leaves[index].requires_grad_(True)
        args, kwargs = unflatten(header["spec"], leaves)
        if payload.get("rng") is not None:
            _GLOBAL_GENERATOR.set_state(payload["rng"])
        rng_before = _GLOBAL_GENERATOR.get_state()
        _SET_DEFAULT_DTYPE(getattr(torch, header["dtype"].replace("torch.", "")))
        error, blob = None, b""
        reply: dict[str, Any] = {}
        back: dict[str, Any] = {}
        # The result is packed with `__torch_function__` overrides off: what a Tensor subclass of
        # the student's does when it is converted runs here, and its values are what come back.
        with _capture() as (out, err):
            try:
                function = self.target(header["target"])
                with _SET_GRAD_ENABLED(bool(header["grad_enabled"])):
                    result = function(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001
                error = error_info(exc, _GRADER_FILES)
            with _NO_SUBCLASS_FUNCTIONS():
                self.effects(leaves, rng_before, back)
                if error is None:
                    try:
                        self.pack_result(result, leaves, reply, back,
                                         bool(header["grad_enabled"]))
                        blob = pack_tree(back)
                    except BaseException as exc:  # noqa: BLE001
                        error = error_info(exc, _GRADER_FILES)
                        for key in ("spec", "diff", "grad_leaf", "handle"):
                            reply.pop(key, None)
                        back.pop("outputs", None)
                if error is not None:
                    reply.update(op=protocol.ERROR, error=error)
                    blob = pack_tree(back)
        reply.update(stdout=out.text(), stderr=err.text())
        self.reply(reply, blob)

    @staticmethod
    def effects(leaves: list, rng_before, back: dict) -> None:
        """What the call did besides its result: whether it moved the global generator, how far
        each Generator argument advanced."""
        # Whether the code drew from (or seeded) the global generator: one yes or no, never the
        # state itself, which the trusted kernel does not take (it advances its own generator).
        if not _EQUAL(_GLOBAL_GENERATOR.get_state(), rng_before):
            back["rng_moved"] = True
        back["generators"] = {i: g.get_state() for i, g in enumerate(leaves)
                              if isinstance(g, torch.Generator)}

    def pack_result(self, result, in_leaves, reply, back, grad_enabled) -> None:
        """The results as plain data (a view of an input comes back as a copy: which memory an
        output shares lives only in this process), and which outputs are differentiable."""
        out_leaves: list = []
        spec = flatten(result, out_leaves)
        diff, grad_leaf = [], []
        packed = []
        for k, leaf in enumerate(out_leaves):
            if isinstance(leaf, torch.Tensor):
                tensor = leaf
                if type(tensor) not in (torch.Tensor, torch.nn.Parameter):
                    tensor = tensor.as_subclass(torch.Tensor)
                if _REQUIRES_GRAD(tensor):
                    connected = grad_enabled and _GRAD_FN(tensor) is not None
                    (diff if connected else grad_leaf).append(k)
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
            inputs = [t for t in in_leaves if isinstance(t, torch.Tensor) and _REQUIRES_GRAD(t)]
            handle = self.next_handle
            self.next_handle += 1
            self.handles[handle] = ([out_leaves[k] for k in diff], inputs)
        reply.update(op=protocol.RESULT, spec=spec, diff=diff,
                     grad_leaf=grad_leaf, handle=handle)
        back["outputs"] = packed

    def backward(self, header: dict, blob: bytes) -> None:
        handle = self.handles.get(header.get("handle"))
        if handle is None:
            err = RuntimeError(
                "the graph of this result is gone (the student process was restarted)")
            self.reply({"op": protocol.ERROR, "error": error_info(err, ()), "stdout": "",
                        "stderr": ""})
            return
        outputs, inputs = handle
        grads = unpack_request(blob)["grads"]
        error, packed = None, b""
        with _capture() as (out, err):
            try:
                got = _AUTOGRAD_GRAD(outputs, inputs, grads, allow_unused=True,
                                     retain_graph=True) if inputs else ()
                with _NO_SUBCLASS_FUNCTIONS():  # packed as a call's result
                    packed = pack_tree({"grads": [None if g is None else g.detach()
                                                  for g in got]})
            except BaseException as exc:  # noqa: BLE001
                error = error_info(exc, _GRADER_FILES)
        reply = {"stdout": out.text(), "stderr": err.text()}
        if error is not None:
            reply.update(op=protocol.ERROR, error=error)
            self.reply(reply)
            return
        reply.update(op=protocol.GRADS)
        self.reply(reply, packed)


def warm_up() -> None:
    """Run, once in the zygote before it forks, what a student process's calls import lazily:
    torch's printing of a tensor (it enters `_disable_current_modes`, which imports torch's mode
    subclasses), an error's description. A student process then imports nothing
    on a call: where its sandbox cannot see every file of the environment (the hub's copied
    interpreter), such an import failed inside the student's call."""
    repr(torch.zeros(1))
    error_info(ValueError("warm-up"), ())


def serve(sock: socket.socket, sandbox: str) -> None:
    """The body of a student process forked by the zygote: serve one trusted kernel."""
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
    _StudentSide(sock).serve()


def _short_warning(message, category, filename, lineno, line=None) -> str:
    return f"{category.__name__}: {message}\n"
