"""Reading nbgrader cells: their ids, kinds and the marker regions inside them, the release's
stubs, and how a cell's text runs."""

from __future__ import annotations

import re
from collections.abc import Iterable

import nbformat

_SOLUTION_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")
_HIDDEN_BEGIN = re.compile(r"^\s*### (BEGIN) HIDDEN TESTS\s*$")
_HIDDEN_END = re.compile(r"^\s*### (END) HIDDEN TESTS\s*$")


SETUP_GRADE_ID = "setup"  # the imports cell that answer cells may rely on (and loaders run)
TIMING_TAG = "timing"  # cells whose printed numbers change from run to run
STUDENTS_ONLY_TAG = "students-only"  # instructions for the graded exercise; not for readers
# An answer cell that earns no points: its visible check is its only judge (notebook 4's
# train_step), so no hidden test, and no mutation of it, can be expected to catch a slip there.
PRACTICE_TAG = "practice"


def is_solution_marker(line: str) -> bool:
    return bool(_SOLUTION_MARKER.match(line))


def source_text(source) -> str:
    """A cell's source or an output's text as one string (a notebook may store a list of lines)."""
    return "".join(source) if isinstance(source, list) else str(source or "")


def nbgrader_meta(cell: nbformat.NotebookNode) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def has_tag(cell: nbformat.NotebookNode, tag: str) -> bool:
    return tag in cell.get("metadata", {}).get("tags", [])


