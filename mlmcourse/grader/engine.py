"""The per-submission grading engine: each notebook graded alone, student code sandboxed.

``grade_submission(course_root, student, submission_dir, scratch)`` grades one student's
notebooks and returns one :class:`NotebookResult` per notebook of the series. Nothing of the
course directory is written, and nothing the student submitted is modified (the files are read
once, as regular files, and copied into ``scratch``).

How a notebook is graded (see :mod:`mlmcourse.grader.harness` and
:mod:`mlmcourse.grader.zygote` for the two halves):

1. The graded notebook is rebuilt from the instructor's ``source/`` notebook: every locked cell,
   demo and hidden test comes from there. From the student's notebook only the solution cells are
   taken, matched by ``grade_id`` (a missing one becomes the release stub that raises
   ``NotImplementedError``); every other change the student made to the file -- edited, deleted
   or added cells, metadata -- is ignored.
2. The rebuilt notebook runs in a *trusted* Jupyter kernel in a scratch copy of the submission.
   The student's code never runs in it: in place of each solution cell the kernel binds the names
   the reference solution defines to proxies. The student's cells (after the ``setup`` cell of the
   source) run in a separate *worker* process: sandboxed where the platform allows (namespaces:
   no course directory, no network, read-only system, ``nobody``), with memory, CPU-time and
   wall-clock limits everywhere. Each call of a proxy ships tensors there and back as raw
   storage bytes plus a JSON description; nothing the worker sends is ever unpickled.
3. Each graded cell scores its points when it ran and produced no error. Output on stderr costs
   nothing: it is shown as a note on stdout in the autograded notebook, so nbgrader's own rule
   ("stderr fails a cell") gives the same score when it reads that notebook.

So an input transformer, a patched ``torch.equal`` or ``AssertionError``, an overridden
``showtraceback``, edited or deleted tests and reads or writes of the gradebook all happen (if at
all) in the worker, where they change nothing the tests see. A hang, a crash or a memory blow-up
in the student's code fails the test cell that called it (``StudentCodeTimeout`` /
``StudentCodeCrashed``); the worker is started again for the next call, and a time budget per
notebook bounds the total. A trusted kernel that dies or a cell that overruns
``cell_timeout_s`` costs only the tests of that notebook that did not pass.
"""

from __future__ import annotations

import ast
import copy
import json
import logging
import os
import re
import shutil
import stat
import sys
import time
from pathlib import Path

import nbformat

from mlmcourse.course import nbio
from mlmcourse.course.cells import SETUP_GRADE_ID, grade_id, is_graded, is_solution, points
from mlmcourse.course.layout import ASSIGNMENT

from .limits import Limits
from .results import NotebookResult, TestResult, cell_result, coalesce_streams, stderr_as_note

log = logging.getLogger("mlmcourse.grader.engine")

MAX_NOTEBOOK_BYTES = 32 * 1024 * 1024
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"
_SOLUTION_BEGIN = re.compile(r"^(\s*)###\s+BEGIN\s+SOLUTION\s*$")
_SOLUTION_END = re.compile(r"^\s*###\s+END\s+SOLUTION\s*$")


# ---------------------------------------------------------------------------------------------
# Reading the submission (never writing it).


