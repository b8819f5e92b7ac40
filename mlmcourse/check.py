"""Self-check: run the hidden tests on a learner's own notebook, offline, without touching it.

The notebook is read and graded as the TA's grading reads and grades a submission
(`grader.class_run.coordinator`: `submission_files`, then the Dask task's own `grade_task`, run
here in-process): the tests come from ``source/``, the learner's answer cells run in the
sandboxed student process, and the learner's file is only read (its sibling notebooks too, for
the notebooks that load functions from earlier ones). The limits and the sandbox mode are the
course's (`c.Grading` in its nbgrader_config.py, read by `GradingConfig`), as for `make grade`
and `nbgrader autograde`: the same notebook gets the same score on every way in.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from mlmcourse.course import nbio
from mlmcourse.course.headings import check_headings
from mlmcourse.course.layout import assignments, notebook_names
from mlmcourse.grader.class_run.coordinator import (
    GraderFailure,
    course_snapshot,
    grade_task,
    submission_files,
)
from mlmcourse.grader.config import SANDBOX_VARIABLE, GradingConfig
from mlmcourse.grader.limits import CAPS, Limits
from mlmcourse.grader.processes.sandbox import UNSAFE, SandboxRefused
from mlmcourse.grader.processes.zygote_handle import stop_zygote
from mlmcourse.grader.results.verdict import Check, Kind, Status, Verdict

STUDENT = "self_check"

__all__ = ["STUDENT", "Check", "CheckError", "all_passed", "check_names", "check_notebook",
           "check_result", "identify", "locate", "report"]


class CheckError(Exception):
    """A notebook the self-check cannot take; the message is one line that says what to do."""


def _grade_ids(path: Path) -> set[str]:
    """The nbgrader grade_ids of a notebook's cells, read as plain JSON (no validation: a
    learner's copy from any Jupyter version will do)."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return {cell["metadata"]["nbgrader"]["grade_id"] for cell in cells
                if isinstance(cell.get("metadata", {}).get("nbgrader"), dict)
                and "grade_id" in cell["metadata"]["nbgrader"]}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        raise CheckError(f"{path.name} is not a notebook JupyterLab can open: download it again "
                         f"(JupyterLab: File > Download) and check that copy") from None


def _series_ids(root: Path) -> dict[tuple[str, str], set[str]]:
    """(assignment, notebook) of every notebook of the course -> the grade_ids of its
    instructor version."""
    return {(assignment, name): _grade_ids(Path(root) / "source" / assignment / f"{name}.ipynb")
            for assignment in assignments(root) for name in notebook_names(root, assignment)}


def locate(root: Path, notebook: Path) -> tuple[str, str]:
    """Which assignment and notebook of the course a file is, by its graded cells (their
    grade_ids), whatever the file is called: a browser's second download
    (`01_corruption (1).ipynb`) or a copy (`my copy.ipynb`) is still notebook 1; else by its
    name (its graded cells gone), then by its folder where two assignments share the name."""
    notebook = Path(notebook)
    found = _grade_ids(notebook)
    shared = {key: len(ids & found) for key, ids in _series_ids(root).items()}
    best = max(shared, key=shared.get, default=None)
    if best is not None and shared[best] > 0:
        return best
    named = [key for key in shared if key[1] == notebook.stem]
    if named:  # its graded cells are gone, but its name says which: grade it
        return next((key for key in named if key[0] == notebook.parent.name), named[0])
    series = ", ".join(name for _, name in shared)
    raise CheckError(f"{notebook.name} holds none of the graded cells of this course's notebooks "
                     f"({series}): check your copy of one of them")


def identify(root: Path, notebook: Path) -> str:
    """Which notebook of the course a file is (`locate`), by name."""
    return locate(root, notebook)[1]


def _submission_folder(root: Path, notebook: Path, assignment: str, name: str,
                       folder: Path) -> None:
    """Lay out a learner's notebook under its series name in `folder`, with the sibling notebooks
    beside it that tests load functions from (by name, else the newest copy that is that
    notebook): the engine reads a submission by the series' names."""
    notebook = Path(notebook).resolve()
    shutil.copyfile(notebook, folder / f"{name}.ipynb")
    for sibling in notebook_names(root, assignment):
        if sibling == name:
            continue
        exact = notebook.parent / f"{sibling}.ipynb"
        copy = exact if exact.is_file() else _newest_copy(root, notebook.parent,
                                                          (assignment, sibling))
        if copy is not None:
            shutil.copyfile(copy, folder / f"{sibling}.ipynb")


