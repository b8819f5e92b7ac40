"""The slider panel of the experiment notebook (notebook 4).

Each slider change re-runs the 100 updates, updates the artists of a blitting
:class:`~mlmcourse.teaching.panels.Dashboard`, redraws only them over a cached background and
puts the new picture into one ``ipywidgets.Image``: no flicker, no second figure, nothing left
behind. The mix is one :class:`~mlmcourse.teaching.controls.MixControl` (the paper's mixes or a
constrained custom mix), shared with notebook 5's panel. The dashboard's figure is a bare
:class:`matplotlib.figure.Figure`, never registered with pyplot: it cannot leak, be shown twice or
be closed by the inline backend. While nbgrader executes the notebook (``NBGRADER_EXECUTION`` is
set: by nbgrader itself, and by the course's grader, :mod:`mlmcourse.grader.engine.submission`, for
its trusted kernel) :func:`show_sliders` prints one line instead: grading never waits on, or talks
to, widgets.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

from matplotlib.figure import Figure

from mlmcourse.teaching.captions import describe_dashboard
from mlmcourse.teaching.controls import MixControl
from mlmcourse.teaching.describe import live_caption_html
from mlmcourse.teaching.experiment import History, Settings, acceptance, run_experiment
from mlmcourse.teaching.panels import DASHBOARD_DPI, DASHBOARD_SIZE, Dashboard, badge_html

NBGRADER_NOTE = "Sliders are off while nbgrader executes this notebook (NBGRADER_EXECUTION is set)."


class SliderPanel:
    """Sliders for the experiment; every change re-runs the 100 updates and redraws in place."""

    def __init__(self, make_mlm_inputs: Callable, masked_lm_loss: Callable,
                 settings: Settings | None = None) -> None:
        import ipywidgets as widgets

        self.functions = (make_mlm_inputs, masked_lm_loss)
        self.defaults = settings or Settings()
        d = self.defaults
        common = dict(continuous_update=False, style={"description_width": "110px"},
                      layout=widgets.Layout(width="360px"))
        self.rate = widgets.FloatSlider(d.selection_rate, min=0.01, max=1.0, step=0.01,
                                        description="selection rate", **common)
        self.mix = MixControl(self._on_change, d.shares)
        self.seed = widgets.IntSlider(d.seed, min=0, max=999, description="seed", **common)
        self.lr = widgets.FloatLogSlider(d.lr, base=10, min=-3, max=0.5, step=0.05,
                                         readout_format=".3g", description="lr", **common)
        self.step = widgets.IntSlider(1, min=1, max=d.n_steps, description="inspect update",
                                      **common)
        self.reset = widgets.Button(
            description="reset to the protocol", icon="undo", layout=widgets.Layout(width="auto")
        )
        self.badge = widgets.HTML()
        self.out = widgets.Output()  # errors and messages land here, in front of the student
        # Not a pyplot figure: the inline backend never shows, duplicates or closes it.
        self.fig = Figure(figsize=DASHBOARD_SIZE, dpi=DASHBOARD_DPI)
        self.dashboard = Dashboard(self.fig, blit=True)
        self.image = widgets.Image(format="jpeg", layout=widgets.Layout(max_width="100%"))
        self.caption = widgets.HTML()  # what the picture shows, read out after each redraw
        self.history: History | None = None
        self._error_shown = False
        self.runs = [self.rate, self.seed, self.lr]
        for slider in self.runs:
            slider.observe(self._on_change, names="value")
        self.step.observe(self._on_step, names="value")
        self.reset.on_click(self._on_reset)
        left = widgets.VBox([self.rate, self.seed, self.lr, self.step, self.reset])
        right = self.mix.widget
        self.widget = widgets.VBox([widgets.HBox([left, right]), self.badge, self.out, self.image,
                                    self.caption])
        self._guarded(self.update)

    def settings(self) -> Settings:
        return replace(self.defaults, seed=int(self.seed.value), lr=float(self.lr.value),
                       selection_rate=float(self.rate.value), shares=self.mix.value)

    def update(self) -> None:
        """Re-run the experiment with the sliders' values and redraw (what one change costs)."""
        self.history = run_experiment(*self.functions, self.settings())
        self.redraw()

    def redraw(self) -> None:
        assert self.history is not None
        self.dashboard.update(self.history, self.step.value)
        self.image.value = self.dashboard.render()
        description = describe_dashboard(self.history, self.step.value)
        self.caption.value = live_caption_html(description)
        self.badge.value = badge_html(acceptance(self.history), self.history.settings)

    def _guarded(self, action: Callable[[], None]) -> None:
        """Run one update; an exception is shown inside the panel instead of being lost."""
        if self._error_shown:  # clear only what we wrote: the panel never flickers otherwise
            self.out.clear_output()
            self._error_shown = False
        with self.out:
            try:
                action()
            except Exception:
                self._error_shown = True
                raise  # the Output widget shows the traceback and swallows it

    def _on_change(self, _change: object) -> None:
        self._guarded(self.update)

    def _on_step(self, _change: object) -> None:
        self._guarded(self.redraw if self.history is not None else self.update)

    def _on_reset(self, _button: object) -> None:
        d = self.defaults
        with self.out:
            for slider in self.runs:
                slider.unobserve(self._on_change, names="value")
            try:
                self.rate.value, self.seed.value, self.lr.value = d.selection_rate, d.seed, d.lr
                self.mix.set(d.shares)
            finally:
                for slider in self.runs:
                    slider.observe(self._on_change, names="value")
        self._guarded(self.update)


def show_sliders(make_mlm_inputs: Callable, masked_lm_loss: Callable) -> SliderPanel | None:
    """Display the slider panel; under nbgrader print one line instead (grading never waits)."""
    if os.environ.get("NBGRADER_EXECUTION"):
        print(NBGRADER_NOTE)
        return None
    from IPython.display import display

    panel = SliderPanel(make_mlm_inputs, masked_lm_loss)
    display(panel.widget)
    return panel


__all__ = ["SliderPanel", "show_sliders"]
