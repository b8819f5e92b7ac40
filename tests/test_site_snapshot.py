"""The reading site without a browser: the static widget snapshot (each control labelled, each
picture named, never a placeholder), the reader's view, the search's text, the guides' links and
the zips."""

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
from mlmcourse.course.layout import SERIES
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


# ---------------------------------------------------------------------------------------------
# The reading view, the search's text, the guides' links and the zips (no browser)


def _question_cell(grade_id: str, question: str):
    import nbformat

    cell = nbformat.v4.new_markdown_cell(f"### Predict, then run\n\n**Question.** {question}")
    cell.metadata["nbgrader"] = {"grade_id": grade_id}
    return cell


def test_each_repeated_question_heading_gets_its_own_anchor_and_title():
    import nbformat

    from mlmcourse.build.reading_view import name_repeated_headings

    nb = nbformat.v4.new_notebook(cells=[
        _question_cell("question_boundaries", "Draws 0.8 and 0.9. Which branch does each take?"),
        _question_cell("question_mean", "The mean lies between the two. Where?"),
        nbformat.v4.new_markdown_cell("### Part A\n\nOnce only."),
    ])
    assert name_repeated_headings(nb) == 2
    first, second = (cell.source.splitlines()[0] for cell in nb.cells[:2])
    assert first.startswith('<h3 id="question-boundaries">Predict, then run: Which branch')
    assert 'id="question-mean">Predict, then run: The mean lies between the two. Where?' in second
    assert nb.cells[2].source.startswith("### Part A"), "a heading said once keeps its markdown"


def test_the_readers_view_folds_imports_checks_and_hidden_test_lists_only():
    import nbformat

    from mlmcourse.build.editions import HIDDEN_TESTS_TITLE
    from mlmcourse.build.reading_view import fold_reason

    code = nbformat.v4.new_code_cell
    assert fold_reason(code("import torch\nfrom mlmcourse.teaching.checks import expect")) == (
        "imports")
    assert fold_reason(code("# Check: the rule holds\nexpect(ok, 'fix it')")) == "check"
    assert fold_reason(code("expect(a, 'x')\nfor s in sites:\n    expect(s, 'y')")) == "check"
    assert fold_reason(code("x = run()\nif ready:\n    expect(x, 'z')\nprint(x)")) is None
    assert fold_reason(nbformat.v4.new_markdown_cell(f"**{HIDDEN_TESTS_TITLE}** (4 points).")) == (
        "hidden_tests")
    solution = code("import torch")
    solution.metadata["jupyter"] = {"source_hidden": True}
    assert fold_reason(solution) is None, "a folded solution is folded once, as a solution"


def test_points_in_headings_are_marked_and_prose_is_left_alone():
    from mlmcourse.build.reading_view import mark_points

    marked = mark_points('<h2 id="a">Part A (9 points)</h2><p>worth (2 points)</p>')
    assert '<h2 id="a">Part A <span class="mlm-points">(9 points)</span></h2>' in marked
    assert "<p>worth (2 points)</p>" in marked
    opening = mark_points("<p><strong>Points available: 15</strong> (Part A: 9).</p>")
    assert opening.startswith('<p class="mlm-points"><strong>Points available')


def test_equations_are_searched_and_shown_as_text():
    from mlmcourse.build.search_index import plain_text

    text = plain_text(r"<p>$$\log \frac{e^{z_y}}{\sum_j e^{z_j}}$$ with $\alpha \le 1$</p>")
    assert text == "log (e^z_y)/(Σ_j e^z_j) with α ≤ 1"


