"""The figures of the experiment notebook (notebook 4), built from panels.

Each figure is a *panel*: a small class that creates its artists once and can be fed a new
:class:`~mlmcourse.teaching.experiment.History` (``update``), so the same code draws the static
figures of the notebook (the ``plot_*`` functions here) and updates the slider dashboard of
``mlmcourse.teaching.sliders`` in place. :class:`Dashboard` puts all panels into one figure; with
``blit=True`` it redraws only the data over a cached background, which is what keeps one slider
change fast. Colours and branch names come from ``mlmcourse.teaching.palette``.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import PIL.Image
import torch
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba_array
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mlmcourse.teaching.captions import (
    describe_draws,
    describe_eval,
    describe_small_multiples,
    describe_tables,
    describe_train_loss,
    format_nll,
    mix_label,
    settings_label,
)
from mlmcourse.teaching.describe import attach
from mlmcourse.teaching.experiment import (
    INITIAL_NLL,
    MAX_FINAL_NLL,
    MAX_FRACTION_OF_INITIAL,
    MIN_ACCURACY,
    N_STEPS,
    THRESHOLDS,
    VOCAB_SIZE,
    Acceptance,
    History,
    Settings,
    acceptance,
    branch_of,
    run_experiment,
    true_center,
)
from mlmcourse.teaching.palette import (
    BLUE,
    BRANCH_COLOURS,
    FAIL_COLOUR,
    LINE_COLOUR,
    PASS_COLOUR,
    branch_labels,
    verdict_colour,
)

BRANCH_RGBA = to_rgba_array(BRANCH_COLOURS)  # converted once: an update recolours ~1000 dots
REFERENCE_COLOUR, NOTE_COLOUR = "#888888", "#666666"  # the uniform guess and its label
DASHBOARD_SIZE = (11.0, 6.8)
DASHBOARD_DPI = 80
LOSS_LIMITS = (0.0, 2.0)  # fixed limits: the slider panel redraws only the data on top
NLL_LIMITS = (1e-3, 3.0)
UNIFORM_GUESS = f"ln {VOCAB_SIZE}"  # INITIAL_NLL, as the figures name it


def _steps(n: int, start: int = 1) -> np.ndarray:
    return np.arange(start, start + n)


def draw_nll_goal(ax: Axes) -> None:
    """The goal of the acceptance rule on a log-scale NLL axis: a green band below the limit."""
    ax.set_yscale("log")
    ax.axhspan(1e-9, MAX_FINAL_NLL, color=PASS_COLOUR, alpha=0.08, lw=0)
    ax.axhline(MAX_FINAL_NLL, color=PASS_COLOUR, lw=1.2)
    ax.set_ylim(NLL_LIMITS)


class LossPanel:
    """Training masked-LM loss per update (only the selected centers count)."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        ax.axhline(INITIAL_NLL, color=REFERENCE_COLOUR, ls=":", lw=1)
        ax.text(0.98, INITIAL_NLL * 1.03, f"{UNIFORM_GUESS}: a uniform guess", color=NOTE_COLOUR,
                fontsize=8, ha="right", va="bottom", transform=ax.get_yaxis_transform())
        (self.line,) = ax.plot([], [], color=BLUE, lw=1.6)
        self.empty = ax.scatter([], [], marker="|", color=FAIL_COLOUR, s=60, lw=1.5)
        self.note = ax.text(0.98, 0.97, "", color=FAIL_COLOUR, fontsize=8, ha="right", va="top",
                            transform=ax.transAxes)
        ax.set(title="Training loss per update", xlabel="update", ylabel="masked-LM loss",
               xlim=(0, N_STEPS + 1), ylim=LOSS_LIMITS)
        ax.grid(alpha=0.3)
        self.artists = [self.line, self.empty, self.note]

    def update(self, history: History) -> None:
        loss = history.train_loss.numpy().copy()
        empty = history.n_selected.numpy() == 0
        loss[empty] = np.nan  # an empty step has loss 0 by definition: not a data point
        x = _steps(len(loss))
        self.line.set_data(x, loss)
        self.empty.set_offsets(np.column_stack([x[empty], np.full(empty.sum(), 0.04)]))
        count = int(empty.sum())
        plural = "s" if count > 1 else ""
        self.note.set_text(f"red: {count} update{plural} without labels" if count else "")


