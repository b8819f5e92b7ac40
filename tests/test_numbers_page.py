"""The numbers page is written from the benchmarks' results file, and a benchmark's run lands in
both: its own output, under the command that reproduces it, the machine and the date."""

from __future__ import annotations

import shutil

import mlmcourse.bench as bench
from mlmcourse.bench.results import PAGE, RESULTS, load, render
from tests.conftest import ROOT


def test_the_numbers_page_is_fresh_against_the_results_file():
    written = render(load(ROOT), list(bench.BENCHMARKS))
    assert (ROOT / PAGE).read_text(encoding="utf-8") == written, (
        "docs/numbers.md differs from docs/numbers.json: run `python -m mlmcourse bench --page`")


def test_every_benchmark_has_a_current_result_with_its_command_machine_and_date():
    runs = load(ROOT)["benchmarks"]
    assert {run["benchmark"] for run in runs} == set(bench.BENCHMARKS)
    for run in runs:
        assert run["command"].endswith(f"python -m mlmcourse bench {run['benchmark']}")
        assert run["machine"] and run["output"] and len(run["date"]) == len("2026-12-06")


def test_a_benchmark_run_replaces_its_commands_result_and_rewrites_the_page(tmp_path,
                                                                              monkeypatch):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / RESULTS, tmp_path / RESULTS)
    table = "| what | measured |\n|---|---:|\n| a fake update | 1.5 ms |"

    def fake() -> int:
        print(table)
        return 0

    monkeypatch.setitem(bench.BENCHMARKS, "fake", fake)
    monkeypatch.setenv("MLMCOURSE_BENCH_CLASS", "3")
    assert bench.main(["fake"], root=tmp_path) == 0
    assert bench.main(["fake"], root=tmp_path) == 0
    runs = [run for run in load(tmp_path)["benchmarks"] if run["benchmark"] == "fake"]
    assert len(runs) == 1 and runs[0]["output"] == table
    assert runs[0]["command"] == "MLMCOURSE_BENCH_CLASS=3 python -m mlmcourse bench fake"
    assert "cores" in runs[0]["machine"]
    page = (tmp_path / PAGE).read_text(encoding="utf-8")
    assert f"`{runs[0]['command']}`" in page and "| a fake update | 1.5 ms |" in page


def test_a_failed_benchmark_keeps_the_last_good_figure(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / RESULTS, tmp_path / RESULTS)
    monkeypatch.setitem(bench.BENCHMARKS, "loss", lambda: print("| broken |") or 1)
    before = load(tmp_path)["benchmarks"]
    assert bench.main(["loss"], root=tmp_path) == 1
    assert load(tmp_path)["benchmarks"] == before
