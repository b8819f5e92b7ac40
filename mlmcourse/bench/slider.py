"""`bench slider`: one slider update of notebook 4 (100 Adam steps + redraw) and of notebook 5's
mix panel (100 Adam steps of the two-table model + both views redrawn), median of 30 each
(`MLMCOURSE_BENCH_SLIDER_MOVES=N` for N)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from mlmcourse.teaching.experiment import run_experiment
from mlmcourse.teaching.loader import load_student_functions
from mlmcourse.teaching.mixlab import MixLab, train_under_mix
from mlmcourse.teaching.sliders import SliderPanel

WARM_UP = 2  # the first updates warm caches (fonts, glyphs)
MOVES = int(os.environ.get("MLMCOURSE_BENCH_SLIDER_MOVES", "30"))


def _reference_functions(source_dir: str | Path | None) -> tuple[Callable, Callable]:
    """The reference functions, loaded from the instructor notebooks in ``source/bert_mlm`` by
    the same loader the students' notebooks use."""
    if source_dir is None:
        source_dir = Path(__file__).resolve().parents[2] / "source" / "bert_mlm"
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    return load_student_functions(source_dir)


def _medians(n: int, move: Callable[[int], None], run_only: Callable[[], None],
             image: Callable[[], bytes]) -> dict[str, float]:
    """Time ``move(i)`` (a widget change that fires the real observer: run + redraw + image)
    and ``run_only()`` (the training alone). ``cpu_median_ms`` (process time) is the same
    median, less what other processes took."""
    wall, cpu, runs = [], [], []
    for i in range(n + WARM_UP):
        start, start_cpu = time.perf_counter(), time.process_time()
        move(i)
        total, total_cpu = time.perf_counter() - start, time.process_time() - start_cpu
        start = time.perf_counter()
        run_only()
        run = time.perf_counter() - start
        if i >= WARM_UP:
            wall.append(total)
            cpu.append(total_cpu)
            runs.append(run)
    return {
        "median_ms": 1000 * statistics.median(wall),
        "min_ms": 1000 * min(wall),
        "cpu_median_ms": 1000 * statistics.median(cpu),
        "run_only_median_ms": 1000 * statistics.median(runs),
        "n": float(n),
        "image_kib": len(image()) / 1024,
        "load_average_1min": os.getloadavg()[0],
    }


def slider_update_times(n: int = 30, source_dir: str | Path | None = None) -> dict[str, float]:
    """Notebook 4: each timed update changes the learning rate slider."""
    functions = _reference_functions(source_dir)
    panel = SliderPanel(*functions)
    learning_rates = (0.08, 0.1)

    def move(i: int) -> None:
        panel.lr.value = learning_rates[i % 2]  # fires the observer: run + redraw

    return _medians(n, move, lambda: run_experiment(*functions, panel.settings()),
                    lambda: panel.image.value)


def mix_panel_update_times(n: int = 30, source_dir: str | Path | None = None) -> dict[str, float]:
    """Notebook 5's mix panel: each timed update changes the seed slider."""
    functions = _reference_functions(source_dir)
    lab = MixLab(*functions)
    seeds = (163, 164)

    def move(i: int) -> None:
        lab.seed.value = seeds[i % 2]  # fires the observer: training + both views + image

    def run_only() -> None:
        train_under_mix(*functions, lab.mix.value, float(lab.rate.value), int(lab.seed.value),
                        lab.data)

    return _medians(n, move, run_only, lambda: lab.image.value)


def _table(title: str, result: dict[str, float]) -> None:
    print(f"{title}\n\n| measurement | value |\n|---|---:|")
    for key, value in result.items():
        print(f"| {key} | {value:.1f} |")
    print()


def main() -> int:
    _table("Notebook 4, the experiment's sliders (lr moved)", slider_update_times(MOVES))
    _table("Notebook 5, the mix panel (seed moved)", mix_panel_update_times(MOVES))
    return 0
