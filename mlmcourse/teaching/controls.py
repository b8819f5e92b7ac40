"""One control for the [MASK] / random / keep mix, shared by the panels of notebooks 4 and 5.

Three independent share sliders, scaled to sum to 1, surprised students: dragging [MASK] down to
0.20 with the others at 0.10 gave a 50/25/25 mix. This control cannot produce a mix the student
did not ask for: a menu of the six mixes of BERT's Appendix C.2, and a custom mix made of a
[MASK] share, a random share that can only use what [MASK] left (its maximum follows), and the
keep share, which is the rest and is shown, not set.
"""

from __future__ import annotations

from collections.abc import Callable

from mlmcourse.teaching.experiment import DEFAULT_SHARES, PAPER_MIXES

Shares = tuple[float, float, float]
STEP = 0.05  # the custom sliders' step: every mix of the paper lies on this grid
CUSTOM = "custom"  # the menu entry for a mix set with the sliders


def mix_text(shares: Shares) -> str:
    """``[MASK] 80% · random 10% · keep 10%``: the names spelled out, so no order is assumed."""
    mask, random, keep = shares
    return f"[MASK] {100 * mask:.0f}% · random {100 * random:.0f}% · keep {100 * keep:.0f}%"


def _menu_label(shares: Shares) -> str:
    return mix_text(shares) + ("  (BERT)" if shares == DEFAULT_SHARES else "")


def _keep(mask: float, random: float) -> float:
    # Rounded to the slider grid's precision: 1 - 0.7 - 0.2 is 0.10000000000000003 in floats.
    return max(0.0, round(1.0 - mask - random, 10))


class MixControl:
    """A menu of the paper's mixes plus a constrained custom mix; ``value`` always sums to 1.

    ``on_change(shares)`` is called once per change the student makes, never for the control's
    own adjustments (the random slider's maximum following the [MASK] share, the sliders
    following the menu).
    """

    def __init__(self, on_change: Callable[[Shares], None], shares: Shares = DEFAULT_SHARES,
                 width: str = "360px", menu_width: str = "440px") -> None:
        import ipywidgets as widgets

        self.on_change = on_change
        style = {"description_width": "110px"}
        self.menu = widgets.Dropdown(
            options=[(_menu_label(m), m) for m in PAPER_MIXES]
            + [("custom (the sliders below)", CUSTOM)],
            value=shares if shares in PAPER_MIXES else CUSTOM, description="mix",
            style=style, layout=widgets.Layout(width=menu_width))  # the longest label fits
        common = dict(min=0.0, step=STEP, continuous_update=False, readout_format=".2f",
                      style=style, layout=widgets.Layout(width=width))
        self.mask = widgets.FloatSlider(shares[0], max=1.0, description="[MASK] share", **common)
        self.random = widgets.FloatSlider(shares[1], max=_keep(shares[0], 0.0),
                                          description="random share", **common)
        self.keep = widgets.HTML()
        self._quiet = False
        self._show_keep()
        self.menu.observe(self._on_menu, names="value")
        self.mask.observe(self._on_slider, names="value")
        self.random.observe(self._on_slider, names="value")
        self.widget = widgets.VBox([self.menu, self.mask, self.random, self.keep])

    @property
    def value(self) -> Shares:
        mask, random = float(self.mask.value), float(self.random.value)
        return (mask, random, _keep(mask, random))

    def set(self, shares: Shares) -> None:
        """Show ``shares`` without calling ``on_change`` (a reset)."""
        self._quietly(lambda: self._set_sliders(shares))
        self._quietly(lambda: setattr(self.menu, "value", self._preset(self.value)))
        self._show_keep()

    def _set_sliders(self, shares: Shares) -> None:
        self.random.max = 1.0  # first make room, then set, then tighten
        self.mask.value, self.random.value = shares[0], shares[1]
        self.random.max = _keep(shares[0], 0.0)

    def _quietly(self, action: Callable[[], None]) -> None:
        self._quiet = True
        try:
            action()
        finally:
            self._quiet = False

    @staticmethod
    def _preset(shares: Shares) -> Shares | str:
        close = [m for m in PAPER_MIXES if max(abs(a - b) for a, b in zip(m, shares)) < 1e-9]
        return close[0] if close else CUSTOM

    def _show_keep(self) -> None:
        keep = self.value[2]
        self.keep.value = (f"<div style='margin-left:114px'>keep share: <b>{keep:.2f}</b> "
                           "(the rest)</div>")

    def _on_menu(self, change: dict) -> None:
        if self._quiet or change["new"] == CUSTOM:  # "custom": the sliders already hold the mix
            return
        self._quietly(lambda: self._set_sliders(change["new"]))
        self._changed()

    def _on_slider(self, _change: dict) -> None:
        if self._quiet:
            return
        # The random share may use only what [MASK] left; lowering the maximum may lower it.
        self._quietly(lambda: setattr(self.random, "max", _keep(self.mask.value, 0.0)))
        self._quietly(lambda: setattr(self.menu, "value", self._preset(self.value)))
        self._changed()

    def _changed(self) -> None:
        self._show_keep()
        self.on_change(self.value)


__all__ = ["CUSTOM", "MixControl", "mix_text"]
