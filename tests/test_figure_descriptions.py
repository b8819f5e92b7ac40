"""Every figure says what it shows: descriptions made from the figure's data, never a placeholder.

The describing functions are checked on data whose answer is known; the committed worked
edition is checked as a reader meets it: every picture output is a ``<figure>`` with a real alt
text and a caption, and every picture of a saved slider panel has a name and a live caption.
"""

from __future__ import annotations

import html
import json
import re

import matplotlib
import pytest
import torch
from conftest import ROOT

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mlmcourse.teaching import captions, mixlab  # noqa: E402
from mlmcourse.teaching.describe import (  # noqa: E402
    DESCRIPTION_CLASS,
    Description,
    Table,
    description_of,
    figure_bundle,
    show_figure,
)
from mlmcourse.teaching.experiment import History, Settings, run_experiment  # noqa: E402
from mlmcourse.teaching.loader import load_functions  # noqa: E402
from mlmcourse.teaching.plots import plot_corruption_grid  # noqa: E402

SOURCE = ROOT / "source" / "bert_mlm"
PLACEHOLDER_STARTS = ("no description has been provided", "<figure size")


@pytest.fixture(scope="module")
def run() -> History:
    make = load_functions(SOURCE / "01_corruption.ipynb", ["make_mlm_inputs"])["make_mlm_inputs"]
    loss = load_functions(SOURCE / "03_empty_mask_and_gradient.ipynb",
                          ["masked_lm_loss"])["masked_lm_loss"]
    return run_experiment(make, loss)


def test_a_description_needs_words_and_a_table_needs_whole_rows():
    with pytest.raises(ValueError, match="name and a text"):
        Description("Loss", " ")
    with pytest.raises(ValueError, match="2 cells, the header 3"):
        Table("t", ("a", "b", "c"), [("1", "2")])


def test_a_figure_without_a_description_is_an_error_and_is_closed():
    fig, _ = plt.subplots()
    with pytest.raises(ValueError, match="no description"):
        show_figure(fig)
    assert not plt.fignum_exists(fig.number)


def test_the_bundle_names_the_picture_and_says_what_it_shows():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    description = Description("A line", "It falls from 1 to 0 & stops.",
                              Table("points", ("x", "y"), [("0", "1"), ("1", "0")]))
    data, metadata = figure_bundle(fig, description)
    plt.close(fig)
    page = data["text/html"]
    assert '<figure class="mlm-figure">' in page and 'alt="A line"' in page
    assert "<figcaption><p>It falls from 1 to 0 &amp; stops.</p>" in page
    assert "<details><summary>The numbers: points</summary>" in page
    assert '<th scope="col">x</th>' in page and "<td>0</td><td>1</td>" in page
    assert data["text/plain"] == "A line. It falls from 1 to 0 & stops."
    assert metadata["image/png"]["alt"] == data["text/plain"]
    assert data["image/png"] in page  # one picture, the same in both parts


# The worked example of notebook 1: ids of "the cat sat on the mat" / "a dog ran to the park".
NAMES = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "park", "[MASK]"]
TOKENS = torch.tensor([[0, 1, 2, 3, 0, 4], [5, 6, 7, 8, 0, 9]])
SELECTED = torch.tensor([[False, True, True, True, False, True],
                         [True, False, True, True, True, False]])
DRAWS = torch.tensor([[0.30, 0.10, 0.80, 0.90, 0.85, 0.7999],
                      [0.8999, 0.95, 0.85, 0.99, 0.00, 0.20]], dtype=torch.float64)
RANDOM_IDS = torch.tensor([[3, 9, 6, 2, 5, 1], [4, 0, 7, 1, 8, 3]])
RIGHT = torch.tensor([[0, 10, 6, 3, 0, 10], [4, 6, 7, 8, 10, 9]])


def _grid_words(corrupted: torch.Tensor) -> Description:
    fig = plot_corruption_grid(TOKENS, SELECTED, DRAWS, RANDOM_IDS, corrupted, 10,
                               token_names=NAMES)
    plt.close(fig)
    return description_of(fig)


