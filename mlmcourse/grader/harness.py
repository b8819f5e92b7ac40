"""Student code in a sandboxed worker; the hidden tests in a trusted kernel that calls it.

The trusted kernel (see :mod:`mlmcourse.grader.engine`) executes the notebook rebuilt from
``source/``:
locked cells and hidden tests are the instructor's; in place of each of the student's solution
cells it runs ``__mlm_grader__.solution_cell(GRADE_ID)``, which binds the names the reference
solution defines (``make_mlm_inputs``, ``MaskedLMLoss``, ...) to *proxies*. The student's code
itself runs only in a worker process (:mod:`mlmcourse.grader.zygote`): plain Python, the
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

import json
import os
import socket
import sys
import time
import weakref
from pathlib import Path

from mlmcourse.course.siblings import NotebookNotReady, install_graded_loader
from mlmcourse.course.siblings import notebook_label as _label

from .wire import (
    _DTYPES,
    WATCHED,
    ChannelClosed,
    StudentCodeCrashed,
    StudentCodeTimeout,
    StudentValue,
    _byte_view,
    _dumps,
    _fail,
    _fits,
    _has_data,
    _indices,
    _loads_trusted,
    _resolve_owner,
    connect,
    decode_error,
    encode_error,
    flatten,
    recv_msg,
    send_msg,
    unflatten,
)
from .worker import _student_object

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
        """The graded loader (course.siblings): proxies for the functions of a sibling notebook."""
        __tracebackhide__ = True
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
    install_graded_loader(harness.load_notebook)
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
