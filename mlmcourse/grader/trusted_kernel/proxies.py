"""Stand-ins for the student's objects in the trusted kernel: calling one runs the real one in
the student process (through :class:`mlmcourse.grader.trusted_kernel.student_calls.StudentProcess`).

The harness (:mod:`mlmcourse.grader.trusted_kernel.harness`) binds them under the names the
reference solution defines, so the hidden tests call ``make_mlm_inputs(...)`` or
``MaskedLMLoss.apply(...)`` as
they would in the student's own kernel; the student's code never runs in the trusted kernel.
"""

from __future__ import annotations

from mlmcourse.grader.trusted_kernel.student_calls import StudentProcess
from mlmcourse.grader.wire.protocol import student_object


class StudentFunction:
    """Stands for a function (or class) of the student's: calling it runs it in the student
    process."""

    def __init__(self, client: StudentProcess, target: str, doc: str = ""):
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
        # Passed to the student's code as an argument, it becomes the student's own object.
        return (student_object, (self._target,))


def autograd_function_proxy(client: StudentProcess, name: str, doc: str) -> type:
    """A trusted torch.autograd.Function subclass whose apply runs the student's in the student
    process."""
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


def proxy_for(client: StudentProcess, name: str, info: object, kinds: tuple[str, ...]):
    """The stand-in for the student's `name` (`info`: what the student process said it is), or
    None when it is not of one of `kinds` ('function', 'class', 'autograd_function')."""
    if not isinstance(info, dict) or info.get("kind") not in kinds:
        return None
    doc = str(info.get("doc") or "")
    if info["kind"] == "autograd_function":
        return autograd_function_proxy(client, name, doc)
    return StudentFunction(client, name, doc)
