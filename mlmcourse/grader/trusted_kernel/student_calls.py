"""The trusted side of one student process: starting it, one call there and back, its gradients.

A `StudentProcess` (made by :mod:`mlmcourse.grader.trusted_kernel.harness`) starts a student process
through the zygote (:mod:`mlmcourse.grader.processes.zygote`) and sends it the notebook's ``setup``
cell and the student's
solution cells; the student process (:mod:`mlmcourse.grader.sandboxed.student_side`) runs them into
one namespace.

A call crosses the boundary in the messages of :mod:`mlmcourse.grader.wire.protocol` and the codec
of :mod:`mlmcourse.grader.wire.codec`. Trusted -> student process: the arguments (detached;
``requires_grad`` flags, the global RNG state when it changed, the default dtype and grad mode
travel along; other objects, e.g. a ``torch.Generator``, are pickled for the student process), in
memory both sides map (:mod:`mlmcourse.grader.wire.shared_inputs`). Student process -> trusted: the
results (plain tensors, numbers, strings, containers -- never pickle, never code). What the call
did to its inputs is seen here: bytes the student's code wrote into the shared arguments are
written back into the caller's tensor (the trusted side's own observation). What the student
process says besides (a ``torch.Generator`` argument comes back advanced, as a value the call
returns; whether the code moved the global
random generator, answered by one draw from the trusted kernel's own generator, never by the
student process's state) is its claim, taken as it is; no point rests on a claim (an output
that is a view of an input comes back as a copy: which memory it shares lives only in the student's
process). Outputs that require grad are returned through a trusted
``torch.autograd.Function`` whose backward asks the student process for the gradients
(``torch.autograd.grad`` over the student's graph, so a hand-written ``backward`` runs there). An
exception is re-raised with the builtin type it derives from and its message; the student's
traceback is attached as a note. A student process that dies or overruns its time raises
``StudentCodeCrashed`` / ``StudentCodeTimeout`` in the test cell that called it, and is started
afresh for the next call.

Every reply is checked against the replies its request allows (`protocol.check_reply`): any
other is the student's process failing, and what it printed is not shown. Everything shown is
charged to the notebook's output budget (`hygiene.OutputBudget`).

The student processes of one graded notebook share a `Session`: the zygote's socket, the `Limits`,
the student's time budget for the notebook, its output budget and the incident log the engine reads.
"""

from __future__ import annotations

import json
import socket
import sys
import time
import weakref

from mlmcourse.course.cells import SETUP_GRADE_ID
from mlmcourse.grader.limits import CAPS, Limits
from mlmcourse.grader.results.verdict import Kind
from mlmcourse.grader.trusted_kernel.errors import (
    StudentCodeCrashed,
    StudentCodeTimeout,
    StudentValue,
    decode_error,
    raise_from_sandbox,
)
from mlmcourse.grader.wire import protocol
from mlmcourse.grader.wire.codec import (
    flatten,
    pack_tree,
    unflatten,
    unpack_reply,
    valid_indices,
)
from mlmcourse.grader.wire.framing import ChannelClosed, GuardedSocket, connect, recv_msg, send_msg
from mlmcourse.grader.wire.hygiene import OutputBudget, clean_reply, clean_text
from mlmcourse.grader.wire.shared_inputs import SharedArguments

# Room for the codec's description and copies on top of the student's memory, in one reply.
REPLY_OVERHEAD_BYTES = 64 << 20


class Session:
    """What the student processes of one graded notebook share (see the module's docstring)."""

    def __init__(self, zygote: str, limits: Limits, incidents_path: str | None = None):
        self.zygote = zygote  # the zygote's socket
        self.limits = limits
        self.incidents_path = incidents_path
        self.used = 0.0  # seconds of the student's code so far, in this notebook
        self.output = OutputBudget()  # what its output may still show, in this notebook

    @property
    def max_reply_bytes(self) -> int:
        return self.limits.memory_bytes + REPLY_OVERHEAD_BYTES

    # -- time -----------------------------------------------------------------------------
    def charge(self, seconds: float) -> None:
        self.used += max(0.0, seconds)

    def call_timeout(self) -> float:
        return max(0.5, min(self.limits.call_timeout_s, self.limits.student_time_s - self.used))

    def check_budget(self, target: str) -> None:
        __tracebackhide__ = True
        if self.used >= self.limits.student_time_s:
            self.incident(Kind.BUDGET, target)
            raise_from_sandbox(StudentCodeTimeout(
                f"your code has used up its time for this notebook "
                f"({self.limits.student_time_s:.0f} s in all), so {target} was not run"))

    def incident(self, kind: Kind, detail: str) -> None:
        """Note what went wrong for the engine (it reads the file after the notebook ran)."""
        if self.incidents_path:
            with open(self.incidents_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"kind": str(kind), "detail": detail}) + "\n")


