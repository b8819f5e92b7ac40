"""Notebook 2's picture of Step 5: log p of the target for the float32 logits [0, -g] as the gap g
grows, computed as log(softmax(z))[y] and as z_y - logsumexp(z), each against float64, with the
picture in words (drawing only: the numbers the notebook's prose cites come out in the caption)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from mlmcourse.teaching.describe import Description, attach

WORKED_GAP = 100.0  # the gap whose stored probability the caption counts in subnormal steps


def _smallest_float32() -> float:
    """The smallest positive float32, 2^-149 (about 1.4e-45): one step of the subnormals."""
    return torch.nextafter(torch.tensor(0.0), torch.tensor(1.0)).item()


def plot_log_prob_gap(gaps: torch.Tensor) -> Figure:
    """log p of the target (index 1) for the float32 logits [0, -g] at each g of `gaps` (sorted,
    from 0 past the first -inf of log(softmax)): left, both forms over the whole range; right,
    magnified, each minus the exact float64 value from g = 80 to the first -inf, the range where
    p = e^-g is subnormal shaded. Returns the figure with its description attached."""
    gaps = gaps.to(torch.float32)
    two_logits = torch.stack([torch.zeros_like(gaps), -gaps], dim=1)  # [N, 2], target = index 1
    literal = torch.log(torch.softmax(two_logits, dim=1))[:, 1]
    stable = two_logits[:, 1] - torch.logsumexp(two_logits, dim=1)
    exact = -gaps.double() - torch.log1p(torch.exp(-gaps.double()))  # float64: the reference
    first_inf = gaps[torch.isinf(literal)][0].item()
    subnormal_from = -math.log(torch.finfo(torch.float32).tiny)  # p = e^-g is subnormal past this g
    near_end = (gaps >= 80) & (gaps < first_inf)
    error = (literal - exact).abs()
    first_off = gaps[near_end & (error > 1e-3)][0].item()  # the first g off by more than 0.001
    worst = error[near_end].argmax()

    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(10, 3.4), width_ratios=(3, 2))
    ax.plot(gaps, stable, lw=3, color="tab:blue", label="z_y - logsumexp(z)")
    ax.plot(gaps, literal, lw=1.5, ls="--", color="tab:red", label="log(softmax(z))[y]")
    ax.axvline(first_inf, color="tab:red", lw=0.8, ls=":")
    ax.text(first_inf + 2, -30, f"log(softmax) = -inf\nfor g >= {first_inf:g}", color="tab:red")
    ax.set_xlabel("gap g between the maximum logit and the target logit")
    ax.set_ylabel("log p(target), float32")
    ax.legend(loc="lower left")
    ax.set_title("The whole range")

    zoom.axvspan(subnormal_from, first_inf, color="0.9", lw=0)  # p is subnormal here
    zoom.plot(gaps[near_end], (stable - exact)[near_end], lw=3, color="tab:blue")
    zoom.plot(gaps[near_end], (literal - exact)[near_end], lw=1.5, ls="--", marker=".",
              color="tab:red")
    zoom.text(subnormal_from + 0.5, -0.25, f"shaded: p subnormal\nfrom g = {subnormal_from:.1f}; "
              f"off by\n> 0.001 only from g = {first_off:g}", ha="left", fontsize=8, color="0.3")
    zoom.set_xlim(80, first_inf)
    zoom.set_xlabel("gap g (from 80 to the first -inf)")
    zoom.set_ylabel("computed minus exact")
    zoom.set_title("Magnified: the error before -inf")
    fig.suptitle("log(softmax) loses its digits, then underflows; the logsumexp form does not")
    fig.tight_layout()
    return attach(fig, Description(
        "log p(target) against the gap, computed two ways",
        f"Left, over g from 0 to {gaps[-1]:g}: z_y - logsumexp(z) falls in a straight line, to "
        f"{stable[-1]:.1f} at g = {gaps[-1]:g}; log(softmax(z))[y] lies on the same line until "
        f"g = {first_inf:g}, from where it is -inf and not drawn. Right, magnified, the "
        f"difference from the exact value for g from 80 on, the range where the probability is "
        f"subnormal (from g = {subnormal_from:.1f}) shaded: z_y - logsumexp(z) stays at zero; "
        f"log(softmax(z))[y] looks just as flat well into the shaded range: it is first off by "
        f"more than 0.001 at g = {first_off:g}, then swings both ways, by up to "
        f"{error[near_end].max().item():.2f} (at g = {gaps[near_end][worst].item():g}). "
        + _worked_gap()))


def _worked_gap() -> str:
    """One point of the wobble in numbers: at g = 100 the stored p is a whole number of the
    smallest float32's steps, and its log is off by the rounding to that number."""
    p = torch.softmax(torch.tensor([0.0, -WORKED_GAP]), dim=0)[1]
    step = _smallest_float32()
    exact = -WORKED_GAP - math.log1p(math.exp(-WORKED_GAP))
    tiny_p = math.exp(-WORKED_GAP)
    return (f"At g = {WORKED_GAP:g}, e^-{WORKED_GAP:g} = {tiny_p:.2e} is {tiny_p / step:.2f} "
            f"steps of the smallest float32, {step:.2e}; float32 stores {p.item() / step:g} "
            "steps, and log(softmax(z))[y] is off by "
            f"{torch.log(p).item() - exact:+.3f}.")


__all__ = ["plot_log_prob_gap"]
