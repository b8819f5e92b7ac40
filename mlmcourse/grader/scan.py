"""The trusted side's scan of the answer cells: what in them the grader cannot check.

The student's code runs in a worker process it owns, so what that process reports about a call
(the operators it dispatched, which outputs are views of an input, the graph behind a result,
the random state it left) is a claim the code could change. Before a notebook runs, the engine
reads the answer cells' text here (the submitted file, on the trusted side) for the ways such a
claim could be changed: the grader's own modules, the interpreter's frames, module table and
object graph, PyTorch's private internals, ctypes and raw memory, processes, and code made at
run time (``exec``, ``eval``, ``getattr`` by a computed name), inside magics and ``!`` lines too.

A finding costs no point. It is an incident of kind `unchecked` with a neutral note for the TA
("the grader cannot check what ... does here"), and the checks of that notebook that passed on
the worker's report (cell tag `worker-claims`, :data:`CLAIMS_TAG`) are marked for a look: in the
score table, the class report and the formgrader. So an ordinary answer never loses a point to
the scan, and a reach into the grader never pays silently. The scan is a list of known ways in,
not a proof (the README's threat model says what that leaves); it reads each cell once, in time
linear in its size, inside a time budget, and never raises.
"""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass

from .limits import CAPS

# A graded cell whose verdict rests on what the worker reports, not on what the trusted side sees.
CLAIMS_TAG = "worker-claims"


# The modules an answer uses in the ordinary way (with their public submodules): what the
# exercises need and the standard library's plain helpers. Any other import gets a note (it
# costs nothing): pkgutil, runpy, code, threading, multiprocessing, subprocess, ctypes, inspect,
# pickle, importlib, builtins... reach past the answer.
ORDINARY_IMPORTS = frozenset({
    "torch", "numpy", "math", "cmath", "typing", "dataclasses", "functools", "itertools",
    "collections", "warnings", "time", "random", "re", "string", "statistics", "enum", "abc",
    "contextlib", "operator", "copy", "numbers", "sys", "os", "gc", "textwrap", "json",
    "decimal", "fractions", "heapq", "bisect", "array", "pprint", "datetime", "matplotlib",
    "IPython", "__future__", "logging", "pathlib", "io",
})
# Of the course's own package, the helpers the notebooks themselves import.
ORDINARY_COURSE = ("mlmcourse.teaching", "mlmcourse.course")

# Dotted names that reach the worker's evidence, however the module was imported ("import sys
# as s; s.modules" is "sys.modules").
_PATHS = {
    "sys.modules": "the module table", "sys._getframe": "the interpreter's frames",
    "sys._current_frames": "the interpreter's frames", "sys.settrace": "a tracer",
    "sys.setprofile": "a profiler hook", "gc.get_objects": "every object of the process",
    "gc.get_referrers": "the object graph", "gc.get_referents": "the object graph",
    "torch.library": "custom operators (their bodies hide from a dispatch mode)",
    "torch.jit": "TorchScript", "torch.compile": "a compiled function",
    "torch.multiprocessing": "other processes", "torch.utils.cpp_extension": "native code",
    "mlmcourse.grader": "the grader's own package", "os.fork": "another process",
    "os.system": "a shell", "os.popen": "a shell", "os.execv": "another program",
    "os.execve": "another program", "os.posix_spawn": "another process",
}
# Attributes that reach another function's or module's state, or the class graph, from any object.
_ATTRIBUTES = {
    "f_back": "the interpreter's frames", "f_globals": "the interpreter's frames",
    "f_locals": "the interpreter's frames", "f_builtins": "the interpreter's frames",
    "tb_frame": "the interpreter's frames", "gi_frame": "the interpreter's frames",
    "cr_frame": "the interpreter's frames", "ag_frame": "the interpreter's frames",
    "__globals__": "another module's globals", "__closure__": "another function's state",
    "__code__": "code objects", "__subclasses__": "the class graph",
    "__bases__": "the class graph", "__base__": "the class graph", "__mro__": "the class graph",
    "__dict__": "a module's or class's namespace", "__builtins__": "the builtins",
    "__loader__": "a module's loader", "__getattribute__": "attributes around the usual lookup",
    "attrgetter": "attributes by computed names", "methodcaller": "methods by computed names",
    "user_ns": "the shell's namespace", "user_global_ns": "the shell's namespace",
    "run_cell": "code run from a string", "run_code": "code run from a string",
}
# What the shell (`get_ipython()`) does with strings.
_SHELL_ATTRIBUTES = {"ex": "code run from a string", "ev": "code run from a string"}
# Builtins that run code made at run time or reach namespaces by name, unless the cell binds the
# name to something else by an import, a definition or a parameter ("from re import compile").
_BUILTINS = {
    "exec": "code run from a string (exec)", "eval": "code run from a string (eval)",
    "compile": "code compiled from a string", "__import__": "modules imported by computed names",
    "globals": "the module's namespace (globals())", "vars": "a namespace (vars())",
    "breakpoint": "a debugger", "__builtins__": "the builtins",
}
_BY_NAME = ("getattr", "setattr", "delattr")
# Text that names a way in, wherever it appears (strings that magics or shell lines run).
_TEXTS = {
    "mlmcourse.grader": "the grader's own package", "/proc/": "process memory (/proc)",
    "sys.modules": "the module table", "_getframe": "the interpreter's frames",
    "_python_dispatch": "the dispatch modes", "_disable_current_modes": "the dispatch modes",
    "__subclasses__": "the class graph", "__globals__": "another module's globals",
    "f_globals": "the interpreter's frames", "get_objects": "every object of the process",
}
# IPython calls that a magic becomes; their string arguments are code. A `!` line (`system`,
# `getoutput`) runs a shell.
_MAGIC_CALLS = ("run_line_magic", "run_cell_magic")
_SHELL_CALLS = ("system", "getoutput")


