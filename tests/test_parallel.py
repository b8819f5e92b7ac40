"""A class in parallel: Dask workers grade, one coordinator writes the gradebook and feedback.

The tests that grade are marked slow. Their class is small and fast: a few sample students,
graded on the first notebook of the series only, in a scratch course built from this
repository's source/, release/ and samples/.
"""

from __future__ import annotations

import contextlib
import html
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, course_env, fingerprint, free_port, sample, write_sample

from mlmcourse.build.samples import committed_verdicts, expected_scores, load_sample
from mlmcourse.course import nbio
from mlmcourse.course.cells import is_graded, is_solution, total_points
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.class_run.grading import GradingError, autograde, read_scores
from mlmcourse.grader.config import GradingConfig
from mlmcourse.grader.results.verdict import verdict_of

FIRST, SECOND = notebook_names(ROOT)[:2]
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)


def pick_students() -> list[str]:
    """reference, blank and the first wrong student that loses points in the first notebook."""
    full = total_points(nbio.read(ROOT / "source" / SERIES / f"{FIRST}.ipynb"))
    for path in sorted((ROOT / "samples").glob("wrong_*.py")):
        sample = load_sample(path, notebook_names(ROOT))
        if FIRST in sample.notebooks and sample.expected.get(FIRST, full) < full:
            return ["reference", "blank", sample.student_id]
    return ["reference", "blank"]


STUDENTS = pick_students()


def make_course(destination: Path, students: list[str] = STUDENTS) -> Path:
    """A scratch course: source/, release/, the config, and the students' first notebook."""
    for folder in ("source", "release"):
        shutil.copytree(ROOT / folder, destination / folder)
    shutil.copy(ROOT / "nbgrader_config.py", destination / "nbgrader_config.py")
    for student_id in students:
        write_sample(ROOT, student_id, destination / "submitted", [FIRST])
    return destination


def expected_first(student_id: str) -> float:
    return expected_scores(ROOT, sample(student_id))[FIRST]


# ---- the cluster, and an audit of what its worker processes open --------------------------------


def _watch_opens(dask_worker, prefix: str) -> None:
    """In a worker process: remember every file, folder or database it opens under `prefix`."""
    seen: list[str] = []
    dask_worker.mlm_seen = seen
    watched = {"open", "os.listdir", "os.scandir", "sqlite3.connect", "shutil.copyfile",
               "os.rename", "os.remove", "shutil.rmtree"}

    def hook(event, args):
        if event in watched and args:
            path = args[0]
            if isinstance(path, bytes):
                path = path.decode(errors="replace")
            if isinstance(path, str | os.PathLike) and os.fspath(path).startswith(prefix):
                seen.append(f"{event} {os.fspath(path)}")

    sys.addaudithook(hook)


def _seen(dask_worker) -> list[str]:
    return list(getattr(dask_worker, "mlm_seen", []))


@pytest.fixture(scope="module")
def client():
    from mlmcourse.grader.class_run.coordinator import dask_client

    with dask_client(workers=2) as dask:
        yield dask


@pytest.fixture(scope="module")
def graded(tmp_path_factory, client):
    """The small class graded in parallel, with every worker process audited."""
    from mlmcourse.grader.class_run.coordinator import grade_class
    from mlmcourse.grader.class_run.grading import generate_feedback

    root = make_course(tmp_path_factory.mktemp("parallel") / "course").resolve()
    before = fingerprint(root / "submitted")
    client.run(_watch_opens, prefix=str(root))
    outcome = grade_class(root, STUDENTS, client=client, notebooks=[FIRST], progress=False)
    generate_feedback(root, STUDENTS)
    seen = client.run(_seen)
    return {"root": root, "outcome": outcome, "before": before, "seen": seen}