class EvalPanel:
    """Clean-context NLL (log scale) and accuracy over all 64 centers, thresholds drawn in."""

    def __init__(self, ax_nll: Axes, ax_acc: Axes) -> None:
        self.ax_nll, self.ax_acc = ax_nll, ax_acc
        draw_nll_goal(ax_nll)
        fraction = MAX_FRACTION_OF_INITIAL * INITIAL_NLL
        ax_nll.axhline(fraction, color=PASS_COLOUR, lw=1, ls="--")
        ax_nll.axhline(INITIAL_NLL, color=REFERENCE_COLOUR, ls=":", lw=1)
        # The goal labels sit on the left, where every run is still near ln 4: on the right they
        # collided with the label of the curve's end whenever a run ends near the goal.
        blended = ax_nll.get_yaxis_transform()
        ax_nll.text(0.03, MAX_FINAL_NLL * 0.93, f"goal: NLL < {MAX_FINAL_NLL}", color=PASS_COLOUR,
                    fontsize=8, ha="left", va="top", transform=blended)
        ax_nll.text(0.03, fraction * 1.05, f"10% of start: {fraction:.3f}", color=PASS_COLOUR,
                    fontsize=8, ha="left", va="bottom", transform=blended)
        ax_nll.text(0.03, INITIAL_NLL * 1.1, f"start: {UNIFORM_GUESS}", color=NOTE_COLOUR,
                    fontsize=8, ha="left", va="bottom", transform=blended)
        (self.nll,) = ax_nll.plot([], [], color=LINE_COLOUR, lw=2)
        (self.nll_end,) = ax_nll.plot([], [], "o", color=LINE_COLOUR, ms=5)
        # A white backing keeps the value readable where it sits on a goal line.
        self.nll_text = ax_nll.text(0, 0, "", fontsize=9, ha="right", va="bottom",
                                    bbox=dict(facecolor="white", edgecolor="none", alpha=0.8,
                                              pad=1))
        ax_nll.set(title="Evaluation NLL, all 64 centers", xlabel="update",
                   ylabel="NLL (log scale)", xlim=(-2, N_STEPS + 2))
        ax_nll.grid(alpha=0.3, which="major")

        ax_acc.axhspan(MIN_ACCURACY, 1.05, color=PASS_COLOUR, alpha=0.08, lw=0)
        ax_acc.axhline(MIN_ACCURACY, color=PASS_COLOUR, lw=1.2)
        ax_acc.text(0.5, MIN_ACCURACY - 0.02, f"goal: ≥ {100 * MIN_ACCURACY:.0f}%",
                    color=PASS_COLOUR, fontsize=8, ha="center", va="top",
                    transform=ax_acc.get_yaxis_transform())
        (self.acc,) = ax_acc.plot([], [], color=LINE_COLOUR, lw=2, drawstyle="steps-post")
        (self.acc_end,) = ax_acc.plot([], [], "o", color=LINE_COLOUR, ms=5)
        self.acc_text = ax_acc.text(0, 0, "", fontsize=9, ha="right", va="top")
        ax_acc.set(title="Evaluation accuracy, all 64 centers", xlabel="update",
                   ylabel="accuracy", xlim=(-2, N_STEPS + 2), ylim=(0, 1.05))
        ax_acc.yaxis.set_major_formatter(lambda v, _: f"{100 * v:.0f}%")
        ax_acc.grid(alpha=0.3)
        self.artists = [self.nll, self.nll_end, self.nll_text, self.acc, self.acc_end,
                        self.acc_text]

    def update(self, history: History) -> None:
        nll = history.eval_nll.numpy()
        acc = history.eval_accuracy.numpy()
        x = _steps(len(nll), start=0)
        last = x[-1]
        self.nll.set_data(x, nll)
        self.nll_end.set_data([last], [nll[-1]])
        low, high = NLL_LIMITS
        self.nll_text.set_position((last, min(max(nll[-1], low * 1.1), high / 2) * 1.15))
        self.nll_text.set_text(format_nll(nll[-1]))
        self.acc.set_data(x, acc)
        self.acc_end.set_data([last], [acc[-1]])
        self.acc_text.set_position((last - 3, max(acc[-1], 0.1) - 0.06))
        self.acc_text.set_text(f"{100 * acc[-1]:.1f}%")