def test_a_guides_links_become_site_links(tmp_path):
    from mlmcourse.build.docs_pages import read_docs, render_markdown

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ta.md").write_text(
        "# TAs\n\n## Grading\n\n## Grading\n\n## `make_mlm_inputs` · the contract\n\n"
        "See [students](students.md#first-steps), "
        "[the front page](../README.md), [notebook 2](../notebooks/02_stable.ipynb) and "
        "[nbgrader](https://nbgrader.readthedocs.io).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        encoding="utf-8")
    (tmp_path / "docs" / "students.md").write_text("# Students\n", encoding="utf-8")
    docs = read_docs(tmp_path)
    assert [doc.title for doc in docs] == ["Students", "TAs"], "name order, titles from H1"
    page = render_markdown(docs[1], {d.stem: d.html_name for d in docs}, {"02_stable"})
    assert '<h2 id="grading">' in page and '<h2 id="grading-1">' in page
    assert '<h2 id="make_mlm_inputs--the-contract">' in page, "GitHub's anchor, as GitHub makes it"
    assert 'href="students.html#first-steps"' in page and 'href="index.html"' in page
    assert 'href="02_stable.html"' in page and 'href="https://nbgrader.readthedocs.io"' in page
    assert "<table>" in page


def test_a_notebook_that_loads_its_siblings_zips_them_with_the_helpers(tmp_path):
    import zipfile

    import nbformat
    from conftest import ROOT

    from mlmcourse.build.bundles import HOW_TO_RUN, write_bundle

    worked = ROOT / "notebooks" / "04_experiment.ipynb"
    nb = nbformat.read(str(worked), as_version=4)
    assert "load_student_functions" in "".join(c.source for c in nb.cells)
    bundle, note = write_bundle(ROOT, worked, tmp_path)
    names = zipfile.ZipFile(bundle).namelist()
    assert {"04_experiment.ipynb", "01_corruption.ipynb", "03_empty_mask_and_gradient.ipynb",
            HOW_TO_RUN, "mlmcourse/__init__.py", "mlmcourse/teaching/loader.py",
            "mlmcourse/teaching/plots.py"} <= set(names), "notebook 1's own imports run too"
    assert not [name for name in names if name.startswith(("mlmcourse/grader", "source/"))]
    assert "torch==" in note and "jupyter lab 04_experiment.ipynb" in note


def test_no_link_of_the_site_or_its_guides_is_broken(tmp_path):
    """Every link between the site's pages (notebooks, guides, index, downloads) reaches a file
    of the site and, with an anchor, an element of that page."""
    import html
    import re
    from urllib.parse import unquote, urlsplit

    from conftest import ROOT

    from mlmcourse.build.site import build_site

    site = tmp_path / "site"
    build_site(ROOT, site, log=lambda *_: None)
    pages = {page.name: page.read_text(encoding="utf-8") for page in site.glob("*.html")}
    ids = {name: {html.unescape(i) for i in re.findall(r'\bid="([^"]+)"', text)}
           for name, text in pages.items()}
    broken = []
    for name, text in pages.items():
        for href in re.findall(r'<a\b[^>]*\bhref="([^"]*)"', text):
            link = urlsplit(html.unescape(href))
            if link.scheme or link.netloc:
                continue
            target = link.path or name
            if not (site / target).is_file():
                broken.append(f"{name}: {href}")
            elif link.fragment and target in ids and not (
                    {link.fragment, unquote(link.fragment)} & ids[target]):
                broken.append(f"{name}: {href} (no such anchor)")
    assert broken == [], "\n".join(broken[:20])


def test_the_snapshot_note_names_the_notebook_where_make_lab_serves_it(tmp_path):
    """`make lab` serves only the student kit (work/): the note above a saved panel names the
    reader's copy there, which the kit holds, not the worked edition's notebooks/."""
    release = tmp_path / "release" / SERIES
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


def test_search_text_reads_inline_math_that_wraps_onto_the_next_line():
    from mlmcourse.build.search_index import plain_text

    text = plain_text("write $f(z) = \\operatorname{logsumexp}(z) =\n\\log s$ with $s$.\n\n$5 and")
    assert "f(z) = logsumexp(z) = log s with s." in text, text
    assert "\\" not in text and "$5" in text, "a lone $ after a blank line stays text"