@pytest.mark.slow
def test_parallel_scores_equal_the_committed_verdicts(graded):
    """Each test cell's score from this parallel run is the one in the sample's committed
    verdict (what the fresh build's grading gave it: tests/test_generated_fresh.py)."""
    root = graded["root"]
    config = GradingConfig.load(root)
    assert not graded["outcome"].failed
    assert len({o.worker for o in graded["outcome"].outcomes.values()}) >= 1
    with config.gradebook() as gradebook:
        for student in STUDENTS:
            committed = committed_verdicts(ROOT, student)[FIRST]
            want = {grade: points for grade, points, _ in committed["checks"]}
            nb = gradebook.find_submission_notebook(FIRST, SERIES, student)
            assert {grade.name: grade.score for grade in nb.grades} == want, student
            assert nb.score == committed["score"] == expected_first(student), student


@pytest.mark.slow
def test_scores_read_back_match_the_samples(graded):
    scores = {s.student: s for s in read_scores(graded["root"]) if s.notebook == FIRST}
    for student in STUDENTS:
        assert scores[student].score == expected_first(student), student
    assert scores["reference"].score == scores["reference"].max_score > 0


@pytest.mark.slow
def test_workers_never_touch_the_course_directory(graded):
    """The coordinator is the only writer (indeed the only reader) of the gradebook and of the
    course: worker processes get bytes and give bytes back; the audit saw no file of the course."""
    seen = graded["seen"]
    assert len(seen) == 2, f"expected two audited workers, got {sorted(seen)}"
    touched = sorted(path for paths in seen.values() for path in paths)
    assert touched == [], "worker processes opened files of the course:\n" + "\n".join(touched)
    assert (graded["root"] / "gradebook.db").is_file()


@pytest.mark.slow
def test_submitted_files_are_untouched(graded):
    assert fingerprint(graded["root"] / "submitted") == graded["before"]


@pytest.mark.slow
def test_autograded_notebooks_are_written_by_the_coordinator(graded):
    root = graded["root"]
    for student in STUDENTS:
        folder = root / "autograded" / student / SERIES
        assert sorted(p.name for p in folder.iterdir()) == [f"{FIRST}.ipynb"], student
        nb = nbio.read(folder / f"{FIRST}.ipynb")
        assert verdict_of(nb) is not None, f"{student}: the notebook carries no verdict"


@pytest.mark.slow
def test_feedback_says_what_failed_without_the_hidden_tests(graded):
    root = graded["root"]
    source = nbio.read(root / "source" / SERIES / f"{FIRST}.ipynb")
    release = nbio.read(root / "release" / SERIES / f"{FIRST}.ipynb")
    public = {line.strip() for cell in release.cells for line in cell.source.splitlines()}
    hidden_lines = {  # a hidden line that is also shown in the release is no secret
        line.strip()
        for cell in source.cells if is_graded(cell) and not is_solution(cell)
        for block in HIDDEN.findall(cell.source)
        for line in block.splitlines() if len(line.strip()) > 25
    } - public
    assert hidden_lines, "the first notebook should have hidden tests"
    for student in STUDENTS:
        page = (root / "feedback" / student / SERIES / f"{FIRST}.html").read_text()
        assert len(page) < 400_000, f"{student}: feedback is {len(page)} bytes"
        body = re.sub(r"<(style|script)\b.*?</\1>", "", page, flags=re.S)
        text = html.unescape(re.sub(r"<[^>]+>", "", body))
        leaked = sorted(line for line in hidden_lines if line in text)
        assert not leaked, f"{student}: hidden test source in the feedback: {leaked[:3]}"
        assert "Traceback (most recent call last)" not in text, student
        if "Not attempted: all " in text:  # a blank notebook: one line, not one per check
            assert expected_first(student) == 0, f"{student}: scored, yet 'not attempted'"
            continue
        autograded = nbio.read(root / "autograded" / student / SERIES / f"{FIRST}.ipynb")
        for cell in autograded.cells:
            if not (is_graded(cell) and not is_solution(cell)):
                continue
            errors = [o for o in cell.outputs if o.output_type == "error"]
            if errors:  # a failed check: its message is in the feedback, in words
                said = (errors[0].evalue.strip().splitlines() or [errors[0].ename])[0]
                assert said in text, f"{student}: {said!r} is not in the feedback"
    failing = [s for s in STUDENTS if expected_first(s) > 0 and s != "reference"]
    for student in failing:
        text = (root / "feedback" / student / SERIES / f"{FIRST}.html").read_text()
        assert "To fix" in text, student


