"""`bench grading`: one synthetic class graded by plain sequential nbgrader and by `make grade`.

`MLMCOURSE_BENCH_CLASS` (default 40) submissions, copies of the sample students (reference,
blank, typical wrong ones); `MLMCOURSE_BENCH_NOTEBOOKS` (default 1) first notebooks of the series.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mlmcourse.course import nbio
from mlmcourse.course.layout import ASSIGNMENT
from mlmcourse.grader.coordinator import default_workers

BENCH_SIZE = int(os.environ.get("MLMCOURSE_BENCH_CLASS", "40"))
BENCH_NOTEBOOKS = int(os.environ.get("MLMCOURSE_BENCH_NOTEBOOKS", "1"))


def synthetic_class(root: Path, destination: Path, size: int, notebooks: list[str]) -> list[str]:
    """A course at `destination` whose series is `notebooks` and whose class is `size` copies
    of the sample students (reference, blank and the typical wrong ones, not the hostile ones:
    a hang would only measure nbgrader's timeout)."""
    from mlmcourse.build import samples
    from mlmcourse.course.layout import notebook_names

    for folder in ("source", "release"):
        for name in notebooks:
            src = root / folder / ASSIGNMENT / f"{name}.ipynb"
            if src.is_file():
                (destination / folder / ASSIGNMENT).mkdir(parents=True, exist_ok=True)
                shutil.copy(src, destination / folder / ASSIGNMENT / src.name)
    shutil.copy(root / "nbgrader_config.py", destination / "nbgrader_config.py")
    typical = []
    for path in sorted((root / "samples").glob("[a-z]*.py")):
        if not path.stem.startswith(("reference", "blank", "wrong_")):
            continue
        sample = samples.load_sample(path, notebook_names(root))
        if set(notebooks) & set(sample.notebooks):
            typical.append(sample)
    students = []
    for index in range(size):
        sample = typical[index % len(typical)]
        student = f"s{index + 1:03d}_{sample.student_id}"
        for name in notebooks:
            nb = samples.sample_notebook(root, sample, name)
            if nb is None:
                continue
            nbio.write(nb, destination / "submitted" / student / ASSIGNMENT / f"{name}.ipynb")
        students.append(student)
    return students


def _timed(command: list[str], cwd: Path, env: dict) -> float:
    import subprocess

    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise RuntimeError(f"{' '.join(command[2:])} failed (exit {done.returncode})")
    return time.perf_counter() - started


def plain_nbgrader_preprocessors() -> str:
    """The command-line option that gives `nbgrader autograde` nbgrader's own preprocessors back
    (its `Execute` included): nbgrader_config.py puts the course's engine in `Execute`'s place,
    and this baseline measures plain nbgrader."""
    from nbgrader.converters import Autograde

    own = [f"{pp.__module__}.{pp.__qualname__}" for pp in Autograde().autograde_preprocessors]
    return f"--Autograde.autograde_preprocessors={json.dumps(own)}"


def benchmark(root: Path, size: int = BENCH_SIZE, first: int = BENCH_NOTEBOOKS) -> str:
    """Grade one synthetic class three ways on this machine; a markdown table of the times."""
    from mlmcourse.course.layout import notebook_names
    from mlmcourse.grader.config import tool_env
    from mlmcourse.grader.grading import read_scores

    names = notebook_names(root)[:first]
    cores = default_workers()
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mlm-bench-") as tmp:
        template = Path(tmp) / "template"
        students = synthetic_class(root, template, size, names)
        env = tool_env()
        nbgrader = [sys.executable, "-m", "nbgrader"]

        plain = Path(tmp) / "plain"
        shutil.copytree(template, plain)
        _timed([*nbgrader, "generate_assignment", ASSIGNMENT, "--force"], plain, env)
        autograde = [*nbgrader, "autograde", ASSIGNMENT, "--force", "--create",
                     plain_nbgrader_preprocessors()]
        seconds = _timed(autograde, plain, env)
        rows.append(("plain `nbgrader autograde` (sequential)", 1, seconds))
        feedback = _timed([*nbgrader, "generate_feedback", ASSIGNMENT, "--force"], plain, env)
        rows.append(("plain `nbgrader autograde` + `generate_feedback`", 1, seconds + feedback))
        plain_scores = {(s.student, s.notebook): s.score for s in read_scores(plain)}

        ours_scores = {}
        for workers in sorted({1, cores}):
            course = Path(tmp) / f"grade-{workers}"
            shutil.copytree(template, course)
            env_here = dict(env, MLMCOURSE_ROOT=str(course))
            command = [sys.executable, "-m", "mlmcourse", "grade", "--workers", str(workers)]
            seconds = _timed(command, course, env_here)
            label = "`make grade` (engine + feedback)" + (" on all cores" if workers == cores
                                                          and cores > 1 else "")
            rows.append((label, workers, seconds))
            ours_scores = {(s.student, s.notebook): s.score for s in read_scores(course)}
    load_after = os.getloadavg()

    baseline = rows[0][2]
    lines = [
        f"| how ({size} submissions, notebook{'s' if len(names) > 1 else ''} "
        f"{', '.join(names)}) | workers | wall time | per submission | speed-up vs plain |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, workers, seconds in rows:
        lines.append(f"| {label} | {workers} | {seconds:.1f} s | {seconds / size:.2f} s "
                     f"| {baseline / seconds:.2f}x |")
    same = sum(plain_scores.get(key) == value for key, value in ours_scores.items())
    best = rows[-1][2]
    scaling = (f" From 1 to {cores} workers `make grade` runs {rows[2][2] / best:.2f}x faster "
               "(cluster start-up and the one feedback pass do not parallelize)."
               if cores > 1 else "")
    verdict = "meets" if baseline / best >= 1.7 else "MISSES"
    lines += [
        "",
        f"{cores} cores; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
        f"(other work on the machine slows every row). The class: {len(students)} copies of "
        "the sample students (reference, blank, typical wrong ones; no hostile ones), "
        f"graded on the first {len(names)} notebook(s) only. `make grade` includes starting the "
        "Dask cluster, the gradebook writes and nbgrader's generate_feedback; plain nbgrader "
        f"and the engine agree on {same} of {len(ours_scores)} notebook scores. Speed-up on "
        f"all cores: {baseline / best:.2f}x ({verdict} the 1.7x target).{scaling}",
    ]
    return "\n".join(lines)


def main() -> int:
    from mlmcourse.course.layout import find_root

    print(benchmark(find_root()))
    return 0
