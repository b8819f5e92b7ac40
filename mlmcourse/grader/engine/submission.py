"""The per-submission grading engine: each notebook graded alone, student code sandboxed.

``grade_submission(course_root, student, submission_dir, scratch)`` grades one student's
notebooks and returns one :class:`~mlmcourse.grader.results.verdict.Verdict` per notebook of the
series, with one :class:`~mlmcourse.grader.results.verdict.Check` per graded cell: the verdict is
made here, once, and every other part of the course renders it. Nothing of the
course directory is written, and nothing the student submitted is modified (the files are read
once, as regular files, and copied into ``scratch``).

How a notebook is graded:

1. The graded notebook is rebuilt from the instructor's ``source/`` notebook and the student's
   solution cells only (:mod:`mlmcourse.grader.engine.rebuild`).
2. The rebuilt notebook runs in a *trusted* Jupyter kernel (forked by
   :mod:`mlmcourse.grader.processes.zygote`, with :mod:`mlmcourse.grader.trusted_kernel.harness`
   installed) in a scratch copy of the submission. The student's code never runs in it: in place of
   each solution cell
   the kernel binds the names the reference solution defines to proxies. The student's cells
   (after the ``setup`` cell of the source) run in a separate *student process*
   (:mod:`mlmcourse.grader.sandboxed.student_side`): sandboxed where the platform allows
   (:mod:`mlmcourse.grader.processes.sandbox`: no course directory, no network, read-only system,
   ``nobody``), with the memory, CPU-time and wall-clock `Limits` everywhere. Each call of a
   proxy ships tensors there and back as raw storage bytes plus a JSON description
   (:mod:`mlmcourse.grader.wire.protocol`, :mod:`mlmcourse.grader.wire.codec`); nothing the student
   process sends is ever unpickled.
   Only the cells a score can depend on run (:mod:`mlmcourse.grader.engine.slicing`): the setup
   cell, the answer cells, the graded cells and the cells whose names those read; a demo cell shows
   a
   one-line note instead of its output, and a notebook with no graded cell is not run at all
   (0 / 0).
3. Each graded cell scores its points when it ran and raised no error
   (:func:`mlmcourse.grader.results.verdict.failure_of`); output on stderr costs nothing. Before the
   notebook runs, the trusted scan (:mod:`mlmcourse.grader.engine.scan`) reads the answer cells for
   what the grader cannot check: a finding costs no point and moves none (every check reads
   only what the trusted side saw); it is a note for the TA.

So an input transformer, a patched ``torch.equal`` or ``AssertionError``, an overridden
``showtraceback``, edited or deleted tests and reads or writes of the gradebook all happen (if at
all) in the student process, where they change nothing the tests see. A hang, a crash or a memory
blow-up in the student's code fails the test cell that called it (``StudentCodeTimeout`` /
``StudentCodeCrashed``); the student process is started again for the next call, and a time budget
per notebook bounds the total. A trusted kernel that dies or a cell that overruns ``cell_timeout_s``
costs only the tests of that notebook that did not pass.

The trusted kernel runs as under ``nbgrader autograde``: ``NBGRADER_EXECUTION=autograde`` is in
its environment, so interactive teaching code (the sliders of notebook 4,
:func:`mlmcourse.teaching.sliders.show_sliders`) stays inert, and the client mimics no widget
front end, so nothing printed into a widget can stop the notebook. The whole notebook has a
wall-clock cap (:func:`notebook_cap_s`): past it the kernel is stopped, the cell it cut short
fails and the tests after it count as not run (status ``timeout``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlmcourse.course import nbio
from mlmcourse.course.cells import grade_id, is_graded, is_solution, points
from mlmcourse.course.layout import notebook_names, only_assignment
from mlmcourse.grader.engine.rebuild import (
    cells_to_run,
    copy_submission,
    layout_note,
    read_submitted_notebook,
    trusted_notebooks,
)
from mlmcourse.grader.engine.scan import asks_for_loss_by_hand, scan_cells
from mlmcourse.grader.engine.slicing import skip_unneeded
from mlmcourse.grader.limits import CAPS, Limits
from mlmcourse.grader.results.verdict import (
    Check,
    Incident,
    Kind,
    Status,
    Verdict,
    failure_of,
    unanswered,
)

log = logging.getLogger("mlmcourse.grader.engine.submission")


# ---------------------------------------------------------------------------------------------
# The trusted kernel, through nbclient.


def _kernel_manager_class():
    """An AsyncKernelManager whose only kernel spec forks a trusted kernel from the zygote."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    spec = KernelSpec(
        argv=[sys.executable, "-m", "mlmcourse.grader.trusted_kernel.kernel_stub", "-f",
              "{connection_file}"],
        display_name="Python 3 (grading)", language="python", interrupt_mode="signal",
        env={}, metadata={},
    )

    class Specs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return spec

    class TrustedKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            kwargs["kernel_spec_manager"] = Specs()
            super().__init__(**kwargs)

    return TrustedKernelManager


