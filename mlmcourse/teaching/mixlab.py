"""The mix panel of notebook 5: one mix, selection rate and seed; both views side by side.

Notebook 5's model reads the corrupted center, so the [MASK] / random / keep mix changes what it
learns. Each change of the panel re-trains the model of notebook 5 (context table plus token
table) on the data with exceptions and redraws three pictures in one figure: the pre-training
view (every center masked), the fine-tuning view (every center visible), and the token table
``E`` that makes the difference. Like notebook 4's panel (:mod:`mlmcourse.teaching.sliders`) it
redraws only the data over a cached background and shows a JPEG in one ``ipywidgets.Image``;
while nbgrader executes the notebook it prints one line instead.

The model and the views are the notebook's own (Step 2 and Step 4 there); they are repeated here
so that the panel and the benchmark can run without the notebook, and
``tests/test_mixlab.py`` checks that both give the same numbers.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import torch
from matplotlib.figure import Figure

from mlmcourse.teaching.controls import MixControl, Shares, mix_text
from mlmcourse.teaching.describe import Description, Table, live_caption_html
from mlmcourse.teaching.experiment import (
    COPIES,
    DEFAULT_SHARES,
    MASK_TOKEN_ID,
    SEED,
    SELECTION_RATE,
    VOCAB_SIZE,
    Settings,
    make_tokens,
    one_thread,
    train,
)
from mlmcourse.teaching.palette import LINE_COLOUR
from mlmcourse.teaching.panels import REFERENCE_COLOUR, BlitRenderer

V = VOCAB_SIZE
VIEWS = ("masked", "clean")  # pre-training view (center = [MASK]) and fine-tuning view (visible)
VIEW_TITLES = {"masked": "pre-training view: every center [MASK]",
               "clean": "fine-tuning view: every center visible"}
GROUPS = ("rule", "exceptions")
E_LIMIT = 2.5  # colour scale of the token table, as in the notebook's figure
RULE_COLOUR = "#9E9E9E"  # the centers that follow the rule; the exceptions in LINE_COLOUR
FIGURE_SIZE, FIGURE_DPI = (11.0, 3.5), 80
NBGRADER_NOTE = "The mix panel is off while nbgrader executes this notebook."


class ContextAndToken:
    """Context table W (16 x 4) plus token table E (5 x 4): tokens 0-3 and [MASK]."""

    def __init__(self) -> None:
        self.context = torch.zeros(V * V, V, dtype=torch.float64, requires_grad=True)
        self.token = torch.zeros(V + 1, V, dtype=torch.float64, requires_grad=True)

    def parameters(self) -> list[torch.Tensor]:
        return [self.context, self.token]

    def center_logits(self, corrupted: torch.Tensor) -> torch.Tensor:
        left, center, right = corrupted.unbind(dim=1)
        return self.context[V * left + right] + self.token[center]


def exception_data() -> torch.Tensor:
    """Notebook 4's data, but in the first of the four copies of each pair the center is one
    more than the rule says: context alone can reach 75%, the visible token the rest."""
    data = make_tokens()
    data[: V * V, 1] = (data[: V * V, 1] + 1) % V
    return data


def is_exception(data: torch.Tensor) -> torch.Tensor:
    left, center, right = data.unbind(dim=1)
    return center != (2 * left + right) % V


def view_scores(model: ContextAndToken, data: torch.Tensor) -> dict[str, dict[str, float]]:
    """Per view: accuracy and NLL over all centers, and the mean probability of the true center
    at the centers that follow the rule and at the exceptions."""
    left, center, right = data.unbind(dim=1)
    exception = is_exception(data)
    scores = {}
    with torch.no_grad():
        context = model.context[V * left + right]
        for view, seen in (("masked", torch.full_like(center, MASK_TOKEN_ID)), ("clean", center)):
            logits = context + model.token[seen]
            logp = torch.log_softmax(logits, dim=1).gather(1, center[:, None]).squeeze(1)
            scores[view] = {
                "acc": (logits.argmax(dim=1) == center).double().mean().item(),
                "nll": -logp.mean().item(),
                "rule": logp[~exception].exp().mean().item(),
                "exceptions": logp[exception].exp().mean().item(),
            }
    return scores


def learned_lean(token: torch.Tensor) -> float:
    """How much more a visible token's row of E adds to its own token's logit than to another's
    (the notebook's learned_lean): the mean of the diagonal of rows 0-3 minus the mean of their
    other entries, blind to a shift of a whole row, which changes no probability."""
    real = token[:V]
    return (real.diagonal().mean() - (real.sum() - real.trace()) / (V * V - V)).item()


def describe_views(model: ContextAndToken, scores: dict[str, dict[str, float]],
                   setting: str) -> Description:
    """The mix panel's picture in words: both views' scores and what the token table holds."""
    rule, exceptions = V * V * (COPIES - 1), V * V
    views = [f"{VIEW_TITLES[view]}: accuracy {100 * scores[view]['acc']:.1f}%, NLL "
             f"{scores[view]['nll']:.3f}, mean p(true center) {scores[view]['rule']:.2f} at the "
             f"{rule} rule centers and {scores[view]['exceptions']:.2f} at the {exceptions} "
             "exceptions" for view in VIEWS]
    token = model.token.detach()
    lean = learned_lean(token)
    text = (f"Trained {setting}. " + "; ".join(views) + ". Token table E: a visible token "
            f"leans toward itself by {lean:+.2f} (the diagonal of rows 0-{V - 1} minus their "
            "other entries); "
            f"the [MASK] row runs from {token[V].min().item():+.2f} to "
            f"{token[V].max().item():+.2f}.")
    rows = [(view, f"{100 * scores[view]['acc']:.1f}%", f"{scores[view]['nll']:.3f}",
             f"{scores[view]['rule']:.2f}", f"{scores[view]['exceptions']:.2f}")
            for view in VIEWS]
    return Description("Both views and the token table", text,
                       Table("each view", ("view", "accuracy", "NLL", "p(true), rule centers",
                                           "p(true), exceptions"), rows))


def train_under_mix(make_mlm_inputs: Callable, masked_lm_loss: Callable, shares: Shares,
                    selection_rate: float = SELECTION_RATE, seed: int = SEED,
                    data: torch.Tensor | None = None) -> ContextAndToken:
    model = ContextAndToken()
    settings = Settings(seed=seed, selection_rate=selection_rate, shares=shares)
    train(make_mlm_inputs, masked_lm_loss, model, settings,
          tokens=exception_data() if data is None else data)
    return model


class ViewsFigure:
    """Two bar panels (one per view) and the token table, updated in place and blitted."""

    def __init__(self, fig: Figure) -> None:
        self.fig = fig
        grid = fig.add_gridspec(1, 3, width_ratios=(1, 1, 0.9), wspace=0.35,
                                left=0.06, right=0.98, top=0.8, bottom=0.14)
        self.bars, self.values, self.titles = {}, {}, {}
        for i, view in enumerate(VIEWS):
            ax = fig.add_subplot(grid[0, i])
            self.bars[view] = ax.bar([0, 1], [0, 0], width=0.6, color=[RULE_COLOUR, LINE_COLOUR])
            self.values[view] = [ax.text(x, 0, "", ha="center", va="bottom", fontsize=10)
                                 for x in (0, 1)]
            ax.set_xticks([0, 1], [f"{V * V * (COPIES - 1)} rule centers",
                                   f"{V * V} exceptions"])  # one copy of each pair
            ax.set_ylim(0, 1.12)
            ax.set_ylabel("mean p(true center)" if i == 0 else "")
            ax.axhline(1.0, color=REFERENCE_COLOUR, lw=0.8, ls=":")
            ax.set_title(VIEW_TITLES[view], fontsize=10, pad=22)
            self.titles[view] = ax.text(0.5, 1.02, "", transform=ax.transAxes, ha="center",
                                        va="bottom", fontsize=9)
            ax.grid(axis="y", alpha=0.3)
        ax_e = fig.add_subplot(grid[0, 2])
        self.table = ax_e.imshow(np.zeros((V + 1, V)), cmap="RdBu", vmin=-E_LIMIT, vmax=E_LIMIT,
                                 aspect="auto", interpolation="nearest")
        ax_e.set_xticks(range(V))
        ax_e.set_yticks(range(V + 1), [*map(str, range(V)), "[MASK]"])
        ax_e.set(xlabel="predicted center", ylabel="token seen at the center")
        ax_e.set_title("token table E (blue: a vote for)", fontsize=10, pad=22)
        fig.colorbar(self.table, ax=ax_e, shrink=0.9, pad=0.03)
        self.dynamic = [*(bar for view in VIEWS for bar in self.bars[view]),
                        *(text for view in VIEWS for text in self.values[view]),
                        *self.titles.values(), self.table]
        self.renderer = BlitRenderer(fig, self.dynamic)

    def update(self, model: ContextAndToken, scores: dict[str, dict[str, float]]) -> None:
        for view in VIEWS:
            for x, group in enumerate(GROUPS):
                value = scores[view][group]
                self.bars[view][x].set_height(value)
                self.values[view][x].set_position((x, value + 0.01))
                self.values[view][x].set_text(f"{value:.2f}")
            self.titles[view].set_text(f"accuracy {100 * scores[view]['acc']:.1f}% · "
                                       f"NLL {scores[view]['nll']:.3f}")
        self.table.set_data(model.token.detach().numpy())

    def render(self) -> bytes:
        return self.renderer.render()


class MixLab:
    """Mix, selection rate and seed; every change re-trains and redraws both views."""

    def __init__(self, make_mlm_inputs: Callable, masked_lm_loss: Callable) -> None:
        import ipywidgets as widgets

        self.functions = (make_mlm_inputs, masked_lm_loss)
        self.data = exception_data()
        common = dict(continuous_update=False, style={"description_width": "110px"},
                      layout=widgets.Layout(width="360px"))
        self.mix = MixControl(self._on_change, DEFAULT_SHARES)
        self.rate = widgets.FloatSlider(SELECTION_RATE, min=0.01, max=1.0, step=0.01,
                                        description="selection rate", **common)
        self.seed = widgets.IntSlider(SEED, min=0, max=999, description="seed", **common)
        for slider in (self.rate, self.seed):
            slider.observe(self._on_change, names="value")
        self.summary = widgets.HTML()
        self.out = widgets.Output()  # errors land here, in front of the reader
        self.figure = ViewsFigure(Figure(figsize=FIGURE_SIZE, dpi=FIGURE_DPI))
        self.image = widgets.Image(format="jpeg", layout=widgets.Layout(max_width="100%"))
        self.caption = widgets.HTML()  # what the picture shows, read out after each redraw
        self.model: ContextAndToken | None = None
        self._error_shown = False
        controls = widgets.HBox([widgets.VBox([self.rate, self.seed]), self.mix.widget])
        self.widget = widgets.VBox([controls, self.summary, self.out, self.image, self.caption])
        self._guarded()

    def update(self) -> None:
        """Re-train under the controls' values and redraw (what one change costs)."""
        shares = self.mix.value
        with one_thread():  # tiny tensors: a second thread only waits for a busy core
            self.model = train_under_mix(*self.functions, shares, float(self.rate.value),
                                         int(self.seed.value), self.data)
            scores = view_scores(self.model, self.data)
            self.figure.update(self.model, scores)
            self.image.value = self.figure.render()
        setting = (f"on the data with exceptions under {mix_text(shares)}, selection rate "
                   f"{self.rate.value:g}, seed {self.seed.value}")
        self.summary.value = f"trained {setting}"
        description = describe_views(self.model, scores, setting)
        self.caption.value = live_caption_html(description)

    def _guarded(self) -> None:
        """Run one update; an exception is shown inside the panel instead of being lost."""
        if self._error_shown:  # clear only what we wrote: the panel never flickers otherwise
            self.out.clear_output()
            self._error_shown = False
        with self.out:
            try:
                self.update()
            except Exception:
                self._error_shown = True
                raise  # the Output widget shows the traceback and swallows it

    def _on_change(self, _change: object) -> None:
        self._guarded()


def show_mix_lab(make_mlm_inputs: Callable, masked_lm_loss: Callable) -> MixLab | None:
    """Display the mix panel; under nbgrader print one line instead (grading never waits)."""
    if os.environ.get("NBGRADER_EXECUTION"):
        print(NBGRADER_NOTE)
        return None
    from IPython.display import display

    lab = MixLab(make_mlm_inputs, masked_lm_loss)
    display(lab.widget)
    return lab


__all__ = ["ContextAndToken", "MixLab", "ViewsFigure", "describe_views", "exception_data",
           "show_mix_lab",
           "train_under_mix", "view_scores"]
