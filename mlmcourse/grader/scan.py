"""The trusted side's scan of the answer cells: what in them the grader cannot check.

The student's code runs in a student process it owns, so what that process reports about a
call (the operators it dispatched, which outputs are views of an input, the graph behind a result,
the random state it left) is a claim the code could change. Before a notebook runs, the engine reads
the answer cells' text here (the submitted file, on the trusted side) for the ways such a claim
could be changed: the grader's own modules, the interpreter's frames, module table and object graph,
PyTorch's private internals, ctypes and raw memory, processes, and code made at run time (``exec``,
``eval``, ``getattr`` by a computed name), inside magics and ``!`` lines too.

A finding costs no point. It is an incident of kind `unchecked` with a neutral note for the TA ("the
grader cannot check what ... does here"), and the checks of that notebook that passed on the student
process's report (cell tag `process-claims`, :data:`CLAIMS_TAG`) are marked for a look: in
the score table, the class report and the formgrader. So an ordinary answer never loses a point to
the scan, and a reach into the grader never pays silently. The scan is a list of known ways in, not
a proof (the README's threat model says what that leaves); it reads each cell once, in time linear
in its size, inside a time budget, and never raises.
"""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass, field

from .limits import CAPS

# A graded cell whose verdict rests on what the student process reports, not on what the trusted
# side sees.
CLAIMS_TAG = "process-claims"


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

# Dotted names that reach the student process's evidence, however the module was imported ("import
# sys as s; s.modules" is "sys.modules").
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
# operator's getters: read as getattr of each name they are given.
_GETTERS = ("attrgetter", "methodcaller")
# Module names a dotted path may reach through another module (`logging.threading`): modules
# an answer does not use, whatever it imported.
_REACH_MODULES = frozenset({
    "threading", "_thread", "ctypes", "_ctypes", "builtins", "importlib", "inspect",
    "multiprocessing", "subprocess", "pickle", "marshal", "pkgutil", "runpy", "code", "codeop",
    "concurrent", "signal", "mmap", "stride_tricks", "traceback",
})
# Names reached through any object that are PyTorch's or the grader's internals.
_INTERNALS = frozenset({"_C", "grader", "_make_wrapper_subclass", "_make_subclass",
                        "_python_dispatch", "_mode_utils", "_DisableTorchDispatch",
                        "_DisableTorchFunction", "_DisableTorchFunctionSubclass"})
_INTERNAL_PREFIXES = ("_dispatch_", "_disable_", "_enable_", "_set_dispatch", "_push_",
                      "_pop_")
# Where a private name (`x._y`) is a library's internals, not the student's own.
_PRIVATE_HEADS = frozenset({"torch", "sys", "gc", "builtins", "mlmcourse", "numpy"})
# What a dotted path may start at without an import in the cell (the setup cell's own imports
# are learnt from it).
_KNOWN_BASES = frozenset({"torch", "sys", "gc", "mlmcourse", "builtins", "numpy"})
# Methods with which a class takes over PyTorch's dispatch of its tensors.
_DISPATCH_HOOKS = frozenset({"__torch_dispatch__", "__torch_function__"})
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


@dataclass
class Names:
    """What the notebook's cells bind, in order (the setup cell's imports first): the student's
    cells share one namespace, so a name bound in one cell means the same in the next."""

    aliases: dict[str, str] = field(default_factory=dict)  # a name -> the dotted path it is
    shadowed: set[str] = field(default_factory=set)  # builtins bound by import, def, parameter
    literal_names: set[str] = field(default_factory=set)  # names that hold spelt-out names
    literal_tables: set[str] = field(default_factory=set)  # names of tuples of spelt-out names
    other_values: set[str] = field(default_factory=set)  # names also bound to something else

    def spelt_out(self, name: str) -> bool:
        """A name only ever bound to a spelt-out attribute name (none private)."""
        return name in self.literal_names and name not in self.other_values
    shells: set[str] = field(default_factory=lambda: {"get_ipython"})


