"""The mix control of notebooks 4 and 5, notebook 5's mix panel, and the figures they changed."""

from __future__ import annotations

import matplotlib
import pytest
import torch
from conftest import ROOT
from test_experiment import run_notebook_cells

from mlmcourse.teaching import mixlab, panels
from mlmcourse.teaching.controls import CUSTOM, MixControl, mix_text
from mlmcourse.teaching.experiment import DEFAULT_SHARES, PAPER_MIXES, Settings
from mlmcourse.teaching.loader import load_functions

matplotlib.use("Agg")
SOURCE = ROOT / "source" / "bert_mlm"


@pytest.fixture(scope="module")
def reference():
    make = load_functions(SOURCE / "01_corruption.ipynb", ["make_mlm_inputs"])["make_mlm_inputs"]
    loss = load_functions(SOURCE / "03_empty_mask_and_gradient.ipynb", ["masked_lm_loss"])
    return make, loss["masked_lm_loss"]


@pytest.fixture
def control():
    calls = []
    return MixControl(calls.append), calls


def test_lowering_mask_gives_the_rest_to_keep_not_a_rescaled_mix(control):
    mix, calls = control
    mix.mask.value = 0.2  # three rescaled sliders made this 50/25/25
    assert calls == [pytest.approx((0.2, 0.1, 0.7))]
    assert mix.menu.value == CUSTOM
    assert "0.70" in mix.keep.value


def test_random_share_can_only_use_what_mask_left(control):
    mix, calls = control
    mix.mask.value = 0.95
    assert mix.random.max == pytest.approx(0.05)
    assert calls == [pytest.approx((0.95, 0.05, 0.0))]  # one call, not one per adjustment
    for shares in calls:
        assert min(shares) >= 0 and sum(shares) == pytest.approx(1.0)


def test_menu_sets_a_paper_mix_with_one_call(control):
    mix, calls = control
    mix.menu.value = (0.0, 1.0, 0.0)
    assert calls == [(0.0, 1.0, 0.0)]
    assert (mix.mask.value, mix.random.value) == (0.0, 1.0)
    mix.menu.value = CUSTOM  # choosing "custom" keeps the mix and trains nothing new
    assert len(calls) == 1


def test_sliders_that_land_on_a_paper_mix_select_it(control):
    mix, _ = control
    mix.mask.value = 1.0
    assert mix.menu.value == (1.0, 0.0, 0.0)


def test_set_shows_a_mix_without_calling_back(control):
    mix, calls = control
    mix.mask.value = 0.3
    mix.set(DEFAULT_SHARES)
    assert mix.value == pytest.approx(DEFAULT_SHARES) and mix.menu.value == DEFAULT_SHARES
    assert len(calls) == 1


def test_every_paper_mix_sums_to_one_and_is_named():
    assert len(set(PAPER_MIXES)) == 6 and PAPER_MIXES[0] == DEFAULT_SHARES
    for shares in PAPER_MIXES:
        assert sum(shares) == pytest.approx(1.0)
    assert mix_text((0.8, 0.2, 0.0)) == "[MASK] 80% · random 20% · keep 0%"


def test_the_badge_shows_a_log_slider_lr_to_three_digits():
    assert "lr 0.00501 ·" in panels.settings_label(Settings(lr=0.0050118723362727))


def test_the_table_figure_uses_the_page_width_with_readable_ticks(reference):
    from mlmcourse.teaching.experiment import run_experiment

    fig = panels.plot_tables(run_experiment(*reference))
    fig.canvas.draw()
    width = fig.get_figwidth() * fig.dpi
    left = min(ax.get_window_extent().x0 for ax in fig.axes)
    right = max(ax.get_window_extent().x1 for ax in fig.axes)
    assert (right - left) / width > 0.85, "the tables should span the figure"
    sizes = {t.get_fontsize() for ax in fig.axes[:2] for t in ax.get_xticklabels()
             + ax.get_yticklabels() if t.get_text()}
    assert min(sizes) >= 9, f"tick labels of {min(sizes)} pt are too small to read"


def test_nll_end_label_never_overlaps_a_goal_label(reference):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from mlmcourse.teaching.experiment import run_experiment

    for lr in (0.03, 0.04, 0.05):  # runs that end near the goal of 0.1
        fig = Figure(figsize=(10, 3.4), layout="constrained")
        FigureCanvasAgg(fig)
        panel = panels.EvalPanel(*fig.subplots(1, 2))
        panel.update(run_experiment(*reference, lr=lr))
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        end = panel.nll_text.get_window_extent(renderer)
        for goal in (t for t in panel.ax_nll.texts if t is not panel.nll_text):
            assert not end.overlaps(goal.get_window_extent(renderer)), (
                f"lr {lr}: the end label '{panel.nll_text.get_text()}' covers '{goal.get_text()}'")


# Notebook 5's own model, views and data: the panel repeats them and must agree.
NOTEBOOK_5_MODEL = ("setup", "model", "views", "data")


def test_the_panel_model_and_views_are_the_notebooks(reference):
    make, loss = reference
    ns = run_notebook_cells(SOURCE / "05_why_80_10_10.ipynb", NOTEBOOK_5_MODEL,
                            {"make_mlm_inputs": make, "masked_lm_loss": loss})
    assert torch.equal(ns["exception_data"], mixlab.exception_data())
    for shares in ((0.8, 0.1, 0.1), (0.8, 0.2, 0.0)):
        theirs = ns["ContextAndToken"]()
        ns["train"](make, loss, theirs, Settings(seed=3, shares=shares),
                    tokens=ns["exception_data"])
        ours = mixlab.train_under_mix(make, loss, shares, seed=3)
        assert torch.equal(ours.token, theirs.token) and torch.equal(ours.context, theirs.context)
        expected = ns["evaluate_views"](theirs, ns["exception_data"])
        got = mixlab.view_scores(ours, mixlab.exception_data())
        for view in ("masked", "clean"):
            assert got[view]["acc"] == pytest.approx(expected[f"{view} acc"], abs=1e-12)
            assert got[view]["nll"] == pytest.approx(expected[f"{view} NLL"], abs=1e-12)


def test_every_mix_panel_control_retrains_and_redraws(reference):
    lab = mixlab.MixLab(*reference)
    pictures = [lab.image.value]
    for move in (lambda: setattr(lab.seed, "value", 7),
                 lambda: setattr(lab.rate, "value", 0.3),
                 lambda: setattr(lab.mix.menu, "value", (1.0, 0.0, 0.0)),
                 lambda: setattr(lab.mix.mask, "value", 0.6),
                 lambda: setattr(lab.mix.random, "value", 0.2)):
        move()
        assert lab.out.outputs == (), f"a change raised: {lab.out.outputs}"
        assert lab.image.value not in pictures, "a change redrew the same picture"
        pictures.append(lab.image.value)
    assert "[MASK] 60% · random 20% · keep 20%" in lab.summary.value


def test_hundred_percent_mask_leaves_the_fine_tuning_view_at_the_pre_training_view(reference):
    model = mixlab.train_under_mix(*reference, (1.0, 0.0, 0.0))
    scores = mixlab.view_scores(model, mixlab.exception_data())
    assert scores["clean"]["acc"] == pytest.approx(0.75, abs=0.04)
    assert torch.equal(model.token[:4].detach(), torch.zeros(4, 4, dtype=torch.float64))


def test_mix_panel_is_off_under_nbgrader(reference, monkeypatch, capsys):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert mixlab.show_mix_lab(*reference) is None
    assert capsys.readouterr().out.strip() == mixlab.NBGRADER_NOTE
