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

# The modules an answer cell may import (with their submodules, but no private ones): what the
# exercises need and the standard library's plain helpers. Anything else (pkgutil, pydoc, runpy,
# code, timeit, unittest.mock, threading, multiprocessing, subprocess, ctypes, inspect, pickle,
# importlib, builtins...) reaches past the answer: the notebooks' "How to work" cell says so.
ALLOWED_IMPORTS = frozenset({
    "torch", "numpy", "math", "cmath", "typing", "dataclasses", "functools", "itertools",
    "collections", "warnings", "time", "random", "re", "string", "statistics", "enum", "abc",
    "contextlib", "operator", "copy", "numbers", "sys", "os", "gc", "textwrap", "json",
    "decimal", "fractions", "heapq", "bisect", "array", "pprint", "datetime", "matplotlib",
    "IPython", "__future__",
})
# Of the course's own package, the helpers the notebooks themselves import.
ALLOWED_COURSE = ("mlmcourse.teaching", "mlmcourse.course")
# Public torch submodules that still reach past the answer: custom operators hide their body from
# a dispatch mode, TorchScript and multiprocessing run code on other threads or processes.
_TORCH_OUTSIDE = {"library": "defines custom operators (torch.library)",
                  "jit": "runs TorchScript (torch.jit)",
                  "multiprocessing": "starts processes (torch.multiprocessing)",
                  "cpp_extension": "compiles native code"}

# Attributes that reach frames, module tables, the object graph, the dispatcher's modes, other
# threads or processes, or code made at run time.
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
    "__getattribute__": "reads attributes around the usual lookup",
    "get_objects": "walks every object of the process (gc)",
    "get_referrers": "walks the object graph (gc)", "get_referents": "walks the object graph (gc)",
    "grader": "reaches the grader's own package",
    "library": _TORCH_OUTSIDE["library"], "custom_op": _TORCH_OUTSIDE["library"],
    "jit": _TORCH_OUTSIDE["jit"],
    "attrgetter": "reads attributes by computed names",
    "methodcaller": "calls methods by computed names",
    "user_ns": "reaches the shell's namespace", "user_global_ns": "reaches the shell's namespace",
    "run_cell": "runs code from a string", "run_code": "runs code from a string",
    "ex": "runs code from a string", "ev": "runs code from a string",
    "fork": "starts a process", "forkpty": "starts a process",
    "popen": "runs a shell command", "execv": "replaces the process",
    "execve": "replaces the process",
    "spawnv": "starts a process", "posix_spawn": "starts a process",
}

# Builtins that run code made at run time or reach namespaces by name (when the cell does not
# bind the name itself: `from re import compile` is another function).
_BUILTINS = {
    "exec": "runs code from a string (exec)", "eval": "runs code from a string (eval)",
    "compile": "compiles code from a string", "__import__": "imports modules by computed names",
    "globals": "reaches the module's namespace (globals())",
    "vars": "reaches a namespace (vars())", "breakpoint": "starts a debugger",
    "__builtins__": "reaches the builtins' namespace",
}
# Reading or writing an attribute by a name the code computes could reach anything; hasattr only
# answers yes or no.
_BY_NAME = ("getattr", "setattr", "delattr")
# Names a literal getattr may not use beyond the attributes above: the module table.
_NAMES_BY_STRING = {"modules": "reaches the module table"}

# Text that names a way in, wherever it appears (strings that magics or shell lines run).
_TEXTS = {
    "mlmcourse.grader": "names the grader's own package", "/proc/": "reads process memory (/proc)",
    "sys.modules": "reaches the module table", "_getframe": "reads the interpreter's frames",
    "_python_dispatch": "reaches the dispatch modes",
    "_disable_current_modes": "switches off the dispatch modes watching the call",
    "__subclasses__": "walks the class graph", "__globals__": "reaches another module's globals",
    "f_globals": "reads the interpreter's frames", "get_objects": "walks every object (gc)",
}

