"""What each figure of the experiment (notebook 4) shows, in words made from its run.

:mod:`~mlmcourse.teaching.panels` draws a :class:`~mlmcourse.teaching.experiment.History`; the
functions here say what that drawing shows, from the same history, as a
:class:`~mlmcourse.teaching.describe.Description`. The slider panel's live caption is
:func:`describe_dashboard`, re-made on every redraw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from mlmcourse.teaching.describe import Description, Table
from mlmcourse.teaching.experiment import (
    INITIAL_NLL,
    MAX_FINAL_NLL,
    MAX_FRACTION_OF_INITIAL,
    MIN_ACCURACY,
    VOCAB_SIZE,
    Acceptance,
    History,
    Settings,
    acceptance,
    branch_of,
    normalize_shares,
    true_center,
)
from mlmcourse.teaching.palette import BRANCH_NAMES

CHECKPOINTS = (0, 1, 10, 20, 40, 60, 80, 100)  # the updates a table of a run lists


def format_nll(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def format_lr(lr: float) -> str:
    """Three significant digits: the log slider's 0.0050118... reads 0.00501."""
    return f"{lr:.3g}"


def mix_label(shares: Sequence[float]) -> str:
    mask, random, keep = normalize_shares(*shares)
    return f"{100 * mask:.0f}/{100 * random:.0f}/{100 * keep:.0f}"


def settings_label(settings: Settings) -> str:
    return (f"seed {settings.seed} · lr {format_lr(settings.lr)} · "
            f"selection {settings.selection_rate:g} · "
            f"mask/random/keep {mix_label(settings.shares)}")


def percent(value: float) -> str:
    """One decimal, none when it is zero: 87.5%, 95%, 100%."""
    return f"{100 * value:.1f}".removesuffix(".0") + "%"


def _moves(start: float, end: float, n: int) -> str:
    """'falls from 1.386 to 0.027 in 100 updates', or 'stays at 1.000 for 100 updates'."""
    if format_nll(start) == format_nll(end):
        return f"stays at {format_nll(start)} for {n} updates"
    verb = "falls" if end < start else "rises"
    return f"{verb} from {format_nll(start)} to {format_nll(end)} in {n} updates"


def _checkpoints(n: int) -> list[int]:
    return sorted({step for step in CHECKPOINTS if step <= n} | {n})


def describe_train_loss(history: History) -> Description:
    loss = history.train_loss.numpy()
    counted = history.n_selected.numpy() > 0
    n = len(loss)
    if not counted.any():
        text = f"Training loss per update: none of the {n} updates had a selected center."
        return Description("Training loss per update", text)
    steps = np.flatnonzero(counted)
    first, last, low = steps[0], steps[-1], steps[np.argmin(loss[steps])]
    text = (f"Training loss per update (selected centers only): {format_nll(loss[first])} at "
            f"update {first + 1} (a uniform guess scores ln {VOCAB_SIZE} = {INITIAL_NLL:.3f}), "
            f"{format_nll(loss[last])} at update {last + 1}; lowest {format_nll(loss[low])} at "
            f"update {low + 1}.")
    empty = n - int(counted.sum())
    if empty:
        text += f" {empty} update{'s' if empty > 1 else ''} had no selected center (no loss)."
    rows = [(str(step), format_nll(loss[step - 1]) if counted[step - 1] else "none",
             str(int(history.n_selected[step - 1])))
            for step in _checkpoints(n) if step >= 1]
    return Description("Training loss per update", text,
                       Table("training loss at some updates", ("update", "loss", "labels"),
                             rows))


def _first_at_goal(accuracy: np.ndarray) -> str:
    reached = np.flatnonzero(accuracy >= MIN_ACCURACY)
    if not reached.size:
        return f"never reaches the {percent(MIN_ACCURACY)} goal"
    return f"first at or above the {percent(MIN_ACCURACY)} goal at update {reached[0]}"


def verdict_sentence(result: Acceptance) -> str:
    failed = [line for ok, line in result.lines() if not ok]
    if result.passed:
        return "The run meets the acceptance rule."
    return "The run misses the acceptance rule; not met: " + "; ".join(failed) + "."


def describe_eval(history: History) -> Description:
    nll, acc = history.eval_nll.numpy(), history.eval_accuracy.numpy()
    n = len(nll) - 1
    text = (f"Evaluation on all 64 centers: NLL {_moves(nll[0], nll[-1], n)} (goal: below "
            f"{MAX_FINAL_NLL} and below {percent(MAX_FRACTION_OF_INITIAL)} of the start); "
            f"accuracy goes from {percent(acc[0])} to {percent(acc[-1])}, {_first_at_goal(acc)}. "
            + verdict_sentence(acceptance(history)))
    rows = [(str(step), format_nll(nll[step]), percent(acc[step])) for step in _checkpoints(n)]
    return Description("Evaluation NLL and accuracy per update", text,
                       Table("evaluation at some updates", ("update", "NLL", "accuracy"), rows))


