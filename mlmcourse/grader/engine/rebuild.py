"""The trusted notebook, rebuilt from the instructor's source and the student's answer cells.

The engine (:mod:`mlmcourse.grader.engine.submission`) grades a notebook rebuilt from the
instructor's ``source/`` notebook: every locked cell, demo and hidden test comes from there. From
the student's
notebook only the code answer cells are taken, in the notebook's order, every cell nbgrader marks
as an answer (the layout rule, :func:`mlmcourse.course.cells.answer_cells`: a split answer or a
pasted copy runs as Run All ran it; a missing answer becomes the release stub,
:func:`mlmcourse.course.cells.release_stub`, that raises ``NotImplementedError``); every other
change the student made to the file -- edited, deleted or added cells, metadata -- is ignored. Two
notebooks come out of one rebuild: the one the trusted kernel runs (each code answer replaced by
``__mlm_grader__.solution_cell(GRADE_ID)``, see :mod:`mlmcourse.grader.trusted_kernel.harness`) and
the one handed back, which shows the student's answers. What a student process runs
(:func:`cells_to_run`) is the
source's ``setup`` cell and those answers.

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
    answer_cells,
    grade_id,
    is_solution,
    layout_notes,
    release_stub,
    source_text,
)
from mlmcourse.grader.limits import CAPS

# ---------------------------------------------------------------------------------------------
# Reading the submission (never writing it).


def read_regular_file(path: Path) -> bytes | None:
    """The bytes of `path` if it is a regular file (not a link) of at most
    `CAPS.notebook_bytes`, read no further than the cap (it may grow while read); else None.
    Every reader of a submission reads through here."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > CAPS.notebook_bytes:
        return None
    with open(path, "rb") as handle:
        data = handle.read(CAPS.notebook_bytes + 1)
    return data if len(data) <= CAPS.notebook_bytes else None


def read_submitted_notebook(path: Path) -> nbformat.NotebookNode | None:
    """The student's notebook, when it is a readable regular file (never a link)."""
    try:
        data = read_regular_file(path)
        if data is None:
            return None
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


def answer_ids_of(source_nb: nbformat.NotebookNode) -> set[str]:
    return {grade_id(cell) for cell in source_nb.cells if is_solution(cell)}


def answer_parts(student_nb: nbformat.NotebookNode | None,
                 answer_ids: Iterable[str] = ()) -> dict[str, list[str]]:
    """{grade_id: the source of each code answer cell carrying it, in order} (`answer_cells`)."""
    parts: dict[str, list[str]] = {}
    for gid, source in answer_cells(student_nb, answer_ids):
        parts.setdefault(gid, []).append(source)
    return parts


def layout_note(student_nb: nbformat.NotebookNode | None,
                source_nb: nbformat.NotebookNode) -> str:
    """One line for the TA about answers laid out over several cells ('' when there is none)."""
    return "; ".join(layout_notes(student_nb, answer_ids_of(source_nb)))


def cells_to_run(name: str, source_nb: nbformat.NotebookNode,
                 student_nb: nbformat.NotebookNode | None
                 ) -> tuple[list[dict], dict[str, list[str]]]:
    """The cells a student process runs for notebook `name`: the source's setup cell, the
    student's code answer cells in their notebook's order (`answer_cells`), then the release's
    stub of each answer the notebook lacks; and the names each of the source's solution cells
    binds in the trusted kernel (those of the reference solution)."""
    cells = [_to_run(name, SETUP_GRADE_ID, cell.source) for cell in source_nb.cells
             if cell.cell_type == "code" and grade_id(cell) == SETUP_GRADE_ID
             and not is_solution(cell)]
    parts: dict[str, int] = {}
    for gid, source in answer_cells(student_nb, answer_ids_of(source_nb)):
        parts[gid] = parts.get(gid, 0) + 1
        cells.append(_to_run(name, gid, source, parts[gid]))
    bindings = {}
    for cell in source_nb.cells:
        if cell.cell_type == "code" and is_solution(cell):
            gid = grade_id(cell)
            bindings[gid] = defined_names(cell.source)
            if gid not in parts:
                cells.append(_to_run(name, gid, release_stub(cell.source)))
    return cells, bindings


def _to_run(name: str, gid: str, source: str, part: int = 1) -> dict:
    where = f"cell {gid}" if part == 1 else f"cell {gid}, part {part}"
    return {"grade_id": gid, "source": source, "filename": f"<{name}.ipynb: {where}>"}


def trusted_notebooks(source_nb: nbformat.NotebookNode,
                      student_nb: nbformat.NotebookNode | None
                      ) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """(graded, executed): the notebook to hand back and the one the trusted kernel runs."""
    theirs = answer_parts(student_nb, answer_ids_of(source_nb))
    texts = {grade_id(cell): source_text(cell.get("source"))  # a written answer: its last copy
             for cell in (student_nb or {}).get("cells", [])
             if cell.get("cell_type") == "markdown" and is_solution(cell)}
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
        if shown.cell_type == "code" and gid in theirs:
            shown.source = "\n\n".join(theirs[gid])  # a split answer: its parts, in order
        elif shown.cell_type != "code" and gid in texts:
            shown.source = texts[gid]
        else:
            shown.source = release_stub(shown.source, shown.cell_type)
        if shown.cell_type == "code":
            run.source = f"__mlm_grader__.solution_cell({gid!r})"
        else:
            run.source = shown.source
    return graded, executed
