"""`bench mutation`: how many wrong versions of the reference solutions the hidden tests catch.

Each graded function's reference (the answer cells of ``source/bert_mlm/*.ipynb``, inside
nbgrader's solution markers) is mutated one site at a time with the `ast`
module: comparison, arithmetic and boolean operators, numeric constants (thresholds and
denominators among them), dropped validation branches, dtype and device changes, dropped
``clone()``, swapped reductions, dropped writes and altered ``return`` values. Each mutant that
compiles is graded through the real engine (:func:`mlmcourse.grader.engine.grade_submission`,
one process, so its fork server stays warm): the reference submission with that one answer cell
replaced. A mutant is *killed* when it scores less than full marks.

A survivor is either *equivalent* (it behaves as the reference on every valid input: listed in
`EQUIVALENT` with the reason, judged by a person) or a *gap* in the tests. The score of a
function is killed / (mutants - equivalent survivors); the target is `TARGET_SCORE`.

``MLMCOURSE_MUTATION_SAMPLE=N`` grades only every N-th mutant of each function (a quick run);
``MLMCOURSE_MUTATION_FUNCTIONS=make_mlm_inputs,masked_lm_loss`` only those functions.
"""

from __future__ import annotations

import ast
import copy
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    cells_by_grade_id,
    grade_id,
    is_solution,
    is_solution_marker,
    without_solution_markers,
)
from mlmcourse.course.layout import ASSIGNMENT, source_notebooks
from mlmcourse.grader.limits import Limits

ROOT = Path(__file__).resolve().parents[2]
TARGET_SCORE = 0.95
# Short limits: a mutant that hangs is killed by the call timeout, not waited for.
LIMITS = Limits(call_timeout_s=4, student_time_s=30, cell_timeout_s=60)
STUDENT = "mutant"

# Survivors that behave as the reference on every input the contract allows (grading runs on
# the CPU, and a person judged each one). Keyed by `Mutant.mutant_id`:
# function:line:col:operator, the line counted from the solution region's opening marker.
EQUIVALENT: dict[str, str] = {
    "make_mlm_inputs:32:7:Or:drop-0":
        "a bool ignore_index (True, False) is >= 0, so the last clause still rejects it",
    "make_mlm_inputs:50:26:Lt->LtE":
        "a draw of exactly 0.8 is also in to_random, written after the mask: still random",
    "make_mlm_inputs:50:34:const:0.8->0.81":
        "draws in [0.8, 0.81) are also in to_random, written after the mask: still random",
    "masked_lm_loss:13:7:Or:drop-0":
        "a bool ignore_index (True, False) is >= 0, so the last clause still rejects it",
    "masked_lm_loss:5:7:Or:drop-0":
        "labels whose shape equals logits.shape[:2] are 2-D, so the rank check is implied",
    "MaskedLMLoss.forward:4:43:const:0->-1":
        "flat_labels is 1-D, so index_select on dim -1 is index_select on dim 0",
    "MaskedLMLoss.backward:22:18:drop-device=":
        "arange without device= is on the CPU, where grading runs (and CPU indices also "
        "index a CUDA tensor)",
}


# ---------------------------------------------------------------------------------------------
# Mutants.


@dataclass(frozen=True)
class Mutant:
    """One wrong version of one answer cell: the whole cell's text with one site changed."""

    mutant_id: str
    notebook: str
    grade_id: str
    function: str
    operator: str
    line: int  # in the answer cell's text (markers kept), 1-based
    source: str  # the answer cell, mutated, as a student would hand it in

    equivalent_reason = property(lambda self: EQUIVALENT.get(self.mutant_id))


# Boundary and negation of each comparison.
_COMPARE_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE, ast.GtE), ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE), ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
    ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
}
_BINOP_SWAPS: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitOr,
}
# Binary operations whose right (or left) operand may be forgotten: a dropped denominator,
# term, factor or condition.
_KEEP_LEFT = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.BitAnd, ast.BitOr)
_KEEP_RIGHT = (ast.BitAnd, ast.BitOr)
_METHOD_SWAPS = {"sum": "mean", "mean": "sum", "amax": "amin", "amin": "amax", "max": "min",
                 "min": "max", "any": "all", "all": "any", "zeros_like": "ones_like",
                 "zeros": "ones", "new_zeros": "new_ones"}