def test_the_corruption_grid_says_what_happened_at_each_selected_site():
    words = _grid_words(RIGHT)
    assert words.text.startswith("Corruption of a 2 x 6 batch: 8 of 12 sites selected; "
                                 "(0, 1) 'cat' becomes [MASK] (u = 0.10, [MASK]); "
                                 "(0, 2) 'sat' becomes 'dog' (u = 0.80, random id); "
                                 "(0, 3) 'on' stays 'on' (u = 0.90, kept); "
                                 "(0, 5) 'mat' becomes [MASK] (u = 0.7999, [MASK])")
    assert words.text.endswith("Every site holds what the 80/10/10 rule puts there.")
    assert len(words.table.rows) == 8
    assert words.table.rows[0] == ("(0, 1)", "cat", "0.10", "[MASK]", "[MASK]", "[MASK]")


def test_the_corruption_grid_names_every_site_the_rule_disagrees_with():
    wrong = RIGHT.clone()
    wrong[0, 1] = 1  # the [MASK] branch left the token alone
    words = _grid_words(wrong)
    assert "(0, 1) 'cat' stays 'cat' (u = 0.10, [MASK])" in words.text
    assert words.text.endswith("1 site not as the rule says: (0, 1) holds 'cat', the rule puts "
                               "[MASK].")


def test_the_experiment_figures_describe_the_protocol_run(run):
    assert captions.describe_eval(run).text.startswith(
        "Evaluation on all 64 centers: NLL falls from 1.386 to 0.027 in 100 updates")
    assert "The run meets the acceptance rule." in captions.describe_eval(run).text
    assert "for 16 of 16 (left, right) pairs" in captions.describe_tables(run).text
    draws = captions.describe_draws(run, step=1)
    selected = int(run.selected.sum())
    assert f"over 100 updates, {selected} selected: " in draws.text
    assert sum(int(row[1]) for row in draws.table.rows) == selected
    dashboard = captions.describe_dashboard(run, step=5)
    assert dashboard.text.startswith("Run with seed 163 · lr 0.08 · selection 0.15")
    assert "At update 5 (ringed)" in dashboard.text


def test_a_failing_run_says_which_check_it_misses(run):
    failing = History(**{**run.__dict__, "settings": Settings(),
                         "eval_nll": run.eval_nll.clone().fill_(1.0)})
    text = captions.describe_eval(failing).text
    assert "NLL stays at 1.000 for 100 updates" in text
    assert "misses the acceptance rule; not met: final NLL 1.0000 < 0.1" in text


def test_the_mix_panel_describes_both_views():
    model = mixlab.ContextAndToken()
    scores = {view: {"acc": 0.75, "nll": 0.5, "rule": 0.9, "exceptions": 0.1}
              for view in mixlab.VIEWS}
    words = mixlab.describe_views(model, scores, "under a test mix")
    assert words.text.startswith("Trained under a test mix. pre-training view: every center "
                                 "[MASK]: accuracy 75.0%, NLL 0.500, mean p(true center) 0.90 "
                                 "at the 48 rule centers and 0.10 at the 16 exceptions")
    assert [row[0] for row in words.table.rows] == list(mixlab.VIEWS)


# --- the committed worked edition, as a reader meets it --------------------------------------

WORKED = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _is_placeholder(alt: str) -> bool:
    alt = alt.strip().lower()
    return alt in ("", "figure", "saved panel") or alt.startswith(PLACEHOLDER_STARTS)


@pytest.mark.parametrize("path", WORKED, ids=lambda p: p.stem)
def test_every_picture_in_the_worked_edition_says_what_it_shows(path):
    nb = json.loads(path.read_text())
    pictures = 0
    for index, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" not in data:
                continue
            pictures += 1
            page = "".join(data.get("text/html", ""))
            where = f"{path.name} cell {index}"
            assert '<figure class="mlm-figure">' in page, f"{where}: a bare picture"
            alt = html.unescape(re.search(r'<img [^>]*alt="([^"]*)"', page).group(1))
            assert not _is_placeholder(alt), f"{where}: alt text {alt!r}"
            caption = re.search(r"<figcaption><p>(.*?)</p>", page, re.S).group(1)
            assert len(caption) > 40, f"{where}: caption {caption!r}"
    state = nb["metadata"].get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    images = [m for m in state.values() if m.get("model_name") == "ImageModel"]
    live = [m for m in state.values() if DESCRIPTION_CLASS in str(m["state"].get("value", ""))]
    names = [re.search(r'data-figure-name="([^"]*)"', str(m["state"]["value"])).group(1)
             for m in live]
    assert not any(map(_is_placeholder, names)), f"{path.name}: {names}"
    assert len(live) >= len(images), f"{path.name}: a panel picture without a live caption"
    assert pictures or images or path.stem == "06_real_bert", f"{path.name} shows no figure"
