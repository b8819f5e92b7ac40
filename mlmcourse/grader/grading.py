"""The TA's grading run: autograde every submission, write feedback, report the scores.

`autograde` grades a class through `grader.coordinator` (the grading engine on a Dask cluster,
one coordinator that writes the gradebook and `autograded/`), then writes readable feedback with
nbgrader's own `generate_feedback` (`grader.feedback`). The gradebook is nbgrader's: SQLite
by default (`gradebook.db`), or any database nbgrader's `db_url` names (PostgreSQL for many
graders), taken from `--db-url` or `c.CourseDirectory.db_url` in nbgrader_config.py.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mlmcourse.course.layout import ASSIGNMENT, notebook_names

DEFAULT_DB_URL = "sqlite:///gradebook.db"


@dataclass(frozen=True)
class Score:
    student: str
    notebook: str
    score: float
    max_score: float


class GradingError(RuntimeError):
    """Some submissions could not be graded (the grader failed, not the student)."""

    def __init__(self, failed: dict[str, str]):
        self.failed = dict(failed)
        lines = [f"  {student}: {why}" for student, why in sorted(self.failed.items())]
        super().__init__(
            f"{len(self.failed)} submission(s) could not be graded; their earlier grades, if any, "
            "are left as they were (run the grading again):\n" + "\n".join(lines)
        )


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


def tools_on_path() -> None:
    """nbgrader runs `alembic`, a console script beside this interpreter, when it creates a
    gradebook: let this process find it too (as `tool_env` does for subprocesses)."""
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([bindir, path]) if path else bindir


def submitted_students(root: Path) -> list[str]:
    folder = root / "submitted"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / ASSIGNMENT).is_dir())


# ---- the course's nbgrader configuration --------------------------------------------------------


def course_config(root: Path):
    """nbgrader_config.py of the course, loaded the way nbgrader loads it (a traitlets Config)."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    path = Path(root) / "nbgrader_config.py"
    if not path.is_file():
        return Config()
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def gradebook_url(root: Path, db_url: str | None = None) -> str:
    """The gradebook's database URL: `db_url`, else nbgrader_config.py's, else SQLite in root.

    A relative SQLite path is relative to the course root (as when nbgrader runs there)."""
    url = db_url or course_config(root).CourseDirectory.get("db_url") or DEFAULT_DB_URL
    prefix = "sqlite:///"
    if url.startswith(prefix) and url != "sqlite://" and not url[len(prefix):].startswith("/"):
        url = prefix + str((Path(root) / url[len(prefix):]).resolve())
    return url


def course_id(root: Path) -> str:
    return course_config(root).CourseDirectory.get("course_id") or "default_course"


def nbgrader_converter(cls, root: Path, db_url: str, settings: dict | None = None):
    """An nbgrader converter (GenerateAssignment, GenerateFeedback...) for this course, in-process:
    the course's config, the given database, and `settings` ({"Class.trait": value}) on top."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    tools_on_path()
    config = course_config(root)
    overrides = Config()
    overrides.CourseDirectory.root = str(root)
    overrides.CourseDirectory.db_url = db_url
    for key, value in (settings or {}).items():
        section, trait = key.split(".")
        overrides[section][trait] = value
    config.merge(overrides)
    coursedir = CourseDirectory(config=config)
    return cls(coursedir=coursedir, config=config)


def run_converter(converter, what: str) -> None:
    """Start an in-process nbgrader converter; raise with nbgrader's own log when it fails."""
    from nbgrader.utils import capture_log

    outcome = capture_log(converter)
    if not outcome.get("success"):
        log = outcome.get("log", "") + outcome.get("error", "")
        raise RuntimeError(f"nbgrader {what} failed:\n{log[-6000:]}")


# ---- grading, feedback, scores ------------------------------------------------------------------


def autograde(
    root: Path,
    students: list[str] | None = None,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    db_url: str | None = None,
    progress: bool | None = None,
) -> None:
    """Autograde and generate feedback for the given students (default: every submission).

    Grades go to the gradebook, notebooks to autograded/<student>/, feedback to
    feedback/<student>/. Raises `GradingError` after everything else is written when some
    submissions could not be graded at all (the grader failed, not the student)."""
    from mlmcourse.grader.coordinator import grade_class

    root = Path(root).resolve()
    chosen = list(students) if students else submitted_students(root)
    url = gradebook_url(root, db_url)
    outcome = grade_class(
        root, chosen, workers=workers, scheduler=scheduler, db_url=url, progress=progress
    )
    graded = [student for student in chosen if student not in outcome.failed]
    if graded:
        generate_feedback(root, graded, url)
    if outcome.failed:
        raise GradingError(outcome.failed)


def generate_feedback(root: Path, students: list[str], db_url: str | None = None) -> None:
    """nbgrader generate_feedback, once, for these students: readable feedback (see feedback.py)."""
    from nbgrader.converters import GenerateFeedback

    from mlmcourse.grader.feedback import FEEDBACK_PREPROCESSORS, FeedbackExporter

    root = Path(root).resolve()
    folder = root / "autograded"
    present = {p.name for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()
    with_notebooks = {p.parent.parent.name for p in folder.glob(f"*/{ASSIGNMENT}/*.ipynb")}
    wanted = sorted(set(students) & with_notebooks)
    if not wanted:
        return
    settings = {
        "GenerateFeedback.preprocessors": list(FEEDBACK_PREPROCESSORS),
        "GenerateFeedback.exporter_class": FeedbackExporter,
        "GenerateFeedback.force": True,
        "CourseDirectory.assignment_id": ASSIGNMENT,
    }
    if len(wanted) == 1:
        settings["CourseDirectory.student_id"] = wanted[0]
    else:
        settings["CourseDirectory.student_id_exclude"] = ",".join(sorted(present - set(wanted)))
    converter = nbgrader_converter(GenerateFeedback, root, gradebook_url(root, db_url), settings)
    run_converter(converter, "generate_feedback")


def read_scores(root: Path, db_url: str | None = None) -> list[Score]:
    """Scores of every autograded notebook, from the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    tools_on_path()
    names = notebook_names(root)
    scores = []
    with Gradebook(gradebook_url(root, db_url), course_id(root)) as gradebook:
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
