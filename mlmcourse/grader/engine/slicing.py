"""Which cells of a notebook grading runs: the graded cells and what they need, nothing else.

Only graded cells earn points, so a demo cell (a plot, a table, a visible check) that no graded
cell depends on cannot change a score; under grading it is not run. In notebook 04 the demo cells
train the experiment two dozen times with the student's functions, each step a round trip to
the sandboxed student process: more than half of the notebook's grading time, for no point.

A code cell runs when it is the ``setup`` cell, a student's answer cell (its output is shown,
and it binds the student's names), a graded cell, or an earlier cell that assigns (imports,
defines) a name that a cell which runs reads: found with :mod:`symtable`, transitively. A cell
whose names cannot be known (it does not parse, it uses ``import *``, ``exec``, ``eval``,
``globals()``...) always runs. This rests on the course's convention that hidden tests are
self-contained and that no cell changes, in place and without rebinding it, an object that a
graded cell reads; the sample students' exact scores (tests) check it on the real notebooks.
"""

from __future__ import annotations

import ast
import symtable

from mlmcourse.course.cells import SETUP_GRADE_ID, cell_as_python, grade_id, is_graded, is_solution

# Names whose use makes a cell's effect on the namespace unknowable from its text (a magic
# becomes a `get_ipython()` call: `%run` or `%store` may bind anything).
DYNAMIC = frozenset({"exec", "eval", "globals", "locals", "vars", "__import__", "get_ipython"})
SKIPPED_NOTE = "[not run while grading: no graded cell needs this cell]\n"


class _Unknown(Exception):
    """A cell whose reads and writes cannot be told from its text."""


def _names(source: str) -> tuple[set[str], set[str]]:
    """(read, written) global names of one cell's text; `_Unknown` when they cannot be told."""
    python = cell_as_python(source)
    try:
        tree = ast.parse(python)
        table = symtable.symtable(python, "<cell>", "exec")
    except (SyntaxError, ValueError) as err:
        raise _Unknown(str(err)) from None
    if any(isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
           for node in ast.walk(tree)):
        raise _Unknown("import *")
    read, written = set(), set()
    tables = [table]
    while tables:
        scope = tables.pop()
        tables.extend(scope.get_children())
        top = scope is table
        for symbol in scope.get_symbols():
            name = symbol.get_name()
            if symbol.is_referenced() and (top or symbol.is_global()):
                read.add(name)
            if (top or symbol.is_declared_global()) and (
                    symbol.is_assigned() or symbol.is_imported()
                    or (top and symbol.is_namespace())):
                written.add(name)
    if read & DYNAMIC:
        raise _Unknown("dynamic names")
    return read, written


def _names_or_empty(source: str) -> set[str]:
    try:
        return _names(source)[1]
    except _Unknown:
        return set()


def cells_to_run(nb, answers_in_kernel: bool = False) -> set[int]:
    """Indices of the code cells of `nb` (the instructor's source notebook: a student's text
    never decides what runs) that grading runs. With `answers_in_kernel` the answer cells run in
    the same kernel as the rest (the benchmark's plain kernel), so the names they read count."""
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    names: dict[int, tuple[set[str], set[str]] | None] = {}
    for i in code:
        if is_solution(nb.cells[i]) and not answers_in_kernel:
            # Under grading the kernel only binds the student's names here (the student's
            # text runs in the student process): it reads nothing of the notebook's namespace.
            names[i] = (set(), set(_names_or_empty(nb.cells[i].source)))
            continue
        try:
            names[i] = _names(nb.cells[i].source)
        except _Unknown:
            names[i] = None
    needed = {i for i in code if names[i] is None or is_graded(nb.cells[i])
              or is_solution(nb.cells[i]) or grade_id(nb.cells[i]) == SETUP_GRADE_ID}
    if not any(is_graded(nb.cells[i]) for i in code):
        return set()  # nothing can earn a point: nothing runs
    # Walk backwards: a cell is needed when it writes a name that a later needed cell reads
    # before any needed cell in between writes it again (over-approximated: any later reader).
    wanted: set[str] = set()
    for i in reversed(code):
        read, written = names[i] or (set(), set())
        if i not in needed and written & wanted:
            needed.add(i)
        if i in needed:
            wanted |= read
    return needed


def skip_unneeded(source_nb, executed, answers_in_kernel: bool = False) -> list[int]:
    """Blank the cells of `executed` (rebuilt from `source_nb`) that grading does not run (the
    trusted kernel skips an empty cell), a one-line note as their output (copied into the
    notebook handed back); return their indices."""
    import nbformat

    keep = cells_to_run(source_nb, answers_in_kernel)
    skipped = [i for i, cell in enumerate(executed.cells)
               if cell.cell_type == "code" and i not in keep and cell.source.strip()]
    for i in skipped:
        executed.cells[i].source = ""
        executed.cells[i].outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                            text=SKIPPED_NOTE)]
    return skipped
