"""The site's static widget snapshot draws every control of the saved panels (no browser):
each control labelled, each picture named, never a placeholder."""

import re

import nbformat
import pytest

from mlmcourse.build.snapshots import (
    WIDGET_VIEW,
    UndescribedFigure,
    output_html,
    snapshot_widgets,
    widget_snapshot,
)
from mlmcourse.course.layout import ASSIGNMENT
from mlmcourse.lab import WORK, ensure_work_copies


def test_a_saved_dropdown_shows_its_chosen_option_under_its_label():
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_mix"]}},
        "mix": {"model_name": "DropdownModel",
                "state": {"description": "mix", "index": 1,
                          "_options_labels": ["100/0/0", "80/10/10", "custom"]}},
    }
    html = widget_snapshot(state, "box")
    assert '<label class="mlm-slider-label" for="mlm-w-mix">mix</label>' in html
    assert '<select id="mlm-w-mix" disabled>' in html
    assert "<option selected>80/10/10</option>" in html
    assert html.count("<option") == 3


def test_a_saved_slider_has_a_label_and_says_its_value():
    state = {"lr": {"model_name": "FloatLogSliderModel",
                    "state": {"description": "lr", "value": 0.08, "base": 10, "min": -3,
                              "max": 0.5, "step": 0.05, "readout_format": ".3g"}}}
    html = widget_snapshot(state, "lr")
    assert '<label class="mlm-slider-label" for="mlm-w-lr">lr</label>' in html
    assert 'id="mlm-w-lr"' in html and 'aria-valuetext="0.0800"' in html


def test_a_saved_picture_is_named_by_its_caption_and_an_unnamed_one_stops_the_build():
    caption = ('<div class="mlm-figure-description" role="status" '
               'data-figure-name="Experiment dashboard"><p>Run with seed 163.</p></div>')
    state = {"box": {"model_name": "VBoxModel",
                     "state": {"children": ["IPY_MODEL_image", "IPY_MODEL_caption"]}},
             "image": {"model_name": "ImageModel", "state": {"format": "jpeg", "value": "AAAA"}},
             "caption": {"model_name": "HTMLModel", "state": {"value": caption}}}
    html = widget_snapshot(state, "box")
    assert 'alt="Experiment dashboard"' in html and "Run with seed 163." in html
    with pytest.raises(UndescribedFigure, match="widget image has no name"):
        widget_snapshot(state, "image")


def test_an_output_shows_its_figure_html_and_a_bare_picture_is_refused():
    figure = '<figure class="mlm-figure"><img alt="A line"><figcaption>…</figcaption></figure>'
    assert output_html({"data": {"text/html": figure, "image/png": "AAAA"}}, "x") == figure
    with pytest.raises(UndescribedFigure, match="cell 3: a picture with no description"):
        output_html({"data": {"image/png": "AAAA", "text/plain": "<Figure size 640x480>"}},
                    "cell 3")


def test_the_site_names_each_notebook_cell_whose_picture_has_no_description():
    import nbformat

    from mlmcourse.build.snapshots import undescribed_figures

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A"),
        nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
            "display_data", {"image/png": "AAAA", "text/plain": "<Figure>"})]),
        nbformat.v4.new_code_cell("show()", outputs=[nbformat.v4.new_output(
            "display_data", {"image/png": "AAAA", "text/html": "<figure>…</figure>"})]),
    ])
    nb.cells[1].execution_count = 4
    assert undescribed_figures(nb, "07_x.ipynb") == ["07_x.ipynb cell 1 (counting from 0; In [4])"]


def test_a_saved_hbox_stays_a_row_and_a_vbox_a_column():
    state = {"row": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_col"]}},
             "col": {"model_name": "VBoxModel", "state": {"children": []}}}
    expected = '<div class="mlm-hbox"><div class="mlm-vbox"></div></div>'
    assert widget_snapshot(state, "row") == expected


def test_the_snapshot_note_names_the_notebook_where_make_lab_serves_it(tmp_path):
    """`make lab` serves only the student kit (work/): the note above a saved panel names the
    reader's copy there, which the kit holds, not the worked edition's notebooks/."""
    release = tmp_path / "release" / ASSIGNMENT
    release.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), release / "04_experiment.ipynb")
    ensure_work_copies(tmp_path)
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
        "display_data", data={WIDGET_VIEW: {"model_id": "absent"}})]))
    assert snapshot_widgets(nb, "04_experiment.ipynb") == 1
    note = nb.cells[0].outputs[0]["data"]["text/html"]
    (named,) = re.findall(r"<code>([^<]+\.ipynb)</code>", note)
    assert (tmp_path / WORK / named).is_file(), note
