"""The trusted side's scan of a submission's answer cells for reaches into the grader.

The student's code runs in a worker process it owns: whatever that process reports about a call
(the operators it dispatched, which outputs are views of an input, the random state it left, the
graph behind a result) is a claim the code could change. A point may not rest on such a claim
when the code tried to change it. So before a notebook runs, the engine reads the answer cells'
text here (the submitted file, on the trusted side) and looks for the ways in to the worker's
evidence: the grader's own modules, the interpreter's frames, module table and object graph,
PyTorch's dispatcher internals, ctypes and raw memory, and code made at run time (``exec``,
``eval``, ``getattr`` with a computed name...), inside magics and ``!`` lines too. A submission
with a finding keeps every point whose evidence the trusted side holds itself (the results, the
errors, its own view of the inputs' memory) and earns none of the checks marked ``worker-claims``
in the source notebooks (:data:`CLAIMS_TAG`); the finding is an incident the TA sees.

This is a deny-list of the known ways in, not a proof: the README's threat model says what a
finding costs, and what a way in that the scan does not know could still forge.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# A graded cell whose verdict rests on what the worker reports, not on what the trusted side sees.
CLAIMS_TAG = "worker-claims"

# Modules with no use in an answer but reaching into the process (or the grader).
_MODULES = {
    "mlmcourse": "imports the grader's own package",
    "ctypes": "imports ctypes (raw memory of the process)",
    "_ctypes": "imports ctypes (raw memory of the process)",
    "cffi": "imports cffi (raw memory of the process)",
    "mmap": "imports mmap (raw memory)",
    "importlib": "imports modules by computed names (importlib)",
    "inspect": "reads the interpreter's frames (inspect)",
    "pickle": "runs code from bytes (pickle)",
    "marshal": "runs code from bytes (marshal)",
    "shelve": "runs code from bytes (shelve)",
    "dill": "runs code from bytes (dill)",
    "cloudpickle": "runs code from bytes (cloudpickle)",
    "copyreg": "changes how objects are rebuilt (copyreg)",
    "_python_dispatch": "reaches PyTorch's dispatch-mode stack",
}

# Attributes that reach frames, module tables, the object graph or the dispatcher's modes.
_ATTRIBUTES = {
    "_getframe": "reads the interpreter's frames",
    "_current_frames": "reads the interpreter's frames",
    "settrace": "traces the interpreter", "setprofile": "traces the interpreter",
    "f_back": "reads the interpreter's frames", "f_globals": "reads the interpreter's frames",
    "f_locals": "reads the interpreter's frames", "f_builtins": "reads the interpreter's frames",
    "tb_frame": "reads the interpreter's frames", "gi_frame": "reads the interpreter's frames",
    "cr_frame": "reads the interpreter's frames", "ag_frame": "reads the interpreter's frames",
    "__globals__": "reaches another module's globals",
    "__closure__": "reaches another function's state",
    "__code__": "rewrites code objects", "__subclasses__": "walks the class graph",
    "__bases__": "walks the class graph", "__base__": "walks the class graph",
    "__mro__": "walks the class graph", "__dict__": "reaches a module's or class's namespace",
    "__builtins__": "reaches the builtins' namespace", "__loader__": "reaches a module's loader",
    "get_objects": "walks every object of the process (gc)",
    "get_referrers": "walks the object graph (gc)", "get_referents": "walks the object graph (gc)",
    "_C": "reaches PyTorch's C internals (torch._C)",
    "_python_dispatch": "reaches PyTorch's dispatch-mode stack",
    "_disable_current_modes": "switches off the dispatch modes watching the call",
    "_pop_mode": "switches off the dispatch modes watching the call",
    "_push_mode": "changes the dispatch modes watching the call",
    "_len_torch_dispatch_stack": "reads the dispatch modes watching the call",
    "_get_current_dispatch_mode_stack": "reads the dispatch modes watching the call",
    "_get_current_dispatch_mode": "reads the dispatch modes watching the call",
    "_DisableTorchDispatch": "switches off the dispatch modes watching the call",
    "_set_dispatch_mode": "changes the dispatch modes watching the call",
    "attrgetter": "reads attributes by computed names",
    "methodcaller": "calls methods by computed names",
    "user_ns": "reaches the shell's namespace", "user_global_ns": "reaches the shell's namespace",
    "run_cell": "runs code from a string", "run_code": "runs code from a string",
    "ex": "runs code from a string", "ev": "runs code from a string",
}

# Builtins that run code made at run time or reach namespaces by name.
_BUILTINS = {
    "exec": "runs code from a string (exec)", "eval": "runs code from a string (eval)",
    "compile": "compiles code from a string", "__import__": "imports modules by computed names",
    "globals": "reaches the module's namespace (globals())",
    "vars": "reaches a namespace (vars())", "locals": "reaches a namespace (locals())",
    "breakpoint": "starts a debugger", "__builtins__": "reaches the builtins' namespace",
}
_BY_NAME = ("getattr", "setattr", "delattr", "hasattr")

# Text that names a way in, wherever it appears (strings that magics or shell lines run).
_TEXTS = {
    "mlmcourse": "names the grader's own package", "/proc/": "reads process memory (/proc)",
    "ctypes": "names ctypes", "sys.modules": "reaches the module table",
    "_getframe": "reads the interpreter's frames", "_python_dispatch": "reaches the dispatch modes",
    "_disable_current_modes": "switches off the dispatch modes watching the call",
    "__subclasses__": "walks the class graph", "__globals__": "reaches another module's globals",
    "f_globals": "reads the interpreter's frames", "get_objects": "walks every object (gc)",
}

# IPython calls that a magic or a ! line becomes; their string arguments are code or shell text.
_MAGIC_CALLS = ("run_line_magic", "run_cell_magic", "system", "getoutput")


@dataclass(frozen=True)
class Finding:
    cell: str  # the answer cell's grade_id
    line: int
    what: str

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.what}"


def scan_cells(cells: list[dict]) -> list[Finding]:
    """Findings in the student's answer cells (`{"grade_id", "source"}`; the setup cell, the
    instructor's, is not scanned)."""
    from mlmcourse.course.cells import SETUP_GRADE_ID

    findings: list[Finding] = []
    for cell in cells:
        if cell.get("grade_id") == SETUP_GRADE_ID:
            continue
        findings.extend(Finding(cell.get("grade_id", "?"), line, what)
                        for line, what in scan_source(cell.get("source", "")))
    return findings