@dataclass(frozen=True)
class Finding:
    cell: str  # the answer cell's grade_id
    line: int
    what: str  # what the code reaches, in a few words

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.what}"


class _OutOfTime(Exception):
    pass


def scan_cells(cells: list[dict], budget_s: float = CAPS.scan_seconds) -> list[Finding]:
    """Findings in the student's answer cells (`{"grade_id", "source"}`; the setup cell, the
    instructor's, is not scanned). Never raises: a cell it cannot read in full, or in time, is a
    finding itself."""
    from mlmcourse.course.cells import SETUP_GRADE_ID

    deadline = time.monotonic() + budget_s
    findings: list[Finding] = []
    left = CAPS.scanned_chars  # an answer is a few thousand characters
    for cell in cells:
        gid = str(cell.get("grade_id", "?"))
        source = str(cell.get("source", ""))
        if gid == SETUP_GRADE_ID:
            continue
        left -= len(source)
        if left < 0:
            findings.append(Finding(gid, 1, f"answer cells longer than the scan reads "
                                            f"({CAPS.scanned_chars:,} characters in all)"))
            break
        try:
            found = scan_source(source, deadline)
        except _OutOfTime:
            findings.append(Finding(gid, 1, "a cell too long to read in the scan's time"))
            break
        except (RecursionError, MemoryError, ValueError):
            found = [(1, "a cell nested too deeply to read in full")]
        findings.extend(Finding(gid, line, what) for line, what in found)
    return findings


def scan_source(source: str, deadline: float | None = None) -> list[tuple[int, str]]:
    """(line, what) for each way in that a cell's text uses, as IPython runs it."""
    from mlmcourse.course.cells import cell_as_python

    try:
        python = cell_as_python(source)
    except Exception:  # noqa: BLE001  (IPython could not read it: neither can the worker)
        python = source
    return list(dict.fromkeys(_scan_python(python, 0, deadline)))


def _scan_python(python: str, depth: int, deadline: float | None) -> list[tuple[int, str]]:
    try:
        tree = ast.parse(python)
    except SyntaxError:
        return _scan_text(python, 1)  # it will not run; its text is still read
    visitor = _Visitor(depth, deadline)
    visitor.visit(tree)
    return visitor.found


def _scan_text(text: str, line: int) -> list[tuple[int, str]]:
    return [(line, f"{what} (named in a string)") for needle, what in _TEXTS.items()
            if needle in text]


