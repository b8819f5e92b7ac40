"""The benchmarks' results file and the numbers page written from it.

`python -m mlmcourse bench NAME` keeps what each benchmark printed, with the command that
reproduces it, the machine and the date, in `docs/numbers.json` (one entry per command: a rerun
replaces its entry, so the file holds the current figures only); `docs/numbers.md` is rendered
from that file and nothing else (`python -m mlmcourse bench --page` renders it again). The
file's `by_hand` list holds the few figures no benchmark produces (a clean clone's CI time, a
learner trial), each with how it was measured; the page labels them as kept by hand.
"""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path("docs") / "numbers.json"
PAGE = Path("docs") / "numbers.md"

# The settings a benchmark reads from the environment: part of the command that reproduces it.
KNOB_PREFIXES = ("MLMCOURSE_BENCH_", "MLMCOURSE_MUTATION_")


def load(root: Path) -> dict:
    path = Path(root) / RESULTS
    if not path.is_file():
        return {"benchmarks": [], "by_hand": []}
    return json.loads(path.read_text(encoding="utf-8"))


def save(root: Path, results: dict) -> None:
    text = json.dumps(results, indent=1, ensure_ascii=False) + "\n"
    (Path(root) / RESULTS).write_text(text, encoding="utf-8")


def command(name: str, environ: dict[str, str] | None = None) -> str:
    """The command line that reproduces a benchmark's run, its environment knobs included."""
    environ = os.environ if environ is None else environ
    knobs = [f"{key}={value}" for key, value in sorted(environ.items())
             if key.startswith(KNOB_PREFIXES)]
    return " ".join([*knobs, "python -m mlmcourse bench", name])


def machine() -> str:
    """The machine in words: cores, memory, system, torch and its device, the load at the start."""
    import torch

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    device = "CUDA" if torch.cuda.is_available() else "CPU"
    load = os.getloadavg()[0]
    return (f"{os.cpu_count()} cores, {memory:.0f} GiB, {platform.system()} "
            f"{platform.machine()}, torch {torch.__version__} ({device}); "
            f"load average {load:.1f} at the start")


def record(root: Path, name: str, output: str) -> dict:
    """Keep one benchmark's output as the current result of its command; return the entry."""
    entry = {
        "benchmark": name,
        "command": command(name),
        "date": datetime.now(UTC).date().isoformat(),
        "machine": machine(),
        "output": output.strip(),
    }
    results = load(root)
    kept = [old for old in results["benchmarks"] if old["command"] != entry["command"]]
    results["benchmarks"] = [*kept, entry]
    save(root, results)
    return entry


def render(results: dict, order: list[str]) -> str:
    """The numbers page: each benchmark's current output under its command, machine and date, in
    the dispatcher's order; then the figures kept by hand, labelled as such."""
    rank = {name: index for index, name in enumerate(order)}
    runs = sorted(results["benchmarks"],
                  key=lambda run: (rank.get(run["benchmark"], len(rank)), run["command"]))
    lines = [
        "# Measured numbers",
        "",
        "The current figures only, each with the command that reproduces it, the machine and "
        "the date; earlier figures are in the [changelog](../CHANGELOG.md). This page is "
        "written by `python -m mlmcourse bench` from its results file, `docs/numbers.json`: "
        "do not edit it by hand (`python -m mlmcourse bench --page` writes it again).",
        "",
        "## From the benchmarks",
    ]
    for run in runs:
        lines += ["", f"### {run['benchmark']}: `{run['command']}`", "",
                  f"*{run['date']}, {run['machine']}.*", "", run["output"]]
    lines += [
        "",
        "## Kept by hand",
        "",
        "Figures no benchmark produces, written down by whoever measured them, with how.",
        "",
        "| what | figure | how | machine | date |",
        "|---|---|---|---|---|",
    ]
    for row in results["by_hand"]:
        cells = (row["what"], row["figure"], row["how"], row["machine"], row["date"])
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def write_page(root: Path, order: list[str]) -> Path:
    page = Path(root) / PAGE
    page.write_text(render(load(root), order), encoding="utf-8")
    return page