# IPython calls that a magic becomes; their string arguments are code. A `!` line (`system`,
# `getoutput`) runs a shell from the answer cell: a process outside the answer.
_MAGIC_CALLS = ("run_line_magic", "run_cell_magic")
_SHELL_CALLS = ("system", "getoutput")


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
    def __init__(self, depth: int, bound: set[str] | None = None):
        self.depth = depth
        self.bound = bound if bound is not None else set()
        self.found: list[tuple[int, str]] = []

    def visit_Module(self, node: ast.Module) -> None:
        self.bound |= _bound_names(node)
        self.generic_visit(node)

    def note(self, node: ast.AST, what: str) -> None:
        self.found.append((getattr(node, "lineno", 1), what))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.note(node, "imports relative to a package")
            return
        module = node.module or ""
        self.module(node, module)
        for alias in node.names:
            if alias.name in _ATTRIBUTES:
                self.note(node, _ATTRIBUTES[alias.name])
            elif alias.name.startswith("_") and alias.name != "__future__":
                self.note(node, f"imports the private name {alias.name} of {module}")
            elif module == "sys" and alias.name == "modules":
                self.note(node, "reaches the module table (sys.modules)")
            elif module == "torch" and alias.name in _TORCH_OUTSIDE:
                self.note(node, _TORCH_OUTSIDE[alias.name])

    def module(self, node: ast.AST, name: str) -> None:
        """An imported module: allowed, a private or outside part, or not for answers."""
        parts = name.split(".")
        if parts[0] == "mlmcourse":
            # `import mlmcourse.teaching.checks` binds the package, but its `.grader` is an
            # attribute the scan flags wherever it is read
            if not name.startswith(ALLOWED_COURSE):
                self.note(node, "imports the grader's own package")
            return
        if parts[0] not in ALLOWED_IMPORTS:
            self.note(node, f"imports {parts[0]}, which an answer does not need")
            return
        for part in parts[1:]:
            if part.startswith("_"):
                self.note(node, f"imports the private module {name}")
                return
            if part in _TORCH_OUTSIDE:
                self.note(node, _TORCH_OUTSIDE[part])
                return

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _ATTRIBUTES:
            self.note(node, _ATTRIBUTES[node.attr])
        elif node.attr == "modules" and _names_sys(node.value):
            self.note(node, "reaches the module table (sys.modules)")
        elif node.attr.startswith("_") and not node.attr.startswith("__") \
                and _names_module(node.value, ("torch", "sys", "gc")) \
                and not _is_operator_namespace(node.value):
            self.note(node, f"reaches the private {node.attr} of a library")
        elif node.attr == "compile" and _names_module(node.value, ("torch",)):
            self.note(node, "compiles the function (torch.compile runs code the modes miss)")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _BUILTINS and node.id not in self.bound:
            self.note(node, _BUILTINS[node.id])

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        if isinstance(function, ast.Name) and function.id in _BY_NAME \
                and function.id not in self.bound:
            self.by_name(node, function.id)
        if isinstance(function, ast.Name) and function.id == "open" and "open" not in self.bound:
            self.opened(node)
        if isinstance(function, ast.Attribute) and function.attr in _MAGIC_CALLS:
            self.magic(node)
        if isinstance(function, ast.Attribute) and function.attr in _SHELL_CALLS \
                and _is_shell(function.value):
            self.note(node, "runs a shell command (a ! line) from an answer cell")
        self.generic_visit(node)

    def by_name(self, node: ast.Call, builtin: str) -> None:
        """getattr & co.: a computed name could be anything; a literal one is read as such."""
        if len(node.args) < 2:
            return
        name = node.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            self.note(node, f"reads an attribute by a computed name ({builtin})")
        elif name.value in _ATTRIBUTES or name.value in _NAMES_BY_STRING or (
                name.value.startswith("_") and not name.value.startswith("__")):
            self.note(node, f"{builtin} of {name.value!r}")

    def opened(self, node: ast.Call) -> None:
        """open() of a path the code computes (/proc/<pid>/mem is a path too)."""
        path = node.args[0] if node.args else None
        if not (isinstance(path, ast.Constant) and isinstance(path.value, str)):
            self.note(node, "opens a file by a computed path")

    def magic(self, node: ast.Call) -> None:
        """A magic's arguments are code: scanned as code (a magic built at run time is not)."""
        for argument in node.args:
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                if self.depth < 3:
                    for line, what in _scan_python(argument.value, self.depth + 1):
                        self.found.append((node.lineno + line - 1, what))
            else:
                self.note(node, "runs a magic built at run time")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.found.extend(_scan_text(node.value, node.lineno))


def _bound_names(tree: ast.AST) -> set[str]:
    """Names the cell binds itself (parameters, assignments, imports, definitions)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return bound


def _names_module(node: ast.AST, modules: tuple[str, ...]) -> bool:
    """`torch`, `torch.utils`, ... : an expression that starts at one of these module names."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in modules


def _is_operator_namespace(node: ast.AST) -> bool:
    """`torch.ops.<namespace>`: an operator called by its dispatcher name (the recorder judges
    which operators ran; calling one is no reach into the grader)."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
        and node.value.attr == "ops" and _names_module(node.value, ("torch",))


def _is_shell(node: ast.AST) -> bool:
    """`get_ipython()`: what a ! line calls `system` on."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id == "get_ipython"


def _names_sys(node: ast.AST) -> bool:
    """`sys` or `<anything>.sys`."""
    return (isinstance(node, ast.Name) and node.id == "sys") or (
        isinstance(node, ast.Attribute) and node.attr == "sys")
