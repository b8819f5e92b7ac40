"""The colours and names every figure of the course shares.

One branch of the 80/10/10 rule has one colour and one name everywhere: in the corruption grid
of notebook 1 (``mlmcourse.teaching.plots``) and in the experiment's figures and slider panel of
notebook 4 (``mlmcourse.teaching.panels``, ``mlmcourse.teaching.sliders``). The thresholds in the
labels come from ``mlmcourse.teaching.experiment.THRESHOLDS``, the one place they are set.
"""

from __future__ import annotations

from mlmcourse.teaching.experiment import THRESHOLDS

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
BLUE, ORANGE, GREEN = "#0072b2", "#e69f00", "#009e73"

# The three branches of make_mlm_inputs, in the order of their draws: [MASK], random id, kept.
BRANCH_NAMES = ("[MASK]", "random id", "kept")
BRANCH_COLOURS = (BLUE, ORANGE, GREEN)
BRANCH_TEXT_COLOURS = ("white", "black", "white")  # readable on each branch colour
UNSELECTED_NAME, UNSELECTED_COLOUR, UNSELECTED_TEXT_COLOUR = "unselected", "#e9e9e9", "#555555"

# Verdicts: the pass / fail badges, the goal bands, and whatever is wrong (a red x, a red border).
PASS_COLOUR, FAIL_COLOUR = "#2E7D32", "#C62828"
LINE_COLOUR = "#333333"  # a curve that is the run itself, not one branch


def branch_labels(symbol: str) -> tuple[str, str, str]:
    """Legend labels that say which draws take each branch, e.g. ``[MASK]  (u < 0.8)``."""
    low, high = (f"{threshold:g}" for threshold in THRESHOLDS)
    ranges = (f"{symbol} < {low}", f"{low} ≤ {symbol} < {high}", f"{symbol} ≥ {high}")
    return tuple(f"{name}  ({where})" for name, where in zip(BRANCH_NAMES, ranges, strict=True))


def verdict_colour(passed: bool) -> str:
    return PASS_COLOUR if passed else FAIL_COLOUR


__all__ = [
    "BRANCH_COLOURS",
    "BRANCH_NAMES",
    "BRANCH_TEXT_COLOURS",
    "FAIL_COLOUR",
    "LINE_COLOUR",
    "PASS_COLOUR",
    "UNSELECTED_COLOUR",
    "UNSELECTED_NAME",
    "UNSELECTED_TEXT_COLOUR",
    "branch_labels",
    "verdict_colour",
]