_BUILTIN_SWAPS = {"max": "min", "min": "max"}
_DTYPE_SWAPS = {"float32": "float64", "float64": "float32", "int64": "int32", "bool": "uint8"}
_DROPPED_CALLS = ("clone",)
_DROPPED_KEYWORDS = ("dtype", "device")

Make = Callable[[ast.AST], ast.AST]


def _name(op: type | ast.AST) -> str:
    return op.__name__ if isinstance(op, type) else type(op).__name__


def _compare_mutations(node: ast.Compare) -> list[tuple[str, Make]]:
    found = []
    for index, op in enumerate(node.ops):
        for other in _COMPARE_SWAPS.get(type(op), ()):
            def make(n, index=index, other=other):
                n.ops[index] = other()
                return n
            found.append((f"{_name(op)}->{_name(other)}", make))
    return found


def _binop_mutations(node: ast.BinOp) -> list[tuple[str, Make]]:
    found = []
    swap = _BINOP_SWAPS.get(type(node.op))
    if swap is not None:
        def make_swap(n, swap=swap):
            n.op = swap()
            return n
        found.append((f"{_name(node.op)}->{_name(swap)}", make_swap))
    if isinstance(node.op, _KEEP_LEFT):
        found.append((f"{_name(node.op)}:keep-left", lambda n: n.left))
    if isinstance(node.op, _KEEP_RIGHT):
        found.append((f"{_name(node.op)}:keep-right", lambda n: n.right))
    return found


def _augassign_mutations(node: ast.AugAssign) -> list[tuple[str, Make]]:
    found = [("drop-statement", lambda n: ast.Pass())]
    swap = _BINOP_SWAPS.get(type(node.op))
    if swap is not None:
        def make(n, swap=swap):
            n.op = swap()
            return n
        found.append((f"{_name(node.op)}=->{_name(swap)}=", make))
    return found


def _boolop_mutations(node: ast.BoolOp) -> list[tuple[str, Make]]:
    other = ast.Or if isinstance(node.op, ast.And) else ast.And

    def make_swap(n):
        n.op = other()
        return n
    found = [(f"{_name(node.op)}->{_name(other)}", make_swap)]
    for index in range(len(node.values)):
        def make_drop(n, index=index):
            rest = [value for i, value in enumerate(n.values) if i != index]
            return rest[0] if len(rest) == 1 else ast.BoolOp(op=n.op, values=rest)
        found.append((f"{_name(node.op)}:drop-{index}", make_drop))
    return found


def _constant_mutations(node: ast.Constant) -> list[tuple[str, Make]]:
    value = node.value
    if isinstance(value, bool):
        return [(f"const:{value}->{not value}", lambda n: ast.Constant(not n.value))]
    if isinstance(value, int):
        changed = [value + 1, value - 1]
    elif isinstance(value, float):
        step = 0.01 * max(1.0, abs(value))  # a threshold moved a little
        changed = [round(value + step, 10), round(value - step, 10)]
    else:
        return []
    return [(f"const:{value}->{new}", lambda n, new=new: ast.Constant(new)) for new in changed]


def _call_mutations(node: ast.Call) -> list[tuple[str, Make]]:
    found = []
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _DROPPED_CALLS and not node.args:
        found.append((f"drop-.{func.attr}()", lambda n: n.func.value))
    if isinstance(func, ast.Attribute) and func.attr in _METHOD_SWAPS:
        other = _METHOD_SWAPS[func.attr]

        def make_method(n, other=other):
            n.func.attr = other
            return n
        found.append((f".{func.attr}->.{other}", make_method))
    if isinstance(func, ast.Attribute) and func.attr == "where" and len(node.args) == 3:
        found.append(("where:keep-true", lambda n: n.args[1]))  # the masking forgotten
    if isinstance(func, ast.Name) and func.id in _BUILTIN_SWAPS:
        other = _BUILTIN_SWAPS[func.id]

        def make_builtin(n, other=other):
            n.func.id = other
            return n
        found.append((f"{func.id}->{other}", make_builtin))
        if len(node.args) == 2:  # a clamp: max(count, 1) -> count
            found.append((f"{func.id}:keep-first", lambda n: n.args[0]))
    for keyword in node.keywords:
        if keyword.arg in _DROPPED_KEYWORDS:
            def make_drop(n, arg=keyword.arg):
                n.keywords = [k for k in n.keywords if k.arg != arg]
                return n
            found.append((f"drop-{keyword.arg}=", make_drop))
    return found


