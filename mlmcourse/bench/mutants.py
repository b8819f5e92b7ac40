"""The mutants of `bench mutation`: wrong versions of the reference solutions, one site at a time.

Each graded function's reference (the answer cells of ``source/bert_mlm/*.ipynb``, inside
nbgrader's solution markers) is mutated with the `ast` module: comparison, arithmetic and
boolean operators, numeric constants (thresholds and denominators among them), dropped
validation branches, dtype and device changes, dropped ``clone()``, swapped reductions, dropped
writes and altered ``return`` values; and by the hand-written `CLAUSE_MUTANTS`, contract clauses
a draft leaves out with no operator to swap. Grading them is :mod:`mlmcourse.bench.mutation`'s.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    PRACTICE_TAG,
    grade_id,
    has_tag,
    is_solution,
    is_solution_marker,
)
from mlmcourse.course.layout import SERIES, source_notebooks

ROOT = Path(__file__).resolve().parents[2]

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
    "make_mlm_inputs:clause:labels-on-default-device":
        "torch.full makes labels on the default device, the CPU where grading runs: only a "
        "grader with a GPU sees it (the hidden tests run on cuda there)",
    "MaskedLMLoss.backward:clause:gradient-on-default-device":
        "torch.zeros makes the gradient on the default device, the CPU where grading runs: "
        "only a grader with a GPU sees it (autograd refuses it there)",
}

# Contract clauses a draft leaves out with no operator to mutate: an int test that also takes a
# NumPy integer, one tensor's device never compared, a saved tensor changed in place by the
# backward, a new tensor made on the default device. (function, name, reference text, mutant
# text); each reference text occurs once in its answer cell.
CLAUSE_MUTANTS: tuple[tuple[str, str, str, str], ...] = (
    *(("make_mlm_inputs", f"{arg}-numbers-Integral", f"not isinstance({arg}, int)",
       f"not isinstance({arg}, __import__('numbers').Integral)")
      for arg in ("mask_token_id", "ignore_index")),
    *(("make_mlm_inputs", f"{name}-device-unchecked", "if tensor.device != tokens.device:",
       f"if name != {name!r} and tensor.device != tokens.device:")
      for name in ("selected", "draws", "random_ids")),
    ("make_mlm_inputs", "labels-on-default-device", "torch.full_like(tokens, ignore_index)",
     "torch.full(tokens.shape, ignore_index)"),
    ("masked_lm_loss", "ignore_index-numbers-Integral", "not isinstance(ignore_index, int)",
     "not isinstance(ignore_index, __import__('numbers').Integral)"),
    ("MaskedLMLoss.backward", "saved-exps-changed-in-place", "exps / sums.unsqueeze(1)",
     "exps.div_(sums.unsqueeze(1))"),
    ("MaskedLMLoss.backward", "gradient-on-default-device", "exps.new_zeros(B * L, V)",
     "torch.zeros(B * L, V, dtype=exps.dtype)"),
)


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
    return mutants + clause_mutants(notebook, cell_id, source, {m.function for m in mutants})


def clause_mutants(notebook: str, cell_id: str, source: str, functions: set[str]) -> list[Mutant]:
    """The `CLAUSE_MUTANTS` of the functions this answer cell defines."""
    found = []
    for function, name, reference, mutated in CLAUSE_MUTANTS:
        if function not in functions:
            continue
        if source.count(reference) != 1:
            raise ValueError(f"CLAUSE_MUTANTS: {reference!r} must occur once in {cell_id}")
        line = source[:source.index(reference)].count("\n") + 1
        text = ast.unparse(ast.parse(source.replace(reference, mutated)))
        found.append(Mutant(f"{function}:clause:{name}", notebook, cell_id, function,
                            f"clause:{name}", line, text))
    return found


def answer_cells(root: Path = ROOT) -> list[tuple[str, str, str]]:
    """(notebook, grade_id, source with markers) of every code answer cell of the series that
    earns points (a practice cell has no hidden test to kill its mutants)."""
    found = []
    for path in source_notebooks(root, SERIES):
        for cell in nbio.read(path).cells:
            scored = is_solution(cell) and not has_tag(cell, PRACTICE_TAG)
            code = cell.cell_type == "code" and scored
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
