"""Notebook 1's corruption grid flags every site that disagrees with the rule."""

from __future__ import annotations

import matplotlib
import pytest
import torch

from mlmcourse.teaching.plots import plot_corruption_grid

matplotlib.use("Agg")

TOKENS = torch.tensor([[0, 1, 2, 3, 4]])
SELECTED = torch.tensor([[False, True, True, True, True]])
DRAWS = torch.tensor([[0.5, 0.1, 0.8, 0.85, 0.9]], dtype=torch.float64)
RANDOM_IDS = torch.tensor([[7, 7, 8, 9, 7]])
MASK = 10
RIGHT = [[0, MASK, 8, 9, 4]]  # unselected, [MASK], random (on 0.8), random, kept (on 0.9)


def flagged_sites(corrupted) -> list[str]:
    """The token text of every site the grid marks with '!'."""
    import matplotlib.pyplot as plt

    fig = plot_corruption_grid(TOKENS, SELECTED, DRAWS, RANDOM_IDS, torch.tensor(corrupted), MASK)
    shown = [t.get_text() for t in fig.axes[0].texts if t.get_text().endswith(" !")]
    rules = [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("rule: ")]
    plt.close(fig)
    assert len(shown) == len(rules)
    return rules


def test_the_rule_itself_is_not_flagged():
    assert flagged_sites(RIGHT) == []


@pytest.mark.parametrize("site, wrong, rule", [
    (0, 7, "rule: 0"),            # an unselected site changed
    (1, 7, "rule: [MASK]"),       # a [MASK] site holding something else
    (2, MASK, "rule: 8"),         # a random site showing [MASK] (needs random_ids to see)
    (3, 3, "rule: 9"),            # a random site kept
    (4, MASK, "rule: 4"),         # a kept site masked (0.9 is not below 0.9)
])
def test_every_disagreement_is_flagged_with_what_the_rule_puts_there(site, wrong, rule):
    corrupted = [row[:] for row in RIGHT]
    corrupted[0][site] = wrong
    assert flagged_sites(corrupted) == [rule]


def test_a_corrupted_of_the_wrong_shape_is_refused_plainly():
    with pytest.raises(ValueError, match="shape of tokens"):
        plot_corruption_grid(TOKENS, SELECTED, DRAWS, RANDOM_IDS, torch.zeros(1, 4), MASK)
