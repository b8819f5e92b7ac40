"""A class in parallel: submissions graded concurrently on a Dask cluster, one coordinator.

`python -m mlmcourse grade --workers N` (`make grade`) grades every submission of `submitted/`,
one assignment (a folder of `source/`) at a time on one cluster:

- a Dask `LocalCluster` of N worker processes with one thread each (default: one per core), or
  the cluster whose scheduler `--scheduler tcp://HOST:8786` names (its workers need this course
  package and the same Python environment, nothing else: no shared file system);
- each task is one submission through the grading engine
  (`grader.engine.submission.grade_submission`) in a scratch folder of its own on the worker. The
  task gets copies of the course files the
  engine reads (`source/`) and of the student's notebooks of the series, as bytes (nothing else
  of the submission folder is read); it never sees the course directory, the gradebook or any
  other student's files. A submission is read just before its task is submitted, at most
  `in_flight_limit` (two per worker) ahead of those graded: the class's files are never all in
  memory at once;
- the engine's verdicts (one per notebook) and the autograded notebooks as bytes come back to
  ONE coordinator, this process, which writes them into the gradebook through the course's one
  gradebook writer (`grader.results.gradebook`, the one nbgrader's path calls too: scores, "No
  response.", the late policy) and into `autograded/<student>/<assignment>/`, as each task
  finishes, with its progress on stderr (a bar on a terminal, else a line per student).
  `mlmcourse.grader.class_run.grading.autograde` then runs nbgrader's `generate_feedback` once for
  the graded students.

What the run needs to know of the course (the gradebook's URL, the course id, the limits, the
workers) comes resolved once, as a `grader.config.GradingConfig`.

Nothing under `submitted/` is written: the coordinator only reads regular files there (never a
link: a submission cannot make the grader ship, say, the gradebook to a worker). A submission
whose task fails for reasons of the grader (a worker lost, the engine broken) keeps its earlier
grades and autograded notebooks, and is reported; it is never recorded as zero.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from mlmcourse.course import nbio
from mlmcourse.course.layout import notebook_names, only_assignment
from mlmcourse.grader.config import (
    GradingConfig,
    nbgrader_converter,
    run_converter,
    tools_on_path,
    use_sandbox_mode,
)
from mlmcourse.grader.engine.rebuild import read_regular_file
from mlmcourse.grader.limits import Limits
from mlmcourse.grader.results.gradebook import (
    apply_late_policy,
    record_student,
    record_verdict,
    submission_time,
)
from mlmcourse.grader.results.verdict import Kind, Status

COURSE_FILES = ("source",)  # what the engine reads of the course
SCRATCH_NAME = b"[grading folder]"  # how autograded outputs name the task's scratch folder


@dataclass
class Outcome:
    """What one grading task hands back to the coordinator."""

    student: str
    verdicts: list = field(default_factory=list)  # the engine's, one per notebook
    autograded: dict[str, bytes] = field(default_factory=dict)  # notebook name -> .ipynb bytes
    seconds: float = 0.0
    worker: str = ""
    assignment: str = ""  # the folder of source/ it answers ("": the course's only one)


@dataclass
class ClassOutcome:
    """One assignment's run: per-student outcomes, submissions that could not be graded,
    timings."""

    assignment: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # student -> why (grader's fault)
    seconds: float = 0.0
    workers: int = 0


# ---- files as bytes: what travels to a worker and back -----------------------------------------


def read_files(folder: Path, *, recursive: bool) -> dict[str, bytes]:
    """Regular files under `folder` as {relative posix path: bytes}; links and others skipped."""
    files: dict[str, bytes] = {}
    if not folder.is_dir() or folder.is_symlink():
        return files
    for path in sorted(folder.rglob("*") if recursive else folder.iterdir()):
        if "__pycache__" in path.parts or ".ipynb_checkpoints" in path.parts:
            continue
        if any(parent.is_symlink() for parent in path.relative_to(folder).parents if parent.parts):
            continue
        data = read_regular_file(path)
        if data is not None:
            files[path.relative_to(folder).as_posix()] = data
    return files


def write_files(files: dict[str, bytes], folder: Path) -> None:
    """Write {relative posix path: bytes} under `folder`; refuse paths that leave it."""
    for name, data in files.items():
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise ValueError(f"refusing to write {name!r} outside {folder}")
        target = folder.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def course_snapshot(root: Path) -> dict[str, bytes]:
    """The course files the engine reads, as bytes (shipped once to every worker)."""
    files: dict[str, bytes] = {}
    for name in COURSE_FILES:
        path = root / name
        if path.is_dir():
            files.update({f"{name}/{k}": v for k, v in read_files(path, recursive=True).items()})
        elif path.is_file():
            files[name] = path.read_bytes()
    return files


def submission_files(root: Path, student: str, names: list[str] | None = None, *,
                     assignment: str | None = None, folder: Path | None = None
                     ) -> dict[str, bytes]:
    """The student's notebooks of `assignment` (default: the course's only one; `names`,
    default: the assignment's), as bytes: only `<name>.ipynb` files at the top of
    submitted/<student>/<assignment>/ are read, regular files of at most `CAPS.notebook_bytes`.
    Nothing else of the folder is read or shipped: a junk file beside a notebook costs no memory
    and no transfer. `make grade` and nbgrader's autograde (`nbgrader_plugin`) both read so."""
    assignment = assignment or only_assignment(root)
    folder = folder or root / "submitted" / student / assignment  # (nbgrader's may differ)
    files: dict[str, bytes] = {}
    if not folder.is_dir() or folder.is_symlink():
        return files
    for name in notebook_names(root, assignment) if names is None else names:
        data = read_regular_file(folder / f"{name}.ipynb")
        if data is not None:
            files[f"{name}.ipynb"] = data
    return files


