"""Sample submissions: the reference, the blank release and typical students, from samples/."""

from __future__ import annotations

import functools
import importlib.util
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    cells_by_grade_id,
    is_solution,
    total_points,
    without_solution_markers,
)
from mlmcourse.course.layout import SERIES, notebook_names

Patches = dict[str, dict[str, list[tuple[str, str]]]]


@dataclass
class SampleStudent:
    """One sample student, as described by samples/<student_id>.py."""

    student_id: str
    summary: str
    base: str = "reference"
    notebooks: list[str] = field(default_factory=list)
    cells: dict[str, dict[str, str]] = field(default_factory=dict)
    patches: Patches = field(default_factory=dict)
    expected: dict[str, float] = field(default_factory=dict)
    # The phrase the first failing message of each notebook must show (it names the mistake).
    shows: dict[str, str] = field(default_factory=dict)
    transform: Callable[[str, nbformat.NotebookNode], None] | None = None


def load_sample(path: Path, all_notebooks: list[str]) -> SampleStudent:
    spec = importlib.util.spec_from_file_location(f"mlm_sample_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))  # what several samples share: samples/_name.py
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    base = getattr(module, "BASE", "reference")
    if base not in ("reference", "release"):
        raise ValueError(f"{path}: BASE must be 'reference' or 'release', not {base!r}")
    cells = getattr(module, "CELLS", {})
    patches = getattr(module, "PATCHES", {})
    expected = getattr(module, "EXPECTED", {})
    notebooks = getattr(module, "NOTEBOOKS", None)
    if notebooks == "all":
        notebooks = list(all_notebooks)
    elif notebooks is None:
        notebooks = sorted(set(cells) | set(patches) | set(expected))
    unknown = set(notebooks) - set(all_notebooks)
    if unknown:
        raise ValueError(f"{path}: no such notebook(s) in the series: {sorted(unknown)}")
    return SampleStudent(
        student_id=path.stem,
        summary=(module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else "",
        base=base,
        notebooks=notebooks,
        cells=cells,
        patches=patches,
        expected=expected,
        shows=getattr(module, "SHOWS", {}),
        transform=getattr(module, "transform", None),
    )


def load_samples(root: Path) -> list[SampleStudent]:
    names = notebook_names(root, SERIES)
    return [load_sample(path, names) for path in sorted((root / "samples").glob("[a-z]*.py"))]


def reference_notebook(root: Path, name: str) -> nbformat.NotebookNode:
    """The release notebook with every solution cell filled in from the source."""
    release = nbio.read(root / "release" / SERIES / f"{name}.ipynb")
    source_cells = cells_by_grade_id(nbio.read(root / "source" / SERIES / f"{name}.ipynb"))
    for cell in release.cells:
        if is_solution(cell):
            gid = cell.metadata.nbgrader.grade_id
            cell.source = without_solution_markers(source_cells[gid].source)
    return release


def apply_patches(student: SampleStudent, name: str, nb: nbformat.NotebookNode) -> None:
    by_id = cells_by_grade_id(nb)
    for gid, source in student.cells.get(name, {}).items():
        _cell(by_id, gid, student).source = source
    for gid, edits in student.patches.get(name, {}).items():
        cell = _cell(by_id, gid, student)
        for old, new in edits:
            count = cell.source.count(old)
            if count != 1:
                raise ValueError(
                    f"sample {student.student_id}: patch text for {name}/{gid} occurs {count} "
                    f"times (must be exactly once): {old!r}"
                )
            cell.source = cell.source.replace(old, new)
    if student.transform is not None:
        student.transform(name, nb)


def _cell(by_id: dict, gid: str, student: SampleStudent) -> nbformat.NotebookNode:
    if gid not in by_id:
        raise ValueError(f"sample {student.student_id}: no cell with grade_id {gid!r}")
    return by_id[gid]


def sample_notebook(
    root: Path, sample: SampleStudent, name: str
) -> nbformat.NotebookNode | None:
    """What this sample student hands in for notebook `name` (None when they hand in none):
    the reference or the blank release, then the sample's cells, patches and transform."""
    if name not in sample.notebooks:
        return None
    if sample.base == "reference":
        nb = reference_notebook(root, name)
    else:
        nb = nbio.read(root / "release" / SERIES / f"{name}.ipynb")
    apply_patches(sample, name, nb)
    return nb


# When the sample class handed in, as nbgrader's `submit` writes it into timestamp.txt (fixed:
# a rebuild writes the same files; the formgrader shows it instead of "None").
SUBMITTED_AT = "2026-01-15 17:00:00.000000 UTC"


def write_notebooks(root: Path, student: SampleStudent, folder: Path,
                    names: list[str] | None = None) -> None:
    """`student`'s notebooks `names` (default: every one it hands in), made from the course at
    `root`, as folder/<name>.ipynb."""
    for name in student.notebooks if names is None else names:
        nbio.write(sample_notebook(root, student, name), folder / f"{name}.ipynb")


def build_submissions(root: Path, students: list[SampleStudent] | None = None
                      ) -> list[SampleStudent]:
    """Write submitted/<student>/bert_mlm/*.ipynb and timestamp.txt for every sample student
    (`students`, default: every one in samples/), from scratch."""
    students = load_samples(root) if students is None else students
    submitted = root / "submitted"
    if submitted.exists():
        shutil.rmtree(submitted)
    for student in students:
        folder = submitted / student.student_id / SERIES
        write_notebooks(root, student, folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "timestamp.txt").write_text(SUBMITTED_AT + "\n")
    return students


def expected_scores(root: Path, student: SampleStudent) -> dict[str, float]:
    """What the autograder must give: EXPECTED where stated, else full marks / zero by BASE."""
    scores = {}
    for name in student.notebooks:
        if name in student.expected:
            scores[name] = float(student.expected[name])
        elif student.base == "reference":
            nb = nbio.read(root / "source" / SERIES / f"{name}.ipynb")
            scores[name] = total_points(nb)
        else:
            scores[name] = 0.0
    return scores


@functools.cache
def _siblings(source: Path) -> tuple[str, ...]:
    from mlmcourse.build.bundles import sibling_notebooks

    package_root = Path(__file__).resolve().parents[2]  # the modules the notebook imports
    return tuple(Path(name).stem for name in sibling_notebooks(package_root, source))


def loaded_siblings(root: Path, name: str) -> tuple[str, ...]:
    """The notebooks of the series whose answers notebook `name` loads (notebooks 4 to 6 load
    notebook 1's and 3's), derived from its code as the site's zips are (`bundles`)."""
    return _siblings((Path(root) / "source" / SERIES / f"{name}.ipynb").resolve())


def sample_home(root: Path, sample: SampleStudent, name: str, home: Path) -> Path:
    """A student's home as a hub leaves it: bert_mlm/ with the reference of every notebook, and
    notebook `name` (with the siblings it loads answers from) as `sample` hands it in; no
    nbgrader configuration. Returns the notebook's path."""
    reference = load_sample(root / "samples" / "reference.py", notebook_names(root, SERIES))
    theirs = {name, *loaded_siblings(root, name)}
    folder = home / SERIES
    for other in notebook_names(root, SERIES):
        handed_in = sample_notebook(root, sample, other) if other in theirs else None
        nbio.write(handed_in or sample_notebook(root, reference, other),
                   folder / f"{other}.ipynb")
    return folder / f"{name}.ipynb"


# ---- each sample's verdicts, as committed: what the grader decided, check by check ---------------

VERDICTS = Path("samples") / "verdicts"  # one JSON file per sample student (written by the build)


def verdict_summary(verdict) -> dict:
    """What a sample's committed verdict file holds of one notebook: status, score, each
    check's points and message (in the notebook's order), the incidents and the answers left
    as released (no times)."""
    return {
        "status": str(verdict.status),
        "score": verdict.score,
        "max_score": verdict.max_score,
        "checks": [[c.grade_id, c.points, c.message] for c in verdict.checks],
        "incidents": [[str(i.kind), i.detail] for i in verdict.incidents],
        "unanswered": list(verdict.unanswered),
    }


def graded_verdicts(root: Path, student_id: str) -> dict:
    """{notebook: verdict summary} of a student's autograded notebooks under `root`."""
    from mlmcourse.grader.results.verdict import verdict_of

    folder = root / "autograded" / student_id / SERIES
    found = {}
    for path in sorted(folder.glob("*.ipynb")):
        verdict = verdict_of(nbio.read(path))
        if verdict is not None:
            found[path.stem] = verdict_summary(verdict)
    return found


def committed_verdicts(root: Path, student_id: str) -> dict:
    """A sample's committed verdicts (samples/verdicts/<id>.json), {} where there are none."""
    import json

    path = root / VERDICTS / f"{student_id}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def verdicts_text(verdicts: dict) -> str:
    import json

    return json.dumps(verdicts, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_verdicts(root: Path, students: list[SampleStudent]) -> None:
    """samples/verdicts/<student>.json for these sample students (the others' stay)."""
    folder = root / VERDICTS
    folder.mkdir(parents=True, exist_ok=True)
    for student in students:
        text = verdicts_text(graded_verdicts(root, student.student_id))
        (folder / f"{student.student_id}.json").write_text(text, encoding="utf-8")
