"""The corruption grid of notebook 1 (drawing only: no solution code lives here).

The branch colours and names come from ``mlmcourse.teaching.palette`` and the thresholds from
``mlmcourse.teaching.experiment``, so the grid and notebook 4's figures say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from mlmcourse.teaching.describe import Description, Table, attach
from mlmcourse.teaching.experiment import branch_of
from mlmcourse.teaching.palette import (
    BRANCH_COLOURS,
    BRANCH_TEXT_COLOURS,
    FAIL_COLOUR,
    UNSELECTED_COLOUR,
    UNSELECTED_NAME,
    UNSELECTED_TEXT_COLOUR,
    branch_labels,
)

# What happened at a site, in the order of the legend: unselected, then the three branches.
UNSELECTED, MASKED, RANDOM, KEPT = range(4)
OUTCOME_NAMES = (UNSELECTED_NAME, *branch_labels("u"))
OUTCOME_COLOURS = (UNSELECTED_COLOUR, *BRANCH_COLOURS)
TEXT_COLOURS = (UNSELECTED_TEXT_COLOUR, *BRANCH_TEXT_COLOURS)
MISMATCH_COLOUR = FAIL_COLOUR

TokenNames = Sequence[str] | Mapping[int, str] | None


def classify_sites(selected: torch.Tensor, draws: torch.Tensor) -> np.ndarray:
    """Outcome code per site, from the selection and the draws alone (the 80/10/10 rule)."""
    selected = selected.detach().to("cpu", torch.bool)
    draws = draws.detach().cpu()  # compared in their own dtype, as a student's code would
    outcome = torch.where(selected, MASKED + branch_of(draws), UNSELECTED)
    return outcome.numpy()


def expected_tokens(
    tokens: np.ndarray, random_ids: np.ndarray, outcome: np.ndarray, mask_token_id: int
) -> np.ndarray:
    """The token the rule puts at each site, given its outcome: the mask id, the site's own
    random id, or the original token (a lookup by outcome code, not the student's function)."""
    masks = np.full_like(tokens, mask_token_id)
    return np.choose(outcome, (tokens, masks, random_ids, tokens))


def token_name(token_id: int, names: TokenNames, mask_token_id: int) -> str:
    """A readable name for one id: from `names` when given, '[MASK]' for the mask id."""
    if isinstance(names, Mapping) and token_id in names:
        return names[token_id]
    if isinstance(names, Sequence) and 0 <= token_id < len(names):
        return names[token_id]
    return "[MASK]" if token_id == mask_token_id else str(token_id)


def format_draw(draw: float) -> str:
    """Two decimals, or more when rounding would put the draw on the wrong side of a threshold."""
    for decimals in (2, 4):
        text = f"{draw:.{decimals}f}"
        if _branch(float(text)) == _branch(draw):
            return text
    return repr(draw)[:6] + "…"  # truncated, never rounded up across a threshold


def _branch(draw: float) -> int:
    return int(branch_of(torch.tensor(draw, dtype=torch.float64)))


def _as_grid(tensor: torch.Tensor, name: str) -> np.ndarray:
    if tensor.ndim != 2:
        raise ValueError(
            f"plot_corruption_grid draws a [B, L] grid; {name} is {tuple(tensor.shape)}"
        )
    return tensor.detach().cpu().numpy()


class SiteText(NamedTuple):
    before: str  # the original token when it changed, else empty
    shown: str  # what the encoder sees
    draw: str


def _draw_site(ax: Axes, row: int, col: int, code: int, lines: SiteText, flag: bool) -> None:
    ax.add_patch(
        Rectangle(
            (col - 0.46, row - 0.44),
            0.92,
            0.88,
            facecolor=OUTCOME_COLOURS[code],
            edgecolor=MISMATCH_COLOUR if flag else "white",
            linewidth=2.5 if flag else 1.0,
            linestyle="--" if flag else "-",
        )
    )
    colour = TEXT_COLOURS[code]
    weight = "normal" if code == UNSELECTED else "bold"
    text = {"ha": "center", "va": "center", "color": colour}
    ax.text(col, row - 0.27, lines.before, fontsize=7, **text)
    ax.text(col, row, lines.shown, fontsize=10, fontweight=weight, **text)
    ax.text(col, row + 0.27, lines.draw, fontsize=7.5, **text)


def _site_text(original: str, shown: str, draw: float, should_be: str | None) -> SiteText:
    """The three lines of a site; a flagged site says what the rule puts there instead."""
    if should_be is not None:
        return SiteText(f"rule: {should_be}", f"{shown} !", f"u={format_draw(draw)}")
    before = f"was {original}" if shown != original else ""
    return SiteText(before, shown, f"u={format_draw(draw)}")


def _add_legend(fig: Figure, ax: Axes, counts: np.ndarray, any_flag: bool) -> None:
    handles = [
        Patch(facecolor=colour, edgecolor="#999999", label=f"{name}: {count}")
        for name, colour, count in zip(OUTCOME_NAMES, OUTCOME_COLOURS, counts, strict=True)
    ]
    if any_flag:
        handles.append(
            Patch(
                facecolor="white",
                edgecolor=MISMATCH_COLOUR,
                linestyle="--",
                linewidth=2,
                label="! not what the rule puts there",
            )
        )
    ncol = len(handles) if fig.get_figwidth() >= 10 else (4 if len(handles) == 4 else 3)
    ncol = ncol if fig.get_figwidth() >= 6.5 else 2
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.02),
        frameon=False,
        ncol=ncol,
        fontsize=8.5,
        handlelength=1.2,
        columnspacing=1.2,
    )