class TablePanel:
    """The learned table softmax(W) next to the true rule, one line per (left, right) pair.

    Upright (the dashboard's narrow column) a pair is a row; ``wide=True`` (the notebook's own
    figure, as wide as the page) turns both tables on their side: a pair is a column.
    """

    def __init__(self, ax_learned: Axes, ax_truth: Axes, wide: bool = False,
                 labelsize: float = 8.5) -> None:
        self.ax_learned, self.ax_truth, self.wide = ax_learned, ax_truth, wide
        pairs = torch.arange(VOCAB_SIZE**2)
        left, right = pairs // VOCAB_SIZE, pairs % VOCAB_SIZE
        self.truth = true_center(left, right).numpy()
        style = dict(aspect="auto", vmin=0, vmax=1, cmap="Blues", interpolation="nearest")
        self.image = ax_learned.imshow(self._oriented(np.full((VOCAB_SIZE**2, VOCAB_SIZE), 0.25)),
                                       **style)
        ax_truth.imshow(self._oriented(np.eye(VOCAB_SIZE)[self.truth]), **style)
        self.wrong = ax_learned.scatter([], [], marker="x", color=FAIL_COLOUR, s=40, lw=2)
        pair_labels = [f"{a} {b}" for a, b in zip(left.tolist(), right.tolist(), strict=True)]
        for ax in (ax_learned, ax_truth):
            self._label_axes(ax, pair_labels, labelsize)
        if wide:
            ax_learned.tick_params(labelbottom=False)
            ax_learned.set_xlabel("")
            ax_learned.set_title("learned: softmax(W), one column per (left, right) pair",
                                 fontsize=10)
            ax_truth.set_title(f"true rule: center = (2·left + right) % {VOCAB_SIZE}",
                               fontsize=10)
        else:
            ax_truth.set_yticklabels([])
            ax_truth.set_ylabel("")
            ax_learned.set_title("learned\nsoftmax(W)", fontsize=10)
            ax_truth.set_title(f"true rule\n(2·left+right) % {VOCAB_SIZE}", fontsize=10)
        self.artists = [self.image, self.wrong]

    def _oriented(self, table: np.ndarray) -> np.ndarray:
        return table.T if self.wide else table

    def _label_axes(self, ax: Axes, pair_labels: list[str], labelsize: float) -> None:
        pair_axis, center_axis = (ax.xaxis, ax.yaxis) if self.wide else (ax.yaxis, ax.xaxis)
        pair_axis.set_ticks(range(VOCAB_SIZE**2), pair_labels)
        pair_axis.set_label_text("left right")
        center_axis.set_ticks(range(VOCAB_SIZE))
        center_axis.set_label_text("center")
        ax.tick_params(labelsize=labelsize, length=0)

    def update(self, history: History) -> None:
        logits = history.tables[-1].numpy()
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        self.image.set_data(self._oriented(probs))
        guess = probs.argmax(axis=1)
        rows = np.flatnonzero(guess != self.truth)
        points = np.column_stack([guess[rows], rows]) if rows.size else np.empty((0, 2))
        self.wrong.set_offsets(points[:, ::-1] if self.wide else points)


