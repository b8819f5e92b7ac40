"""`make build`: regenerate release/, notebooks/, submitted/ samples, autograded/ and feedback/."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import nbformat

from mlmcourse.build.graded import build_graded, files_digest, stale_samples
from mlmcourse.build.samples import load_samples
from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    STUDENTS_ONLY_TAG,
    is_graded,
    is_hidden_helper,
    is_solution,
    without_hidden_tests,
    without_solution_markers,
)
from mlmcourse.course.headings import (
    CheckHeading,
    check_headings,
    heading_text,
    is_heading_only,
    is_test_cell,
)
from mlmcourse.course.layout import SERIES, assignments, source_notebooks
from mlmcourse.grader.config import run_nbgrader

STAGES = ("release", "notebooks", "graded")
MANIFEST = "build-manifest.json"
# What each edition is made from: it is stale when any of these files changed. The rooms of
# the package a generated file can depend on (the notebooks import course and teaching; the
# build and the grader make them); the class report, the exchange, the benchmarks and the
# front doors make none of them.
PACKAGE_INPUTS = ("mlmcourse/__init__.py", "mlmcourse/course", "mlmcourse/teaching",
                  "mlmcourse/build", "mlmcourse/grader")
STAGE_INPUTS = {
    "release": ("source", "nbgrader_config.py"),
    "notebooks": ("source", *PACKAGE_INPUTS),
}  # the graded stage keeps a key per sample instead (build/graded.py)
# Every notebook opens on its idea (title, what you will be able to do, the points, one line
# pointing here) and ends with this section: how to work on the graded exercise and what the
# grader cannot check (cells tagged `students-only`), and in the reading edition the note for
# readers instead. tests/test_sources.py holds every source notebook to that layout.
WORKING_TITLE = "Working on this notebook"
READER_NOTE = (
    "**Reading edition.** This copy is worked: each answer is filled in but folded away, so you "
    "can try it in your head first (in JupyterLab click the blue bar left of the folded cell; "
    "on the web page, *Show the solution*). The hidden grading tests are left out and the outputs "
    "come from a real run. To do the exercise yourself, run `make lab` and open the same "
    "notebook under `work/bert_mlm/` (your own copy of the release), then grade your attempt "
    "offline with `make check NB=work/bert_mlm/<notebook>.ipynb`."
)


def build_release(root: Path) -> None:
    """nbgrader generate_assignment for every assignment of source/: solutions become stubs,
    hidden tests disappear."""
    for assignment in assignments(root):
        release = root / "release" / assignment
        if release.exists():
            shutil.rmtree(release)
        run_nbgrader(root, "generate_assignment", assignment, "--force")
        for path in sorted(release.glob("*.ipynb")):
            nbio.write(nbio.read(path), path)  # one serialization for every generated file


HIDDEN_TESTS_TITLE = "What the hidden tests check"
HIDDEN_TESTS_NOTE = (
    "The tests themselves are left out of this edition; `make check` runs them on your own "
    "attempt."
)


def reading_edition(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Solutions shown (collapsed on first open), hidden tests gone, no outputs yet.

    Cells tagged `students-only` (how to work on the graded exercise) and hidden helper cells
    (only the graded tests use them) are dropped, and a notebook with answers gets a note for
    readers in its closing section, "Working on this notebook". Each run of graded test
    sections (a heading and a cell that shows only a docstring) becomes one list of what the
    hidden tests check.
    """
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb = nbio.clean_source_notebook(nb)
    drop = TagRemovePreprocessor(remove_cell_tags={STUDENTS_ONLY_TAG})
    nb, _ = drop.preprocess(nb, {})
    nb.cells = [cell for cell in nb.cells if not is_hidden_helper(cell)]
    nb.cells = with_test_lists(nb.cells, check_headings(nb))
    if any(is_solution(cell) for cell in nb.cells):
        nb.cells.insert(working_section(nb.cells) + 1, nbformat.v4.new_markdown_cell(READER_NOTE))
    for cell in nb.cells:
        if is_solution(cell):
            cell.source = without_solution_markers(cell.source)
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
        elif is_graded(cell):
            cell.source = without_hidden_tests(cell.source)
    return nb


def working_section(cells: list) -> int:
    """The index of the heading of the closing section "Working on this notebook"; a notebook
    without one (an instructor's new notebook) gets it as its last cell."""
    for index, cell in enumerate(cells):
        if heading_text(cell) == WORKING_TITLE:
            return index
    cells.append(nbformat.v4.new_markdown_cell(f"## {WORKING_TITLE}"))
    return len(cells) - 1


def test_sections(cells: list) -> set[int]:
    """Indices of the cells that make up graded test sections: each test cell, the heading-only
    cell right above it, and heading-only part headings directly above those ("### Part A")."""
    dropped: set[int] = set()
    for index in reversed(range(len(cells))):
        below = index + 1
        if is_test_cell(cells[index]):
            dropped.add(index)
        elif is_heading_only(cells[index]) and below in dropped:
            dropped.add(index)
    return dropped


def with_test_lists(cells: list, headings: dict[str, CheckHeading]) -> list:
    """The cells with each run of graded test sections replaced by one markdown list."""
    dropped = test_sections(cells)
    kept, run, lists = [], [], 0
    for index, cell in enumerate(cells + [None]):  # None: the end closes the last run
        if index in dropped:
            run.append(cell)
            continue
        if run:
            kept.append(test_list_cell(run, headings, with_note=lists == 0))
            run, lists = [], lists + 1
        if cell is not None:
            kept.append(cell)
    return kept