def read_submitted_notebook(path: Path) -> nbformat.NotebookNode | None:
    """The student's notebook, when it is a readable regular file (never a link)."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_NOTEBOOK_BYTES:
        return None
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_NOTEBOOK_BYTES + 1)
        return nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception:  # noqa: BLE001  (a broken file counts as not submitted)
        return None


def copy_submission(submission_dir: Path, destination: Path) -> list[str]:
    """Copy the notebooks of a submission: regular files only (no links), top level only."""
    destination.mkdir(parents=True, exist_ok=True)
    copied = []
    if not submission_dir.is_dir():
        return copied
    for path in sorted(submission_dir.glob("*.ipynb")):
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_NOTEBOOK_BYTES:
            shutil.copyfile(path, destination / path.name, follow_symlinks=False)
            copied.append(path.name)
    return copied


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


# ---------------------------------------------------------------------------------------------
# The trusted notebook.


def release_stub(source: str, cell_type: str = "code") -> str:
    """What nbgrader's release puts in a solution cell: the solution region becomes the stub."""
    if cell_type != "code":
        return TEXT_STUB
    lines, out, inside = source.split("\n"), [], False
    for line in lines:
        begin = _SOLUTION_BEGIN.match(line)
        if begin:
            inside = True
            out.extend(begin.group(1) + stub for stub in CODE_STUB.split("\n"))
        elif _SOLUTION_END.match(line):
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def defined_names(source: str) -> list[str]:
    """Top-level names a (reference) cell defines: functions, classes, assigned names."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []

    def add_target(target) -> None:
        if isinstance(target, ast.Name):
            names.append(target.id)
        elif isinstance(target, ast.Tuple | ast.List):
            for item in target.elts:
                add_target(item)

    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                add_target(target)
        elif isinstance(node, ast.AnnAssign):
            add_target(node.target)
    return list(dict.fromkeys(names))


def student_cells(source_nb, student_nb) -> dict[str, nbformat.NotebookNode]:
    """The student's cells that may replace a solution cell: first cell per grade_id and type."""
    found: dict[str, nbformat.NotebookNode] = {}
    if student_nb is None:
        return found
    for cell in student_nb.get("cells", []):
        try:
            gid = grade_id(cell)
        except AttributeError:
            continue
        if isinstance(gid, str) and gid not in found:
            found[gid] = cell
    return found


def worker_cells(name: str, source_nb, student_nb) -> tuple[list[dict], dict[str, list[str]]]:
    """The cells a worker runs for notebook `name` (source setup + student solutions), and the
    names each solution cell binds in the trusted kernel (those of the reference solution)."""
    theirs = student_cells(source_nb, student_nb)
    cells, bindings = [], {}
    for cell in source_nb.cells:
        gid = grade_id(cell)
        if cell.cell_type != "code":
            continue
        if gid == SETUP_GRADE_ID and not is_solution(cell):
            source = cell.source
        elif is_solution(cell):
            mine = theirs.get(gid)
            if mine is not None and mine.get("cell_type") == "code":
                source = _text(mine.get("source"))
            else:
                source = release_stub(cell.source)
            bindings[gid] = defined_names(cell.source)
        else:
            continue
        cells.append({"grade_id": gid, "source": source,
                      "filename": f"<{name}.ipynb: cell {gid}>"})
    return cells, bindings


def trusted_notebooks(source_nb, student_nb):
    """(graded, executed): the notebook to hand back and the one the trusted kernel runs."""
    theirs = student_cells(source_nb, student_nb)
    graded = copy.deepcopy(source_nb)
    for cell in graded.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    executed = copy.deepcopy(graded)
    for shown, run in zip(graded.cells, executed.cells, strict=False):
        if not is_solution(shown):
            continue
        gid = grade_id(shown)
        mine = theirs.get(gid)
        if mine is not None and mine.get("cell_type") == shown.cell_type:
            shown.source = _text(mine.get("source"))
        else:
            shown.source = release_stub(shown.source, shown.cell_type)
        if shown.cell_type == "code":
            run.source = f"__mlm_grader__.solution_cell({gid!r})"
        else:
            run.source = shown.source
    return graded, executed


# ---------------------------------------------------------------------------------------------
# The trusted kernel, through nbclient.