class DrawPanel:
    """Every selected center's draw on [0, 1), one row per update, coloured by branch."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        edges = (0.0, *THRESHOLDS, 1.0)
        for i, colour in enumerate(BRANCH_COLOURS):
            ax.axvspan(edges[i], edges[i + 1], color=colour, alpha=0.08, lw=0)
        for threshold in THRESHOLDS:
            ax.axvline(threshold, color="#555555", lw=1)
        self.points = ax.scatter([], [], s=6, lw=0)
        self.focus = ax.scatter([], [], s=40, edgecolors="black", linewidths=0.8, zorder=3)
        self.focus_line = ax.axhline(1, color="black", lw=0.6, alpha=0.6)
        handles = [Line2D([], [], ls="", marker="o", color=c, ms=6) for c in BRANCH_COLOURS]
        self.legend = ax.legend(handles, branch_labels("draw"), loc="upper center", fontsize=8,
                                bbox_to_anchor=(0.5, -0.16), ncols=3, frameon=False,
                                handletextpad=0.2, columnspacing=1.5)
        ax.set_xlim(0, 1)
        ax.set_ylim(N_STEPS + 2, -1)  # update 1 at the top, with room for its ringed dots
        ticks = sorted({0.0, 0.2, 0.4, 0.6, *THRESHOLDS, 1.0})
        ax.set_xticks(ticks, [f"{t:g}".removeprefix("0") or "0" for t in ticks])
        ax.set(xlabel="draw handed to make_mlm_inputs", ylabel="update")
        ax.set_title("Draws at the selected centers, all updates", fontsize=10, pad=16)
        self.title = ax.text(0.5, 1.01, "", transform=ax.transAxes, ha="center", va="bottom",
                             fontsize=9)
        self.artists = [self.points, self.focus, self.focus_line, self.title]

    def update(self, history: History, step: int = 1) -> None:
        n = history.draws.shape[0]
        if n == 0:
            return
        step = min(max(int(step), 1), n)
        rows, cols = torch.nonzero(history.selected, as_tuple=True)
        branch = branch_of(history.draws[rows, cols]).numpy()
        draws = history.draws[rows, cols].numpy()
        colours = BRANCH_RGBA[branch]
        y = rows.numpy() + 1
        self.points.set_offsets(np.column_stack([draws, y]))
        self.points.set_facecolor(colours)
        here = y == step
        self.focus.set_offsets(np.column_stack([draws[here], y[here]]))
        self.focus.set_facecolor(colours[here])
        self.focus_line.set_ydata([step, step])
        now = np.bincount(branch[here], minlength=3)
        self.title.set_text(f"update {step}: {now.sum()} selected → {now[0]} [MASK], "
                            f"{now[1]} random, {now[2]} kept")


def verdict(result: Acceptance) -> str:
    return "PASS" if result.passed else "FAIL"


def badge_text(result: Acceptance) -> str:
    """The acceptance badge as one line of figure text."""
    marks = "   ".join(("✓ " if ok else "✗ ") + line for ok, line in result.lines())
    return f"{verdict(result)}   {marks}"


def badge_html(result: Acceptance, settings: Settings | None = None) -> str:
    """The acceptance badge as HTML: one coloured line per check."""
    colour = verdict_colour(result.passed)
    items = "".join(
        f"<li style='color:{verdict_colour(ok)}'>{'✓' if ok else '✗'} {line}</li>"
        for ok, line in result.lines()
    )
    where = f"<div style='color:#555;font-size:90%'>{settings_label(settings)}</div>" \
        if settings else ""
    return (
        f"<div style='border:2px solid {colour};border-radius:6px;padding:4px 10px;"
        f"display:inline-block'><b style='color:{colour}'>"
        f"{verdict(result)}: the run {'meets' if result.passed else 'misses'} the acceptance "
        f"rule</b><ul style='margin:2px 0;padding-left:18px'>"
        f"{items}</ul>{where}</div>"
    )


class Dashboard:
    """All panels of the experiment in one figure, updated in place.

    With ``blit=True`` (the slider panel) the axes, ticks and labels are drawn once and kept as a
    background; an update redraws only the data artists on top of it, which is what keeps one
    slider change well under a tenth of a second.
    """

    def __init__(self, fig: Figure, blit: bool = False) -> None:
        self.fig = fig
        top = 0.93 if blit else 0.86  # with blit the badge is an HTML line above the image
        grid = fig.add_gridspec(2, 6, height_ratios=(1, 1.25), hspace=0.6, wspace=0.9,
                                left=0.06, right=0.985, top=top, bottom=0.14)
        self.loss = LossPanel(fig.add_subplot(grid[0, 0:2]))
        self.eval = EvalPanel(fig.add_subplot(grid[0, 2:4]), fig.add_subplot(grid[0, 4:6]))
        self.tables = TablePanel(fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1]))
        self.draws = DrawPanel(fig.add_subplot(grid[1, 2:6]))
        self.badge = fig.text(0.06, 0.975, "", fontsize=10.5, va="top", weight="bold")
        self.where = fig.text(0.06, 0.935, "", fontsize=9, va="top", color="#555555")
        self.dynamic = [*self.loss.artists, *self.eval.artists, *self.tables.artists,
                        *self.draws.artists]
        if blit:  # text is the slowest thing to draw: these two live in the HTML badge
            self.badge.set_visible(False)
            self.where.set_visible(False)
        self.blit = BlitRenderer(fig, self.dynamic) if blit else None

    def update(self, history: History, step: int = 1) -> None:
        result = acceptance(history)
        self.loss.update(history)
        self.eval.update(history)
        self.tables.update(history)
        self.draws.update(history, step)
        self.badge.set_text(badge_text(result))
        self.badge.set_color(verdict_colour(result.passed))
        self.where.set_text(settings_label(history.settings))

    def render(self) -> bytes:
        """The figure as it stands: JPEG bytes when blitting, else PNG bytes."""
        return self.blit.render() if self.blit else render_png(self.fig)


class BlitRenderer:
    """Draws a figure's static parts once and then only its changing artists, as JPEG bytes.

    The slider panels of notebooks 4 and 5 use it: axes, ticks and labels are drawn once and kept
    as a background; a render restores it and draws the ``dynamic`` artists on top.
    """

    def __init__(self, fig: Figure, dynamic: Sequence) -> None:
        self.fig, self.dynamic = fig, list(dynamic)
        self._background = None
        FigureCanvasAgg(fig)  # a canvas of its own: no pyplot manager, no GUI
        for artist in self.dynamic:
            artist.set_animated(True)  # left out of the background, drawn per update

    def render(self) -> bytes:
        canvas = self.fig.canvas
        if self._background is None:
            canvas.draw()
            self._background = canvas.copy_from_bbox(self.fig.bbox)
        else:
            canvas.restore_region(self._background)
        for artist in self.dynamic:
            (artist.axes or self.fig).draw_artist(artist)
        # JPEG at quality 92 without chroma subsampling: as crisp as PNG to the eye at this size,
        # and five times faster to encode (the PNG encoder was the slowest part of an update).
        size = canvas.get_width_height(physical=True)
        rgba = PIL.Image.frombuffer("RGBA", size, canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buffer = io.BytesIO()
        rgba.convert("RGB").save(buffer, format="jpeg", quality=92, subsampling=0)
        return buffer.getvalue()


def render_png(fig: Figure, dpi: int = DASHBOARD_DPI) -> bytes:
    """Draw the figure once and return PNG bytes (fast compression: it is redrawn often)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    return buffer.getvalue()


