"""The trusted kernel's harness: the hidden tests run here, the student's code never does.

The trusted kernel (forked by :mod:`mlmcourse.grader.processes.zygote`, driven by
:mod:`mlmcourse.grader.engine.submission`) executes the notebook rebuilt from ``source/``
(:mod:`mlmcourse.grader.engine.rebuild`): locked cells and hidden tests are the instructor's; in
place of each of the student's solution cells it runs ``__mlm_grader__.solution_cell(GRADE_ID)``,
which shows
what the student's cell printed and binds the names the reference solution defines
(``make_mlm_inputs``, ``MaskedLMLoss``, ...) to proxies
(:mod:`mlmcourse.grader.trusted_kernel.proxies`). The student's code itself runs only in a student
process, one per notebook, reached through a
:class:`~mlmcourse.grader.trusted_kernel.student_calls.StudentProcess`: plain Python, the notebook's
``setup`` cell and the student's solution cells exec'd into one namespace. A sibling notebook loaded
by a test
(:mod:`mlmcourse.course.siblings`) gets a student process of its own, and proxies for its functions.

What the kernel is told comes in its environment: ``MLM_HARNESS`` (the engine's JSON: the
notebook, the cells each notebook's student process runs, the names each solution cell binds, the
incident log), ``MLM_LIMITS`` (:meth:`mlmcourse.grader.limits.Limits.to_json`) and
``MLM_ZYGOTE`` (the zygote's socket).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mlmcourse.course.siblings import NotebookNotReady, install_graded_loader
from mlmcourse.course.siblings import notebook_label as _label
from mlmcourse.grader.limits import Limits
from mlmcourse.grader.trusted_kernel.errors import (
    StudentCodeCrashed,
    StudentCodeTimeout,
    decode_error,
    raise_from_sandbox,
)
from mlmcourse.grader.trusted_kernel.proxies import proxy_for
from mlmcourse.grader.trusted_kernel.student_calls import Session, StudentProcess, show_output

# What a solution cell binds in the tests' namespace; a sibling notebook lends only functions.
BOUND_KINDS = ("function", "class", "autograd_function")
SIBLING_KINDS = ("function", "autograd_function")


class Unavailable:
    """Stands for a name of the student's cells that never ran: using it says why."""

    def __init__(self, err: Exception):
        self._err = err

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True
        raise_from_sandbox(type(self._err)(f"{self._err}"))

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self  # MaskedLMLoss.apply(...) says why, as a call does


class Harness:
    """Installed in the trusted kernel as ``__mlm_grader__``."""

    def __init__(self, config: dict, shell, limits: Limits, zygote: str):
        import torch

        self.config = config
        self.shell = shell
        self.notebook = config["notebook"]  # the file name of the notebook being graded
        self.session = Session(zygote, limits, config.get("incidents"))
        # Every name the graded notebook's solution cells bind: the student process sends the values
        # of those that are plain data.
        self.value_names = sorted({name for names in config["bindings"].values()
                                   for name in names})
        self.clients: dict[str, StudentProcess] = {}
        torch.set_num_threads(1)

    def client(self, label: str) -> StudentProcess | None:
        """The handle on notebook `label`'s student process (started on first use); None when the
        submission has no such notebook."""
        if label not in self.clients:
            cells = self.config["notebooks"].get(label)
            if cells is None:
                return None
            self.clients[label] = StudentProcess(self.session, label, cells, self.value_names)
        return self.clients[label]

    def solution_cell(self, grade_id: str) -> None:
        """Run in place of the student's cell: show what it printed, bind the reference's names."""
        __tracebackhide__ = True
        client = self.client(self.notebook)
        try:
            client.ensure()
        except (StudentCodeCrashed, StudentCodeTimeout) as err:
            if client.ready is None:
                self.bind_unavailable(grade_id, err)
                raise_from_sandbox(type(err)(f"{err}"))
        if client.ready is None:
            return
        # Each part of the answer (a split cell, a kept copy) in order; the first error shows
        # after every part's output, as the names the answer binds are bound.
        parts = [cell for cell in client.ready.get("cells", []) if cell.get("grade_id") == grade_id]
        for cell in parts:
            show_output(cell)
        self.bind(client, grade_id)
        errors = [cell["error"] for cell in parts if cell.get("error")]
        if errors:
            raise_from_sandbox(decode_error(errors[0], f"cell {grade_id}"))

    def bind_unavailable(self, grade_id: str, err: Exception) -> None:
        """The student's cells could not be run at all: each name the cell would bind raises
        why when a test uses it (not a NameError that says nothing of the cause)."""
        for name in self.config["bindings"].get(grade_id, []):
            self.shell.user_ns[name] = Unavailable(err)

    def bind(self, client: StudentProcess, grade_id: str) -> None:
        """Bind the names the reference's cell `grade_id` defines to the student's objects."""
        names = client.names()
        for name in self.config["bindings"].get(grade_id, []):
            info = names.get(name)
            proxy = proxy_for(client, name, info, BOUND_KINDS)
            if proxy is not None:
                self.shell.user_ns[name] = proxy
            elif isinstance(info, dict) and info.get("kind") == "value" \
                    and name in client.values:
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
        proxies = {name: proxy_for(client, name, info, SIBLING_KINDS)
                   for name, info in client.names().items()}
        return {name: proxy for name, proxy in proxies.items() if proxy is not None}

    def close(self) -> None:
        for client in self.clients.values():
            client.stop()


def install(shell, config_path: str) -> Harness:
    """Make `shell`'s kernel the trusted one: ``__mlm_grader__`` and the graded loader."""
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    limits = Limits.from_json(os.environ["MLM_LIMITS"])
    harness = Harness(config, shell, limits, os.environ["MLM_ZYGOTE"])
    shell.user_ns["__mlm_grader__"] = harness
    shell.user_ns_hidden["__mlm_grader__"] = harness
    install_graded_loader(harness.load_notebook)
    return harness


def run_trusted_kernel(argv: list[str], sandbox: str) -> None:
    """The body of a trusted kernel forked by the zygote."""
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    # Plain tracebacks: the lines of the test that failed, without IPython's source inspection,
    # which took most of the time of a notebook whose every check fails (3.0 s -> 1.6 s).
    app.initialize(["--HistoryManager.enabled=False", "--IPKernelApp.log_level=ERROR",
                    "--InteractiveShell.xmode=Plain", *argv])
    config = os.environ.get("MLM_HARNESS")
    if config:
        install(app.shell, config)
    app.start()
