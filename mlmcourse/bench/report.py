"""`bench report`: the class report of a synthetic class of 500, from the samples' results.

The class: a scratch course whose autograded/ holds 500 students, each notebook of each student
the autograded notebook of one sample student (mixed, so that each synthetic student has a
different combination of mistakes; links, not copies, where the file system allows), plus the
course's source/ and nbgrader_config.py (no gradebook: scores come from the verdicts). Timed:
`python -m mlmcourse report` as a TA runs it (collect, group, similarity, changes, figures,
CSV, page), and the page's size. MLMCOURSE_BENCH_REPORT_CLASS=N for another size.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from mlmcourse.course.layout import SERIES, find_root, notebook_names
from mlmcourse.grader.config import GradingConfig
from mlmcourse.report.build import write_report
from mlmcourse.report.collect import collect

CLASS_SIZE = int(os.environ.get("MLMCOURSE_BENCH_REPORT_CLASS", "500"))
TARGET_S = 30.0  # the bound for a class of 500


def synthetic_course(root: Path, scratch: Path, size: int = CLASS_SIZE) -> Path:
    """A scratch course with `size` students mixed from the samples' autograded notebooks."""
    course = scratch / "course"
    shutil.copytree(root / "source", course / "source")
    shutil.copy2(root / "nbgrader_config.py", course / "nbgrader_config.py")
    samples = sorted(p.name for p in (root / "autograded").iterdir()
                     if (p / SERIES).is_dir())
    names = notebook_names(root, SERIES)
    for k in range(size):
        folder = course / "autograded" / f"student{k:04d}" / SERIES
        folder.mkdir(parents=True)
        for index, name in enumerate(names):
            sample = sample_for(samples, k, index)
            source = root / "autograded" / sample / SERIES / f"{name}.ipynb"
            if source.is_file():
                _link_or_copy(source, folder / source.name)
    return course


def sample_for(samples: list[str], student: int, notebook: int) -> str:
    """The sample whose notebook number `notebook` synthetic student `student` hands in."""
    return samples[(student * 7 + notebook * 13) % len(samples)]


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


CHROMIUM = Path("/usr/bin/chromium")


def page_open_seconds(page: Path) -> float | None:
    """Seconds from navigation to the page's load event in headless Chromium (None without
    Chromium or Playwright)."""
    if not CHROMIUM.is_file():
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        tab = browser.new_page()
        started = time.perf_counter()
        tab.goto(page.as_uri(), wait_until="load")
        seconds = time.perf_counter() - started
        browser.close()
    return seconds


def main() -> int:
    root = find_root()
    with tempfile.TemporaryDirectory(prefix="mlm-bench-report-") as scratch:
        course = synthetic_course(root, Path(scratch))
        config = GradingConfig.load(course)
        started = time.perf_counter()
        collect(config)
        collected = time.perf_counter() - started
        started = time.perf_counter()
        page = write_report(config)
        total = time.perf_counter() - started
        size = page.stat().st_size
        opened = page_open_seconds(page)
    shown = f"{opened:.2f} s" if opened is not None else "(no Chromium)"
    print("| class | collect (read autograded/) | whole report (`python -m mlmcourse report`) "
          "| page size | page load in Chromium | target |")
    print("|---|---|---|---|---|---|")
    print(f"| {CLASS_SIZE} synthetic students (from the samples) | {collected:.1f} s | "
          f"{total:.1f} s | {size / 1e6:.2f} MB | {shown} | under {TARGET_S:.0f} s |")
    return 0 if total < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