class _Visitor(ast.NodeVisitor):
    def __init__(self, depth: int, deadline: float | None):
        self.depth, self.deadline = depth, deadline
        self.found: list[tuple[int, str]] = []
        self.aliases: dict[str, str] = {}  # a local name -> the dotted module path it stands for
        self.shadowed: set[str] = set()  # builtins the cell rebinds by import, def or parameter
        self.literal_names: set[str] = set()  # loop names over spelt-out attribute names
        self.shells: set[str] = {"get_ipython"}
        self.visited = 0

    def visit(self, node: ast.AST) -> None:
        self.tick()
        super().visit(node)

    def tick(self) -> None:
        self.visited += 1
        if self.deadline is not None and self.visited % 2048 == 0 \
                and time.monotonic() > self.deadline:
            raise _OutOfTime

    def visit_Module(self, node: ast.Module) -> None:
        self.learn(node)
        self.generic_visit(node)

    def note(self, node: ast.AST, what: str) -> None:
        self.found.append((getattr(node, "lineno", 1), what))

    # -- what the cell binds ----------------------------------------------------------------
    def learn(self, tree: ast.AST) -> None:
        """Import aliases, shadowed builtins, loop names over literal names, shell handles."""
        for node in ast.walk(tree):
            self.tick()
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.aliases[local] = alias.name if alias.asname else local
                    self.shadowed.add(local)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                for alias in node.names:
                    local = alias.asname or alias.name
                    self.aliases[local] = f"{node.module}.{alias.name}"
                    self.shadowed.add(local)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.shadowed.add(node.name)
            elif isinstance(node, ast.arg):
                self.shadowed.add(node.arg)
            elif isinstance(node, ast.For | ast.comprehension) and _spelt_out(node.iter):
                if isinstance(node.target, ast.Name):
                    self.literal_names.add(node.target.id)
            elif isinstance(node, ast.Assign) and _is_shell(node.value, {"get_ipython"}):
                self.shells |= {t.id for t in node.targets if isinstance(t, ast.Name)}

    def dotted(self, node: ast.AST) -> str | None:
        """`s.modules` -> 'sys.modules' after `import sys as s`; None when it starts elsewhere."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id, node.id if node.id in ("torch", "sys", "gc") else None)
        return ".".join([base, *reversed(parts)]) if base else None

    # -- imports ----------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.note(node, "a relative import")
            return
        module = node.module or ""
        self.module(node, module)
        for alias in node.names:
            self.path(node, f"{module}.{alias.name}")
            if alias.name in _ATTRIBUTES:
                self.note(node, _ATTRIBUTES[alias.name])
            elif alias.name.startswith("_") and alias.name != "__future__":
                self.note(node, f"the private name {alias.name} of {module}")

    def module(self, node: ast.AST, name: str) -> None:
        parts = name.split(".")
        if parts[0] == "mlmcourse":
            if not name.startswith(ORDINARY_COURSE):
                self.note(node, "the grader's own package")
            return
        if parts[0] not in ORDINARY_IMPORTS:
            self.note(node, f"the module {parts[0]}")
            return
        if any(part.startswith("_") for part in parts[1:]):
            self.note(node, f"the private module {name}")
            return
        self.path(node, name)

    def path(self, node: ast.AST, dotted: str) -> None:
        """A dotted name that holds a known way in (`torch.nn.modules.module.sys.modules` holds
        `sys.modules`)."""
        padded = f".{dotted}."
        for known, what in _PATHS.items():
            if f".{known}." in padded:
                self.note(node, f"{what} ({known})")
                return

    # -- expressions ------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = self.dotted(node)
        if node.attr in _ATTRIBUTES:
            self.note(node, _ATTRIBUTES[node.attr])
        elif node.attr in _SHELL_ATTRIBUTES and _is_shell(node.value, self.shells):
            self.note(node, _SHELL_ATTRIBUTES[node.attr])
        elif dotted is not None:
            head, _, _ = dotted.partition(".")
            private = [p for p in dotted.split(".")[1:] if p.startswith("_")
                       and not p.startswith("__")]
            if private and head in ("torch", "sys", "gc", "builtins") \
                    and not dotted.startswith("torch.ops."):
                self.note(node, f"the private {private[0]} of {head}")
            else:
                self.path(node, dotted)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _BUILTINS and node.id not in self.shadowed:
            self.note(node, _BUILTINS[node.id])

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        if isinstance(function, ast.Name) and function.id in _BY_NAME \
                and function.id not in self.shadowed:
            self.by_name(node, function.id)
        if isinstance(function, ast.Name) and function.id == "open" \
                and "open" not in self.shadowed:
            path = node.args[0] if node.args else None
            if not (isinstance(path, ast.Constant) and isinstance(path.value, str)):
                self.note(node, "a file opened by a computed path")
        if isinstance(function, ast.Attribute) and function.attr in _MAGIC_CALLS:
            self.magic(node)
        if isinstance(function, ast.Attribute) and function.attr in _SHELL_CALLS \
                and _is_shell(function.value, self.shells):
            self.note(node, "a shell command (a ! line)")
        self.generic_visit(node)

    def by_name(self, node: ast.Call, builtin: str) -> None:
        """getattr & co.: a name the cell spells out is read as such; a computed one could be
        anything."""
        if len(node.args) < 2:
            return
        name = node.args[1]
        if isinstance(name, ast.Name) and name.id in self.literal_names:
            return  # a loop over attribute names the cell spells out (none private)
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            self.note(node, f"an attribute read by a computed name ({builtin})")
            return
        base = self.dotted(node.args[0]) or ""
        if name.value in _ATTRIBUTES or (name.value.startswith("_")
                                         and not name.value.startswith("__")):
            self.note(node, f"{builtin} of {name.value!r}")
        else:
            self.path(node, f"{base}.{name.value}" if base else name.value)

    def magic(self, node: ast.Call) -> None:
        """A magic's arguments are code: scanned as code (a magic built at run time is not)."""
        for argument in node.args:
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                if self.depth < 3:
                    for line, what in _scan_python(argument.value, self.depth + 1,
                                                   self.deadline):
                        self.found.append((node.lineno + line - 1, what))
            else:
                self.note(node, "a magic built at run time")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.found.extend(_scan_text(node.value, node.lineno))


def _spelt_out(node: ast.AST) -> bool:
    """A tuple, list or set of plain strings, none of them a private name."""
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and bool(node.elts) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) and not e.value.startswith("_")
        for e in node.elts)


def _is_shell(node: ast.AST, shells: set[str]) -> bool:
    """`get_ipython()`, or a name the cell bound to it."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in shells
    return isinstance(node, ast.Name) and node.id in shells and node.id != "get_ipython"