# ----- static figures (pyplot figures: the inline backend shows them at the end of the cell) ---


def plot_train_loss(history: History) -> Figure:
    fig, ax = plt.subplots(figsize=(6.4, 3.4), layout="constrained")
    LossPanel(ax).update(history)
    return attach(fig, describe_train_loss(history))


def plot_eval(history: History) -> Figure:
    fig, (ax_nll, ax_acc) = plt.subplots(1, 2, figsize=(10, 3.4), layout="constrained")
    EvalPanel(ax_nll, ax_acc).update(history)
    return attach(fig, describe_eval(history))


def plot_tables(history: History) -> Figure:
    """Both tables on their side, one above the other: the figure uses the page's width."""
    fig, (ax_learned, ax_truth) = plt.subplots(2, 1, figsize=(10, 4.4), layout="constrained")
    panel = TablePanel(ax_learned, ax_truth, wide=True, labelsize=10)
    panel.update(history)
    fig.colorbar(panel.image, ax=[ax_learned, ax_truth], shrink=0.9, aspect=15,
                 label="probability")
    return attach(fig, describe_tables(history))


def plot_draws(history: History, step: int = 1) -> Figure:
    fig, ax = plt.subplots(figsize=(8.4, 5.0), layout="constrained")
    DrawPanel(ax).update(history, step)
    return attach(fig, describe_draws(history, step))