def _newest_copy(root: Path, folder: Path, which: tuple[str, str]) -> Path | None:
    copies = []
    for path in folder.glob("*.ipynb"):
        try:
            if locate(root, path) == which:
                copies.append(path)
        except CheckError:
            continue
    return max(copies, key=lambda path: path.stat().st_mtime, default=None)


def check_result(root: Path, notebook: Path, limits: Limits | None = None) -> Verdict:
    """Grade one learner notebook, whatever its file name (the file and its folder are only
    read), under `limits` (default: the course's `c.Grading` limits), by `make grade`'s own
    reading and task (`coordinator.submission_files`, `coordinator.grade_task`)."""
    notebook = Path(notebook)
    if not notebook.is_file():
        raise CheckError(f"no such notebook: {notebook} (give the path of your .ipynb file)")
    assignment, name = locate(root, notebook)
    config = GradingConfig.load(Path(root), limits=limits)
    with tempfile.TemporaryDirectory(prefix="mlm-check-") as scratch:
        folder = Path(scratch)
        _submission_folder(root, notebook, assignment, name, folder)
        submitted = submission_files(config.root, STUDENT, assignment=assignment, folder=folder)
    if f"{name}.ipynb" not in submitted:  # what make grade would grade as not handed in
        raise CheckError(f"{notebook.name} is over {CAPS.notebook_bytes >> 20} MB, more than "
                         "grading reads: clear its outputs (Edit > Clear Outputs of All Cells), "
                         "save, and check it again")

    def grade() -> Verdict:
        try:
            outcome = grade_task(course_snapshot(config.root), STUDENT, submitted, [name],
                                 config.limits, config.sandbox, assignment)
        except GraderFailure as failure:
            raise CheckError(f"the grader itself failed on {name} (not your code): {failure}; "
                             "try again") from None
        return outcome.verdicts[0]

    try:
        return grade()
    except SandboxRefused:
        if os.environ.get(SANDBOX_VARIABLE):
            raise  # the learner asked for a mode that cannot be had: say so
        # A learner checks their own code: where the sandbox cannot be had (macOS, some
        # containers), run it as a plain process rather than refuse.
        print("make check: no sandbox on this machine; your code runs as a plain process",
              file=sys.stderr)
        os.environ[SANDBOX_VARIABLE] = UNSAFE
        stop_zygote()
        return grade()


def check_notebook(root: Path, notebook: Path) -> list[Check]:
    """Each hidden test's result for the learner's notebook."""
    return check_result(root, notebook).checks


def all_passed(verdicts: Verdict | Iterable[Verdict]) -> bool:
    """Whether every test passed, as the engine decided each one."""
    return all(check.passed for verdict in _as_list(verdicts) for check in verdict.checks)


def check_names(root: Path, name: str, assignment: str) -> dict[str, str]:
    """grade_id -> the check's name as notebook `name` of `assignment` heads it ("B1 · Labels"),
    for `report` (two assignments may each have a notebook of that name)."""
    source = nbio.read(Path(root) / "source" / assignment / f"{name}.ipynb")
    return {gid: heading.title.replace("`", "") for gid, heading in check_headings(source).items()}


def report(verdicts: Verdict | Iterable[Verdict], names: dict[str, str] | None = None) -> str:
    """The learner's view of checked notebooks: each test as the engine judged it, then the
    notebook's score as the engine counted it (nothing is judged or counted again here).
    `names` (grade_id -> heading, `check_names`) names each test as the notebook does."""
    names = names or {}
    lines = []
    for verdict in _as_list(verdicts):
        if lines:
            lines.append("")
        lines.append(f"{verdict.notebook}")
        if verdict.status is not Status.OK and verdict.detail:
            lines.append(f"      the notebook did not run to the end: {verdict.detail}")
        lines += [f"      note: {incident.detail}" for incident in verdict.incidents
                  if incident.kind is Kind.PASTED]  # how an answer over several cells was read
        for check in verdict.checks:
            mark = "PASS" if check.passed else "FAIL"
            name = names.get(check.grade_id, check.grade_id)
            lines.append(f"{mark}  {check.points:g} / {check.max_points:g}  {name}")
            if check.message:
                lines.append(f"      {check.message}")
        lines.append(f"\nscore: {verdict.score:g} / {verdict.max_score:g}")
    return "\n".join(lines)


def _as_list(verdicts: Verdict | Iterable[Verdict]) -> list[Verdict]:
    return [verdicts] if isinstance(verdicts, Verdict) else list(verdicts)
