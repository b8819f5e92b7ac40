"""The report's histograms, as PNG data URIs (the page works offline, from one file)."""

from __future__ import annotations

import base64
import io

from mlmcourse.grader.verdict import Status
from mlmcourse.report.collect import ClassData

PANEL = (2.9, 1.9)  # inches of one histogram: small multiples, one per notebook


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def score_histograms(data: ClassData) -> list[tuple[str, str]]:
    """[(title, data URI)]: the assignment's total, then each graded notebook's scores of the
    students who handed it in."""
    import matplotlib

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
    images = []
    for title, scores, out_of in series:
        fig, axis = plt.subplots(figsize=PANEL)
        bins = min(20, max(1, int(out_of))) if out_of else 1
        axis.hist(scores, bins=bins, range=(0, out_of or 1), color="#4c72b0", edgecolor="white")
        axis.set_title(f"{title} ({len(scores)} graded)", fontsize=9)
        axis.set_xlabel(f"score out of {out_of:g}", fontsize=8)
        axis.set_ylabel("students", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.spines[["top", "right"]].set_visible(False)
        images.append((title, _png(fig)))
        plt.close(fig)
    return images
