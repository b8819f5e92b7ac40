"""Load a student's functions from a sibling notebook of the series.

Only two kinds of cells are executed, in notebook order, into a fresh namespace: the cell whose
nbgrader ``grade_id`` is ``setup`` (the imports) and the answer cells (``solution: true``). Demo
cells, checks and tests are never run. Each cell runs as IPython would run it
(:func:`mlmcourse.course.cells.run_cell`). This works on the instructor source, on a student's
copy of the release, and under grading (where the trusted kernel installs a hook in
:mod:`mlmcourse.course.siblings`, so the functions are proxies to the sandboxed worker).

When a notebook is missing, does not define a name, or a function still raises
``NotImplementedError`` on a tiny valid call, :class:`NotebookNotReady` says in one sentence which
notebook to finish first. :func:`load_student_functions` tries every notebook it needs before it
raises, so one run lists every notebook still to finish (``NotebookNotReady.reasons``), not only
the first.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import nbformat
import torch

from mlmcourse.course import cells
from mlmcourse.course.cells import SETUP_GRADE_ID, is_solution, run_cell
from mlmcourse.course.siblings import NotebookNotReady, graded_loader
from mlmcourse.course.siblings import notebook_label as _label


def _cells_to_run(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(grade_id, source) of the setup cell and of every answer cell, in notebook order."""
    chosen = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        name = cells.grade_id(cell) or f"cell-{index}"
        if name == SETUP_GRADE_ID or is_solution(cell):
            chosen.append((name, cell.source))  # solution markers are comments
    return chosen


def _run_cells(path: Path, cells: list[tuple[str, str]]) -> dict[str, Any]:
    """Execute the cells into a fresh namespace; prints of the student's cells are swallowed."""
    namespace: dict[str, Any] = {"__name__": f"notebook_{path.stem}"}
    for grade_id, source in cells:
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                run_cell(source, namespace, f"<{path.name}: cell {grade_id}>")
        except Exception as err:  # any failure of a student's cell is reported the same way
            raise NotebookNotReady(
                f"Running cell '{grade_id}' of {path.name} failed with "
                f"{type(err).__name__}: {err}. Fix {_label(path)} first, then run this cell again."
            ) from None
    return namespace


def load_functions(
    notebook_path: str | Path,
    names: Iterable[str],
    probes: Mapping[str, Callable[[Callable[..., Any]], Any]] | None = None,
) -> dict[str, Callable[..., Any]]:
    """Return ``{name: function}`` defined by the setup and answer cells of one notebook.

    ``probes[name](function)`` makes a tiny valid call; a ``NotImplementedError`` (or any other
    error) there means the answer is unfinished and raises :class:`NotebookNotReady`.
    """
    __tracebackhide__ = True
    path = Path(notebook_path)
    names = list(names)
    if not path.is_file():
        raise NotebookNotReady(
            f"{path.name} was not found in {path.parent.resolve()}. Finish {_label(path)} first "
            "and keep it in the same folder as this notebook."
        )
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as err:  # a truncated or hand-broken file
        raise NotebookNotReady(
            f"{path.name} could not be read ({type(err).__name__}). Save {_label(path)} again "
            "from JupyterLab, then run this cell again."
        ) from None
    hook = graded_loader()
    if hook is not None:
        namespace = hook(path)
    else:
        namespace = _run_cells(path, _cells_to_run(nb))
    found: dict[str, Callable[..., Any]] = {}
    for name in names:
        function = namespace.get(name)
        if not callable(function):
            raise NotebookNotReady(
                f"{path.name} does not define `{name}` in its answer cells. "
                f"Finish {_label(path)} first."
            )
        probe = (probes or {}).get(name)
        if probe is not None:
            _probe(path, name, function, probe)
        found[name] = function
    return found


def _probe(path: Path, name: str, function: Callable[..., Any], probe: Callable) -> None:
    __tracebackhide__ = True
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            probe(function)
    except Exception as err:
        if isinstance(err, NotImplementedError) and not str(err):  # the placeholder's bare raise
            raise NotebookNotReady(
                f"`{name}` in {path.name} still raises NotImplementedError. "
                f"Finish {_label(path)} first, save it, then run this cell again."
            ) from None
        hint = (" Only the setup cell and the answer cells are loaded: define any helper inside "
                "the answer cell." if isinstance(err, NameError) else "")
        raise NotebookNotReady(
            f"`{name}` from {path.name} fails on a tiny valid input with "
            f"{type(err).__name__}: {err}.{hint} Fix {_label(path)} first (its checks show what "
            "is wrong), then run this cell again."
        ) from None


def _probe_make_mlm_inputs(function: Callable[..., Any]) -> None:
    tokens = torch.tensor([[0, 1, 2]])
    selected = torch.tensor([[False, True, False]])
    draws = torch.tensor([[0.5, 0.5, 0.5]])
    function(tokens, selected, draws, torch.zeros_like(tokens), 4)


def _probe_masked_lm_loss(function: Callable[..., Any]) -> None:
    logits = torch.zeros(1, 3, 4, dtype=torch.float64, requires_grad=True)
    function(logits, torch.tensor([[-100, 1, -100]]))


# Tiny valid calls for the functions later notebooks use (a call, never an answer).
PROBES: dict[str, Callable[[Callable[..., Any]], Any]] = {
    "make_mlm_inputs": _probe_make_mlm_inputs,
    "masked_lm_loss": _probe_masked_lm_loss,
}


def from_notebook(
    directory: str | Path, notebook: str, names: Iterable[str]
) -> dict[str, Callable[..., Any]]:
    """Load ``names`` from ``directory/notebook``, probing the functions the course knows."""
    __tracebackhide__ = True
    return load_functions(Path(directory) / notebook, names, PROBES)


# The functions later notebooks use, and the notebook each comes from, in the series' order.
STUDENT_FUNCTIONS = (("01_corruption.ipynb", "make_mlm_inputs"),
                     ("03_empty_mask_and_gradient.ipynb", "masked_lm_loss"))


def load_student_functions(directory: str | Path = ".") -> tuple[Callable, Callable]:
    """The student's ``make_mlm_inputs`` (notebook 1) and ``masked_lm_loss`` (notebook 3).

    Every notebook is tried before anything is raised: a student with notebook 1 unfinished and
    notebook 3 missing reads both in one :class:`NotebookNotReady`, each with what to do.
    """
    __tracebackhide__ = True
    found: dict[str, Callable[..., Any]] = {}
    reasons: list[str] = []
    for notebook, name in STUDENT_FUNCTIONS:
        try:
            found.update(from_notebook(directory, notebook, [name]))
        except NotebookNotReady as err:
            reasons.extend(err.reasons or [str(err)])
    if reasons:
        raise NotebookNotReady(*reasons)
    return found["make_mlm_inputs"], found["masked_lm_loss"]
