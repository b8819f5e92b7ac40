"""Each notebook of the site as a zip a reader can run away from the course.

The zip holds the worked notebook, the sibling notebooks it loads (any ``NN_name.ipynb`` named in
its code or in the course modules it imports, as :mod:`mlmcourse.teaching.loader` names notebooks
1 and 3), the ``mlmcourse`` modules it imports with everything they import in turn (so
``import mlmcourse.teaching...`` works from the unzipped folder), the data files beside them, and
``HOW-TO-RUN.txt``: the libraries to install, pinned as the course pins them, and the command.
Everything is derived from the notebook's code, never listed by hand.
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import nbformat

PACKAGE = "mlmcourse"
BUNDLES = "downloads/zip"
HOW_TO_RUN = "HOW-TO-RUN.txt"
_NOTEBOOK_NAME = re.compile(r"\b\d\d_\w+\.ipynb\b")
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)")
ALWAYS = ("jupyterlab",)  # what opens the notebook


def _code(nb: nbformat.NotebookNode) -> str:
    return "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")


def _imports(source: str, module: str = "") -> set[str]:
    """Absolute names of the modules `source` imports (relative imports resolved)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a notebook cell with IPython magic
        tree = ast.parse("\n".join(line for line in source.splitlines()
                                   if not line.lstrip().startswith(("%", "!"))))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = module.split(".")[: -node.level] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
    return found


def _module_file(root: Path, name: str) -> Path | None:
    path = root.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def course_modules(root: Path, source: str) -> tuple[dict[str, Path], set[str]]:
    """The package's modules `source` needs, with their parents' __init__ (name -> file), and
    the other top-level modules they import."""
    needed: dict[str, Path] = {}
    outside: set[str] = set()
    waiting = sorted(_imports(source))
    while waiting:
        name = waiting.pop()
        top = name.split(".")[0]
        if top != PACKAGE:
            outside.add(top)
            continue
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):
            parent = ".".join(parts[:depth])
            path = _module_file(root, parent)
            if path is not None and parent not in needed:
                needed[parent] = path
                waiting.extend(_imports(path.read_text(encoding="utf-8"), parent if
                                        path.name == "__init__.py" else parent))
    return needed, outside


def _data_files(module_files: list[Path]) -> list[Path]:
    """Data folders beside the modules (e.g. teaching/data/): what they read at run time."""
    found = []
    for folder in {path.parent for path in module_files}:
        data = folder / "data"
        if data.is_dir():
            found.extend(p for p in sorted(data.rglob("*")) if p.is_file()
                         and "__pycache__" not in p.parts)
    return found


def requirements(root: Path, outside: set[str]) -> list[str]:
    """The libraries behind the imported top-level modules, pinned as the course pins them."""
    distributions = packages_distributions()
    names = {dist for top in outside if top not in sys.stdlib_module_names
             for dist in distributions.get(top, [])}
    names.update(ALWAYS)
    pins = {}
    for listing in sorted((root / "requirements").glob("*.txt")):
        for line in listing.read_text(encoding="utf-8").splitlines():
            match = _PIN.match(line.strip())
            if match:
                pins.setdefault(match.group(1).lower(), match.group(2))
    return sorted(f"{name}=={pins[name.lower()]}" if name.lower() in pins else name
                  for name in names)


def _closure(root: Path, worked: Path) -> tuple[list[str], dict[str, Path], set[str]]:
    """The sibling notebooks `worked` loads, and the modules it and they import, until nothing
    new turns up (a sibling's own imports run when it is loaded)."""
    notebooks = {worked.name}
    while True:
        code = "\n".join(_code(nbformat.read(str(worked.parent / name), as_version=4))
                         for name in sorted(notebooks) if (worked.parent / name).is_file())
        modules, outside = course_modules(root, code)
        sources = code + "".join(p.read_text(encoding="utf-8") for p in modules.values())
        found = notebooks | set(_NOTEBOOK_NAME.findall(sources))
        if found == notebooks:
            return sorted(notebooks - {worked.name}), modules, outside
        notebooks = found


def sibling_notebooks(root: Path, notebook: Path) -> list[str]:
    """The file names of the sibling notebooks `notebook` loads (beside it), found in its code
    and in the modules of the package under `root` that it imports."""
    return _closure(root, notebook)[0]


def run_note(notebook: str, needs: list[str]) -> str:
    return (f"Unzip it, then in that folder: python -m venv .venv; "
            f".venv/bin/pip install {' '.join(needs)}; .venv/bin/jupyter lab {notebook}")


def write_bundle(root: Path, worked: Path, out: Path) -> tuple[Path, str]:
    """Write out/<stem>.zip for the worked notebook at `worked`; return its path and the one
    line that says how to run it."""
    siblings, modules, outside = _closure(root, worked)
    needs = requirements(root, outside)
    note = run_note(worked.name, needs)
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{worked.stem}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.write(worked, worked.name)
        for sibling in siblings:
            if (worked.parent / sibling).is_file():
                bundle.write(worked.parent / sibling, sibling)
        for path in sorted(set(modules.values()) | set(_data_files(list(modules.values())))):
            bundle.write(path, path.relative_to(root).as_posix())
        bundle.writestr(HOW_TO_RUN, _how_to_run(worked.name, siblings, needs))
    return target, note


def _how_to_run(notebook: str, siblings: list[str], needs: list[str]) -> str:
    loads = (f"It loads {', '.join(siblings)} (here beside it) for the functions written "
             "there.\n" if siblings else "")
    return (f"{notebook}: the worked notebook of the BERT masked-LM course, with what it needs.\n"
            f"{loads}The folder mlmcourse/ holds the course's helpers it imports.\n\n"
            "To run it (Python 3.11 or later), in this folder:\n\n"
            "    python -m venv .venv\n"
            f"    .venv/bin/pip install {' '.join(needs)}\n"
            f"    .venv/bin/jupyter lab {notebook}\n\n"
            "then Run > Run All Cells.\n")


__all__ = ["BUNDLES", "HOW_TO_RUN", "course_modules", "requirements", "write_bundle"]
