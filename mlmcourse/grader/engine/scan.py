"""The trusted side's scan of the answer cells: advice for the TA, never a point.

Every point rests on what the trusted side observes itself (results, errors raised, gradients
returned, its own view of the inputs' shared memory, time, memory, output): nothing the student's
process reports about itself counts, so reaching into that process cannot pay, whatever names it
uses. What the grader cannot check is then said in words, for the TA:

- a library loss (``F.cross_entropy``, ``log_softmax``...) in the answers of a notebook whose
  exercise is to write it by hand: a correct library call gives the right numbers, and no check
  can tell it from one written by hand (a name spelt another way is not found either: it is a
  note, not a rule);
- a name that reaches past the answer into the grader or the interpreter (the grader's package,
  the module table, frames, the object graph, raw memory, PyTorch's dispatch internals): it
  changes no score, but a TA may want to know.

A finding is an `unchecked` incident (listed for the TA; it costs nothing and sets no cell to
manual grading). The scan reads the text as written, a magic or ``!`` line included, with regular
expressions that are linear in the text; it never runs IPython's transformer (whose time grows
with magics times lines), stops at its own deadline between cells and patterns, and never raises.
An everyday habit (``getattr``, ``vars(self)``, ``breakpoint()``, ``traceback``, doctests,
``torch.jit``, ``!pip``, ``tqdm``...) is no finding: `tests/test_scan.py` holds the honest samples
to at most one in twenty marked.
"""

from __future__ import annotations

import ast
import re
import time
from dataclasses import dataclass

from mlmcourse.grader.limits import CAPS

# Called by these names, a library computes the loss the exercise asks for by hand.
_LIBRARY_LOSSES = frozenset({"cross_entropy", "log_softmax", "nll_loss", "CrossEntropyLoss",
                             "NLLLoss", "LogSoftmax"})
# A line IPython reads as a magic, a shell command or a help request (`x = %time f()`, `!pip`,
# `?name`): read as `pass` for the tree, one line at a time (linear, unlike IPython's transform).
_IPYTHON_LINE = re.compile(r"^\s*(?:[\w.\[\], ]+=\s*)?[%!?]|\?\s*$")

# Names that reach past the answer: what each one is, in a few words.
_REACHES = {
    r"\bmlmcourse\.grader\b|\bfrom\s+mlmcourse\s+import\s+grader\b": "the grader's own package",
    r"\bsys\.modules\b": "the module table (sys.modules)",
    r"\b_getframe\b|\bf_back\b|\bf_globals\b|\bf_locals\b|\b_current_frames\b":
        "the interpreter's frames",
    r"\bget_objects\b|\bget_referrers\b|\bget_referents\b": "the object graph (gc)",
    r"\b__subclasses__\b|\b__globals__\b": "the class graph or another module's globals",
    r"\bctypes\b|/proc/": "raw memory (ctypes, /proc)",
    r"\b_python_dispatch\b|\b_disable_current_modes\b|\btorch\._C\b|\b_DisableTorch":
        "PyTorch's dispatch internals",
    r"\b__torch_dispatch__\b|\b__torch_function__\b": "a tensor type's own dispatch",
}
_REACH_PATTERNS = [(re.compile(pattern), what) for pattern, what in _REACHES.items()]


@dataclass(frozen=True)
class Finding:
    cell: str  # the answer cell's grade_id
    line: int
    what: str  # what the code does, in a few words

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.what}"


def scan_cells(cells: list[dict], budget_s: float = CAPS.scan_seconds,
               library_rule: bool = False) -> list[Finding]:
    """Findings in the student's answer cells (`{"grade_id", "source"}`; the setup cell, the
    instructor's, is not read). `library_rule`: the notebook's exercise is to write the loss by
    hand (its visible checks say so). Never raises: what it cannot read in time is a finding."""
    from mlmcourse.course.cells import SETUP_GRADE_ID

    deadline = time.monotonic() + budget_s
    findings: list[Finding] = []
    left = CAPS.scanned_chars  # an answer is a few thousand characters
    for cell in cells:
        gid, source = str(cell.get("grade_id", "?")), str(cell.get("source", ""))
        if gid == SETUP_GRADE_ID:
            continue
        left -= len(source)
        if left < 0:
            findings.append(Finding(gid, 1, f"answer cells longer than the scan reads "
                                            f"({CAPS.scanned_chars:,} characters in all)"))
            break
        for pattern, what in _REACH_PATTERNS:
            if time.monotonic() > deadline:
                return [*findings, _out_of_time(gid, budget_s)]
            found = pattern.search(source)
            if found:
                findings.append(Finding(gid, source.count("\n", 0, found.start()) + 1,
                                        f"{what}: {found.group(0).strip()}"))
        losses = _library_losses(source, deadline) if library_rule else []
        if losses is None:
            return [*findings, _out_of_time(gid, budget_s)]
        findings += [Finding(gid, line, f"a library loss ({name}) in a function, where the "
                                        "exercise asks for it by hand (no check can tell)")
                     for line, name in losses]
    return findings


def _out_of_time(gid: str, budget_s: float) -> Finding:
    return Finding(gid, 1, f"answer cells too long to read in the scan's time ({budget_s:g} s)")


def _library_losses(source: str, deadline: float) -> list[tuple[int, str]] | None:
    """(line, name) of each library loss called inside a function the cell defines (a self-test
    at the top of a cell, or a function whose name says it tests or checks, compares with the
    library as the notebooks do: no note). None: out of time."""
    python = "\n".join(line[:len(line) - len(line.lstrip())] + "pass"
                       if _IPYTHON_LINE.search(line) else line for line in source.split("\n"))
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = set()
    functions = [node for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                 and "test" not in node.name and "check" not in node.name]
    for count, node in enumerate(n for function in functions for n in ast.walk(function)):
        if count % 4096 == 0 and time.monotonic() > deadline:
            return None
        call = node.func if isinstance(node, ast.Call) else None
        name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", None)
        if name in _LIBRARY_LOSSES:
            found.add((node.lineno, name))
    return sorted(found)


# The visible check by which a notebook asks for the loss written by hand (Validate runs it in the
# student's own kernel): where a source notebook holds it, the scan notes a library loss.
LIBRARY_RULE_CHECK = "expect_no_library_loss"


def asks_for_loss_by_hand(source_nb) -> bool:
    """Whether a source notebook's exercise is to write the loss by hand (a cell of it runs
    the library-loss check)."""
    return any(LIBRARY_RULE_CHECK in str(cell.get("source", "")) for cell in source_nb.cells
               if cell.get("cell_type") == "code")


def scan_source(source: str, library_rule: bool = False) -> list[tuple[int, str]]:
    """(line, what) for each finding in one cell's text."""
    return [(f.line, f.what) for f in scan_cells([{"grade_id": "cell", "source": source}],
                                                 library_rule=library_rule)]
