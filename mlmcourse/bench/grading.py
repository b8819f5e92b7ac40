"""`bench grading`: one synthetic class graded by plain sequential nbgrader and by `make grade`.

One command, knobs in the environment:
- `MLMCOURSE_BENCH_CLASS` (default 40): submissions, copies of the sample students (reference,
  blank, typical wrong ones);
- `MLMCOURSE_BENCH_NOTEBOOKS` (default: all six): the first N notebooks of the series;
- `MLMCOURSE_BENCH_WORKERS` (default: 1 and every core): the worker counts of `make grade`;
- `MLMCOURSE_BENCH_PLAIN=0`: skip plain nbgrader (its row then comes from nowhere: no ratios);
- `MLMCOURSE_BENCH_CHECK=0`: skip the self-check row (`make check` on notebook 04);
- `MLMCOURSE_BENCH_SCHEDULER=0`: skip grading through a Dask scheduler and two workers started
  as separate commands (`dask scheduler`, `dask worker`) on 127.0.0.1.

`make grade` runs in a subprocess here (`python -m mlmcourse.bench.grading phases ...`) that
does what `python -m mlmcourse grade` does (the coordinator on a Dask cluster, nbgrader's
generate_feedback, the score table and grades.csv) and times each phase, so that the fixed costs
(cluster start and stop, feedback) are reported apart from the time per submission.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlmcourse.course import nbio
from mlmcourse.course.layout import SERIES
from mlmcourse.grader.class_run.coordinator import default_workers

BENCH_SIZE = int(os.environ.get("MLMCOURSE_BENCH_CLASS", "40"))
BENCH_NOTEBOOKS = int(os.environ.get("MLMCOURSE_BENCH_NOTEBOOKS", "0"))  # 0: all
TARGET_ALL_CORES, TARGET_ONE_WORKER, TARGET_CHECK_S = 2.0, 1.3, 10.0
CHECKED_NOTEBOOK = "04_experiment"


def _knob(name: str, default: str) -> str:
    return os.environ.get(f"MLMCOURSE_BENCH_{name}", default)


def synthetic_class(root: Path, destination: Path, size: int, notebooks: list[str]) -> list[str]:
    """A course at `destination` whose series is `notebooks` and whose class is `size` copies
    of the sample students (reference, blank and the typical wrong ones, not the hostile ones:
    a hang would only measure nbgrader's timeout). Every student hands in every notebook, as a
    class does: where a sample changes nothing, its base (the reference, or the blank release)."""
    from mlmcourse.build import samples
    from mlmcourse.course.layout import notebook_names

    for folder in ("source", "release"):
        for name in notebooks:
            src = root / folder / SERIES / f"{name}.ipynb"
            if src.is_file():
                (destination / folder / SERIES).mkdir(parents=True, exist_ok=True)
                shutil.copy(src, destination / folder / SERIES / src.name)
    shutil.copy(root / "nbgrader_config.py", destination / "nbgrader_config.py")
    typical = []
    for path in sorted((root / "samples").glob("[a-z]*.py")):
        if not path.stem.startswith(("reference", "blank", "wrong_")):
            continue
        sample = samples.load_sample(path, notebook_names(root, SERIES))
        if set(notebooks) & set(sample.notebooks):
            typical.append(sample)
    students = []
    for index in range(size):
        sample = typical[index % len(typical)]
        student = f"s{index + 1:03d}_{sample.student_id}"
        whole = dataclasses.replace(sample, notebooks=list(notebooks))
        for name in notebooks:
            nb = samples.sample_notebook(root, whole, name)
            nbio.write(nb, destination / "submitted" / student / SERIES / f"{name}.ipynb")
        students.append(student)
    return students


def _run(command: list[str], cwd: Path, env: dict) -> tuple[float, str]:
    """Run a command; (wall seconds, its stdout). A failure stops the benchmark."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise RuntimeError(f"{' '.join(command[2:])} failed (exit {done.returncode})")
    return time.perf_counter() - started, done.stdout


def plain_nbgrader_preprocessors() -> str:
    """The command-line option that gives `nbgrader autograde` nbgrader's own preprocessors back
    (its `Execute` included): nbgrader_config.py puts the course's engine in `Execute`'s place,
    and this baseline measures plain nbgrader."""
    from nbgrader.converters import Autograde

    own = [f"{pp.__module__}.{pp.__qualname__}" for pp in Autograde().autograde_preprocessors]
    return f"--Autograde.autograde_preprocessors={json.dumps(own)}"


# ---- `make grade`, phase by phase (run in a subprocess of its own) ------------------------------


def grade_by_phases(course: Path, workers: int | None, scheduler: str | None) -> dict:
    """What `python -m mlmcourse grade` does, each phase timed: {phase: seconds, ...}."""
    from mlmcourse.grader.class_run import coordinator
    from mlmcourse.grader.class_run.grading import (
        generate_feedback,
        read_scores,
        score_table,
        submitted_students,
        write_csv,
    )
    from mlmcourse.grader.config import GradingConfig

    started = time.perf_counter()
    config = GradingConfig.load(course, workers=workers, scheduler=scheduler)
    students = submitted_students(config.root)
    with coordinator.dask_client(config.workers, config.scheduler) as client:
        ready = time.perf_counter()
        outcome = coordinator.grade_class(config, students, progress=False, client=client)
        graded = time.perf_counter()
    closed = time.perf_counter()
    generate_feedback(config, sorted(outcome.outcomes))
    fed = time.perf_counter()
    scores = read_scores(config)
    score_table(scores)
    write_csv(scores, config.root / "grades.csv")
    done = time.perf_counter()
    per_notebook: dict[str, list[float]] = {}
    for one in outcome.outcomes.values():
        for verdict in one.verdicts:
            per_notebook.setdefault(verdict.notebook, []).append(verdict.seconds)
    return {
        "wall": done - started, "cluster_start": ready - started, "grading": graded - ready,
        "cluster_stop": closed - graded, "feedback": fed - closed, "scores": done - fed,
        "workers": outcome.workers,
        "failed": {student: why[:300] for student, why in sorted(outcome.failed.items())},
        "engine_per_submission": sum(o.seconds for o in outcome.outcomes.values())
        / max(1, len(outcome.outcomes)),
        "engine_per_notebook": {k: sum(v) / len(v) for k, v in sorted(per_notebook.items())},
        "scores_by_key": {f"{s.student}/{s.notebook}": s.score for s in scores},
    }


def _phases(course: Path, workers: int | None, scheduler: str | None, env: dict) -> dict:
    command = [sys.executable, "-m", "mlmcourse.bench.grading", "phases", str(course),
               str(workers or 0), scheduler or ""]
    seconds, out = _run(command, course, env)
    phases = json.loads(out.strip().splitlines()[-1])
    phases["process"] = seconds  # the interpreter's start and imports included
    return phases


# ---- a scheduler and two workers, each its own command ------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def separate_cluster(env: dict, workers: int = 2):
    """`dask scheduler` and `workers` x `dask worker` on 127.0.0.1, each a command of its own;
    yields the scheduler's address. Stopped (by pid) afterwards."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(env, DASK_DISTRIBUTED__WORKER__DAEMON="False")  # the engine forks kernels
    bin_dir = Path(sys.executable).parent
    started = [subprocess.Popen(
        [str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
         "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(workers):
            started.append(subprocess.Popen(
                [str(bin_dir / "dask"), "worker", address, "--nthreads", "1", "--nworkers", "1",
                 "--memory-limit", "0", "--no-dashboard", "--host", "127.0.0.1"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for process in reversed(started):
            process.terminate()
        for process in reversed(started):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


# ---- the table ----------------------------------------------------------------------------------


def benchmark(root: Path, size: int = BENCH_SIZE, first: int = BENCH_NOTEBOOKS) -> str:
    """Grade one synthetic class on this machine, plain nbgrader against `make grade`; markdown."""
    from mlmcourse.course.layout import notebook_names
    from mlmcourse.grader.class_run.grading import read_scores
    from mlmcourse.grader.config import tool_env

    names = notebook_names(root, SERIES)[:first] if first else notebook_names(root, SERIES)
    cores = default_workers()
    counts = sorted({int(w) for w in _knob("WORKERS", f"1,{cores}").split(",") if w.strip()})
    load_before = os.getloadavg()
    rows: list[tuple[str, int, float]] = []
    phases: dict[int, dict] = {}
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mlm-bench-") as tmp:
        template = Path(tmp) / "template"
        students = synthetic_class(root, template, size, names)
        env = tool_env()
        plain_scores = {}
        if _knob("PLAIN", "1") != "0":
            plain = Path(tmp) / "plain"
            shutil.copytree(template, plain)
            nbgrader = [sys.executable, "-m", "nbgrader"]
            _run([*nbgrader, "generate_assignment", SERIES, "--force"], plain, env)
            seconds, _ = _run([*nbgrader, "autograde", SERIES, "--force", "--create",
                               plain_nbgrader_preprocessors()], plain, env)
            rows.append(("plain `nbgrader autograde` (sequential)", 1, seconds))
            feedback, _ = _run([*nbgrader, "generate_feedback", SERIES, "--force"], plain, env)
            rows.append(("plain `nbgrader autograde` + `generate_feedback`", 1,
                          seconds + feedback))
            plain_scores = {f"{s.student}/{s.notebook}": s.score for s in read_scores(plain)}
        for workers in counts:
            course = Path(tmp) / f"grade-{workers}"
            shutil.copytree(template, course)
            phases[workers] = _phases(course, workers, None, dict(env, MLMCOURSE_ROOT=str(course)))
            rows.append(("`make grade`" + (" on all cores" if workers == cores > 1 else ""),
                         workers, phases[workers]["process"]))
        ours = phases[counts[-1]]["scores_by_key"]
        if plain_scores:
            same = sum(plain_scores.get(k) == v for k, v in ours.items())
            notes.append(f"plain nbgrader and the engine agree on {same} of {len(ours)} "
                         "notebook scores.")
        if _knob("SCHEDULER", "1") != "0":
            course = Path(tmp) / "grade-scheduler"
            shutil.copytree(template, course)
            with separate_cluster(env) as address:
                remote = _phases(course, None, address, dict(env, MLMCOURSE_ROOT=str(course)))
            rows.append(("`make grade --scheduler` (`dask scheduler` + 2 `dask worker`)",
                         remote["workers"], remote["process"]))
            same = sum(remote["scores_by_key"].get(k) == v for k, v in ours.items())
            notes.append(f"Through the separate scheduler: {same} of {len(ours)} scores the same "
                         "as on the local cluster"
                         + (f"; not graded there: {remote['failed']}." if remote["failed"]
                            else "."))
        check_s = _self_check(root, env) if _knob("CHECK", "1") != "0" else None
    load_after = os.getloadavg()
    return _table(rows, phases, names, size, len(students), cores, check_s, notes,
                  (load_before[0], load_after[0]))


def _self_check(root: Path, env: dict) -> float:
    """Wall seconds of `python -m mlmcourse check` on the reference's notebook 04."""
    path = root / "submitted" / "reference" / SERIES / f"{CHECKED_NOTEBOOK}.ipynb"
    seconds, _ = _run([sys.executable, "-m", "mlmcourse", "check", str(path)], root, env)
    return seconds


def _table(rows, phases, names, size, n_students, cores, check_s, notes, load) -> str:
    baseline = rows[0][2] if rows and rows[0][0].startswith("plain") else None
    what = "all six notebooks" if len(names) == 6 else ", ".join(names)
    lines = [f"| how ({size} submissions, {what}) | workers | wall time | per submission "
             "| vs plain |", "|---|---:|---:|---:|---:|"]
    for label, workers, seconds in rows:
        ratio = f"{baseline / seconds:.2f}x" if baseline else "-"
        lines.append(f"| {label} | {workers} | {seconds:.1f} s | {seconds / size:.2f} s "
                     f"| {ratio} |")
    lines += ["", "| `make grade`, by phase | " + " | ".join(f"{w} worker{'s' * (w > 1)}"
                                                         for w in phases) + " |",
              "|---|" + "---:|" * len(phases)]
    for key, label in (("cluster_start", "start the cluster"),
                       ("grading", "grade (gradebook set up alongside)"),
                       ("cluster_stop", "stop the cluster"), ("feedback", "generate_feedback"),
                       ("scores", "score table, grades.csv"),
                       ("engine_per_submission", "engine time per submission (on a worker)")):
        lines.append(f"| {label} | " + " | ".join(f"{p[key]:.1f} s" for p in phases.values())
                     + " |")
    first = next(iter(phases.values()), {})
    per_nb = ", ".join(f"{k[:2]}: {v:.1f} s" for k, v in first.get("engine_per_notebook",
                                                                     {}).items())
    lines += ["", f"{cores} cores; load average {load[0]:.1f} before, {load[1]:.1f} after. "
              f"The class: {n_students} copies of the sample students (reference, blank, typical "
              f"wrong ones, each handing in all {len(names)} notebooks; no hostile ones). "
              f"Engine time per notebook (mean): {per_nb}. "
              + " ".join(notes)]
    verdicts = []
    by_workers = {w: p["process"] for w, p in phases.items()}
    if baseline and by_workers:
        best, one = by_workers[max(by_workers)], by_workers.get(1)
        verdicts.append(f"all cores {baseline / best:.2f}x (target {TARGET_ALL_CORES}x: "
                        f"{'met' if baseline / best >= TARGET_ALL_CORES else 'MISSED'})")
        if one is not None:
            verdicts.append(f"one worker {baseline / one:.2f}x (target {TARGET_ONE_WORKER}x: "
                            f"{'met' if baseline / one >= TARGET_ONE_WORKER else 'MISSED'})")
        if one is not None and max(by_workers) > 1:
            verdicts.append(f"1 -> {max(by_workers)} workers: {one / best:.2f}x faster")
    if check_s is not None:
        verdicts.append(f"`make check` on {CHECKED_NOTEBOOK}: {check_s:.1f} s (target "
                        f"{TARGET_CHECK_S:g} s on a quiet machine: "
                        f"{'met' if check_s <= TARGET_CHECK_S else 'MISSED'})")
    if verdicts:
        lines += ["", "Against the targets: " + "; ".join(verdicts) + "."]
    return "\n".join(lines)


def main() -> int:
    from mlmcourse.course.layout import find_root

    print(benchmark(find_root()))
    return 0


if __name__ == "__main__":  # `python -m mlmcourse.bench.grading phases COURSE WORKERS SCHEDULER`
    if len(sys.argv) >= 4 and sys.argv[1] == "phases":
        result = grade_by_phases(Path(sys.argv[2]), int(sys.argv[3]) or None,
                                 sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None)
        print(json.dumps(result))
    else:
        sys.exit(main())