def _with_method(value: ast.expr, method: str, *args: str) -> ast.expr:
    """`value.method(*args)`, each argument given as source text."""
    return ast.Call(func=ast.Attribute(value=value, attr=method, ctx=ast.Load()),
                    args=[ast.parse(arg, mode="eval").body for arg in args], keywords=[])


def _return_mutations(node: ast.Return) -> list[tuple[str, Make]]:
    if node.value is None:
        return []
    found = [("return-None", lambda n: ast.Return(value=None))]
    if isinstance(node.value, ast.Tuple):
        elements = node.value.elts
        for index, element in enumerate(elements):
            if isinstance(element, ast.Constant) and element.value is None:
                continue

            def make_float(n, index=index):
                n.value.elts[index] = _with_method(n.value.elts[index], "to", "torch.float32")
                return n
            found.append((f"return[{index}].to(float32)", make_float))
        if len(elements) == 2:
            def make_swap(n):
                n.value.elts.reverse()
                return n
            found.append(("return-swapped", make_swap))
        return found

    def make_cast(n, method, *args):
        n.value = _with_method(n.value, method, *args)
        return n
    return [*found, ("return.double()", lambda n: make_cast(n, "double")),
            ("return.to(float32)", lambda n: make_cast(n, "to", "torch.float32"))]


def _raises(node: ast.If) -> bool:
    return any(isinstance(inner, ast.Raise) for stmt in node.body for inner in ast.walk(stmt))


def _if_mutations(node: ast.If) -> list[tuple[str, Make]]:
    if not _raises(node):
        return []

    def make(n):
        n.test = ast.Constant(False)
        return n
    return [("drop-validation", make)]


def _statement_drops(node: ast.AST) -> list[tuple[str, Make]]:
    """A forgotten write: `x[mask] = value` or a call made for its effect (`grad.index_copy_`)."""
    targets = node.targets if isinstance(node, ast.Assign) else []
    writes = any(isinstance(target, ast.Subscript) for target in targets)
    effect = isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    return [("drop-statement", lambda n: ast.Pass())] if writes or effect else []


def _dtype_mutations(node: ast.Attribute) -> list[tuple[str, Make]]:
    if not (isinstance(node.value, ast.Name) and node.value.id == "torch"
            and node.attr in _DTYPE_SWAPS):
        return []
    other = _DTYPE_SWAPS[node.attr]

    def make(n):
        n.attr = other
        return n
    return [(f"torch.{node.attr}->torch.{other}", make)]


def _unary_mutations(node: ast.UnaryOp) -> list[tuple[str, Make]]:
    if isinstance(node.op, (ast.USub, ast.Invert, ast.Not)):
        return [(f"drop-{_name(node.op)}", lambda n: n.operand)]
    return []


_BY_TYPE: dict[type, Callable[[ast.AST], list[tuple[str, Make]]]] = {
    ast.Compare: _compare_mutations, ast.BinOp: _binop_mutations,
    ast.AugAssign: _augassign_mutations, ast.BoolOp: _boolop_mutations,
    ast.Constant: _constant_mutations, ast.Call: _call_mutations,
    ast.Return: _return_mutations, ast.If: _if_mutations, ast.Attribute: _dtype_mutations,
    ast.UnaryOp: _unary_mutations, ast.Assign: _statement_drops, ast.Expr: _statement_drops,
}


def site_mutations(node: ast.AST) -> list[tuple[str, Make]]:
    """The mutations of one AST node: (operator name, a function that rewrites a copy)."""
    mutate = _BY_TYPE.get(type(node))
    return mutate(node) if mutate else []