def contents(folder: Path) -> dict[str, str]:
    return {k: digest for k, (digest, _) in fingerprint(folder).items()}


@pytest.mark.slow
def test_a_regrade_gives_the_same_scores_and_files(graded, client):
    """Grading the class again changes nothing: scores, autograded notebooks and feedback are
    byte-identical (the build commits them)."""
    from mlmcourse.grader.class_run.coordinator import grade_class
    from mlmcourse.grader.class_run.grading import generate_feedback

    root = graded["root"]
    before = (read_scores(root), contents(root / "autograded"), contents(root / "feedback"))
    outcome = grade_class(root, STUDENTS, client=client, notebooks=[FIRST], progress=False)
    generate_feedback(root, STUDENTS)
    assert not outcome.failed
    after = (read_scores(root), contents(root / "autograded"), contents(root / "feedback"))
    assert after[0] == before[0]
    changed = sorted(k for k in before[1] if before[1][k] != after[1].get(k))
    assert not changed, f"autograded notebooks differ after a regrade: {changed}"
    changed = sorted(k for k in before[2] if before[2][k] != after[2].get(k))
    assert not changed, f"feedback differs after a regrade: {changed}"


@pytest.mark.slow
def test_grade_command_on_a_running_scheduler(tmp_path, client):
    """`grade --scheduler ADDRESS` sends the work to an existing Dask cluster (here: this test
    module's), whose workers see only what the tasks carry."""
    root = make_course(tmp_path / "course", ["reference"]).resolve()
    env = course_env(ROOT)
    env["MLMCOURSE_ROOT"] = str(root)
    done = subprocess.run(
        [sys.executable, "-m", "mlmcourse", "grade", "--scheduler", client.scheduler.address],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    scores = {(s.student, s.notebook): s.score for s in read_scores(root)}
    assert scores[("reference", FIRST)] == expected_first("reference")


def _break_engine(dask_worker) -> None:
    """In a worker: the engine fails for every submission (a grader's failure)."""
    import mlmcourse.grader.engine.submission as engine

    def broken(*args, **kwargs):
        raise RuntimeError("engine out of order (test)")

    dask_worker.mlm_real_engine = engine.grade_submission
    engine.grade_submission = broken


def _mend_engine(dask_worker) -> None:
    import mlmcourse.grader.engine.submission as engine

    engine.grade_submission = dask_worker.mlm_real_engine


@pytest.mark.slow
def test_a_grader_failure_keeps_earlier_grades(graded, client):
    """When grading itself fails, the student keeps the earlier grades and notebooks, and the
    run says so (it never records the student as zero)."""
    from mlmcourse.grader.class_run.coordinator import grade_class

    root = graded["root"]
    scores = read_scores(root)
    autograded = fingerprint(root / "autograded")
    client.run(_break_engine)
    try:
        outcome = grade_class(root, STUDENTS, client=client, notebooks=[FIRST], progress=False)
    finally:
        client.run(_mend_engine)
    assert sorted(outcome.failed) == sorted(STUDENTS)
    assert all("engine out of order" in why for why in outcome.failed.values())
    assert read_scores(root) == scores
    assert fingerprint(root / "autograded") == autograded


def test_autograde_raises_grading_error_for_failed_submissions(tmp_path, monkeypatch):
    from mlmcourse.grader.class_run import coordinator as parallel

    def fake(root, students, **kwargs):
        return parallel.ClassOutcome(failed={"someone": "worker lost"})

    monkeypatch.setattr(parallel, "grade_class", fake)
    (tmp_path / "submitted" / "someone" / SERIES).mkdir(parents=True)
    (tmp_path / "source" / SERIES).mkdir(parents=True)
    (tmp_path / "source" / SERIES / "01_x.ipynb").write_text("{}")
    with pytest.raises(GradingError, match="someone: worker lost"):
        autograde(tmp_path, ["someone"])


def test_progress_without_a_terminal_is_one_line_per_student(capsys, monkeypatch):
    """`make grade` in a log (no terminal): a line per graded student, with its score and an
    estimate of the time left; a grader's failure is said as such."""
    from mlmcourse.grader.class_run.coordinator import Outcome, Progress
    from mlmcourse.grader.results.verdict import Check, Verdict

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    results = [Verdict(FIRST, checks=[Check("t", 5.0, 7.0)]),
               Verdict("02_x", checks=[Check("t", 3.0, 3.0)])]
    with Progress(3) as progress:
        progress.graded(Outcome("ada", results))
        progress.failed("bob", "worker lost")
        progress.graded(Outcome("cy", []))
    header, *lines = capsys.readouterr().err.splitlines()
    assert header.startswith("grading 3 submissions"), "a first line at once, before any result"
    assert len(lines) == 3, lines
    assert lines[0].startswith("grading 1/3  ada: 8 / 10  (about ") and "left)" in lines[0]
    assert "bob: not graded (worker lost)" in lines[1]
    assert lines[2].startswith("grading 3/3  cy: 0 / 0  (done)")


def test_progress_off_prints_nothing(capsys):
    from mlmcourse.grader.class_run.coordinator import Outcome, Progress

    with Progress(1, False) as progress:
        progress.graded(Outcome("ada"))
    assert capsys.readouterr().err == ""


def test_links_in_a_submission_are_not_shipped(tmp_path):
    """A submitted link (to the gradebook, say) is never read and sent to a worker."""
    from mlmcourse.grader.class_run.coordinator import submission_files

    folder = tmp_path / "submitted" / "sneaky" / SERIES
    folder.mkdir(parents=True)
    (tmp_path / "gradebook.db").write_bytes(b"secret")
    (folder / f"{FIRST}.ipynb").write_text("{}")
    (folder / f"{SECOND}.ipynb").symlink_to(tmp_path / "gradebook.db")
    assert submission_files(tmp_path, "sneaky", [FIRST, SECOND], assignment=SERIES) == {
        f"{FIRST}.ipynb": b"{}"}


def test_only_the_series_notebooks_travel_and_a_few_submissions_at_a_time(tmp_path, monkeypatch):
    """Junk beside a notebook (any name, a stray .ipynb too) is never read nor shipped, and the
    coordinator holds at most `in_flight_limit` submissions' files at once (issue 18: 300 MB of
    junk beside a correct notebook took 48 s and 2.49 GB)."""
    from distributed import Client, LocalCluster

    from mlmcourse.grader.class_run import coordinator
    from mlmcourse.grader.engine import rebuild

    root = tmp_path.resolve()
    shutil.copytree(ROOT / "source", root / "source")
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    students = [f"s{index}" for index in range(8)]
    for student in students:
        folder = root / "submitted" / student / SERIES
        folder.mkdir(parents=True)
        (folder / f"{FIRST}.ipynb").write_text("{}")
        with open(folder / "junk.bin", "wb") as junk:  # 64 MiB, sparse: costs no disk
            junk.truncate(64 << 20)
        (folder / "notes.ipynb").write_bytes(b"x" * 1000)
    events, opened = _EVENTS, []
    events.clear()

    def spy_open(path, *args, **kwargs):
        if "submitted" in Path(path).parts:
            opened.append(Path(path).name)
        return open(path, *args, **kwargs)

    reading = coordinator.submission_files

    def spy_files(root, student, names=None, **where):
        with _LOCK:
            events.append(("read", student))
        return reading(root, student, names, **where)

    def gradebook_only(config, assignment):
        with config.gradebook() as gradebook:
            gradebook.update_or_create_assignment(assignment)

    monkeypatch.setattr(rebuild, "open", spy_open, raising=False)  # (every submission read)
    monkeypatch.setattr(coordinator, "grade_task", _fake_task)
    monkeypatch.setattr(coordinator, "submission_files", spy_files)
    monkeypatch.setattr(coordinator, "prepare_gradebook", gradebook_only)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        report = coordinator.grade_class(root, students, client=client, progress=False)
    assert sorted(report.outcomes) == students and not report.failed
    assert set(opened) == {f"{FIRST}.ipynb"}, "only the series' notebooks are read"
    limit, read, done = coordinator.in_flight_limit(report.workers), 0, 0
    for kind, _ in events:
        read, done = read + (kind == "read"), done + (kind == "done")
        assert read - done <= limit, f"{read} submissions read, only {done} graded: {events}"


_EVENTS: list[tuple[str, str]] = []  # what the in-process cluster's fake task saw
_LOCK = threading.Lock()


def _fake_task(course, student, submitted, notebooks, limits, sandbox, assignment):
    """A grading task that grades nothing (module level: Dask pickles it by reference)."""
    from mlmcourse.grader.class_run import coordinator

    assert set(submitted) == {f"{FIRST}.ipynb"}, sorted(submitted)
    time.sleep(0.1)
    with _LOCK:
        _EVENTS.append(("done", student))
    return coordinator.Outcome(student, assignment=assignment)


# ---- PostgreSQL: a real server, started and stopped by the test ---------------------------------


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@contextlib.contextmanager
def postgres_server():
    """A throwaway PostgreSQL server on a free local port; yields its db_url for a gradebook."""
    psycopg = pytest.importorskip(
        "psycopg", reason="psycopg (the PostgreSQL driver) is missing: make test installs it"
    )
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed here (Debian: apt-get install postgresql; "
                    ".ci/run installs it)")
    run_as: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="mlm-pg-"))
    if os.geteuid() == 0:  # the server refuses to run as root: run it as an unprivileged user
        runuser = shutil.which("runuser")
        user = next((u for u in ("postgres", "nobody") if _user_exists(u)), None)
        if runuser is None or user is None:
            shutil.rmtree(base)
            pytest.skip("running as root without runuser or an unprivileged user for PostgreSQL")
        shutil.chown(base, user)
        run_as = [runuser, "-u", user, "--"]
    port, data = free_port(), base / "data"

    def pg(*args: str) -> None:
        done = subprocess.run(run_as + list(args), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout}\n{done.stderr}"

    try:
        pg(str(bindir / "initdb"), "-D", str(data), "-U", "grader", "--auth=trust",
           "--encoding=UTF8", "--no-sync")
        pg(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-w",
           "-o", f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        try:
            with psycopg.connect(host="127.0.0.1", port=port, user="grader", dbname="postgres",
                                 autocommit=True) as connection:
                connection.execute("CREATE DATABASE gradebook")
            yield f"postgresql://grader@127.0.0.1:{port}/gradebook"
        finally:
            pg(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.mark.slow
def test_grade_into_postgresql_through_db_url(tmp_path):
    """`grade --db-url postgresql://...` writes the gradebook into a real PostgreSQL server;
    the scores read back from it are the samples' expected ones, and no SQLite file appears."""
    root = make_course(tmp_path / "course", ["reference", STUDENTS[-1]]).resolve()
    keep = [FIRST]
    for extra in (root / "source" / SERIES).glob("*.ipynb"):  # grade one notebook only
        if extra.stem not in keep:
            extra.unlink()
    for extra in (root / "release" / SERIES).glob("*.ipynb"):
        if extra.stem not in keep:
            extra.unlink()
    with postgres_server() as url:
        env = course_env(ROOT)
        env["MLMCOURSE_ROOT"] = str(root)
        done = subprocess.run(
            [sys.executable, "-m", "mlmcourse", "grade", "--workers", "2", "--db-url", url],
            cwd=root, env=env, capture_output=True, text=True, timeout=600,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        scores = {s.student: s.score for s in read_scores(GradingConfig.load(root, url))}
    assert scores == {"reference": expected_first("reference"),
                      STUDENTS[-1]: expected_first(STUDENTS[-1])}
    assert not (root / "gradebook.db").exists()
    assert (root / "feedback" / "reference" / SERIES / f"{FIRST}.html").is_file()
    assert "reference" in done.stdout and "total" in done.stdout