class GraderFailure(RuntimeError):
    """A notebook of the submission could not be graded, twice, for reasons of the grader."""


# ---- the task: one submission on a worker -------------------------------------------------------


def grade_task(course: dict[str, bytes], student: str, submitted: dict[str, bytes],
               notebooks: list[str] | None = None, limits: Limits | None = None,
               sandbox: str = "", assignment: str | None = None) -> Outcome:
    """Grade one submission of `assignment` (default: the course's only one) on a worker, in a
    scratch folder removed afterwards (`sandbox`: the course's `c.Grading.sandbox`, where the
    worker's environment sets no mode)."""
    from mlmcourse.grader.engine import submission as engine

    use_sandbox_mode(sandbox)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mlm-grade-") as tmp:
        scratch = Path(tmp)
        write_files(course, scratch / "course")
        assignment = assignment or only_assignment(scratch / "course")
        submission = scratch / "submission" / student / assignment
        submission.mkdir(parents=True)
        write_files(submitted, submission)
        kwargs = {} if limits is None else {"limits": limits}
        if notebooks is not None:
            kwargs["notebooks"] = list(notebooks)
        verdicts = engine.grade_submission(
            scratch / "course", student, submission, scratch / "work", assignment=assignment,
            **kwargs
        )
        failed = [f"{v.notebook}: {v.detail}" for v in verdicts if v.status is Status.ERROR]
        if failed:  # twice the grader's fault: keep the earlier grades rather than record zeros
            raise GraderFailure("; ".join(failed))
        autograded = {}
        for verdict in verdicts:
            path = engine.autograded_path(scratch / "work" / student, student, verdict.notebook)
            if path.is_file():
                autograded[verdict.notebook] = portable_bytes(path, scratch)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    return Outcome(student, verdicts, autograded, time.perf_counter() - started, worker,
                   assignment)