class _Replace(ast.NodeTransformer):
    """Replace one node (found by identity) with what `make` returns for it."""

    def __init__(self, target: ast.AST, make: Make) -> None:
        self.target, self.make = target, make

    def visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return self.make(node)
        return super().visit(node)


def _solution_regions(source: str) -> list[tuple[int, int]]:
    """The 1-based line numbers of each BEGIN and its END SOLUTION marker in the answer cell
    (notebook 3's MaskedLMLoss has two regions: forward and backward)."""
    marks = [i for i, line in enumerate(source.split("\n"), 1) if is_solution_marker(line)]
    return list(zip(marks[::2], marks[1::2], strict=True))


def _context(tree: ast.AST) -> dict[int, tuple[str, bool]]:
    """For each node (by id): the qualified name of the function around it, and whether it is
    text a student's error message is made of (a `raise` statement, an f-string, a docstring)."""
    context: dict[int, tuple[str, bool]] = {}

    def walk(node: ast.AST, qualname: str, in_message: bool) -> None:
        context[id(node)] = (qualname, in_message)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qualname = f"{qualname}.{node.name}" if qualname else node.name
        docstring = (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                     and isinstance(node.value.value, str))
        in_message = in_message or isinstance(node, (ast.Raise, ast.JoinedStr)) or docstring
        for child in ast.iter_child_nodes(node):
            walk(child, qualname, in_message)

    walk(tree, "", False)
    return context


def mutants_of_cell(notebook: str, cell_id: str, source: str) -> list[Mutant]:
    """Every mutant of one answer cell that compiles and differs from the reference, in a
    stable order (the reference's nodes in `ast.walk` order, then the operators)."""
    regions = _solution_regions(source)
    begin = regions[0][0]  # lines are counted from here: an edited docstring moves no id
    reference = ast.parse(source)
    reference_dump = ast.dump(reference)
    context = _context(reference)
    mutants: list[Mutant] = []
    seen: set[str] = set()
    for index, node in enumerate(ast.walk(reference)):
        line = getattr(node, "lineno", 0)
        function, in_message = context[id(node)]
        inside = any(start < line < stop for start, stop in regions)
        if not inside or in_message or not function:
            continue
        for operator, make in site_mutations(node):
            tree = ast.parse(source)  # a fresh copy: the same nodes in the same walk order
            target = list(ast.walk(tree))[index]
            tree = ast.fix_missing_locations(_Replace(target, make).visit(tree))
            if ast.dump(tree) == reference_dump:
                continue
            text = ast.unparse(tree)
            try:
                compile(text, f"<{cell_id}>", "exec")
            except (SyntaxError, ValueError):
                continue
            mutant_id = f"{function}:{line - begin}:{node.col_offset}:{operator}"
            while mutant_id in seen:  # two nodes at one place, e.g. `a / b / c`
                mutant_id += "'"
            seen.add(mutant_id)
            mutants.append(Mutant(mutant_id, notebook, cell_id, function, operator, line, text))
    return mutants


def answer_cells(root: Path = ROOT) -> list[tuple[str, str, str]]:
    """(notebook, grade_id, source with markers) of every code answer cell of the series."""
    found = []
    for path in source_notebooks(root):
        for cell in nbio.read(path).cells:
            code = cell.cell_type == "code" and is_solution(cell)
            if code and any(is_solution_marker(line) for line in cell.source.split("\n")):
                found.append((path.stem, grade_id(cell), cell.source))
    return found


def generate_mutants(root: Path = ROOT) -> list[Mutant]:
    """The mutants of every graded function of the series."""
    return [mutant for notebook, cell_id, source in answer_cells(root)
            for mutant in mutants_of_cell(notebook, cell_id, source)]


def select(mutants: Iterable[Mutant], every: int = 1,
           functions: Iterable[str] | None = None) -> list[Mutant]:
    """Every `every`-th mutant of each function (counted per function, from its first), of the
    named functions only when `functions` is given."""
    wanted = set(functions) if functions else None
    counts: dict[str, int] = {}
    chosen = []
    for mutant in mutants:
        if wanted is not None and mutant.function not in wanted:
            continue
        position = counts.get(mutant.function, 0)
        counts[mutant.function] = position + 1
        if position % every == 0:
            chosen.append(mutant)
    return chosen


