"""The package's house rules: rooms import only the rooms below them, and no module imports
itself back through others. AUTHORING.md draws the same map."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "mlmcourse"
MAX_LINES = 600

# room -> the rooms it may import (besides itself). Top-level modules (cli, lab, check) are the
# front doors and may import every room.
ALLOWED = {
    "course": set(),
    "exchange": set(),
    "grader": {"course"},
    "teaching": {"course"},
    "build": {"course", "grader"},
    "report": {"course", "grader"},
    "lms": {"course", "grader"},
    "bench": {"course", "grader", "teaching", "build", "report"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """Modules of the package that `path` imports, anywhere in the file (also inside functions)."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    modules = set(paths)
    return {name: imported_modules(path, modules) - {name, "mlmcourse"}
            for name, path in paths.items()}


def room(module: str) -> str:
    """'grader' for mlmcourse.grader.engine.submission; '' for a front door (mlmcourse.cli)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else ""


def test_rooms_import_only_the_rooms_below_them():
    wrong = []
    for module, imports in sorted(import_graph().items()):
        mine = room(module)
        if mine not in ALLOWED:
            continue  # a front door: cli, lab, check, __main__
        for target in sorted(imports):
            theirs = room(target)
            if theirs != mine and theirs not in ALLOWED[mine]:
                wrong.append(f"{module} imports {target}")
    assert not wrong, "imports against the package map (AUTHORING.md):\n" + "\n".join(wrong)


def test_no_import_circles():
    graph = import_graph()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            for nxt in graph.get(node, ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    circles = sorted({" <-> ".join(sorted((a, b))) for a in graph for b in graph[a]
                      if reaches(b, a)})
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_no_module_is_too_long_to_hold_in_ones_head():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by responsibility): {long}"


def test_the_authoring_map_names_every_room():
    text = (ROOT / "AUTHORING.md").read_text(encoding="utf-8")
    missing = [name for name in ALLOWED if f"{name}/" not in text]
    assert not missing, f"AUTHORING.md's package map does not mention: {missing}"


# The untrusted side imports only what it needs to talk and to run cells; nothing trusted
# imports it (a module the student's process can change must never shape the trusted side).
STUDENT_SIDE = "mlmcourse.grader.sandboxed.student_side"
STUDENT_SIDE_MAY_IMPORT = {
    "mlmcourse.grader.wire", "mlmcourse.grader.wire.protocol", "mlmcourse.grader.wire.codec",
    "mlmcourse.grader.wire.framing", "mlmcourse.grader.wire.hygiene",
    "mlmcourse.grader.limits",  # the caps, declared once: plain data
    "mlmcourse.course.cells", "mlmcourse.course", "mlmcourse.grader"}


def test_the_student_side_imports_only_the_protocol_the_codec_and_the_cell_runner():
    graph = import_graph()
    extra = graph[STUDENT_SIDE] - STUDENT_SIDE_MAY_IMPORT
    assert not extra, extra
    importers = sorted(module for module, imports in graph.items()
                       if STUDENT_SIDE in imports and module not in (
                           "mlmcourse.grader.processes.zygote",
                           "mlmcourse.grader.sandboxed.student_zygote"))
    assert not importers, f"trusted modules import the student process: {importers}"


def test_every_module_of_the_grader_is_on_the_map():
    text = (ROOT / "AUTHORING.md").read_text(encoding="utf-8")
    grader = PACKAGE / "grader"
    missing = [p.relative_to(grader).with_suffix("").as_posix() for p in grader.rglob("*.py")
               if p.stem != "__init__" and p.stem not in text]
    missing += [f"{folder.name}/" for folder in grader.iterdir()
                if (folder / "__init__.py").is_file() and f"{folder.name}/" not in text]
    assert not missing, f"AUTHORING.md's package map does not mention: {missing}"


# The grader's folders by job, each named for the process its code runs in or the job it does:
# folder -> the folders it may import. The modules at the grader's top are the settings every
# folder reads (config, limits) and nbgrader's front door (nbgrader_plugin, dialog), which no
# folder imports.
GRADER_SETTINGS = {"config", "limits"}
GRADER_ALLOWED = {
    "wire": set(),
    "results": set(),
    "sandboxed": {"wire", "processes"},  # the fork server in bwrap shares the zygote's reaper
    "trusted_kernel": {"wire", "results"},
    "processes": {"sandboxed", "trusted_kernel", "wire"},  # it starts them
    "engine": {"processes", "results"},
    "class_run": {"engine", "processes", "results"},
}


def grader_room(module: str) -> str:
    """'engine' for mlmcourse.grader.engine.submission; a top module's own name otherwise."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def test_the_graders_folders_import_only_the_folders_below_them():
    wrong = []
    for module, imports in sorted(import_graph().items()):
        mine = grader_room(module) if module.startswith("mlmcourse.grader.") else None
        if mine not in GRADER_ALLOWED:
            continue
        for target in sorted(imports):
            if not target.startswith("mlmcourse.grader."):
                continue
            theirs = grader_room(target)
            if theirs != mine and theirs not in GRADER_ALLOWED[mine] | GRADER_SETTINGS:
                wrong.append(f"{module} imports {target}")
    assert not wrong, "imports against the grader's map (AUTHORING.md):\n" + "\n".join(wrong)