# The whole notebook's wall-clock cap, beyond each cell's `Limits.cell_timeout_s`: the student's
# code has `student_time_s` in all, the trusted kernel's own work (tests, plots, the reference
# experiment) fits in one cell's timeout, and this margin covers starting the kernel on a busy
# machine. Past the cap the kernel is stopped and the tests not yet run count as not run.
NOTEBOOK_MARGIN_S = 60.0
# How a result's detail starts when the trusted kernel died (the grader's failure, retried).
KERNEL_DIED = "the grading kernel died"
# If a cell ignores the interrupt that ends it, the run is cancelled this long after the cap.
HARD_STOP_GRACE_S = 1.0


# The detail of a notebook that has no graded cell and is therefore not run.
NOT_EXECUTED = "no graded cell: not executed (0 / 0)"


def notebook_cap_s(limits: Limits) -> float:
    """Wall-clock seconds one notebook may take in all, kernel start included."""
    return limits.cell_timeout_s + limits.student_time_s + NOTEBOOK_MARGIN_S


class NotebookTimeout(Exception):
    """The notebook ran past its total wall-clock cap (`notebook_cap_s`)."""


def _notebook_client(nb, cwd: Path, limits: Limits, deadline: float):
    """An nbclient client for the trusted kernel: no widget front end, and no cell past
    `deadline` (a `time.monotonic()` instant). nbclient's public hooks do the bookkeeping: each
    wait gets what is left of the cap (`timeout_func`; nbclient interrupts a cell past it), a
    cell is not started past the deadline, and the cell that runs is remembered, with whether it
    ran out of its time (`on_cell_start`, `on_cell_executed`)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellControlSignal

    class Client(NotebookClient):
        def handle_comm_msg(self, outs, msg, cell_index):
            # No widget front end here: nbclient's mimic of the Output widget raised KeyError
            # (its `widget_state` is empty with store_widget_state=False) as soon as text went
            # into a widget, which stopped the notebook. Comm messages change no cell's outputs.
            return None

        def process_message(self, msg, cell, cell_index):
            try:
                return super().process_message(msg, cell, cell_index)
            except CellControlSignal:
                raise  # nbclient's own control flow (the cell is done, it timed out...)
            except Exception:  # noqa: BLE001  (one odd message must not stop the notebook)
                log.warning("dropped a kernel message nbclient could not handle",
                            exc_info=True)
                return None

    def timeout_of(cell) -> int:
        # Each wait gets at most what is left of the notebook's cap (at least 1 s: nbclient
        # reads 0 as "no timeout").
        left = math.ceil(deadline - time.monotonic())
        return max(1, min(int(limits.cell_timeout_s), left))

    def on_cell_start(cell, cell_index) -> None:
        if cell.cell_type != "code" or not cell.source.strip():
            return
        if time.monotonic() >= deadline:
            raise NotebookTimeout(f"cell {cell_index} not started")
        # Kept when the run stops inside this cell: it started but did not finish, and must
        # not read as passed.
        client.running_cell = cell
        client.cell_started, client.cell_allowed = time.monotonic(), timeout_of(cell)

    def on_cell_executed(cell, cell_index, execute_reply) -> None:
        client.running_cell = None
        if time.monotonic() - client.cell_started >= client.cell_allowed:
            client.timed_out = True  # nbclient interrupted it at its timeout
            if time.monotonic() >= deadline - 1:
                client.cut_short = cell  # ... which was the notebook's cap

    client = Client(
        nb, kernel_manager_class=_kernel_manager_class(), kernel_name="mlm-trusted",
        timeout=int(limits.cell_timeout_s), timeout_func=timeout_of, startup_timeout=120,
        allow_errors=True, interrupt_on_timeout=True, record_timing=False,
        store_widget_state=False, resources={"metadata": {"path": str(cwd)}}, iopub_timeout=10,
        shutdown_kernel="immediate", on_cell_start=on_cell_start,
        on_cell_executed=on_cell_executed,
    )
    client.timed_out = False
    client.running_cell = client.cut_short = None
    client.cell_started, client.cell_allowed = 0.0, limits.cell_timeout_s
    return client


async def _execute_capped(client, env: dict, seconds: float) -> None:
    """Run the notebook; cancel it (the kernel is shut down) if it outlives `seconds`."""
    try:
        await asyncio.wait_for(client.async_execute(env=env), seconds)
    except TimeoutError:
        raise NotebookTimeout("cancelled") from None


def kernel_env(zygote_socket: str, config_path: Path, limits: Limits) -> dict[str, str]:
    """The trusted kernel's environment. ``NBGRADER_EXECUTION=autograde``, as nbgrader sets it
    when it grades: teaching code that is interactive only (the sliders of notebook 4) stays
    inert, as it is written to be under grading. Only what the kernel needs travels (the
    zygote's clean environment): none of the grader's own variables (a database password...)."""
    from mlmcourse.grader.processes.zygote import zygote_env

    env = zygote_env()
    # The course's own switches, and where a locally cached model lives (notebook 06).
    env.update({key: value for key, value in os.environ.items()
                if key.startswith(("MLMCOURSE_", "HF_", "TRANSFORMERS_"))})
    env.update({
        "NBGRADER_EXECUTION": "autograde",
        "MLM_ZYGOTE": zygote_socket,
        "MLM_HARNESS": str(config_path),
        "MLM_LIMITS": limits.to_json(),
    })
    return env


@dataclass
class Run:
    """How the trusted kernel's run of one notebook ended."""

    status: Status = Status.OK
    detail: str = ""
    stopped: dict[int, str] = field(default_factory=dict)  # the cell it stopped in: why


def run_trusted(nb, cwd: Path, config_path: Path, limits: Limits, spent: float = 0.0) -> Run:
    """Execute `nb` in place in a trusted kernel, in what is left of the notebook's cap once
    `spent` seconds (the trusted scan) are taken off."""
    from jupyter_core.utils import run_sync
    from nbclient.exceptions import DeadKernelError

    from mlmcourse.grader.processes.zygote_handle import get_zygote

    zygote = get_zygote()
    cap = notebook_cap_s(limits)
    deadline = time.monotonic() + cap - spent
    client = _notebook_client(nb, cwd, limits, deadline)
    env = kernel_env(zygote.socket_path, config_path, limits)
    run = Run()
    try:
        run_sync(_execute_capped)(client, env, cap - spent + HARD_STOP_GRACE_S)
    except NotebookTimeout:
        run.status = Status.TIMEOUT
    except DeadKernelError as err:
        run.status, run.detail = Status.CRASHED, f"{KERNEL_DIED}: {err}"
    except Exception as err:  # noqa: BLE001  (nbclient's own errors: start failures...)
        log.warning("the trusted kernel failed", exc_info=True)
        run.status, run.detail = Status.ERROR, f"{type(err).__name__}: {err}"
    stopped_in = _index_of(nb, client.running_cell or client.cut_short)
    # Whatever stopped the run at the cap was the cap (a cancelled cell reads as a dead kernel
    # to nbclient; a cell nbclient interrupted at the cap reads as a KeyboardInterrupt).
    at_cap = run.status is Status.TIMEOUT or client.cut_short is not None or (
        run.status is not Status.OK and time.monotonic() >= deadline)
    why = ""
    if at_cap:
        run.status = Status.TIMEOUT
        run.detail = f"the notebook ran past its cap of {cap:g} s; the tests after that did not run"
        why = f"NotebookTimeout: the notebook ran past its time limit ({cap:g} s) in this cell"
    elif run.status is not Status.OK:
        why = f"GradingStopped: this cell did not finish: {run.detail}"
    elif client.timed_out:
        run.status, run.detail = Status.TIMEOUT, f"a cell ran past {limits.cell_timeout_s:g} s"
    if why and stopped_in is not None:
        run.stopped[stopped_in] = why
    return run


def _index_of(nb, cell) -> int | None:
    return next((i for i, c in enumerate(nb.cells) if c is cell), None) if cell is not None \
        else None


# ---------------------------------------------------------------------------------------------
# One notebook, one submission: its verdict.


def prepare_scratch(course_root: Path, student: str, scratch: Path) -> Path:
    """A scratch course ``scratch/<student>/`` with a copy of ``source/`` (what is graded)."""
    course = scratch / student
    if course.exists():
        shutil.rmtree(course)
    course.mkdir(parents=True)
    shutil.copytree(course_root / "source", course / "source")
    return course


def autograded_path(course: Path, student: str, name: str) -> Path:
    """Where the engine writes the autograded notebook `name` in the scratch course (which
    grades one assignment, so no folder names it)."""
    return course / "autograded" / student / f"{name}.ipynb"


def write_harness_config(name: str, sources: dict, submitted: dict, course: Path) -> Path:
    """What the trusted kernel's harness needs (read by
    `mlmcourse.grader.trusted_kernel.harness.install`): the cells each submitted notebook's
    student process runs, the names each solution cell of `name` binds, and the incident log."""
    notebooks, bindings = {}, {}
    for other, other_nb in submitted.items():
        if other_nb is None:
            continue
        cells, binds = cells_to_run(other, sources[other], other_nb)
        notebooks[f"{other}.ipynb"] = cells
        if other == name:
            bindings = binds
    config = {"notebook": f"{name}.ipynb", "notebooks": notebooks, "bindings": bindings,
              "incidents": str(incidents_path(course, name))}
    path = course / f"harness-{name}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def incidents_path(course: Path, name: str) -> Path:
    return course / f"incidents-{name}.jsonl"


def read_incidents(path: Path) -> list[Incident]:
    """What went wrong in the student processes
    (`mlmcourse.grader.trusted_kernel.student_calls.Session.incident`)."""
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            data = json.loads(line)
            found.append(Incident(Kind(data["kind"]), str(data.get("detail", ""))))
        except (ValueError, KeyError, TypeError):
            continue
    return list(dict.fromkeys(found))  # one of each (a call repeated says the same)


def checks_of(graded, executed, stopped: dict[int, str]) -> list[Check]:
    """Copy the outputs of the executed notebook into the one handed back; one `Check` per
    graded cell (`stopped`: the message of the cell the run was stopped in, by index)."""
    checks = []
    budget = [CAPS.trusted_notebook_chars]
    for index, (shown, ran) in enumerate(zip(graded.cells, executed.cells, strict=False)):
        if shown.cell_type == "code":
            shown.outputs = bounded(nbio.merge_streams(ran.get("outputs", [])), budget)
            shown.execution_count = ran.get("execution_count")
        if is_graded(shown):
            full = points(shown)
            message = stopped.get(index) or failure_of(shown)
            checks.append(Check(grade_id(shown) or "", 0.0 if message else full, full, message))
        nbio.strip_execution_metadata(shown)
    return checks


TEXT_DATA = ("text/plain", "text/markdown", "text/latex")  # a figure's text/html is its picture


def bounded(outputs: list, budget: list[int]) -> list:
    """The trusted kernel's outputs as the autograded notebook keeps them: each text at most
    `CAPS.trusted_text_chars`, one notebook's in all at most `CAPS.trusted_notebook_chars` (past
    that, each keeps its first `CAPS.error_headline_chars`). A test may build its message from
    whatever the student's function returned; the notebook, the verdict's messages, the feedback
    and the class report stay small all the same. `budget`: [characters left]."""
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            output["text"] = _cut(output.get("text"), budget)
        elif kind == "error":
            output["evalue"] = _cut(output.get("evalue"), budget)
            output["traceback"] = [_cut(line, budget) for line in output.get("traceback", [])]
        elif kind in ("execute_result", "display_data"):
            data = output.get("data", {})
            for mime in TEXT_DATA:
                if mime in data:
                    data[mime] = _cut(data[mime], budget)
    return outputs


def _cut(text, budget: list[int]) -> str:
    text = "".join(text) if isinstance(text, list) else str(text or "")
    cap = min(CAPS.trusted_text_chars, max(budget[0], CAPS.error_headline_chars))
    if len(text) > cap:
        text = f"{text[:cap]}\n... ({len(text) - cap} more characters not kept)"
    budget[0] -= len(text)
    return text


def status_of(run_status: Status, incidents: list[Incident]) -> Status:
    """The notebook's status: the run's, unless the student processes' incidents say more."""
    kinds = {incident.kind for incident in incidents}
    if Kind.SETUP in kinds:
        return Status.ERROR  # the grader's fault (the sandbox), not the student's: retried
    if run_status is Status.OK and Kind.CRASH in kinds:
        return Status.CRASHED
    if run_status is Status.OK and kinds & {Kind.TIMEOUT, Kind.BUDGET}:
        return Status.TIMEOUT
    return run_status


def grade_notebook(name: str, sources: dict, submitted: dict, course: Path, student: str,
                   limits: Limits) -> Verdict:
    started = time.monotonic()
    source_nb = sources[name]
    student_nb = submitted.get(name)
    if student_nb is None:
        handed_in = (submitted_copy(course, student) / f"{name}.ipynb").exists()
        verdict = missing_verdict(name, source_nb, handed_in)
        if not handed_in:
            return verdict
        blank, _ = trusted_notebooks(source_nb, None)  # graded as the release: shown unrun
        return written(verdict, blank, course, student)
    graded, executed = trusted_notebooks(source_nb, student_nb)
    left = unanswered(graded, source_nb)
    skip_unneeded(source_nb, executed)  # only the graded cells and what they need run
    if not any(is_graded(cell) for cell in source_nb.cells):
        # An ungraded appendix scores 0 / 0 whatever it holds: not run at all (no kernel, no
        # student process); the autograded notebook shows the answers, unexecuted.
        checks_of(graded, executed, {})
        verdict = Verdict(name, Status.OK, [], [], NOT_EXECUTED, left,
                          time.monotonic() - started)
        return written(verdict, graded, course, student)
    run_dir = course / "run" / name
    copy_submission(submitted_copy(course, student), run_dir, sources)
    config_path = write_harness_config(name, sources, submitted, course)
    incidents_path(course, name).unlink(missing_ok=True)  # a retry starts with a clean log
    # Read on the trusted side, before the student's code runs: what can the grader not check?
    scanned = time.monotonic()
    findings = scan_cells(cells_to_run(name, source_nb, student_nb)[0],
                          library_rule=asks_for_loss_by_hand(source_nb))
    run = run_trusted(executed, run_dir, config_path, limits, time.monotonic() - scanned)
    checks = checks_of(graded, executed, run.stopped)
    incidents = read_incidents(incidents_path(course, name))
    if findings:
        incidents.append(Incident(Kind.UNCHECKED, "; ".join(map(str, findings[:3]))))
    layout = layout_note(student_nb, source_nb)
    if layout:
        incidents.append(Incident(Kind.PASTED, layout))
    status = status_of(run.status, incidents)
    if status is Status.ERROR and run.status is Status.OK:
        log.warning("%s/%s: the setup cell failed in the student process: %s", student, name,
                    incidents)
    notes = [str(incident) for incident in incidents[:5]]
    detail = "; ".join([d for d in [run.detail, *notes] if d])
    verdict = Verdict(name, status, checks, incidents, detail, left, time.monotonic() - started)
    return written(verdict, graded, course, student)


def submitted_copy(course: Path, student: str) -> Path:
    """Where the scratch course holds the student's notebooks (one assignment's)."""
    return course / "submitted" / student


def written(verdict: Verdict, graded, course: Path, student: str) -> Verdict:
    """Attach the verdict to its autograded notebook and write that in the scratch course."""
    verdict.attach(graded)
    nbio.write(graded, autograded_path(course, student, verdict.notebook))
    return verdict


def missing_verdict(name: str, source_nb, handed_in: bool, status: Status = Status.MISSING,
                    why: str = "") -> Verdict:
    """A notebook not graded: not handed in, handed in but unreadable (graded as the blank
    release: every answer "No response."), or (`status` error) the grader failed on it."""
    if not why:
        why = (f"{name}.ipynb could not be read as a notebook" if handed_in
               else f"{name}.ipynb was not submitted")
    checks = [Check(grade_id(c) or "", 0.0, points(c), why)
              for c in source_nb.cells if is_graded(c)]
    incidents = [Incident(Kind.UNREADABLE, why)] if handed_in and status is Status.MISSING \
        else []
    left = tuple(sorted(grade_id(c) for c in source_nb.cells if is_solution(c))) \
        if handed_in and status is Status.MISSING else ()
    return Verdict(name, status, checks, incidents, why, left)


def grade_submission(course_root: Path, student: str, submission_dir: Path, scratch: Path,
                     limits: Limits = Limits(),  # noqa: B008  (frozen: a shared default is fine)
                     notebooks: list[str] | None = None,
                     assignment: str | None = None) -> list[Verdict]:
    """Grade every notebook of an assignment for one submission, each in its own kernel: one
    `Verdict` per notebook.

    course_root: the course directory (only ``source/`` is read).
    submission_dir: the folder with the student's notebooks (read, never written).
    scratch: a folder for the scratch course ``scratch/<student>/``; the autograded notebooks are
    written there (`autograded_path`).
    notebooks: grade only these notebook names (default: the assignment's every notebook).
    assignment: the folder of ``source/`` the submission answers (default: the course's only one).
    """
    course_root = Path(course_root).resolve()
    submission_dir = Path(submission_dir)
    assignment = assignment or only_assignment(course_root)
    series = notebook_names(course_root, assignment)
    names = series if notebooks is None else [n for n in series if n in notebooks]
    from mlmcourse.grader.processes.zygote_handle import get_zygote

    get_zygote()  # started once per process (it imports torch), before any notebook's clock
    course = prepare_scratch(course_root, student, Path(scratch).resolve())
    sources = {n: nbio.read(course / "source" / assignment / f"{n}.ipynb") for n in series}
    copied = submitted_copy(course, student)
    copy_submission(submission_dir, copied, sources)
    submitted = {n: read_submitted_notebook(copied / f"{n}.ipynb") for n in sources}
    verdicts = []
    for name in names:
        verdict = _grade_guarded(name, sources, submitted, course, student, limits)
        if _graders_fault(verdict):
            # A failure of the grader (the sandbox's setup, a kernel that did not start or died)
            # says nothing about the student: grade the notebook once more from scratch.
            log.warning("grading %s/%s failed (%s: %s); grading it again", student, name,
                        verdict.status, verdict.detail)
            verdict = _grade_guarded(name, sources, submitted, course, student, limits)
        verdicts.append(verdict)
    return verdicts


def _grade_guarded(name: str, sources: dict, submitted: dict, course: Path, student: str,
                   limits: Limits) -> Verdict:
    try:
        return grade_notebook(name, sources, submitted, course, student, limits)
    except Exception as err:  # noqa: BLE001  (one notebook's failure is only its own)
        log.exception("grading %s/%s failed", student, name)
        return missing_verdict(name, sources[name], False, Status.ERROR,
                               f"the grader failed: {type(err).__name__}: {err}")


def _graders_fault(verdict: Verdict) -> bool:
    """Whether the verdict says more about the grader than about the student's code (status
    ``error``, or the trusted kernel died: the student's code never runs in it)."""
    return verdict.status is Status.ERROR or verdict.detail.startswith(KERNEL_DIED)