# ---------------------------------------------------------------------------------------------
# Grading.


@dataclass
class Outcome:
    mutant: Mutant
    score: float
    max_score: float
    status: str
    failed: list[str] = field(default_factory=list)  # grade_ids of the tests that caught it
    seconds: float = 0.0

    @property
    def killed(self) -> bool:
        return self.score < self.max_score


def reference_submission(root: Path) -> dict[str, object]:
    """Each notebook as the reference student hands it in: the source with the solution
    markers removed (the engine takes only the answer cells from a submission)."""
    notebooks = {}
    for path in source_notebooks(root):
        nb = nbio.read(path)
        for cell in nb.cells:
            if is_solution(cell):
                cell.source = without_solution_markers(cell.source)
        notebooks[path.stem] = nb
    return notebooks


class Grader:
    """Grades submissions that differ from the reference in one answer cell, in this process
    (the engine's fork server is started once and stays warm)."""

    def __init__(self, root: Path, workdir: Path, limits: Limits = LIMITS) -> None:
        self.root, self.limits = Path(root).resolve(), limits
        self.submission = Path(workdir) / "submission" / ASSIGNMENT
        self.scratch = Path(workdir) / "scratch"
        self.reference = reference_submission(self.root)
        for name, nb in self.reference.items():
            nbio.write(nb, self.submission / f"{name}.ipynb")

    def grade(self, notebook: str, cell_id: str | None = None, source: str | None = None):
        """The engine's result for the reference with `cell_id` of `notebook` set to `source`
        (the reference itself when `cell_id` is None)."""
        from mlmcourse.grader.engine import grade_submission

        nb = copy.deepcopy(self.reference[notebook])
        if cell_id is not None:
            cells_by_grade_id(nb)[cell_id].source = source
        path = self.submission / f"{notebook}.ipynb"
        nbio.write(nb, path)
        try:
            return grade_submission(self.root, STUDENT, self.submission, self.scratch,
                                    self.limits, notebooks=[notebook])[0]
        finally:
            nbio.write(self.reference[notebook], path)

    def check_reference(self, notebook: str) -> None:
        """The measure means nothing unless the reference itself gets full marks here."""
        result = self.grade(notebook)
        if result.score < result.max_score:
            failed = [c.grade_id for c in result.checks if not c.passed]
            raise RuntimeError(f"the reference scores {result.score:g} / {result.max_score:g} "
                               f"on {notebook} ({result.status}; failed {failed}): "
                               f"no mutation score can be measured")

    def outcome(self, mutant: Mutant) -> Outcome:
        started = time.monotonic()
        result = self.grade(mutant.notebook, mutant.grade_id, mutant.source)
        failed = [check.grade_id for check in result.checks if not check.passed]
        return Outcome(mutant, result.score, result.max_score, result.status, failed,
                       time.monotonic() - started)


