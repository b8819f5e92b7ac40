"""The report's histograms, as PNG data URIs (the page works offline, from one file), each with
what it shows in words and its counts per bin, made from the same scores as the picture: a TA
who cannot see the picture reads the same class."""

from __future__ import annotations

import base64
import io
import statistics
from dataclasses import dataclass

from mlmcourse.grader.results.verdict import Status
from mlmcourse.report.collect import ClassData

PANEL = (2.9, 1.9)  # inches of one histogram: small multiples, one per notebook
MAX_BINS = 20


@dataclass(frozen=True)
class Histogram:
    """One histogram: ``name`` (the picture's alt text: what it is), ``text`` (what it shows,
    from its scores), ``bins`` ([(score range, students)], the counts the bars draw)."""

    title: str
    uri: str
    name: str
    text: str
    bins: list[tuple[str, int]]


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _num(value: float, digits: int = 1) -> str:
    return f"{round(float(value), digits):g}"


def describe_scores(title: str, scores: list[float], out_of: float) -> str:
    """What the histogram of `scores` shows, in one sentence."""
    if not scores:
        return f"No graded hand-in of {title} yet: the histogram is empty."
    below = sum(score < out_of / 2 for score in scores)
    who = "1 student" if len(scores) == 1 else f"{len(scores)} students"
    return (f"Scores of {who} on {title}, out of {_num(out_of)}: median "
            f"{_num(statistics.median(scores))}, lowest {_num(min(scores))}, highest "
            f"{_num(max(scores))}, {below} below half.")


def bin_rows(counts, edges) -> list[tuple[str, int]]:
    """[(score range, students)] per bar; the last range includes its top, as in the bars."""
    rows = []
    for index, count in enumerate(counts):
        low, high = _num(edges[index], 2), _num(edges[index + 1], 2)
        last = index == len(counts) - 1
        rows.append((f"{low} to {high}" if last else f"{low} to under {high}", int(count)))
    return rows


def score_histograms(data: ClassData) -> list[Histogram]:
    """The assignment's total, then each graded notebook's scores of the students who handed it
    in."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    series: list[tuple[str, list[float], float]] = []
    totals = [sum(s.score for s in student.submissions.values())
              for student in data.students.values() if student.submitted]
    series.append(("Assignment total", totals, sum(data.release.max_scores.values())))
    for name in data.release.notebooks:
        if not data.release.max_scores[name]:
            continue
        scores = [s.submissions[name].score for s in data.students.values()
                  if s.submissions.get(name) and s.submissions[name].status is not Status.MISSING]
        series.append((name, scores, data.release.max_scores[name]))
    histograms = []
    for title, scores, out_of in series:
        bins = min(MAX_BINS, max(1, int(out_of))) if out_of else 1
        counts, edges = np.histogram(scores, bins=bins, range=(0, out_of or 1))
        fig, axis = plt.subplots(figsize=PANEL)
        axis.hist(scores, bins=edges, color="#4c72b0", edgecolor="white")
        axis.set_title(f"{title} ({len(scores)} graded)", fontsize=9)
        axis.set_xlabel(f"score out of {out_of:g}", fontsize=8)
        axis.set_ylabel("students", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.spines[["top", "right"]].set_visible(False)
        histograms.append(Histogram(
            title=title, uri=_png(fig),
            name=f"Histogram of the scores on {title} ({len(scores)} graded)",
            text=describe_scores(title, scores, out_of), bins=bin_rows(counts, edges)))
        plt.close(fig)
    return histograms