# ---- the cluster --------------------------------------------------------------------------------


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None) -> Iterator:
    """A Dask client: on the scheduler at `scheduler`, else on a LocalCluster of `workers`
    processes with one thread each (the engine's kernels are processes of their own)."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    # Worker processes must be allowed children (the engine's fork server); no dashboard (no
    # port to open, no bokeh); no memory limit on the worker itself (the engine limits each
    # kernel and the student's code).
    with dask.config.set({"distributed.worker.daemon": False,
                          "distributed.scheduler.work-stealing": True}):
        with LocalCluster(
            n_workers=workers or default_workers(), threads_per_worker=1, processes=True,
            dashboard_address=None, memory_limit=0, silence_logs=logging.ERROR,
            host="127.0.0.1",
            scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        ) as cluster, Client(cluster) as client:
            yield client


class Progress:
    """How far the run is, on stderr: a tqdm bar on a terminal; elsewhere (a CI log, `nohup`)
    one line per finished submission, with its score and an estimate of the time left.

    `mode`: True: the bar; False: nothing; None: the bar on a terminal, else the lines (the
    first at once: a log must not stay empty while the first submissions are graded)."""

    def __init__(self, total: int, mode: bool | None = None, *, workers: int = 0):
        from tqdm import tqdm

        terminal = sys.stderr.isatty()
        self.total, self.finished = total, 0
        self.lines = mode is None and not terminal
        self.started = time.perf_counter()
        self.bar = tqdm(total=total, unit="submission", desc="grading", file=sys.stderr,
                        disable=not (terminal if mode is None else mode), dynamic_ncols=True)
        if self.lines:
            on = f" on {workers} worker{'s' if workers != 1 else ''}" if workers else ""
            print(f"grading {total} submission{'s' if total != 1 else ''}{on}: a line as each "
                  "one is done", file=sys.stderr, flush=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.bar.close()

    def graded(self, outcome: Outcome) -> None:
        got = sum(verdict.score for verdict in outcome.verdicts)
        out_of = sum(verdict.max_score for verdict in outcome.verdicts)
        late_penalty = sum(verdict.late_penalty for verdict in outcome.verdicts)
        late = f" (late: -{late_penalty:g})" if late_penalty else ""
        self._step(f"{outcome.student}: {got:g} / {out_of:g}{late}")

    def failed(self, student: str, why: str) -> None:
        first_line = (why.strip().splitlines() or ["?"])[0]
        self._step(f"{student}: not graded ({first_line})")

    def _step(self, what: str) -> None:
        self.finished += 1
        self.bar.update(1)
        if self.lines:
            print(f"grading {self.finished}/{self.total}  {what}  {self._time_left()}",
                  file=sys.stderr, flush=True)

    def _time_left(self) -> str:
        remaining = self.total - self.finished
        if remaining <= 0:
            return "(done)"
        seconds = (time.perf_counter() - self.started) / self.finished * remaining
        return f"(about {seconds:.0f} s left)" if seconds < 90 else \
            f"(about {seconds / 60:.0f} min left)"


# ---- the coordinator ----------------------------------------------------------------------------


def prepare_gradebook(config: GradingConfig, assignment: str) -> None:
    """Make the gradebook know `assignment`, its notebooks and cells (from source/).

    nbgrader's own `generate_assignment` does this; it runs in-process, on a scratch copy of the
    course files (its release output is thrown away), against the run's database."""
    from nbgrader.converters import GenerateAssignment

    with tempfile.TemporaryDirectory(prefix="mlm-gradebook-") as tmp:
        scratch = Path(tmp)
        write_files(course_snapshot(config.root), scratch)
        converter = nbgrader_converter(
            GenerateAssignment, config,
            {"CourseDirectory.assignment_id": assignment, "GenerateAssignment.force": True},
            root=scratch,
        )
        run_converter(converter, "generate_assignment (to set up the gradebook)")


def submission_timestamp(root: Path, student: str, assignment: str):
    """When the student handed in (`gradebook.submission_time`: nbgrader's timestamp.txt, by the
    rule every way in shares)."""
    return submission_time(root / "submitted" / student / assignment)


def portable_bytes(path: Path, scratch: Path) -> bytes:
    """An autograded notebook's bytes, the random `scratch` folder (which outputs that print
    where they ran name) called by one fixed name: a regrade writes the same notebook."""
    data = path.read_bytes()
    for name in sorted({str(scratch.resolve()), str(scratch)}, key=len, reverse=True):
        data = data.replace(name.encode(), SCRATCH_NAME)
    return data


def as_recorded(data: bytes):
    """An autograded notebook as the course records it: parsed once (the engine wrote it: no
    need to validate it again), execution metadata dropped, output streams merged (see
    `nbio.merge_streams`), library paths short."""
    from nbformat import v4

    nb = v4.reads(data.decode("utf-8"))  # nbformat 4 as the engine writes it, unvalidated
    for cell in nb.cells:
        nbio.strip_execution_metadata(cell)
        if cell.get("cell_type") == "code":
            cell.outputs = nbio.relative_library_paths(nbio.merge_streams(cell.get("outputs", [])))
    return nb


def graded_notebooks(outcome: Outcome) -> dict:
    """The autograded notebooks of an outcome, as the course records them."""
    return {name: as_recorded(data) for name, data in sorted(outcome.autograded.items())}


def record(gradebook, config: GradingConfig, outcome: Outcome) -> None:
    """Write one student's verdicts into the gradebook through the course's one writer
    (`grader.results.gradebook`), the late policy included; then each autograded notebook carries
    its verdict as recorded (with the penalty)."""
    student, assignment = outcome.student, outcome.assignment or only_assignment(config.root)
    record_student(gradebook, student, submission_timestamp(config.root, student, assignment),
                   assignment=assignment)
    for verdict in outcome.verdicts:
        record_verdict(gradebook, student, verdict, assignment=assignment)
    for verdict in outcome.verdicts:
        apply_late_policy(gradebook, config.nbgrader_config(), config.db_url, student, verdict,
                          assignment=assignment)


