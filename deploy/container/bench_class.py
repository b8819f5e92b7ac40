"""Ten students on the container hub at once (`make bench-class`, as root): the figures the
README's "One machine with containers" reports.

Runs tests/test_hub_containers.py's class of ten (each logs in, fetches, writes an answer, all
press Validate together, all submit together, in Chromium) and prints what it measured: the
median and worst Validate time (from the click to nbgrader's dialog, in each student's page) and
each student container's peak memory (its cgroup's high-water mark), plus the image's build
time and size when build/image/ holds them. The run's own record: build/hub-class/class.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "build" / "hub-class" / "class.json"
TEST = "tests/test_hub_containers.py::test_a_class_of_ten_validates_and_submits_at_once"


def main() -> int:
    REPORT.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-m",
                           "bench", TEST],
                          cwd=REPO)
    if done.returncode != 0 or not REPORT.is_file():
        print("the class did not run to its end: see the test's output above", file=sys.stderr)
        return 1
    report = json.loads(REPORT.read_text())
    peaks = [b for b in report["peak_memory_bytes"].values() if b]
    print(f"{report['students']} students, Validate at once: median "
          f"{report['validate_median_s']:.1f} s, worst {report['validate_worst_s']:.1f} s")
    if peaks:
        print(f"peak memory per student container: {min(peaks) / 2**20:.0f}-"
              f"{max(peaks) / 2**20:.0f} MiB (median "
              f"{sorted(peaks)[len(peaks) // 2] / 2**20:.0f} MiB)")
    for facts in sorted((REPO / "build" / "image").glob("mlmcourse-*.json")):
        image = json.loads(facts.read_text())
        saved = (f", {image['archive_bytes'] / 1e9:.2f} GB as an OCI archive"
                 if "archive_bytes" in image else "")
        print(f"course image {image['key']}: built in {image['seconds']:.0f} s, "
              f"{image['image_bytes'] / 1e9:.2f} GB in podman's storage{saved}")
    for user, seconds in sorted(report["validate_s"].items()):
        peak = report["peak_memory_bytes"].get(user)
        print(f"  {user}: Validate {seconds:.1f} s, peak "
              f"{'?' if not peak else f'{peak / 2**20:.0f} MiB'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
