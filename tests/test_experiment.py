"""The experiment's machinery: the protocol, the share mapping, the optimizer, the loader."""

from __future__ import annotations

import contextlib
import io
import math
import shutil

import pytest
import torch
from conftest import ROOT

from mlmcourse.course import nbio
from mlmcourse.teaching import experiment
from mlmcourse.teaching.checks import TRAIN_STEP_CHECKLIST
from mlmcourse.teaching.loader import (
    NotebookNotReady,
    from_notebook,
    load_functions,
    load_student_functions,
)

SOURCE = ROOT / "source" / "bert_mlm"


@pytest.fixture(scope="module")
def reference():
    make = load_functions(SOURCE / "01_corruption.ipynb", ["make_mlm_inputs"])["make_mlm_inputs"]
    loss = load_functions(SOURCE / "03_empty_mask_and_gradient.ipynb", ["masked_lm_loss"])
    return make, loss["masked_lm_loss"]


def test_the_data_follows_the_rule():
    tokens = experiment.make_tokens()
    assert tokens.shape == (64, 3)
    left, center, right = tokens.unbind(dim=1)
    assert torch.equal(center, (2 * left + right) % 4)
    pairs = {(int(a), int(b)) for a, b in zip(left, right)}
    assert len(pairs) == 16


def test_default_shares_leave_the_draws_untouched():
    u = torch.rand(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    assert experiment.shape_draws(u, (0.8, 0.1, 0.1)) is u


@pytest.mark.parametrize("shares", [(1.0, 0.0, 0.0), (0.5, 0.3, 0.2), (0.0, 0.2, 0.8)])
def test_shaped_draws_give_the_requested_branch_shares(shares):
    u = torch.rand(200_000, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    draws = experiment.shape_draws(u, shares)
    assert bool(((draws >= 0) & (draws < 1)).all())
    got = ((draws < 0.8).double().mean(), ((draws >= 0.8) & (draws < 0.9)).double().mean(),
           (draws >= 0.9).double().mean())
    for want, have in zip(shares, got):
        assert abs(float(have) - want) < 0.005


def test_written_out_adam_matches_torch_adam():
    g = torch.Generator().manual_seed(3)
    mine = torch.zeros(16, 4, dtype=torch.float64)
    theirs = mine.clone().requires_grad_()
    ours, reference = experiment.Adam([mine], lr=0.08), torch.optim.Adam([theirs], lr=0.08)
    for _ in range(50):
        grad = torch.randn(16, 4, dtype=torch.float64, generator=g)
        ours.step([grad])
        theirs.grad = grad.clone()
        reference.step()
    assert torch.equal(mine, theirs.detach())


def test_the_reference_run_meets_the_acceptance_bar(reference):
    history = experiment.run_experiment(*reference)
    assert history.initial_nll == pytest.approx(math.log(4))
    assert history.final_nll < 0.1 and history.final_nll < 0.1 * math.log(4)
    assert history.final_accuracy >= 0.95


def test_same_seed_same_curve_bit_for_bit(reference):
    first = experiment.run_experiment(*reference, seed=7)
    torch.manual_seed(12345)  # the global generator must not matter
    second = experiment.run_experiment(*reference, seed=7)
    assert torch.equal(first.train_loss, second.train_loss)
    assert torch.equal(first.tables, second.tables)


def test_loader_says_which_notebook_to_finish(tmp_path):
    with pytest.raises(NotebookNotReady, match="01_corruption"):
        from_notebook(tmp_path, "01_corruption.ipynb", ["make_mlm_inputs"])
    blank = ROOT / "release" / "bert_mlm"
    with pytest.raises(NotebookNotReady, match="NotImplementedError"):
        from_notebook(blank, "01_corruption.ipynb", ["make_mlm_inputs"])


def test_loader_lists_every_notebook_to_finish_at_once(tmp_path):
    """Notebook 1 unfinished and notebook 3 missing: one run names both, each with what to do
    (not notebook 1 now, and notebook 3 only once notebook 1 is fixed)."""
    shutil.copy(ROOT / "release" / "bert_mlm" / "01_corruption.ipynb", tmp_path)
    with pytest.raises(NotebookNotReady) as not_ready:
        load_student_functions(tmp_path)
    first, second = not_ready.value.reasons
    assert "`make_mlm_inputs` in 01_corruption.ipynb still raises NotImplementedError" in first
    assert "Finish notebook 1 (01_corruption.ipynb) first" in first
    assert "03_empty_mask_and_gradient.ipynb was not found" in second
    assert "Finish notebook 3 (03_empty_mask_and_gradient.ipynb) first" in second
    message = str(not_ready.value)
    assert message.startswith("2 things to do before this cell can run:")
    assert f"1. {first}" in message and f"2. {second}" in message


def test_loader_with_one_notebook_to_finish_says_just_that(tmp_path):
    shutil.copy(SOURCE / "01_corruption.ipynb", tmp_path)
    with pytest.raises(NotebookNotReady) as not_ready:
        load_student_functions(tmp_path)
    assert len(not_ready.value.reasons) == 1
    assert str(not_ready.value) == not_ready.value.reasons[0]
    assert str(not_ready.value).startswith("03_empty_mask_and_gradient.ipynb was not found")


def test_notebook_6_lists_everything_left_to_do_at_once(tmp_path, monkeypatch):
    """Notebook 6's Step 3 with Part A blank and neither notebook 1 nor 3 next to it: one run
    lists all three, and the steps after it are skipped."""
    cells = {cell.id: cell for cell in nbio.read(SOURCE / "06_real_bert.ipynb").cells}

    def select_for_masking(*args):
        raise NotImplementedError

    namespace = {"HAVE_TRANSFORMERS": True, "torch": torch, "NotebookNotReady": NotebookNotReady,
                 "load_student_functions": load_student_functions,
                 "select_for_masking": select_for_masking}
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(cells["load_student_functions"].source, "step 3", "exec"), namespace)
    lines = printed.getvalue().splitlines()
    assert namespace["READY"] is False
    assert lines[0] == "3 things to do before the steps below can run:"
    assert lines[1].startswith("1. select_for_masking still raises NotImplementedError")
    assert lines[2].startswith("2. 01_corruption.ipynb was not found")
    assert lines[3].startswith("3. 03_empty_mask_and_gradient.ipynb was not found")
    assert lines[4] == "The steps below are skipped until then."


def run_notebook_cells(path, cell_ids, namespace):
    """Run some code cells of a source notebook, by id, in ``namespace`` (printing nothing)."""
    import contextlib
    import io

    import nbformat

    cells = {cell.id: cell for cell in nbformat.read(path, as_version=4).cells}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell_id in cell_ids:
            exec(compile(cells[cell_id].source, f"{path.name}:{cell_id}", "exec"), namespace)
    return namespace


# Notebook 4's cells that build the data, the first step, the training step (the source's
# answer) and the loop that repeats it.
NOTEBOOK_4_LOOP = ("setup", "data", "first_step", "model_demo", "train_step", "train_loop")


@pytest.mark.parametrize("seed, lr", [(163, 0.08), (7, 0.3), (0, 0.01)])
def test_notebook_loop_with_torch_adam_is_run_experiment(reference, seed, lr):
    """The loop notebook 4 shows (torch.optim.Adam) and the package's run_experiment (the graded
    tests' and the sliders' loop, Adam written out) give the same losses and tables."""
    make, loss = reference
    namespace = run_notebook_cells(SOURCE / "04_experiment.ipynb", NOTEBOOK_4_LOOP,
                                   {"make_mlm_inputs": make, "masked_lm_loss": loss})
    losses, tables = namespace["train_table"](seed=seed, lr=lr)
    history = experiment.run_experiment(make, loss, seed=seed, lr=lr)
    assert losses.shape == history.train_loss.shape == (100,)
    assert tables.shape == history.tables.shape == (101, 16, 4)
    torch.testing.assert_close(losses, history.train_loss, rtol=0, atol=1e-12)
    torch.testing.assert_close(tables, history.tables, rtol=0, atol=1e-12)


REFERENCE_STEP = {cell.id: cell.source for cell in nbio.read(SOURCE / "04_experiment.ipynb").cells}[
    "train_step"]
STEP_SLIPS = {  # a slip in notebook 4's train_step -> what its check says
    "no slip": (REFERENCE_STEP, None),
    "picks drawn after draws": (REFERENCE_STEP.replace(
        "    picks = torch.rand(B, L, generator=generator, dtype=torch.float64)\n"
        "    selected = eligible & (picks < SELECTION_RATE)\n"
        "    draws = torch.rand(B, L, generator=generator, dtype=torch.float64)\n",
        "    draws = torch.rand(B, L, generator=generator, dtype=torch.float64)\n"
        "    picks = torch.rand(B, L, generator=generator, dtype=torch.float64)\n"
        "    selected = eligible & (picks < SELECTION_RATE)\n"),
        "update 1 is the first that differs from the run: the usual slips are points 1 to 3"),
    "no zero_grad": (REFERENCE_STEP.replace("    optimizer.zero_grad()\n", ""),
                     "update 2 is the first that differs from the run: the usual slips are "
                     "points 4 and 5"),
    "a new optimizer each update": (REFERENCE_STEP.replace(
        "    loss = masked_lm_loss(logits, labels)\n",
        "    loss = masked_lm_loss(logits, labels)\n"
        "    optimizer = torch.optim.Adam([W], lr=0.08)\n"), "update 2 is the first that differs"),
    "zero_grad after backward": (REFERENCE_STEP.replace(
        "    optimizer.zero_grad()\n    loss.backward()\n",
        "    loss.backward()\n    optimizer.zero_grad()\n"),
        "W never changed, and train_step leaves no gradient in W.grad: zero_grad\\(\\) ran after"),
    "step before backward": (REFERENCE_STEP.replace(
        "    loss.backward()\n    optimizer.step()\n",
        "    optimizer.step()\n    loss.backward()\n"),
        "W never changed, yet train_step leaves a gradient in W.grad: step\\(\\) ran before "
        "backward\\(\\)"),
    "its own W": (REFERENCE_STEP.replace(
        "    center_logits = W[",
        "    W = torch.zeros(16, V, dtype=torch.float64, requires_grad=True)\n"
        "    center_logits = W["),
        "train_step must update the W it was given: did it create its own"),
    "no backward": (REFERENCE_STEP.replace("    loss.backward()\n", ""),
                    "train_step must update the W it was given"),
    "no return": (REFERENCE_STEP.replace("    return loss.item()", "    pass"),
                  "must return the loss"),
}


@pytest.mark.parametrize("slip", STEP_SLIPS)
def test_notebook_4s_training_step_check_names_the_slip(reference, slip):
    """Notebook 4's check of the student's train_step passes the right one and names each
    classic slip by the first update it changes, then gives the checklist of what to verify."""
    source, message = STEP_SLIPS[slip]
    assert (source == REFERENCE_STEP) == (message is None), "the slip's text is not in the answer"
    make, loss = reference
    notebook = SOURCE / "04_experiment.ipynb"
    namespace = run_notebook_cells(notebook, ("setup", "data", "first_step", "model_demo"),
                                   {"make_mlm_inputs": make, "masked_lm_loss": loss})
    exec(compile(source, "train_step", "exec"), namespace)
    if message is None:
        run_notebook_cells(notebook, ("train_loop", "check_train_step"), namespace)
        return
    with pytest.raises(AssertionError, match=message) as failed:
        run_notebook_cells(notebook, ("train_loop", "check_train_step"), namespace)
    if slip != "no return":  # the loop itself says what is missing
        assert str(failed.value).endswith(f"\n{TRAIN_STEP_CHECKLIST}")