def _new_axes(B: int, L: int) -> tuple[Figure, Axes]:
    width = max(5.0, 1.0 * L + 1.0)
    height = 0.78 * B + 1.6
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return fig, ax


def plot_corruption_grid(
    tokens: torch.Tensor,
    selected: torch.Tensor,
    draws: torch.Tensor,
    random_ids: torch.Tensor,
    corrupted: torch.Tensor,
    mask_token_id: int,
    *,
    token_names: TokenNames = None,
    title: str | None = "What happened at each site",
    ax: Axes | None = None,
) -> Figure:
    """Draw one batch as a B x L grid coloured by what the rule says happens at each site.

    The outcome of a site comes from `selected` and `draws` (unselected / [MASK] / random /
    kept); each cell shows the token the encoder sees, the draw, and the original token when
    it changed. A site whose corrupted token is not the one the rule gives (the mask id, the
    site's own random id, or the original token) gets a dashed red border, a '!', and the
    token the rule puts there. `token_names` (a list indexed by id, or a dict) turns ids into
    words. Pass `ax` to draw into an existing Axes; the figure is returned and left open for
    the caller. Call it before checking the output, so a student sees where it goes wrong.
    """
    tokens_np, corrupted_np = _as_grid(tokens, "tokens"), _as_grid(corrupted, "corrupted")
    random_np = _as_grid(random_ids, "random_ids")
    draws_np = _as_grid(draws, "draws").astype(np.float64)
    if corrupted_np.shape != tokens_np.shape:
        raise ValueError(f"corrupted has shape {corrupted_np.shape}, tokens {tokens_np.shape}: "
                         "make_mlm_inputs must return the shape of tokens")
    outcome = classify_sites(selected, draws)
    expected = expected_tokens(tokens_np, random_np, outcome, mask_token_id)
    flags = corrupted_np != expected
    B, L = outcome.shape
    fig, ax = _new_axes(B, L) if ax is None else (ax.figure, ax)
    names = {key: [[token_name(int(i), token_names, mask_token_id) for i in row] for row in grid]
             for key, grid in (("was", tokens_np), ("shown", corrupted_np), ("rule", expected))}
    for row in range(B):
        for col in range(L):
            code, flag = int(outcome[row, col]), bool(flags[row, col])
            lines = _site_text(names["was"][row][col], names["shown"][row][col],
                               float(draws_np[row, col]),
                               names["rule"][row][col] if flag else None)
            _draw_site(ax, row, col, code, lines, flag)
    ax.set_xlim(-0.5, max(L, 1) - 0.5)  # an empty batch still gets a (blank) grid
    ax.set_ylim(max(B, 1) - 0.5, -0.5)
    ax.set_xticks(range(L), [f"t={t}" for t in range(L)], fontsize=8)
    ax.set_yticks(range(B), [f"b={b}" for b in range(B)], fontsize=8)
    ax.tick_params(length=0, labeltop=True, labelbottom=False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if title:
        ax.set_title(title, fontsize=11, loc="left")
    _add_legend(fig, ax, np.bincount(outcome.ravel(), minlength=4), bool(flags.any()))
    return attach(fig, describe_grid(names, outcome, draws_np, flags))


def _site(row: int, col: int) -> str:
    return f"({row}, {col})"


def _branch_phrase(code: int, was: str, shown: str, draw: float) -> str:
    """'cat' becomes [MASK] (u = 0.10, [MASK]): what the encoder sees, whatever the rule says."""
    change = "stays" if shown == was else "becomes"
    branch = OUTCOME_NAMES[code].split("  ")[0]
    return f"{_site_word(was)} {change} {_site_word(shown)} (u = {format_draw(draw)}, {branch})"


def _site_word(word: str) -> str:
    return word if word == "[MASK]" else f"'{word}'"


def describe_grid(names: dict, outcome: np.ndarray, draws: np.ndarray,
                  flags: np.ndarray) -> Description:
    """The grid in words: each selected site, its draw and what the encoder sees, and every
    site that does not hold what the rule puts there (the grid's dashed borders)."""
    B, L = outcome.shape
    sites = [(r, c) for r in range(B) for c in range(L) if outcome[r, c] != UNSELECTED]
    parts = [f"Corruption of a {B} x {L} batch: {len(sites)} of {B * L} sites selected"]
    parts += [_site(r, c) + " " + _branch_phrase(int(outcome[r, c]), names["was"][r][c],
                                                 names["shown"][r][c], float(draws[r, c]))
              for r, c in sites]
    text = "; ".join(parts) + ". Unselected sites are unchanged."
    wrong = [(r, c) for r in range(B) for c in range(L) if flags[r, c]]
    if wrong:
        text += f" {len(wrong)} site{'s' if len(wrong) > 1 else ''} not as the rule says: " + \
            "; ".join(f"{_site(r, c)} holds {_site_word(names['shown'][r][c])}, the rule puts "
                      f"{_site_word(names['rule'][r][c])}" for r, c in wrong) + "."
    else:
        text += " Every site holds what the 80/10/10 rule puts there."
    rows = [(_site(r, c), names["was"][r][c], format_draw(float(draws[r, c])),
             OUTCOME_NAMES[int(outcome[r, c])].split("  ")[0], names["shown"][r][c],
             names["rule"][r][c]) for r, c in sites]
    table = Table("the selected sites", ("site (b, t)", "original", "draw u", "branch",
                                         "encoder sees", "rule puts"), rows)
    return Description("Corruption grid", text, table)


# How marked_sentences marks the site of each branch: in characters, so no colour is needed.
BRANCH_MARKS = {UNSELECTED: "{}", MASKED: "{}", RANDOM: "~{}~", KEPT: "={}="}


def marked_sentences(tokens: torch.Tensor, selected: torch.Tensor, draws: torch.Tensor,
                     random_ids: torch.Tensor, corrupted: torch.Tensor, mask_token_id: int,
                     token_names: TokenNames = None) -> list[str]:
    """Each row of `corrupted` as one line of words, every selected site marked by the branch
    its draw gives: [MASK] as it is, ~a random word~, =a kept word=. A site that does not hold
    what the rule puts there ends in '!' (the grid's dashed border: the same `expected_tokens`)."""
    outcome = classify_sites(selected, draws)
    shown = _as_grid(corrupted, "corrupted")
    expected = expected_tokens(_as_grid(tokens, "tokens"), _as_grid(random_ids, "random_ids"),
                               outcome, mask_token_id)
    lines = []
    for row, codes in enumerate(outcome):
        words = [BRANCH_MARKS[int(code)].format(token_name(int(shown[row, col]), token_names,
                                                           mask_token_id))
                 + ("!" if shown[row, col] != expected[row, col] else "")
                 for col, code in enumerate(codes)]
        lines.append(" ".join(words))
    return lines
