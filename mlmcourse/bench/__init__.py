"""`python -m mlmcourse bench [NAME ...]` (`make bench`): the figures of the numbers page.

A thin dispatcher: each benchmark prints a markdown table and returns an exit status; each lives
in a module of this package (loss, head, slider, floor, grading, report,
mutation, validate), imported only when
it runs.
With no names, every benchmark runs in the order below. What a benchmark prints is kept as the
current result of its command in the results file, and the numbers page is written again from
that file (:mod:`mlmcourse.bench.results`).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable
from pathlib import Path


def _grading() -> int:
    """A class of 40 whole submissions graded by plain sequential nbgrader and by `make grade`
    (about 45 minutes on two cores, most of it plain nbgrader; MLMCOURSE_BENCH_CLASS=N for N)."""
    from mlmcourse.bench.grading import main as grading_main

    return grading_main()


def _shape_args(knob: str, flags: tuple[str, ...]) -> list[str]:
    """Command-line options from a shape knob (`MLMCOURSE_BENCH_LOSS_SHAPE=2,4,8`): the sizes in
    the order of `flags`; no knob, no options (the benchmark's own BERT-base defaults)."""
    value = os.environ.get(knob, "").strip()
    if not value:
        return []
    sizes = [size.strip() for size in value.split(",")]
    if len(sizes) != len(flags) or not all(size.isdigit() and int(size) > 0 for size in sizes):
        raise SystemExit(f"bench: {knob} takes {len(flags)} positive sizes "
                         f"({','.join(flag.lstrip('-') for flag in flags)}), not {value!r}")
    return [item for flag, size in zip(flags, sizes, strict=True) for item in (flag, size)]


def _loss() -> int:
    """masked_lm_loss (notebook 3's reference) against F.cross_entropy at BERT-base shape
    (MLMCOURSE_BENCH_LOSS_SHAPE=B,L,V for another)."""
    from mlmcourse.bench.loss import main as loss_main

    return loss_main(_shape_args("MLMCOURSE_BENCH_LOSS_SHAPE", ("--batch", "--length", "--vocab")))


def _head() -> int:
    """BERT's MLM head + loss on every position against the selected rows only (BERT-base;
    MLMCOURSE_BENCH_HEAD_SHAPE=B,L,H,V for another shape)."""
    from mlmcourse.bench.head import main as head_main

    return head_main(_shape_args("MLMCOURSE_BENCH_HEAD_SHAPE",
                                 ("--batch", "--length", "--hidden", "--vocab")))


def _mutation() -> int:
    """The hidden tests' mutation score per graded function (MLMCOURSE_MUTATION_SAMPLE=N: every
    N-th mutant only; the whole run takes about half an hour on two cores)."""
    from mlmcourse.bench.mutation import main as mutation_main

    return mutation_main()


def _floor() -> int:
    """The hidden tests' own compute on the reference in one plain kernel (no sandbox): the
    floor the grader's time per submission is set beside (MLMCOURSE_BENCH_NOTEBOOKS=N: the
    first N notebooks of the series only)."""
    from mlmcourse.bench.floor import main as floor_main

    return floor_main()


def _validate() -> int:
    """Validate in a student's home on every wrong and draft sample that loses hidden points:
    how many of them Validate catches (a few minutes; MLMCOURSE_BENCH_VALIDATE_PAIRS=N: the
    first N such pairs only)."""
    from mlmcourse.bench.validate import main as validate_main

    return validate_main()


def _report() -> int:
    """The class report of a synthetic class of 500 (from the samples' results;
    MLMCOURSE_BENCH_REPORT_CLASS=N for N)."""
    from mlmcourse.bench.report import main as report_main

    return report_main()


def _slider() -> int:
    """One slider update of notebook 4 and of notebook 5's mix panel (100 Adam steps + redraw),
    median over 30 moves each (MLMCOURSE_BENCH_SLIDER_MOVES=N for N)."""
    from mlmcourse.bench.slider import main as slider_main

    return slider_main()


BENCHMARKS: dict[str, Callable[[], int]] = {
    "loss": _loss,
    "head": _head,
    "slider": _slider,
    "floor": _floor,
    "grading": _grading,
    "report": _report,
    "mutation": _mutation,
    "validate": _validate,
}


class _Tee(io.StringIO):
    """Keeps what a benchmark prints while it still reaches the terminal as it comes."""

    def __init__(self, terminal) -> None:
        super().__init__()
        self.terminal = terminal

    def write(self, text: str) -> int:
        self.terminal.write(text)
        return super().write(text)

    def flush(self) -> None:
        self.terminal.flush()


def main(what: list[str] | None = None, root: Path | None = None, page_only: bool = False) -> int:
    from mlmcourse.bench.results import record, write_page
    from mlmcourse.course.layout import find_root

    root = root or find_root()
    if page_only:
        print(f"bench: wrote {write_page(root, list(BENCHMARKS))}")
        return 0
    names = list(what or BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        print(f"bench: unknown benchmark(s) {unknown}; choose from {sorted(BENCHMARKS)}",
              file=sys.stderr)
        return 2
    status = 0
    for name in names:
        print(f"## {name}\n", flush=True)
        tee = _Tee(sys.stdout)
        with contextlib.redirect_stdout(tee):
            failed = BENCHMARKS[name]() or 0
        status = max(status, failed)
        if not failed:  # a failed run is no figure: the page keeps the last good one
            record(root, name, tee.getvalue())
        print(flush=True)
    print(f"bench: wrote {write_page(root, list(BENCHMARKS))}")
    return status