def test_list_cell(run: list, headings: dict[str, CheckHeading],
                   with_note: bool) -> nbformat.NotebookNode:
    """"What the hidden tests check": one line per test (label, points, docstring), under the
    part headings the run had; the first list of a notebook says where the tests went."""
    checks = [headings[cell.metadata.nbgrader.grade_id] for cell in run if is_test_cell(cell)]
    total = _points(sum(check.points for check in checks))
    note = f" {HIDDEN_TESTS_NOTE}" if with_note else ""
    lines = [f"**{HIDDEN_TESTS_TITLE}** ({total}).{note}", ""]
    # In a run, a heading followed by another heading opens a part ("### Part A"); a heading
    # followed by its test cell names that check.
    parts = {i for i in range(len(run) - 1)
             if not is_test_cell(run[i]) and not is_test_cell(run[i + 1])}
    for position, cell in enumerate(run):
        if position in parts:
            lines += ([""] if position else []) + [f"*{heading_text(cell)}*", ""]
        elif is_test_cell(cell):
            check = headings[cell.metadata.nbgrader.grade_id]
            lines.append(f"- **{check.label}** ({_points(check.points)}): "
                         f"{_markdown_text(check.what or check.title)}")
    return nbformat.v4.new_markdown_cell("\n".join(lines).rstrip() + "\n")


def _points(value: float) -> str:
    number = f"{value:g}"
    return f"{number} point" if number == "1" else f"{number} points"


def _markdown_text(text: str) -> str:
    """A docstring as literal markdown text: characters markdown or MathJax would read escaped."""
    return "".join("\\" + char if char in "\\`*_[]<>|$#" else char for char in text)


def build_reading_edition(root: Path, timeout: int = 600) -> None:
    """Write notebooks/ from source/, then execute every notebook there with outputs."""
    import asyncio

    folder = root / "notebooks"
    folder.mkdir(exist_ok=True)
    for stale in folder.glob("*.ipynb"):
        stale.unlink()
    editions = {}
    for path in source_notebooks(root, SERIES):  # the worked series
        editions[path.name] = reading_edition(nbio.read(path))
        nbio.write(editions[path.name], folder / path.name)  # siblings readable by loaders
    asyncio.run(_execute_all(editions, folder, timeout))
    for name, nb in editions.items():
        for cell in nb.cells:
            nbio.strip_execution_metadata(cell)
            if "outputs" in cell:
                cell.outputs = nbio.merge_streams(cell.outputs)
            if is_graded(cell):  # only a docstring is left: do not echo it back as Out[n]
                cell.outputs = [o for o in cell.outputs if o.output_type != "execute_result"]
        nbio.stable_cell_ids(nb)
        nbio.write(nb, folder / name)


# Kernels that run the reading edition at once: one per core of the machine the course is
# built on (2); each notebook's outputs do not depend on what runs beside it.
EDITION_KERNELS = 2


async def _execute_all(editions: dict, folder: Path, timeout: int) -> None:
    """Execute the notebooks in place, `EDITION_KERNELS` kernels at a time, each with a clean
    environment (no NBGRADER_EXECUTION, the inline plot backend)."""
    import asyncio

    from nbclient import NotebookClient

    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    slots = asyncio.Semaphore(EDITION_KERNELS)

    async def execute(nb) -> None:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(folder)}},
                                store_widget_state=True, record_timing=False)
        async with slots:
            await client.async_execute(env=env)  # passed on to the kernel manager

    await asyncio.gather(*(execute(nb) for nb in editions.values()))


# The stages made from a digest of their inputs, by what makes them.
EDITIONS = {"release": build_release, "notebooks": build_reading_edition}


def read_manifest(root: Path) -> dict:
    path = root / MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def stale_stages(root: Path, stages: Iterable[str] = STAGES) -> list[str]:
    """Those of `stages` whose inputs changed since the manifest was written: the editions by
    their digest, the graded stage when some sample is to be regraded or removed."""
    manifest = read_manifest(root)
    stale = [stage for stage in EDITIONS if stage in stages
             and manifest.get(stage) != files_digest(root, STAGE_INPUTS[stage])]
    if "graded" in stages and stale_samples(root, recorded_keys(manifest), load_samples(root)):
        stale.append("graded")
    return stale


def recorded_keys(manifest: dict) -> dict[str, str]:
    """The samples' keys the manifest holds ({} from a manifest of another layout)."""
    keys = manifest.get("graded")
    return keys if isinstance(keys, dict) else {}


def build(root: Path, stages: Iterable[str] = STAGES, log=print, full: bool = False) -> None:
    """Run the given stages in order and record what they were built from (`full`: regrade
    every sample, not only those whose inputs changed)."""
    # Generated files must not depend on what this machine has cached: notebook 6 uses the small
    # locally built BERT even where bert-base-uncased happens to be in the Hugging Face cache.
    os.environ["MLMCOURSE_BERT_STANDIN"] = "1"
    manifest = read_manifest(root)
    for stage in STAGES:
        if stage not in stages:
            continue
        log(f"build: {stage} ...")
        if stage == "graded":
            samples = load_samples(root)
            manifest[stage] = build_graded(root, recorded_keys(manifest), samples, full, log)
        else:
            EDITIONS[stage](root)
            manifest[stage] = files_digest(root, STAGE_INPUTS[stage])
        (root / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