def grade_id(cell: nbformat.NotebookNode) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def is_solution(cell: nbformat.NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_graded(cell: nbformat.NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("grade"))


def points(cell: nbformat.NotebookNode) -> float:
    return float(nbgrader_meta(cell).get("points", 0)) if is_graded(cell) else 0.0


def total_points(nb: nbformat.NotebookNode) -> float:
    return sum(points(cell) for cell in nb.cells)


def cells_by_grade_id(nb: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    return {grade_id(cell): cell for cell in nb.cells if grade_id(cell)}


def answer_id(cell, answer_ids: Iterable[str] = ()) -> str | None:
    """The answer id `cell` carries under the grader's layout rule (None when it carries none):
    nbgrader marks it as an answer, or it carries one of the notebook's `answer_ids`. JupyterLab's
    Split Cell and copy and paste keep a cell's nbgrader metadata, so one id may be carried by
    several cells, of either type (a copy turned into Markdown keeps it too)."""
    try:
        gid = grade_id(cell)
        carried = is_solution(cell) or gid in answer_ids
    except (AttributeError, TypeError):
        return None
    return gid if isinstance(gid, str) and carried else None


def answer_cells(nb, answer_ids: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(grade_id, source) of each code cell of `nb` that carries an answer id (`answer_id`), in
    the notebook's order: the layout rule, one for every way in (the grader, Validate, the
    grading log). These cells run as Run All runs them: one answer may span several cells (a
    split answer), come twice (an old attempt kept above the new one, which the later copy
    redefines) or come from another notebook (it runs, as in the kernel, and nothing is graded
    from it); a Markdown cell that carries an answer's id (an old attempt kept as text) runs
    nothing."""
    own = set(answer_ids)
    return [(gid, source_text(cell.get("source"))) for cell in (nb or {}).get("cells", [])
            if (gid := answer_id(cell, own)) and cell.get("cell_type") == "code"]


def layout_notes(nb: nbformat.NotebookNode, answer_ids: set[str] | None = None) -> list[str]:
    """What the grader makes of answers laid out over several cells, in the words Validate and
    the grading log show (none for the ordinary one cell per answer), by the rule of
    `answer_cells`. `answer_ids`: the notebook's own answers (the grader knows them from the
    course's source)."""
    code: dict[str, int] = {}
    for gid, _ in answer_cells(nb, answer_ids or ()):
        code[gid] = code.get(gid, 0) + 1
    text = [gid for cell in nb.get("cells", [])
            if (gid := answer_id(cell, answer_ids or ())) and cell.get("cell_type") != "code"]
    notes = [f"{count} cells carry the answer id {gid!r}: the grader runs them all, in the "
             "notebook's order, as Run All does (a name defined twice keeps its later definition)"
             for gid, count in code.items() if count > 1]
    notes += [f"a Markdown cell carries the answer id {gid!r}: the grader does not run it"
              + ("" if gid in code else "; the answer counts as left blank")
              for gid in dict.fromkeys(text) if gid in code or (answer_ids and gid in answer_ids)]
    if answer_ids is not None:
        notes += [f"the answer cell {gid!r} comes from another notebook: it runs as Run All runs "
                  "it, and nothing is graded from it" for gid in code if gid not in answer_ids]
    return notes


def without_solution_markers(source: str) -> str:
    """The reference solution as a student would have typed it: marker lines dropped."""
    return "\n".join(line for line in source.split("\n") if not is_solution_marker(line))


def without_hidden_tests(source: str) -> str:
    """The test cell as the release shows it: hidden regions (and their markers) dropped."""
    kept, hidden = [], False
    for line in source.split("\n"):
        if _HIDDEN_BEGIN.match(line):
            hidden = True
        elif _HIDDEN_END.match(line):
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept).rstrip()


def is_hidden_helper(cell: nbformat.NotebookNode) -> bool:
    """A locked, ungraded code cell holding a hidden region: helpers that several graded tests of
    a notebook share. The release keeps only its visible comment (nbgrader_config.py lets
    ClearHiddenTests strip a non-grade cell), the reading edition drops it, grading runs it."""
    return (cell.cell_type == "code" and not is_graded(cell) and not is_solution(cell)
            and any(_HIDDEN_BEGIN.match(line) for line in cell.source.split("\n")))


def has_markers(text: str) -> bool:
    """True when nbgrader's solution or hidden-test markers appear anywhere in `text`."""
    return bool(re.search(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)", text))


# ---- the release's stubs: what a solution cell holds before the student answers ---------------

# nbgrader's ClearSolutions stubs, as nbgrader_config.py sets them for the release.
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"


def release_stub(source: str, cell_type: str = "code") -> str:
    """What nbgrader's release puts in a solution cell: each solution region (markers included)
    becomes `CODE_STUB`, indented as its BEGIN marker; a markdown answer becomes `TEXT_STUB`."""
    if cell_type != "code":
        return TEXT_STUB
    kept, inside = [], False
    for line in source.split("\n"):
        marker = _SOLUTION_MARKER.match(line)
        if marker and marker.group(1) == "BEGIN":
            inside = True
            indent = line[:len(line) - len(line.lstrip())]
            kept.extend(indent + stub for stub in CODE_STUB.split("\n"))
        elif marker:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


# ---- running a cell's text: the one place that decides what IPython syntax does ---------------


def cell_as_python(source: str) -> str:
    """A code cell's text as the Python that IPython runs: `%magic`, `%%magic`, `!cmd` and `obj?`
    become calls on `get_ipython()`; everything else (a `%` continuing an expression, too) stays
    as it is. The grader's worker and the loader both run cells through this function, so a
    cell grades as it runs in JupyterLab."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def run_cell(source: str, namespace: dict, filename: str) -> None:
    """Run a code cell's text in `namespace` as IPython would.

    Magics act on `namespace` (a `%%time` cell defines its names there), `display()` and
    `get_ipython()` work. Where no IPython shell runs (the grader's worker, a script) one is
    made on first use, bound to `namespace`; inside a running kernel, its shell is lent to
    `namespace` for the duration of the cell."""
    import linecache

    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display

    python = cell_as_python(source)
    linecache.cache[filename] = (len(python), None, python.splitlines(True), filename)
    code = compile(python, filename, "exec")
    namespace.setdefault("display", display)
    namespace.setdefault("get_ipython", lambda: _shell_for(namespace))
    shell = InteractiveShell.instance() if InteractiveShell.initialized() else None
    saved = shell.user_ns if shell is not None else None
    if shell is not None:
        shell.user_ns = namespace
    try:
        exec(code, namespace)  # noqa: S102  (running the cell is the point)
    finally:
        if shell is not None:
            shell.user_ns = saved


def _shell_for(namespace: dict):
    """The process's IPython shell, made on first use with `namespace` as its user namespace."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    if InteractiveShell.initialized():
        return InteractiveShell.instance()

    class CellShell(InteractiveShell):
        """A shell without a front end: nothing to draw on, no terminal."""

        def enable_gui(self, gui=None):  # `%matplotlib inline`: figures are not shown here
            pass

        def system(self, cmd):  # `!cmd`: no terminal, so run it and print what it printed
            import subprocess

            done = subprocess.run(self.var_expand(cmd, depth=1), shell=True, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            print(done.stdout, end="")
            self.user_ns["_exit_code"] = done.returncode

    config = Config()
    config.HistoryManager.enabled = False  # no history database in the student's home
    return CellShell.instance(config=config, user_ns=namespace)