def _pairs() -> tuple[torch.Tensor, torch.Tensor]:
    pairs = torch.arange(VOCAB_SIZE**2)
    return pairs // VOCAB_SIZE, pairs % VOCAB_SIZE


def describe_tables(history: History) -> Description:
    logits = history.tables[-1]
    probs = torch.softmax(logits.double(), dim=1).numpy()
    left, right = _pairs()
    truth = true_center(left, right).numpy()
    guess = probs.argmax(axis=1)
    p_true = probs[np.arange(len(truth)), truth]
    worst = int(np.argmin(p_true))
    wrong = np.flatnonzero(guess != truth)
    pair = [f"{a} {b}" for a, b in zip(left.tolist(), right.tolist(), strict=True)]
    text = (f"Learned table after {len(history.tables) - 1} updates against the true rule, "
            f"center = (2·left + right) % {VOCAB_SIZE}: the most probable center is the true one "
            f"for {len(truth) - len(wrong)} of {len(truth)} (left, right) pairs; the true center's "
            f"probability is lowest, {p_true[worst]:.2f}, for the pair {pair[worst]}.")
    if wrong.size:
        text += " Wrong (a red x): " + ", ".join(
            f"pair {pair[i]} guesses {guess[i]}, true {truth[i]}" for i in wrong) + "."
    rows = [(pair[i], str(truth[i]), str(guess[i]), f"{p_true[i]:.2f}") for i in range(len(pair))]
    return Description("Learned table and true rule", text,
                       Table("each pair", ("left right", "true center", "most probable",
                                           "p(true center)"), rows))


def _branch_counts(history: History, step: int | None = None) -> np.ndarray:
    rows, cols = torch.nonzero(history.selected, as_tuple=True)
    if step is not None:
        keep = rows == step - 1
        rows, cols = rows[keep], cols[keep]
    return np.bincount(branch_of(history.draws[rows, cols]).numpy(), minlength=3)


def _counts_phrase(counts: np.ndarray) -> str:
    total = int(counts.sum())
    shares = [f"{count} {name}" + (f" ({percent(count / total)})" if total else "")
              for count, name in zip(counts.tolist(), BRANCH_NAMES, strict=True)]
    return f"{total} selected: " + ", ".join(shares)


def describe_draws(history: History, step: int = 1) -> Description:
    n = history.draws.shape[0]
    step = min(max(int(step), 1), max(n, 1))
    every, now = _branch_counts(history), _branch_counts(history, step)
    text = (f"Draws at the selected centers over {n} updates, {_counts_phrase(every)}. "
            f"At update {step} (ringed): {_counts_phrase(now)}.")
    rows = [(name, str(a), str(b)) for name, a, b in
            zip(BRANCH_NAMES, every.tolist(), now.tolist(), strict=True)]
    return Description("Draws at the selected centers, by branch", text,
                       Table("draws per branch", ("branch", f"all {n} updates",
                                                  f"update {step}"), rows))


def describe_dashboard(history: History, step: int = 1) -> Description:
    """The slider panel's picture: its settings, the run's verdict, the curves and the draws."""
    parts = (describe_eval(history), describe_train_loss(history), describe_tables(history),
             describe_draws(history, step))
    text = f"Run with {settings_label(history.settings)}. " + " ".join(p.text for p in parts)
    return Description("Experiment dashboard", text, parts[0].table)


def describe_small_multiples(panels: Sequence[tuple[str, str, Acceptance]]) -> Description:
    """`panels`: (slider name, its value, the run's acceptance), one per small figure."""
    sentences = [f"{name} = {value}: {'PASS' if result.passed else 'FAIL'}, final NLL "
                 f"{format_nll(result.final_nll)}, accuracy {percent(result.final_accuracy)}"
                 for name, value, result in panels]
    text = ("Evaluation NLL for one slider at a time, each against the default run: "
            + "; ".join(sentences) + ".")
    rows = [(name, value, "PASS" if result.passed else "FAIL", format_nll(result.final_nll),
             percent(result.final_accuracy)) for name, value, result in panels]
    return Description("One slider at a time: evaluation NLL", text,
                       Table("each setting", ("slider", "value", "verdict", "final NLL",
                                              "final accuracy"), rows))


__all__ = ["describe_dashboard", "describe_draws", "describe_eval", "describe_small_multiples",
           "describe_tables", "describe_train_loss", "format_lr", "format_nll", "mix_label",
           "settings_label", "verdict_sentence"]
