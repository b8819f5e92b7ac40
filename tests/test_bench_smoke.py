"""Every part of `python -m mlmcourse bench` (`make bench`, the numbers page's commands) runs on
a tiny input and produces its figures: the command line as the README and docs/numbers.md give
it, each part's size knob set small, its result kept in a scratch course's results file.

The scratch course links every folder of the repository but docs/, so the benchmarks read the
real source/, samples/ and autograded/ while their results and the page they rewrite land in
the scratch copy of docs/ (the repository's numbers stay as measured). Figures are not checked:
only that each part ran, exited 0 and printed its table.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, course_env

import mlmcourse.bench as bench
from mlmcourse.bench.results import PAGE, command, load
from mlmcourse.teaching import bert_walkthrough

# The cheap parts: seconds each, one command for all of them (torch imported once).
QUICK = {
    "loss": {"MLMCOURSE_BENCH_LOSS_SHAPE": "2,8,16"},
    "head": {"MLMCOURSE_BENCH_HEAD_SHAPE": "2,8,16,32"},
    "slider": {"MLMCOURSE_BENCH_SLIDER_MOVES": "2"},
    "report": {"MLMCOURSE_BENCH_REPORT_CLASS": "6"},
}
# The parts that grade (the engine's fork server, kernels, nbgrader, a Dask cluster): one
# notebook, one or two students, one mutant, one Validate pair. `bench grading` grades with
# plain nbgrader and `make grade` (its ratio); its rows for a separate `dask scheduler` and for
# `make check` stay off here (their commands are tested in test_parallel.py and
# test_self_check_any_name.py), which halves the run.
GRADING = {
    "floor": {"MLMCOURSE_BENCH_NOTEBOOKS": "1"},
    "grading": {"MLMCOURSE_BENCH_CLASS": "2", "MLMCOURSE_BENCH_NOTEBOOKS": "1",
                "MLMCOURSE_BENCH_WORKERS": "1", "MLMCOURSE_BENCH_SCHEDULER": "0",
                "MLMCOURSE_BENCH_CHECK": "0"},
    "mutation": {"MLMCOURSE_MUTATION_SAMPLE": "1000",
                 "MLMCOURSE_MUTATION_FUNCTIONS": "make_mlm_inputs"},
    "validate": {"MLMCOURSE_BENCH_VALIDATE_PAIRS": "1"},
}


def test_every_benchmark_has_a_smoke_run():
    assert set(QUICK) | set(GRADING) == set(bench.BENCHMARKS)


def scratch_course(destination: Path) -> Path:
    """The repository's folders and files linked, docs/ copied: results land in the copy."""
    destination.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in {".git", ".venv", "docs"}:
            continue
        (destination / entry.name).symlink_to(entry)
    shutil.copytree(ROOT / "docs", destination / "docs")
    return destination


def run_bench(root: Path, parts: dict[str, dict[str, str]]) -> subprocess.CompletedProcess:
    knobs = {key: value for settings in parts.values() for key, value in settings.items()}
    env = {key: value for key, value in course_env(ROOT).items()
           if not key.startswith(("MLMCOURSE_BENCH_", "MLMCOURSE_MUTATION_"))}
    env.update(knobs, MLMCOURSE_ROOT=str(root), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "mlmcourse", "bench", *parts],
                          cwd=root, env=env, capture_output=True, text=True, timeout=900)


def assert_each_part_kept_its_table(root: Path, parts: dict[str, dict[str, str]],
                                    done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, f"{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    knobs = {key: value for settings in parts.values() for key, value in settings.items()}
    kept = {run["command"]: run for run in load(root)["benchmarks"]}
    page = (root / PAGE).read_text()
    for name in parts:
        run = kept.get(command(name, knobs))
        assert run is not None, f"bench {name} kept no result:\n{done.stdout[-3000:]}"
        assert "|---" in run["output"].replace(" ", ""), f"bench {name}: {run['output']}"
        assert run["command"] in page, f"the numbers page does not show bench {name}"


def test_the_cheap_benchmarks_run_on_a_tiny_input(tmp_path):
    parts = dict(QUICK)
    if not bert_walkthrough.transformers_available():  # the optional extra (make test has it)
        parts.pop("head")
    root = scratch_course(tmp_path / "course")
    assert_each_part_kept_its_table(root, parts, run_bench(root, parts))


@pytest.mark.slow
def test_the_grading_benchmarks_run_on_a_tiny_class(tmp_path):
    root = scratch_course(tmp_path / "course")
    assert_each_part_kept_its_table(root, GRADING, run_bench(root, GRADING))