def grade_mutants(mutants: list[Mutant], root: Path = ROOT, workdir: Path | None = None,
                  limits: Limits = LIMITS,
                  progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Grade each mutant through the engine (the reference of each notebook first)."""
    with tempfile.TemporaryDirectory(prefix="mlm-mutation-") as tmp:
        grader = Grader(root, Path(workdir or tmp), limits)
        for notebook in dict.fromkeys(m.notebook for m in mutants):
            grader.check_reference(notebook)
        outcomes = []
        for mutant in mutants:
            outcomes.append(grader.outcome(mutant))
            if progress is not None:
                progress(outcomes[-1])
        return outcomes


# ---------------------------------------------------------------------------------------------
# The report.


@dataclass
class FunctionScore:
    notebook: str
    function: str
    total: int = 0
    killed: int = 0
    equivalent: list[Outcome] = field(default_factory=list)
    gaps: list[Outcome] = field(default_factory=list)

    @property
    def score(self) -> float:
        counted = self.total - len(self.equivalent)
        return self.killed / counted if counted else 1.0


def function_scores(outcomes: list[Outcome]) -> list[FunctionScore]:
    scores: dict[str, FunctionScore] = {}
    for outcome in outcomes:
        mutant = outcome.mutant
        entry = scores.setdefault(mutant.function, FunctionScore(mutant.notebook, mutant.function))
        entry.total += 1
        if outcome.killed:
            entry.killed += 1
        elif mutant.equivalent_reason is not None:
            entry.equivalent.append(outcome)
        else:
            entry.gaps.append(outcome)
    return list(scores.values())


def _changed_line(mutant: Mutant) -> str:
    """The mutated statement, for the report: the first line of the mutant that is not in the
    reference (unparsed the same way)."""
    reference = next(source for _, cell, source in answer_cells(ROOT) if cell == mutant.grade_id)
    original = set(ast.unparse(ast.parse(reference)).split("\n"))
    changed = [line.strip() for line in mutant.source.split("\n") if line not in original]
    return changed[0] if changed else "(a line removed)"


def markdown_report(outcomes: list[Outcome], every: int = 1) -> str:
    scores = function_scores(outcomes)
    sampled = f" (every {every}th mutant of each function)" if every > 1 else ""
    lines = [f"Mutation score of the hidden tests{sampled}: killed / (mutants - equivalent); "
             f"target {TARGET_SCORE:.0%}.", "",
             "| notebook | function | mutants | killed | equivalent | gaps | score |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for entry in scores:
        lines.append(f"| {entry.notebook} | `{entry.function}` | {entry.total} | {entry.killed} "
                     f"| {len(entry.equivalent)} | {len(entry.gaps)} | {entry.score:.1%} |")
    total = sum(e.total for e in scores)
    killed = sum(e.killed for e in scores)
    equivalent = sum(len(e.equivalent) for e in scores)
    overall = killed / (total - equivalent) if total > equivalent else 1.0
    lines.append(f"| **all** | | {total} | {killed} | {equivalent} | "
                 f"{total - killed - equivalent} | {overall:.1%} |")
    gaps = [o for e in scores for o in e.gaps]
    if gaps:
        lines += ["", "Survivors that are gaps in the tests:", ""]
        lines += [f"- `{o.mutant.mutant_id}`: `{_changed_line(o.mutant)}`" for o in gaps]
    equivalents = [o for e in scores for o in e.equivalent]
    if equivalents:
        lines += ["", "Survivors judged equivalent:", ""]
        lines += [f"- `{o.mutant.mutant_id}`: {o.mutant.equivalent_reason}" for o in equivalents]
    wrongly = [o for o in outcomes if o.killed and o.mutant.equivalent_reason is not None]
    if wrongly:
        lines += ["", "Listed as equivalent but killed (remove from EQUIVALENT):", ""]
        lines += [f"- `{o.mutant.mutant_id}` (failed {', '.join(o.failed)})" for o in wrongly]
    return "\n".join(lines)


def main() -> int:
    """Print the table; exit status 1 when a function misses the target."""
    every = max(1, int(os.environ.get("MLMCOURSE_MUTATION_SAMPLE", "1") or 1))
    wanted = os.environ.get("MLMCOURSE_MUTATION_FUNCTIONS")
    functions = [name.strip() for name in wanted.split(",")] if wanted else None
    mutants = select(generate_mutants(ROOT), every, functions)
    print(f"grading {len(mutants)} mutants ...", file=sys.stderr, flush=True)

    def progress(outcome: Outcome) -> None:
        verdict = "killed" if outcome.killed else "SURVIVED"
        print(f"  {outcome.mutant.mutant_id}: {verdict} ({outcome.score:g}/"
              f"{outcome.max_score:g}, {outcome.seconds:.1f} s)", file=sys.stderr, flush=True)

    outcomes = grade_mutants(mutants, ROOT, progress=progress)
    print(markdown_report(outcomes, every))
    return 0 if all(e.score >= TARGET_SCORE for e in function_scores(outcomes)) else 1


if __name__ == "__main__":
    sys.exit(main())