def plot_dashboard(history: History, step: int = 1) -> Figure:
    fig = plt.figure(figsize=DASHBOARD_SIZE)
    Dashboard(fig).update(history, step)
    return fig


SMALL_MULTIPLES: tuple[tuple[str, tuple[Settings, ...]], ...] = (
    ("selection rate", tuple(Settings(selection_rate=r) for r in (0.03, 0.15, 0.6))),
    ("learning rate", tuple(Settings(lr=lr) for lr in (0.01, 0.08, 1.0))),
    ("mask / random / keep", tuple(Settings(shares=s) for s in
                                   ((0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)))),
)


def plot_small_multiples(
    make_mlm_inputs: Callable,
    masked_lm_loss: Callable,
    rows: Sequence[tuple[str, Sequence[Settings]]] = SMALL_MULTIPLES,
) -> Figure:
    """Evaluation NLL over a few slider settings (one row per slider), the default run in grey."""
    reference = run_experiment(make_mlm_inputs, masked_lm_loss)
    n_cols = max(len(settings) for _, settings in rows)
    fig, axes = plt.subplots(len(rows), n_cols, figsize=(3.3 * n_cols, 2.5 * len(rows)),
                             sharex=True, sharey=True, layout="constrained", squeeze=False)
    x = _steps(len(reference.eval_nll), start=0)
    described = []
    for r, (name, settings_row) in enumerate(rows):
        for c in range(n_cols):
            ax = axes[r, c]
            if c >= len(settings_row):
                ax.set_visible(False)
                continue
            history = run_experiment(make_mlm_inputs, masked_lm_loss, settings_row[c])
            result = acceptance(history)
            draw_nll_goal(ax)
            ax.plot(x, reference.eval_nll.numpy(), color="#BBBBBB", lw=3, label="default run")
            ax.plot(x, history.eval_nll.numpy(), color=LINE_COLOUR, lw=1.5, ls="--",
                    label="this setting")
            value = _setting_value(name, settings_row[c])
            described.append((name, value, result))
            ax.set_title(f"{name} = {value}\n{verdict(result)} · NLL "
                         f"{format_nll(result.final_nll)} · "
                         f"acc {100 * result.final_accuracy:.0f}%", fontsize=9,
                         color=verdict_colour(result.passed))
            ax.grid(alpha=0.3)
            if c == 0:
                ax.set_ylabel("eval NLL")
            if r == len(rows) - 1:
                ax.set_xlabel("update")
    axes[0, 0].legend(fontsize=8, loc="lower left", frameon=False)
    fig.suptitle("One slider at a time, the others at their defaults "
                 f"({settings_label(Settings())})", fontsize=10)
    return attach(fig, describe_small_multiples(described))


def _setting_value(name: str, settings: Settings) -> str:
    if name == "selection rate":
        return f"{settings.selection_rate:g}"
    if name == "learning rate":
        return f"{settings.lr:g}"
    return mix_label(settings.shares)


__all__ = [
    "BlitRenderer",
    "Dashboard",
    "DrawPanel",
    "EvalPanel",
    "LossPanel",
    "TablePanel",
    "badge_html",
    "plot_dashboard",
    "plot_draws",
    "plot_eval",
    "plot_small_multiples",
    "plot_tables",
    "plot_train_loss",
    "render_png",
]
