"""`bench floor`: the hidden tests' own compute on the reference, in one plain kernel, beside the
grading engine's time for the same notebooks in the same run.

The floor below which no grader of this course can go: the instructor's notebooks (reference
solutions and hidden tests in place), cut to the cells grading runs (`grader.engine.slicing`),
executed by an ordinary Jupyter kernel with no sandbox, no worker and no copies across a boundary.
Each
notebook reports the summed execution time of its cells (the kernel's own start apart), so the
README can set the engine's time per submission beside it. Each kernel imports the libraries
the grader's fork server preloads (torch, matplotlib...) in a first cell that is not counted:
the engine does not pay for them per notebook either. Then the engine grades the reference's
notebooks (`grader.engine.submission.grade_submission`, the sandbox and its fork server started once
first, as in a grading run) and each notebook's engine time is set beside its floor.
`MLMCOURSE_BENCH_NOTEBOOKS=N`: the first N notebooks of the series only (as `bench grading`).
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import tempfile
import time
from pathlib import Path

import nbformat

from mlmcourse.course import nbio
from mlmcourse.course.cells import is_graded
from mlmcourse.course.layout import SERIES, find_root, notebook_names
from mlmcourse.grader.engine.slicing import skip_unneeded

FIRST_NOTEBOOKS = int(os.environ.get("MLMCOURSE_BENCH_NOTEBOOKS", "0"))  # 0: all
WARM_UP = "import " + ", ".join(("torch", "numpy", "matplotlib", "matplotlib.pyplot", "IPython"))


def cell_seconds(nb) -> float:
    """Summed execution time of a notebook's cells but the first (the warm-up), from nbclient's
    timing metadata."""
    from datetime import datetime

    total = 0.0
    for cell in nb.cells[1:]:
        timing = cell.get("metadata", {}).get("execution", {})
        start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        if start and end:
            parse = datetime.fromisoformat
            total += (parse(end.replace("Z", "+00:00")) - parse(start.replace("Z", "+00:00"))
                      ).total_seconds()
    return total


def measured_notebooks(root: Path) -> list[str]:
    names = notebook_names(root, SERIES)
    return names[:FIRST_NOTEBOOKS] if FIRST_NOTEBOOKS else names


@contextlib.contextmanager
def as_under_grading():
    """NBGRADER_EXECUTION set, as under grading (the sliders stay off), for the kernels started
    inside; the process's own setting comes back afterwards."""
    before = os.environ.get("NBGRADER_EXECUTION")
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("NBGRADER_EXECUTION", None)
        else:
            os.environ["NBGRADER_EXECUTION"] = before


def floor(root: Path) -> dict[str, tuple[float, float]]:
    """{notebook: (seconds of its cells, wall seconds with the kernel's start)}."""
    from nbclient import NotebookClient

    results = {}
    with tempfile.TemporaryDirectory(prefix="mlm-floor-") as tmp, as_under_grading():
        folder = Path(tmp) / SERIES
        shutil.copytree(root / "source" / SERIES, folder)
        for name in measured_notebooks(root):
            source = nbio.read(folder / f"{name}.ipynb")
            if not any(is_graded(cell) for cell in source.cells):
                results[name] = (0.0, 0.0)
                continue
            executed = copy.deepcopy(source)
            skip_unneeded(source, executed, answers_in_kernel=True)  # one kernel runs all
            executed.cells.insert(0, nbformat.v4.new_code_cell(WARM_UP))
            started = time.perf_counter()
            NotebookClient(executed, kernel_name="python3", timeout=600, record_timing=True,
                           resources={"metadata": {"path": str(folder)}}).execute()
            results[name] = (cell_seconds(executed), time.perf_counter() - started)
    return results


def engine_seconds(root: Path) -> dict[str, float]:
    """The engine's time per notebook for the reference (its fork server started first)."""
    from mlmcourse.build.samples import load_sample, write_notebooks
    from mlmcourse.grader.engine.submission import grade_submission
    from mlmcourse.grader.processes.zygote_handle import get_zygote

    reference = load_sample(root / "samples" / "reference.py", notebook_names(root, SERIES))
    names = [name for name in measured_notebooks(root) if name in reference.notebooks]
    with tempfile.TemporaryDirectory(prefix="mlm-floor-engine-") as tmp:
        folder = Path(tmp) / "submitted"
        write_notebooks(root, reference, folder, names)
        get_zygote()
        verdicts = grade_submission(root, "reference", folder, Path(tmp) / "scratch",
                                    notebooks=names)
    return {verdict.notebook: verdict.seconds for verdict in verdicts}


def main() -> int:
    root = find_root()
    results = floor(root)
    engine = engine_seconds(root)
    print("| notebook | the cells' compute (floor) | wall, kernel start included | engine | "
          "engine / floor |")
    print("| --- | --- | --- | --- | --- |")
    for name, (cells, wall) in results.items():
        ratio = f"{engine.get(name, 0.0) / cells:.2f}x" if cells else "-"
        print(f"| {name} | {cells:.2f} s | {wall:.2f} s | {engine.get(name, 0.0):.2f} s | "
              f"{ratio} |")
    cells = sum(c for c, _ in results.values())
    wall = sum(w for _, w in results.values())
    total = sum(engine.values())
    print(f"| one whole submission | **{cells:.2f} s** | {wall:.2f} s | **{total:.2f} s** | "
          f"**{total / cells:.2f}x** |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