def show_output(header: dict) -> None:
    """Print what the student's code printed; its stderr as a note (it costs no points)."""
    out, err = str(header.get("stdout") or ""), str(header.get("stderr") or "")
    if out:
        sys.stdout.write(out)
    if err:
        note = err if err.endswith("\n") else err + "\n"
        sys.stdout.write("[your code wrote to stderr; this costs no points]\n" + note)
    if out or err:
        sys.stdout.flush()


class StudentProcess:
    """One sandboxed student process that runs a notebook's setup and solution cells."""

    def __init__(self, session: Session, label: str, cells: list[dict], value_names: list[str]):
        self.session = session
        self.label = label  # e.g. '01_corruption.ipynb'
        self.cells = cells
        self.value_names = value_names  # names whose values (not proxies) the tests get
        self.sock: socket.socket | None = None
        self.control: socket.socket | None = None
        self.ready: dict | None = None  # the first successful init: cell results and names
        self.values: dict = {}
        self.start_failures = 0
        self.generation = 0
        self.pending_release: list[int] = []
        self.rng = None  # the trusted kernel's global RNG state last sent there, when known

    # -- life -----------------------------------------------------------------------------
    def alive(self) -> bool:
        return self.sock is not None

    def stop(self, reason: str = "") -> str:
        """Kill the student process; return how it ended ('signal SIGKILL', 'exit code 1', ...)."""
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
        """After the data socket closed: how did the student process end?"""
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
        session = self.session
        if self.start_failures >= 3:
            raise_from_sandbox(StudentCodeCrashed(
                f"your code in {self.label} could not be started (it failed {self.start_failures}"
                " times while its cells ran): nothing of it can be tested"))
        control = connect(session.zygote)
        send_msg(control, {"kind": "student", "limits": session.limits.to_json()})
        header, _, fds = recv_msg(control, deadline=time.monotonic() + 30, with_fds=1)
        if not fds:
            control.close()
            why = header.get("error") or "no reason given"
            raise RuntimeError(f"the grading engine could not start a student process: {why}")
        self.control = control
        self.sock = GuardedSocket(fileno=fds[0])
        self.sock.send_timeout = session.call_timeout
        self.sock.on_failure = self.send_failed
        self.generation += 1
        started = time.monotonic()
        setup = [cell for cell in self.cells if cell.get("grade_id") == SETUP_GRADE_ID]
        answers = [cell for cell in self.cells if cell.get("grade_id") != SETUP_GRADE_ID]
        try:
            # The setup cell first, on its own: its reply comes before any student code has run
            # in the process, so what it says of the setup (the grader's own failure) is true.
            first = self.init(setup, started)[0] if setup else {}
            reply, blob = self.init(answers, started)
        except (StudentCodeCrashed, StudentCodeTimeout):
            self.start_failures += 1
            raise
        self.start_failures = 0
        for cell in first.get("cells", []):
            if cell.get("grade_id") == SETUP_GRADE_ID and cell.get("error"):
                # The instructor's setup cell failed in the student process: the sandbox lacks
                # something.
                error = cell["error"]
                session.incident(Kind.SETUP, f"{self.label}: {error.get('name')}: "
                                             f"{error.get('message')}")
        reply["cells"] = [cell for cell in reply.get("cells", [])
                          if cell.get("grade_id") != SETUP_GRADE_ID]
        if self.ready is None:
            self.ready = reply
            try:
                values = unpack_reply(blob)
                self.values = values if isinstance(values, dict) else {}
            except Exception:  # noqa: BLE001
                self.values = {}

    def init(self, cells: list[dict], started: float) -> tuple[dict, bytes]:
        """Run `cells` in the student process; its `ready` reply (else the student's process
        failed)."""
        __tracebackhide__ = True
        send_msg(self.sock, {"op": protocol.INIT, "cells": cells, "values": self.value_names})
        reply, blob = self.receive(protocol.INIT, "the cells of " + self.label, started)
        if reply.get("op") != protocol.READY:
            self.stop()
            raise_from_sandbox(StudentCodeCrashed(
                f"the process running the cells of {self.label} failed outside them"))
        return reply, blob

    def ensure(self) -> None:
        __tracebackhide__ = True
        if self.sock is None:
            self.start()

    def names(self) -> dict:
        self.ensure()
        names = self.ready.get("names", {}) if self.ready else {}
        return names if isinstance(names, dict) else {}

    # -- one exchange ---------------------------------------------------------------------
    def receive(self, request: str, what: str, started: float) -> tuple[dict, bytes]:
        """The student process's answer to `request`: in time, of a type `request` allows, its text
        capped and charged; else the test sees the student's process fail (the student process
        stops)."""
        __tracebackhide__ = True
        session = self.session
        deadline = started + session.call_timeout()
        try:
            header, blob, _ = recv_msg(self.sock, deadline=deadline,
                                       max_blob=session.max_reply_bytes,
                                       max_header=CAPS.reply_header_bytes)
        except BaseException as err:
            self.fail(err, what, started, deadline - started)
            raise
        session.charge(time.monotonic() - started)
        return self.checked(request, header), blob

    def fail(self, err: BaseException, what: str, started: float, limit: float,
             why: str = "an endless loop, or far too slow") -> None:
        """An exchange that failed: charge the student, stop the student process, raise what the
        test sees (an interrupt, e.g. the cell's timeout, is left to the caller to raise)."""
        __tracebackhide__ = True
        session = self.session
        session.charge(time.monotonic() - started)
        if isinstance(err, TimeoutError):
            self.stop()
            session.incident(Kind.TIMEOUT, what)
            raise_from_sandbox(StudentCodeTimeout(
                f"your code did not finish {what} within {limit:.0f} s ({why}); it was stopped"))
        if isinstance(err, OSError | EOFError):  # the student process is gone (EPIPE...)
            status = self.exit_status()
            self.stop()
            session.incident(Kind.CRASH, f"{what}: {status}")
            raise_from_sandbox(StudentCodeCrashed(_crash_message(what, status, session.limits)))
        self.stop()  # an interrupt: the student process is mid-exchange, drop it

    def send_failed(self, err: BaseException, started: float) -> None:
        """A message to the student process did not go out in time (`GuardedSocket`): its process
        stopped reading, so the call it was for fails like one that ran too long."""
        __tracebackhide__ = True
        self.fail(err, "reading what the grader sent it", started, self.session.call_timeout(),
                  "its process stopped reading its socket")

    def checked(self, request: str, header: dict) -> dict:
        """The reply when `request` allows it (`protocol.check_reply`), with its text capped and
        plain (`hygiene.clean_reply`); what will be shown is charged to the notebook's budget
        (a restart's cells are not shown again). Any other reply is the student's crash."""
        __tracebackhide__ = True
        try:
            protocol.check_reply(request, header)
        except protocol.MalformedReply as err:
            self.stop()
            self.session.incident(Kind.CRASH, f"{self.label}: a malformed reply ({err})")
            raise_from_sandbox(StudentCodeCrashed(
                f"the process running your code for {self.label} sent a malformed reply"))
        shown = header["op"] != protocol.READY or self.ready is None
        return clean_reply(header, self.session.output if shown else None)

    def call(self, target: str, args: tuple, kwargs: dict):
        __tracebackhide__ = True
        import torch

        session = self.session
        session.check_budget(target)
        self.ensure()
        if self.pending_release:
            send_msg(self.sock, {"op": "release", "handles": self.pending_release})
            self.pending_release = []
        leaves: list = []
        try:
            spec = flatten((tuple(args), dict(kwargs)), leaves)
        except ValueError as err:
            raise_from_sandbox(TypeError(f"cannot pass these arguments to {target}: {err}"))
        tensors = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
        grad = [bool(leaves[i].requires_grad) for i in tensors]
        sent = [x.detach() if isinstance(x, torch.Tensor) else x for x in leaves]
        rng = torch.get_rng_state()
        changed = self.rng is None or not torch.equal(rng, self.rng)  # it holds self.rng
        try:
            blob = pack_tree({"leaves": sent, "rng": rng if changed else None}, allow_pickle=True)
        except Exception as err:  # noqa: BLE001
            raise_from_sandbox(TypeError(f"cannot pass these arguments to {target}: {err}"))
        request = {
            "op": protocol.CALL, "target": target, "spec": spec, "tensors": tensors, "grad": grad,
            "dtype": str(torch.get_default_dtype()), "grad_enabled": torch.is_grad_enabled(),
            "shared": len(blob),
        }
        arguments = SharedArguments(blob)
        try:
            started = time.monotonic()
            try:
                send_msg(self.sock, request, fds=[arguments.fd])
            except OSError as err:  # the student process is gone
                self.fail(err, f"in {target}", started, session.call_timeout())
            header, blob = self.receive(protocol.CALL, f"in {target}", started)
            # What the code wrote into its inputs, as the trusted side sees it in the shared memory
            # (the student process is not asked): the caller's tensors change as they would have.
            arguments.write_back(leaves)
        finally:
            arguments.close()
        show_output(header)
        try:
            back = unpack_reply(blob)
        except Exception:  # noqa: BLE001
            self.stop()
            raise_from_sandbox(StudentCodeCrashed(
                f"{target} sent back something that is not plain data"))
        if not isinstance(back, dict):
            self.stop()
            raise_from_sandbox(StudentCodeCrashed(
                f"{target}: malformed reply from the student process"))
        self.rng = rng
        self.apply_claims(leaves, back)
        if header["op"] == protocol.ERROR:
            raise_from_sandbox(decode_error(header.get("error", {}), target))
        return self.rebuild(header, back, leaves, tensors, target)

    def apply_claims(self, leaves: list, back: dict) -> None:
        """What the student process says the call did besides its results and the bytes it wrote:
        whether it moved the global random state, and how far each `torch.Generator` argument
        advanced. An input repointed in that process (`set_`, `resize_`) writes no byte the
        trusted side sees, and the student process's word for it would be a claim: not taken."""
        import torch

        if back.get("rng_moved") is True:
            # The code drew from (or seeded) the global generator in its own process. The
            # trusted kernel never takes that process's state (numbers the student chose would
            # reach a test that draws after the call): it draws once from its own generator, so
            # a test sees that the global state moved, and the numbers it draws next are the
            # trusted kernel's. The next call sends that state (it differs from `self.rng`).
            torch.rand(1)
        generators = back.get("generators")
        for index, state in (generators.items() if isinstance(generators, dict) else ()):
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
        for k, leaf in enumerate(outputs):
            if isinstance(leaf, list) and len(leaf) == 3 and leaf[0] == "__student_value__":
                type_name, text = (clean_text(part, 200, "") for part in leaf[1:])
                outputs[k] = StudentValue(type_name, text)
        for k in valid_indices(header.get("grad_leaf"), len(outputs)):
            if isinstance(outputs[k], torch.Tensor) and outputs[k].is_floating_point():
                outputs[k].requires_grad_(True)
        diff = [k for k in valid_indices(header.get("diff"), len(outputs))
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
            self.stop()
            raise_from_sandbox(StudentCodeCrashed(
                f"{target}: malformed reply from the student process"))

    def backward(self, handle: int, grads: list, count: int) -> list:
        __tracebackhide__ = True
        import torch

        if self.sock is None or handle is None:
            raise_from_sandbox(StudentCodeCrashed(
                "the student process that computed this result has died, so its gradient is lost"))
        request = {"op": protocol.BACKWARD, "handle": handle}
        started = time.monotonic()
        send_msg(self.sock, request,
                 pack_tree({"grads": [g.detach() for g in grads]}, allow_pickle=True))
        header, blob = self.receive(protocol.BACKWARD, "in the backward pass", started)
        show_output(header)
        if header["op"] == protocol.ERROR:
            raise_from_sandbox(decode_error(header.get("error", {}), "backward"))
        try:
            got = unpack_reply(blob).get("grads") or []
        except Exception:  # noqa: BLE001
            self.stop()
            raise_from_sandbox(StudentCodeCrashed("the backward pass sent back malformed data"))
        result = []
        for g in list(got)[:count]:
            result.append(g if isinstance(g, torch.Tensor) else None)
        return result + [None] * (count - len(result))

    def release(self, handle: int, generation: int) -> None:
        if handle is not None and generation == self.generation and self.sock is not None:
            self.pending_release.append(handle)


def _crash_message(what: str, status: str, limits: Limits) -> str:
    hint = ""
    if "SIGKILL" in status or "SIGSEGV" in status or "SIGABRT" in status:
        hint = (f" (it was killed: perhaps it used more than its memory limit of "
                f"{limits.memory_bytes >> 20} MiB, or crashed the interpreter)")
    elif "SIGXCPU" in status:
        hint = f" (it used more than its CPU-time limit of {limits.cpu_seconds} s)"
    elif status.startswith("exit code"):
        hint = " (the code ended its own process: os._exit, sys.exit at the wrong place...)"
    return f"the process running your code died {what}: {status or 'no status'}{hint}"


class _RemoteGraph:
    def __init__(self, client: StudentProcess, handle: int, count: int):
        self.client, self.handle, self.count = client, handle, count
        self.generation = client.generation
        weakref.finalize(self, client.release, handle, self.generation)


def _make_remote_backward():
    import torch

    class RemoteBackward(torch.autograd.Function):
        """Outputs computed by the student's code; the backward asks the student process."""

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
                raise_from_sandbox(StudentCodeCrashed(
                    "the student process that computed this result was restarted, so its "
                    "gradient is lost"))
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