def _kernel_manager_class():
    """An AsyncKernelManager whose only kernel spec forks a trusted kernel from the zygote."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    spec = KernelSpec(
        argv=[sys.executable, "-m", "mlmcourse.grader.zygote", "kernel", "-f",
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


def _notebook_client(nb, cwd: Path, limits: Limits):
    from nbclient import NotebookClient

    class Client(NotebookClient):
        async def _async_handle_timeout(self, timeout, cell=None):
            self.timed_out = True
            return await super()._async_handle_timeout(timeout, cell)

    client = Client(
        nb, kernel_manager_class=_kernel_manager_class(), kernel_name="mlm-trusted",
        timeout=int(limits.cell_timeout_s), startup_timeout=120, allow_errors=True,
        interrupt_on_timeout=True, record_timing=False, store_widget_state=False,
        resources={"metadata": {"path": str(cwd)}}, iopub_timeout=10,
        shutdown_kernel="immediate",
    )
    client.timed_out = False
    return client


def run_trusted(nb, cwd: Path, config_path: Path, limits: Limits) -> tuple[str, str]:
    """Execute `nb` in place in a trusted kernel; return (status, detail)."""
    from nbclient.exceptions import DeadKernelError

    from mlmcourse.grader.zygote import get_zygote

    zygote = get_zygote()
    client = _notebook_client(nb, cwd, limits)
    env = dict(os.environ)
    env.pop("NBGRADER_EXECUTION", None)
    env.update({
        "MLM_ZYGOTE": zygote.socket_path,
        "MLM_HARNESS": str(config_path),
        "MLM_LIMITS": json.dumps({"memory_bytes": 4 * int(limits.memory_bytes)}),
    })
    status, detail = "ok", ""
    try:
        client.execute(env=env)
    except DeadKernelError as err:
        status, detail = "crashed", f"the grading kernel died: {err}"
    except Exception as err:  # noqa: BLE001  (nbclient's own errors: start failures...)
        log.warning("the trusted kernel failed", exc_info=True)
        status, detail = "error", f"{type(err).__name__}: {err}"
    if status == "ok" and client.timed_out:
        status, detail = "timeout", f"a cell ran past {limits.cell_timeout_s:g} s"
    return status, detail


# ---------------------------------------------------------------------------------------------
# Scores.


def _missing_result(name: str, source_nb, status: str, message: str) -> NotebookResult:
    tests = [TestResult(grade_id(c) or "", False, 0.0, points(c), message)
             for c in source_nb.cells if is_graded(c)]
    return NotebookResult(name, 0.0, sum(t.max_points for t in tests), status, tests, None,
                          message)


# ---------------------------------------------------------------------------------------------
# One notebook, one submission.


def prepare_scratch(course_root: Path, student: str, scratch: Path) -> Path:
    """A scratch course: a copy of source/ and of nbgrader_config.py with its own gradebook."""
    course = scratch / student
    if course.exists():
        shutil.rmtree(course)
    course.mkdir(parents=True)
    shutil.copytree(course_root / "source", course / "source")
    config = (course_root / "nbgrader_config.py").read_text(encoding="utf-8")
    config += (
        "\n# Scratch copy made by mlmcourse.grader.engine: its own gradebook, never the course's.\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_url = {('sqlite:///' + str(course / 'gradebook.db'))!r}\n"
    )
    (course / "nbgrader_config.py").write_text(config, encoding="utf-8")
    return course


def grade_notebook(name: str, sources: dict, submitted: dict, course: Path, student: str,
                   limits: Limits) -> NotebookResult:
    started = time.monotonic()
    source_nb = sources[name]
    student_nb = submitted.get(name)
    if student_nb is None:
        copied = course / "submitted" / student / ASSIGNMENT / f"{name}.ipynb"
        why = (f"{name}.ipynb could not be read as a notebook" if copied.exists()
               else f"{name}.ipynb was not submitted")
        return _missing_result(name, source_nb, "missing", why)
    run_dir = course / "run" / name
    copy_submission(course / "submitted" / student / ASSIGNMENT, run_dir)
    graded, executed = trusted_notebooks(source_nb, student_nb)
    notebooks, bindings = {}, {}
    for other, other_nb in submitted.items():
        if other_nb is None:
            continue
        cells, binds = worker_cells(other, sources[other], other_nb)
        notebooks[f"{other}.ipynb"] = cells
        if other == name:
            bindings = binds
    incidents = course / f"incidents-{name}.jsonl"
    config = {
        "notebook": f"{name}.ipynb", "notebooks": notebooks, "bindings": bindings,
        "limits": limits.for_worker(), "incidents": str(incidents),
    }
    config_path = course / f"harness-{name}.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    status, detail = run_trusted(executed, run_dir, config_path, limits)

    tests = []
    for shown, ran in zip(graded.cells, executed.cells, strict=False):
        if shown.cell_type == "code":
            shown.outputs = ran.get("outputs", [])
            shown.execution_count = ran.get("execution_count")
            coalesce_streams(shown)
            if is_graded(shown):
                stderr_as_note(shown)
                coalesce_streams(shown)
        if is_graded(shown):
            tests.append(cell_result(shown, points(shown)))
        nbio.strip_execution_metadata(shown)
    kinds = []
    if incidents.exists():
        for line in incidents.read_text(encoding="utf-8").splitlines():
            try:
                kinds.append(json.loads(line))
            except ValueError:
                continue
    if any(k.get("kind") == "setup" for k in kinds):
        status = "error"  # the grader's fault (the sandbox), not the student's: look at it
        log.warning("%s/%s: the setup cell failed in the worker: %s", student, name, kinds)
    elif status == "ok" and any(k.get("kind") == "crash" for k in kinds):
        status = "crashed"
    elif status == "ok" and any(k.get("kind") in ("timeout", "budget") for k in kinds):
        status = "timeout"
    notes = [f"{k.get('kind')}: {k.get('detail')}" for k in kinds[:5]]
    detail = "; ".join([d for d in [detail, *notes] if d])
    out = course / "autograded" / student / ASSIGNMENT / f"{name}.ipynb"
    nbio.write(graded, out)
    score = sum(t.points for t in tests)
    return NotebookResult(name, score, sum(t.max_points for t in tests), status, tests, out,
                          detail, time.monotonic() - started)



def grade_submission(course_root: Path, student: str, submission_dir: Path, scratch: Path,
                     limits: Limits = Limits(),  # noqa: B008  (frozen: a shared default is fine)
                     notebooks: list[str] | None = None) -> list[NotebookResult]:
    """Grade every notebook of the series for one submission, each in its own kernel.

    course_root: the course directory (only ``source/`` and ``nbgrader_config.py`` are read).
    submission_dir: the folder with the student's ``NN_name.ipynb`` files (read, never written).
    scratch: a folder for the scratch course ``scratch/<student>/``; the autograded notebooks are
    written to ``scratch/<student>/autograded/<student>/bert_mlm/``.
    notebooks: grade only these notebook names (default: the whole series).
    """
    course_root = Path(course_root).resolve()
    submission_dir = Path(submission_dir)
    source_dir = course_root / "source" / ASSIGNMENT
    names = sorted(p.stem for p in source_dir.glob("[0-9][0-9]_*.ipynb"))
    if notebooks is not None:
        names = [n for n in names if n in notebooks]
    from mlmcourse.grader.zygote import get_zygote

    get_zygote()  # started once per process (it imports torch), before any notebook's clock
    course = prepare_scratch(course_root, student, Path(scratch).resolve())
    sources = {n: nbio.read(course / "source" / ASSIGNMENT / f"{n}.ipynb")
               for n in sorted(p.stem for p in source_dir.glob("[0-9][0-9]_*.ipynb"))}
    copied = course / "submitted" / student / ASSIGNMENT
    copy_submission(submission_dir, copied)
    submitted = {n: read_submitted_notebook(copied / f"{n}.ipynb") for n in sources}
    results = []
    for name in names:
        try:
            results.append(grade_notebook(name, sources, submitted, course, student, limits))
        except Exception as err:  # noqa: BLE001  (one notebook's failure is only its own)
            log.exception("grading %s/%s failed", student, name)
            results.append(_missing_result(name, sources[name], "error",
                                           f"the grader failed: {type(err).__name__}: {err}"))
    return results