def scan_cells(cells: list[dict], budget_s: float = CAPS.scan_seconds) -> list[Finding]:
    """Findings in the student's answer cells (`{"grade_id", "source"}`; the setup cell, the
    instructor's, is read for the names it binds, not scanned). The cells share one namespace,
    so what every cell binds is learnt before any is read for findings. Never raises: a cell it
    cannot read in full, or in time, is a finding itself."""
    from mlmcourse.course.cells import SETUP_GRADE_ID

    deadline = time.monotonic() + budget_s
    names = Names()
    findings: list[Finding] = []
    parsed: list[tuple[str, ast.AST | None, list[tuple[int, str]]]] = []
    left = CAPS.scanned_chars  # an answer is a few thousand characters
    try:
        for cell in cells:
            gid, source = str(cell.get("grade_id", "?")), str(cell.get("source", ""))
            if gid == SETUP_GRADE_ID:
                _Visitor(0, deadline, names).learn(_parse(source)[0] or ast.Module([], []))
                continue
            left -= len(source)
            if left < 0:
                findings.append(Finding(gid, 1, f"answer cells longer than the scan reads "
                                                f"({CAPS.scanned_chars:,} characters in all)"))
                break
            tree, early = _parse_cell(source, deadline)
            if tree is not None:
                _Visitor(0, deadline, names).learn(tree)
            parsed.append((gid, tree, early))
        for gid, tree, early in parsed:
            found = list(early)
            if tree is not None:
                visitor = _Visitor(0, deadline, names)
                visitor.visit(tree)
                found += visitor.found
            findings.extend(Finding(gid, line, what) for line, what in dict.fromkeys(found))
    except _OutOfTime:
        findings.append(Finding("?", 1, f"answer cells too long to read in the scan's time "
                                        f"({budget_s:g} s)"))
    except (RecursionError, MemoryError, ValueError):
        findings.append(Finding("?", 1, "a cell nested too deeply to read in full"))
    return findings


def _parse(python: str) -> tuple[ast.AST | None, list[tuple[int, str]]]:
    """The tree of a cell's Python, or None and what its text names (it will not run)."""
    try:
        return ast.parse(python), []
    except SyntaxError:
        return None, _scan_text(python, 1)


def _parse_cell(source: str, deadline: float | None) -> tuple[ast.AST | None, list]:
    """A cell as IPython runs it, parsed: (tree or None, findings made without a tree)."""
    from mlmcourse.course.cells import cell_as_python

    if deadline is not None and time.monotonic() > deadline:
        raise _OutOfTime
    if _magic_lines(source) > CAPS.scanned_magics:
        # IPython's transform takes time that grows with magics times lines: not run here
        return None, [(1, f"more magic or ! lines than the scan reads ({CAPS.scanned_magics})"),
                      *_scan_text(source, 1)]
    try:
        python = cell_as_python(source)
    except Exception:  # noqa: BLE001  (IPython could not read it: neither can the student process)
        python = source
    return _parse(python)


def _magic_lines(source: str) -> int:
    return sum(1 for line in source.splitlines()
               if line.lstrip().startswith(("%", "!")) or line.rstrip().endswith("?"))


def scan_source(source: str) -> list[tuple[int, str]]:
    """(line, what) for each way in that one cell's text uses, as IPython runs it."""
    return [(f.line, f.what) for f in scan_cells([{"grade_id": "cell", "source": source}])]


def _scan_python(python: str, depth: int, deadline: float | None,
                 names: Names) -> list[tuple[int, str]]:
    """A magic's code, read for findings with the notebook's names."""
    tree, found = _parse(python)
    if tree is None:
        return found
    visitor = _Visitor(depth, deadline, names)
    visitor.learn(tree)
    visitor.visit(tree)
    return visitor.found


def _scan_text(text: str, line: int) -> list[tuple[int, str]]:
    return [(line, f"{what} (named in a string)") for needle, what in _TEXTS.items()
            if needle in text]


