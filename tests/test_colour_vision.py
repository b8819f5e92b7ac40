"""No figure's meaning rests on hue alone: the branch colours stay apart under colour blindness.

The three branches of the 80/10/10 rule and the unselected sites have one colour each in every
figure (``mlmcourse.teaching.palette``). Simulated with the full-severity matrices of Machado,
Oliveira and Fernandes (2009) for protanopia, deuteranopia and tritanopia, every pair must stay
at least ``MIN_DELTA_E`` apart (CIE76 in Lab; about 2 is the smallest difference a person sees,
10 is plain at a glance). Where two curves or bars could still be confused, the figures add a
line style, a hatch or a text label; those are checked where each figure is tested.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from mlmcourse.teaching.palette import (
    BRANCH_COLOURS,
    BRANCH_NAMES,
    FAIL_COLOUR,
    PASS_COLOUR,
    UNSELECTED_COLOUR,
)

MIN_DELTA_E = 15.0
# Linear-RGB matrices, severity 1.0 (Machado et al. 2009, table 1).
DEFICIENCIES = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}
SRGB_TO_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                        [0.0193, 0.1192, 0.9505]])
WHITE = np.array([0.95047, 1.0, 1.08883])


def _linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _lab(linear_rgb: np.ndarray) -> np.ndarray:
    xyz = SRGB_TO_XYZ @ np.clip(linear_rgb, 0, 1) / WHITE
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen(colour: str, deficiency: str) -> np.ndarray:
    """The colour in Lab as a person with `deficiency` sees it."""
    return _lab(np.array(DEFICIENCIES[deficiency]) @ _linear(np.array(to_rgb(colour))))


def test_the_simulation_leaves_grey_grey():
    for deficiency in DEFICIENCIES:
        grey = seen("#808080", deficiency)
        assert abs(grey[0] - 53.6) < 1.0 and np.abs(grey[1:]).max() < 2.0  # L*, a*, b*


@pytest.mark.parametrize("deficiency", DEFICIENCIES)
def test_the_branches_and_the_unselected_sites_stay_apart(deficiency):
    colours = dict(zip(BRANCH_NAMES, BRANCH_COLOURS, strict=True))
    colours["unselected"] = UNSELECTED_COLOUR
    for (a, one), (b, other) in itertools.combinations(colours.items(), 2):
        distance = float(np.linalg.norm(seen(one, deficiency) - seen(other, deficiency)))
        assert distance >= MIN_DELTA_E, f"{a} and {b} under {deficiency}: ΔE {distance:.1f}"


def test_pass_and_fail_never_rest_on_colour():
    """Red and green are close under deuteranopia, so a verdict always says PASS or FAIL and
    marks each check with a tick or a cross: the colour only repeats the words."""
    from mlmcourse.teaching.experiment import Acceptance
    from mlmcourse.teaching.panels import badge_html

    distance = np.linalg.norm(seen(PASS_COLOUR, "deuteranopia") - seen(FAIL_COLOUR,
                                                                      "deuteranopia"))
    assert distance < 40  # close enough that the words must carry the verdict
    failing = badge_html(Acceptance(final_nll=0.5, initial_nll=1.386, final_accuracy=0.5))
    assert "FAIL" in failing and "✗" in failing
