"""`bench slider`: one slider update of notebook 4 (100 Adam steps + redraw), median of 30."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import torch

from mlmcourse.teaching.experiment import run_experiment
from mlmcourse.teaching.loader import load_student_functions
from mlmcourse.teaching.sliders import SliderPanel


def slider_update_times(n: int = 30, source_dir: str | Path | None = None) -> dict[str, float]:
    """Median time of one slider update (100 updates + redraw), with the reference functions.

    The functions are loaded from the instructor notebooks in ``source/bert_mlm`` by the same
    loader the students' notebook uses. Each timed update changes the learning rate slider, so
    the timing goes through the real observer, the run, the artists and the encoded image.
    ``cpu_median_ms`` (process time) is the same median, less what other processes took.
    """
    if source_dir is None:
        source_dir = Path(__file__).resolve().parents[2] / "source" / "bert_mlm"
    functions = load_student_functions(source_dir)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    panel = SliderPanel(*functions)
    wall, cpu, run_only = [], [], []
    learning_rates = (0.08, 0.1)
    for i in range(n + 2):
        start, start_cpu = time.perf_counter(), time.process_time()
        panel.lr.value = learning_rates[i % 2]  # fires the observer: run + redraw
        total, total_cpu = time.perf_counter() - start, time.process_time() - start_cpu
        start = time.perf_counter()
        run_experiment(*functions, panel.settings())
        run = time.perf_counter() - start
        if i >= 2:  # the first updates warm caches (fonts, glyphs)
            wall.append(total)
            cpu.append(total_cpu)
            run_only.append(run)
    return {
        "median_ms": 1000 * statistics.median(wall),
        "min_ms": 1000 * min(wall),
        "cpu_median_ms": 1000 * statistics.median(cpu),
        "run_only_median_ms": 1000 * statistics.median(run_only),
        "n": float(n),
        "image_kib": len(panel.image.value) / 1024,
        "load_average_1min": os.getloadavg()[0],
    }


def main() -> int:
    result = slider_update_times()
    print("| measurement | value |\n|---|---:|")
    for key, value in result.items():
        print(f"| {key} | {value:.1f} |" if isinstance(value, float) else f"| {key} | {value} |")
    return 0
