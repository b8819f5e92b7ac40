"""The TA's grading run: autograde every submission, write feedback, report the scores."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import nbclean
from .course import ASSIGNMENT, notebook_names


@dataclass(frozen=True)
class Score:
    student: str
    notebook: str
    score: float
    max_score: float


def run_nbgrader(root: Path, *args: str, quiet: bool = True) -> None:
    """Run one nbgrader command in the course directory; fail loudly with its log."""
    command = [sys.executable, "-m", "nbgrader", *args]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, env=tool_env())
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"nbgrader {' '.join(args)} failed (exit {done.returncode})")
    if not quiet:
        sys.stdout.write(done.stdout)


def tool_env() -> dict[str, str]:
    """This environment with the interpreter's own bin/ first (nbgrader calls `alembic`)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("NBGRADER_EXECUTION", None)
    return env


def submitted_students(root: Path) -> list[str]:
    folder = root / "submitted"
    return sorted(p.name for p in folder.iterdir() if (p / ASSIGNMENT).is_dir())


def autograde(root: Path, students: list[str] | None = None) -> None:
    """Autograde and generate feedback for the given students (default: every submission)."""
    for selection in ([f"--student={s}" for s in students] if students else [""]):
        args = [selection] if selection else []
        run_nbgrader(root, "autograde", ASSIGNMENT, "--force", "--create", *args)
        run_nbgrader(root, "generate_feedback", ASSIGNMENT, "--force", *args)
    for student in students or submitted_students(root):
        for path in sorted((root / "autograded" / student / ASSIGNMENT).glob("*.ipynb")):
            nb = nbclean.read(path)
            for cell in nb.cells:
                nbclean.strip_execution_metadata(cell)
            nbclean.write(nb, path)


def read_scores(root: Path) -> list[Score]:
    """Scores of every autograded notebook, from the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    names = notebook_names(root)
    scores = []
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for student in submitted_students(root):
            for name in names:
                try:
                    nb = gradebook.find_submission_notebook(name, ASSIGNMENT, student)
                except MissingEntry:
                    continue
                scores.append(Score(student, name, float(nb.score), float(nb.max_score)))
    return scores


def score_table(scores: list[Score]) -> str:
    """A plain-text table, one row per student, one column per notebook, then the total."""
    notebooks = sorted({s.notebook for s in scores})
    students = sorted({s.student for s in scores})
    lookup = {(s.student, s.notebook): s for s in scores}
    width = max([len("student"), *map(len, students)])
    header = f"{'student':<{width}}  " + "  ".join(f"{n[:14]:>14}" for n in notebooks)
    lines = [header + f"  {'total':>12}", "-" * (len(header) + 14)]
    for student in students:
        cells, got, out_of = [], 0.0, 0.0
        for name in notebooks:
            score = lookup.get((student, name))
            if score is None:
                cells.append(f"{'-':>14}")
                continue
            got, out_of = got + score.score, out_of + score.max_score
            cells.append(f"{_fmt(score.score) + ' / ' + _fmt(score.max_score):>14}")
        total = f"{_fmt(got)} / {_fmt(out_of)}"
        lines.append(f"{student:<{width}}  " + "  ".join(cells) + f"  {total:>12}")
    return "\n".join(lines)


def _fmt(value: float) -> str:
    return f"{value:g}"


def write_csv(scores: list[Score], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "notebook", "score", "max_score"])
        for s in sorted(scores, key=lambda s: (s.student, s.notebook)):
            writer.writerow([s.student, s.notebook, _fmt(s.score), _fmt(s.max_score)])
