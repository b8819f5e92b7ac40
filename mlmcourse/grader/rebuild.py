"""The trusted notebook, rebuilt from the instructor's source and the student's answer cells.

The engine (:mod:`mlmcourse.grader.engine`) grades a notebook rebuilt from the instructor's
``source/`` notebook: every locked cell, demo and hidden test comes from there. From the
student's notebook only the solution cells are taken, matched by ``grade_id`` (a missing one
becomes the release stub, :func:`mlmcourse.course.cells.release_stub`, that raises
``NotImplementedError``); every other change the student made to the file -- edited, deleted or
added cells, metadata -- is ignored. Two notebooks come out of one rebuild: the one the trusted
kernel runs (each code answer replaced by ``__mlm_grader__.solution_cell(GRADE_ID)``, see
:mod:`mlmcourse.grader.harness`) and the one handed back, which shows the student's answers.
What a student process runs (:func:`cells_to_run`) is the source's ``setup`` cell and those answers.

The submission is read, never written: only regular files (no links) of bounded size.
"""

from __future__ import annotations

import ast
import copy
import re
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

import nbformat

from mlmcourse.course.cells import (
    SETUP_GRADE_ID,
    grade_id,
    is_solution,
    release_stub,
    source_text,
)
from mlmcourse.grader.limits import CAPS

# ---------------------------------------------------------------------------------------------
# Reading the submission (never writing it).


def read_submitted_notebook(path: Path) -> nbformat.NotebookNode | None:
    """The student's notebook, when it is a readable regular file (never a link)."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > CAPS.notebook_bytes:
        return None
    try:
        with open(path, "rb") as handle:
            data = handle.read(CAPS.notebook_bytes + 1)
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception:  # noqa: BLE001  (a broken file counts as not submitted)
        return None
    for cell in nb.get("cells", []):
        if isinstance(cell.get("source"), str):
            # JSON may carry a lone surrogate (\ud800), which no notebook file can hold: kept
            # as its escape, so the graded notebook can be written (in a string literal the
            # escape is the same character when the code runs).
            cell["source"] = _LONE_SURROGATE.sub(_escaped, cell["source"])
    return nb


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def copy_submission(submission_dir: Path, destination: Path,
                    names: Iterable[str] | None = None) -> list[str]:
    """Copy the notebooks of a submission: regular files only (no links), top level only, and
    only the series' notebooks when `names` (notebook names without .ipynb) says which: nothing
    else of a submission folder is read (a junk file beside a notebook costs nothing)."""
    destination.mkdir(parents=True, exist_ok=True)
    copied = []
    if not submission_dir.is_dir():
        return copied
    wanted = None if names is None else {f"{name}.ipynb" for name in names}
    for path in sorted(submission_dir.glob("*.ipynb")):
        if wanted is not None and path.name not in wanted:
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size <= CAPS.notebook_bytes:
            shutil.copyfile(path, destination / path.name, follow_symlinks=False)
            copied.append(path.name)
    return copied


# ---------------------------------------------------------------------------------------------
# The rebuilt notebooks.


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


def student_cells(student_nb: nbformat.NotebookNode | None) -> dict[str, nbformat.NotebookNode]:
    """The student's cells that may replace a solution cell: the LAST cell of each grade_id.

    One rule on every path, nbgrader's: a cell pasted in JupyterLab keeps its nbgrader metadata,
    so a notebook may hold two cells with one grade_id; the kernel ran the later one last, and
    nbgrader's DeduplicateIds keeps the later one (`nbgrader_plugin.LastCopyOfEachCell` applies
    this same rule where nbgrader sanitizes a submission)."""
    found: dict[str, nbformat.NotebookNode] = {}
    if student_nb is None:
        return found
    for cell in student_nb.get("cells", []):
        try:
            gid = grade_id(cell)
        except AttributeError:
            continue
        if isinstance(gid, str):
            found[gid] = cell
    return found


def repeated_cells(student_nb: nbformat.NotebookNode | None) -> dict[str, int]:
    """{grade_id: how many cells carry it} for each grade_id the student's notebook holds more
    than once (a pasted cell): the grading log names them; `student_cells` takes the last."""
    counts: dict[str, int] = {}
    for cell in (student_nb or {}).get("cells", []):
        try:
            gid = grade_id(cell)
        except AttributeError:
            continue
        if isinstance(gid, str):
            counts[gid] = counts.get(gid, 0) + 1
    return {gid: count for gid, count in counts.items() if count > 1}


def repeated_note(student_nb: nbformat.NotebookNode | None) -> str:
    """One line for the TA about pasted cells ('' when there are none)."""
    repeated = repeated_cells(student_nb)
    if not repeated:
        return ""
    listed = ", ".join(f"{gid!r} ({count} copies)" for gid, count in sorted(repeated.items()))
    return f"cells pasted with their nbgrader id: {listed}; the last copy of each was graded"


def cells_to_run(name: str, source_nb: nbformat.NotebookNode,
                 student_nb: nbformat.NotebookNode | None
                 ) -> tuple[list[dict], dict[str, list[str]]]:
    """The cells a student process runs for notebook `name` (source setup + student solutions),
    and the names each solution cell binds in the trusted kernel (those of the reference
    solution)."""
    theirs = student_cells(student_nb)
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
                source = source_text(mine.get("source"))
            else:
                source = release_stub(cell.source)
            bindings[gid] = defined_names(cell.source)
        else:
            continue
        cells.append({"grade_id": gid, "source": source,
                      "filename": f"<{name}.ipynb: cell {gid}>"})
    return cells, bindings


def trusted_notebooks(source_nb: nbformat.NotebookNode,
                      student_nb: nbformat.NotebookNode | None
                      ) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """(graded, executed): the notebook to hand back and the one the trusted kernel runs."""
    theirs = student_cells(student_nb)
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
            shown.source = source_text(mine.get("source"))
        else:
            shown.source = release_stub(shown.source, shown.cell_type)
        if shown.cell_type == "code":
            run.source = f"__mlm_grader__.solution_cell({gid!r})"
        else:
            run.source = shown.source
    return graded, executed