class _Visitor(ast.NodeVisitor):
    def __init__(self, depth: int, deadline: float | None, names: Names):
        self.depth, self.deadline, self.names = depth, deadline, names
        self.found: list[tuple[int, str]] = []
        self.called: set[int] = set()  # the Name nodes that are called (getattr(...))
        self.visited = 0

    def visit(self, node: ast.AST) -> None:
        self.tick()
        super().visit(node)

    def tick(self) -> None:
        self.visited += 1
        if self.deadline is not None and self.visited % 2048 == 0 \
                and time.monotonic() > self.deadline:
            raise _OutOfTime

    def note(self, node: ast.AST, what: str) -> None:
        self.found.append((getattr(node, "lineno", 1), what))

    # -- what the cells bind ----------------------------------------------------------------
    def learn(self, tree: ast.AST) -> None:
        """Import aliases and names assigned a module (`_t = torch`, `x = F.torch`), shadowed
        builtins, loop names over literal names, shell handles: twice, so that a chain of
        assignments resolves in any order."""
        names = self.names
        for _ in range(2):
            for node in ast.walk(tree):
                self.tick()
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        local = alias.asname or alias.name.split(".")[0]
                        names.aliases[local] = alias.name if alias.asname else local
                        names.shadowed.add(local)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    for alias in node.names:
                        local = alias.asname or alias.name
                        names.aliases[local] = f"{node.module}.{alias.name}"
                        names.shadowed.add(local)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.shadowed.add(node.name)
                elif isinstance(node, ast.arg):
                    names.shadowed.add(node.arg)
                    names.other_values.add(node.arg)
                elif isinstance(node, ast.For | ast.comprehension):
                    self.learn_loop(node)
                elif isinstance(node, ast.Assign):
                    self.learn_assignment(node)
                elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr) \
                        and isinstance(node.target, ast.Name):
                    names.other_values.add(node.target.id)

    def learn_loop(self, node: ast.For | ast.comprehension) -> None:
        if not isinstance(node.target, ast.Name):
            return
        table = isinstance(node.iter, ast.Name) and node.iter.id in self.names.literal_tables
        if _spelt_out(node.iter) or table:
            self.names.literal_names.add(node.target.id)
        else:
            self.names.other_values.add(node.target.id)

    def learn_assignment(self, node: ast.Assign) -> None:
        targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if _is_shell(node.value, {"get_ipython"}):
            self.names.shells |= set(targets)
            return
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str) \
                and not value.value.startswith("_"):
            self.names.literal_names.update(targets)
        elif _spelt_out(value):
            self.names.literal_tables.update(targets)
        else:
            self.names.other_values.update(targets)
        dotted = self.dotted(value)
        if dotted is not None:
            for target in targets:
                self.names.aliases[target] = dotted

    def dotted(self, node: ast.AST) -> str | None:
        """`s.modules` -> 'sys.modules' after `import sys as s`; None when it starts elsewhere."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.names.aliases.get(node.id, node.id if node.id in _KNOWN_BASES else None)
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
        `sys.modules`; `logging.threading` holds a module an answer does not use)."""
        padded = f".{dotted}."
        for known, what in _PATHS.items():
            if f".{known}." in padded:
                self.note(node, f"{what} ({known})")
                return
        outside = [part for part in dotted.split(".")[1:] if part in _REACH_MODULES]
        if outside:
            self.note(node, f"the module {outside[0]} (in {dotted})")

    # -- expressions ------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = self.dotted(node)
        if node.attr in _ATTRIBUTES:
            self.note(node, _ATTRIBUTES[node.attr])
        elif node.attr in _SHELL_ATTRIBUTES and _is_shell(node.value, self.names.shells):
            self.note(node, _SHELL_ATTRIBUTES[node.attr])
        elif node.attr in _GETTERS and id(node) not in self.called:
            self.note(node, f"{node.attr} passed around as a value (attributes by computed names)")
        elif node.attr in _INTERNALS or node.attr.startswith(_INTERNAL_PREFIXES):
            self.note(node, f"PyTorch's or the grader's internals ({node.attr})")
        elif dotted is not None:
            head, _, _ = dotted.partition(".")
            private = [p for p in dotted.split(".")[1:] if p.startswith("_")
                       and not p.startswith("__")]
            if private and head in _PRIVATE_HEADS and not dotted.startswith("torch.ops."):
                self.note(node, f"the private {private[0]} of {head}")
            else:
                self.path(node, dotted)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _BUILTINS and node.id not in self.names.shadowed:
            self.note(node, _BUILTINS[node.id])
        elif node.id in (*_BY_NAME, *_GETTERS) and id(node) not in self.called \
                and (node.id not in self.names.shadowed or node.id in _GETTERS):
            self.note(node, f"{node.id} passed around as a value (attributes by computed names)")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in _DISPATCH_HOOKS:
            self.note(node, f"a tensor type's own dispatch ({node.name})")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        if isinstance(function, ast.Name):
            self.called.add(id(function))
        getter = function.id if isinstance(function, ast.Name) else \
            function.attr if isinstance(function, ast.Attribute) else ""
        if getter in _GETTERS:
            self.called.add(id(function))
            spelt = [a for a in node.args[:1 if getter == "methodcaller" else None]]
            if not all(isinstance(a, ast.Constant) and isinstance(a.value, str)
                       and not a.value.startswith("_") for a in spelt):
                self.note(node, f"attributes by computed or private names ({getter})")
        if isinstance(function, ast.Name) and function.id in _BY_NAME \
                and function.id not in self.names.shadowed:
            self.by_name(node, function.id)
        if isinstance(function, ast.Name) and function.id == "open" \
                and "open" not in self.names.shadowed:
            path = node.args[0] if node.args else None
            if not (isinstance(path, ast.Constant) and isinstance(path.value, str)):
                self.note(node, "a file opened by a computed path")
        if isinstance(function, ast.Attribute) and function.attr in _MAGIC_CALLS:
            self.magic(node)
        if isinstance(function, ast.Attribute) and function.attr in _SHELL_CALLS \
                and _is_shell(function.value, self.names.shells):
            self.note(node, "a shell command (a ! line)")
        self.generic_visit(node)

    def by_name(self, node: ast.Call, builtin: str) -> None:
        """getattr & co.: a name the cell spells out is read as such; a computed one could be
        anything."""
        if len(node.args) < 2:
            return
        name = node.args[1]
        if isinstance(name, ast.Name) and self.names.spelt_out(name.id):
            return  # an attribute name the cells spell out (none private)
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            owner = node.args[0]
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                return  # an object of the student's own class: its own attributes
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
                                                   self.deadline, self.names):
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
