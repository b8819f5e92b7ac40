"""Does Validate catch every mistake the hidden tests take points for?

For each wrong sample and each plausible first draft in samples/ (`wrong_*`, `draft_*`) and each
notebook where its EXPECTED score is below full marks, the notebook goes into a student's home
(the reference of every other notebook beside it, no course configuration) and `nbgrader
validate` runs there as the Validate button runs it. A pair where Validate says "Success" is a
mistake the student learns about only from their grade. `MLMCOURSE_BENCH_VALIDATE_PAIRS=N`:
the first N such pairs only (a smoke run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mlmcourse.build.samples import SampleStudent, load_samples, sample_home
from mlmcourse.course import nbio
from mlmcourse.course.cells import total_points
from mlmcourse.course.layout import SERIES, find_root

PASSED = "Success! Your notebook passes all the tests."
ERROR_HEADER = "The error was:"
PREFIXES = ("wrong_", "draft_")
PAIRS = int(os.environ.get("MLMCOURSE_BENCH_VALIDATE_PAIRS", "0"))  # 0: every pair


def run_validate(notebook: Path, home: Path, root: Path) -> str:
    """`nbgrader validate` as the Validate button runs it: in the notebook's folder, HOME the
    student's home, no JUPYTER_* or NBGRADER_* settings; the course package importable."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JUPYTER", "NBGRADER"))}
    env.update(HOME=str(home), PYTHONPATH=str(root), MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-m", "nbgrader", "validate", notebook.name],
                          cwd=notebook.parent, env=env, capture_output=True, text=True,
                          timeout=600)
    return done.stdout + done.stderr


def point_losing_pairs(root: Path) -> list[tuple[SampleStudent, str, float, float]]:
    """(sample, notebook, expected, full marks) wherever a wrong or draft sample loses points."""
    full = {path.stem: total_points(nbio.read(path))
            for path in sorted((root / "source" / SERIES).glob("*.ipynb"))}
    return [(sample, name, float(points), full[name])
            for sample in load_samples(root) if sample.student_id.startswith(PREFIXES)
            for name, points in sorted(sample.expected.items()) if points < full[name]]


def validate_fails(root: Path, sample: SampleStudent, name: str) -> tuple[bool, str]:
    """(Validate fails, the first failing cell's error as Validate shows it)."""
    with tempfile.TemporaryDirectory(prefix="mlm-validate-") as scratch:
        home = Path(scratch)
        output = run_validate(sample_home(root, sample, name, home), home, root)
    return PASSED not in output, first_error(output)


def first_error(output: str) -> str:
    """The text under Validate's first "The error was:", up to its next rule of '='."""
    if ERROR_HEADER not in output:
        return ""
    block = output.split(ERROR_HEADER, 1)[1].split("=" * 20, 1)[0]
    return " ".join(line.strip() for line in block.strip().splitlines())


def main() -> int:
    root = find_root()
    pairs = point_losing_pairs(root)[:PAIRS or None]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2))) as pool:
        outcomes = list(pool.map(lambda pair: validate_fails(root, pair[0], pair[1]), pairs))
    elapsed = time.perf_counter() - started
    print("| sample | notebook | hidden score | Validate | its first message names the mistake |")
    print("|---|---|---|---|---|")
    named = 0
    for (sample, name, points, full), (failed, error) in zip(pairs, outcomes):
        verdict = "fails" if failed else "**passes**"
        phrase = sample.shows.get(name, "")
        names_it = bool(phrase) and phrase in error
        named += names_it
        shown = "yes" if names_it else f"**no**: {error[:120]}"
        print(f"| {sample.student_id} | {name} | {points:g} / {full:g} | {verdict} | {shown} |")
    caught = sum(failed for failed, _ in outcomes)
    print(f"\nValidate fails on {caught} of {len(pairs)} (sample, notebook) pairs that lose "
          f"hidden points, and its first message names the mistake on {named} "
          f"({elapsed:.0f} s)")
    return 0 if caught == len(pairs) else 1