def write_autograded(root: Path, outcome: Outcome) -> None:
    """Replace autograded/<student>/<assignment>/ with the notebooks the engine graded, each
    with its verdict as recorded (a notebook that differs from the one there only in its timing
    outputs keeps the earlier bytes)."""
    notebooks = graded_notebooks(outcome)
    for verdict in outcome.verdicts:
        if verdict.notebook in notebooks:
            verdict.attach(notebooks[verdict.notebook])
    assignment = outcome.assignment or only_assignment(root)
    folder = root / "autograded" / outcome.student / assignment
    if not notebooks:  # nothing gradable was submitted: no notebook, no feedback
        if folder.exists():
            shutil.rmtree(folder)
        with contextlib.suppress(OSError):
            folder.parent.rmdir()
        return
    fresh = folder.with_name(f".{assignment}.new")
    if fresh.exists():
        shutil.rmtree(fresh)
    fresh.mkdir(parents=True)
    for name, nb in notebooks.items():
        earlier = folder / f"{name}.ipynb"
        if nbio.same_but_timings(earlier, nb):  # only a clock changed: keep the file as it was
            shutil.copyfile(earlier, fresh / earlier.name)
        else:
            nbio.write(nb, fresh / f"{name}.ipynb")
    if folder.exists():
        shutil.rmtree(folder)
    fresh.rename(folder)


def grade_class(
    course: GradingConfig | Path,
    students: list[str],
    *,
    assignment: str | None = None,
    notebooks: list[str] | None = None,
    progress: bool | None = None,
    client=None,
) -> ClassOutcome:
    """Grade `students`' submissions of `assignment` (default: the course's only one)
    concurrently; write the gradebook and autograded/ from this process.

    `course`: the run's configuration (or the course root, to load it); `notebooks`: grade only
    these; `progress`: see `Progress`; `client`: an existing Dask client to use (several
    assignments on one cluster, tests), else one is made for the run on the configuration's
    workers or scheduler."""
    config = GradingConfig.of(course)
    tools_on_path()
    started = time.perf_counter()
    report = ClassOutcome(assignment or only_assignment(config.root))
    if not students:
        return report
    with contextlib.ExitStack() as stack:
        if client is None:
            client = stack.enter_context(dask_client(config.workers, config.scheduler))
        report.workers = len(client.scheduler_info().get("workers", {}))
        _run_tasks(client, config, list(students), notebooks, progress, report)
    report.seconds = time.perf_counter() - started
    return report


def _run_tasks(client, config: GradingConfig, students: list[str], notebooks: list[str] | None,
               progress: bool | None, report: ClassOutcome) -> None:
    from distributed import as_completed

    root, assignment = config.root, report.assignment
    # Shown at once, not after the gradebook is set up: a log must not stay empty meanwhile.
    shown = Progress(len(students), progress, workers=report.workers)
    [course] = client.scatter([course_snapshot(root)], broadcast=True)
    series = notebook_names(root, assignment)
    waiting = iter(students)
    futures: dict = {}

    def submit_next():
        """The next submission's task, its notebooks read now: at most `in_flight_limit`
        submissions' files are held at once, whatever the size of the class."""
        student = next(waiting, None)
        if student is None:
            return None
        submitted = submission_files(root, student, series, assignment=assignment)
        future = client.submit(grade_task, course, student, submitted, notebooks, config.limits,
                               config.sandbox, assignment,
                               key=f"grade-{student}-{time.monotonic_ns()}", pure=False)
        futures[future] = student
        return future

    first = [future for future in (submit_next() for _ in range(in_flight_limit(report.workers)))
             if future is not None]
    try:  # the workers start grading while this process sets up the gradebook
        prepare_gradebook(config, assignment)
    except BaseException:
        client.cancel(first)
        shown.close()
        raise
    with config.gradebook() as gradebook, shown:
        queue = as_completed(first)
        for future in queue:
            student = futures.pop(future)
            following = submit_next()
            if following is not None:
                queue.add(following)
            try:
                outcome = future.result()
            except Exception as err:  # noqa: BLE001  (the grader's failure, not the student's)
                report.failed[student] = f"{type(err).__name__}: {err}"
                shown.failed(student, report.failed[student])
            else:
                record(gradebook, config, outcome)
                write_autograded(root, outcome)
                log_notes(outcome)
                report.outcomes[student] = outcome
                shown.graded(outcome)
            future.release()


def in_flight_limit(workers: int) -> int:
    """How many submissions are shipped to the cluster at once: two per worker (one graded,
    one waiting), so a worker never idles and the class's files are never all in memory."""
    return max(2, 2 * workers)


def log_notes(outcome: Outcome) -> None:
    """Tell the TA (stderr, the grading log) what the engine noted about a submission: what wants
    a look by hand (answers that do what the grader cannot check), and how an answer laid out
    over several cells was read (a note: nothing to do)."""
    for verdict in outcome.verdicts:
        for incident in verdict.incidents:
            if incident.kind.needs_a_look:
                said = f"needs a look: {incident.kind.what}"
            elif incident.kind is Kind.PASTED:
                said = "note"
            else:
                continue
            print(f"{outcome.student}/{verdict.notebook}: {said}: {incident.detail}",
                  file=sys.stderr, flush=True)