def scan_source(source: str) -> list[tuple[int, str]]:
    """(line, what) for each way in that a cell's text uses, as IPython runs it."""
    from mlmcourse.course.cells import cell_as_python

    try:
        python = cell_as_python(source)
    except Exception:  # noqa: BLE001  (IPython could not read it: neither can the worker)
        python = source
    return list(dict.fromkeys(_scan_python(python, depth=0)))


def _scan_python(python: str, depth: int) -> list[tuple[int, str]]:
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError):
        return _scan_text(python, 1)  # it will not run; its text is still read
    visitor = _Visitor(depth)
    visitor.visit(tree)
    return visitor.found


def _scan_text(text: str, line: int) -> list[tuple[int, str]]:
    return [(line, f"{what} ({needle!r} in a string)") for needle, what in _TEXTS.items()
            if needle in text]


class _Visitor(ast.NodeVisitor):
    def __init__(self, depth: int):
        self.depth = depth
        self.found: list[tuple[int, str]] = []

    def note(self, node: ast.AST, what: str) -> None:
        self.found.append((getattr(node, "lineno", 1), what))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.module(node, node.module or "")
        for alias in node.names:
            if alias.name in _ATTRIBUTES or alias.name in _MODULES:
                self.note(node, _ATTRIBUTES.get(alias.name) or _MODULES[alias.name])
            elif node.module == "sys" and alias.name == "modules":
                self.note(node, "reaches the module table (sys.modules)")

    def module(self, node: ast.AST, name: str) -> None:
        for part in name.split("."):
            if part in _MODULES:
                self.note(node, _MODULES[part])
                return

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _ATTRIBUTES:
            self.note(node, _ATTRIBUTES[node.attr])
        elif node.attr == "modules" and _names_sys(node.value):
            self.note(node, "reaches the module table (sys.modules)")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _BUILTINS:
            self.note(node, _BUILTINS[node.id])

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        if isinstance(function, ast.Name) and function.id in _BY_NAME:
            self.by_name(node, function.id)
        if isinstance(function, ast.Attribute) and function.attr in _MAGIC_CALLS:
            self.magic(node)
        self.generic_visit(node)

    def by_name(self, node: ast.Call, builtin: str) -> None:
        """getattr & co.: a computed name could be anything; a literal one is read as such."""
        if len(node.args) < 2:
            return
        name = node.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            self.note(node, f"reads an attribute by a computed name ({builtin})")
        elif name.value in _ATTRIBUTES or (name.value.startswith("_")
                                           and not name.value.startswith("__")):
            self.note(node, f"{builtin} of {name.value!r}")

    def magic(self, node: ast.Call) -> None:
        """A magic's or a ! line's arguments: code (scanned as code) or shell text."""
        for argument in node.args:
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                if self.depth < 3:
                    for line, what in _scan_python(argument.value, self.depth + 1):
                        self.found.append((node.lineno + line - 1, what))
            else:
                self.note(node, "runs a magic or a shell line built at run time")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.found.extend(_scan_text(node.value, node.lineno))


def _names_sys(node: ast.AST) -> bool:
    """`sys` or `<anything>.sys`."""
    return (isinstance(node, ast.Name) and node.id == "sys") or (
        isinstance(node, ast.Attribute) and node.attr == "sys")
