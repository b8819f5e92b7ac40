"""The reading edition as a static site (`make site`): read offline in Chromium, figures drawn."""

from __future__ import annotations

import json

import labdriver as lab
import pytest
from conftest import run_course

from mlmcourse.build.site import CORE_LAST, local_mathjax

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def site(built_course, tmp_path_factory):
    """`python -m mlmcourse site` on the built course, written outside it."""
    out = tmp_path_factory.mktemp("site") / "site"
    done = run_course(built_course, "site", "--out", str(out), timeout=600)
    assert done.returncode == 0, f"`mlmcourse site` failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    notebooks = sorted((built_course / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert notebooks, "the built course has no reading edition"
    return out, notebooks


@pytest.fixture(scope="module")
def offline_page():
    """A Chromium page that cannot reach any web server: the site must not need one."""
    with lab.chromium_page() as page:
        page.context.route("http*://**", lambda route: route.abort())
        yield page


def images_in(notebook) -> int:
    """Figures a page must show: PNG outputs, plus images kept in saved widget state."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    count = sum(
        1 for cell in nb["cells"] for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    )
    state = nb["metadata"].get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return count + sum(1 for model in state.values() if model.get("model_name") == "ImageModel")


def has_math(notebook) -> bool:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    return any("$" in "".join(cell["source"]) for cell in nb["cells"]
               if cell["cell_type"] == "markdown")


def test_index_shows_the_learning_path(site, offline_page):
    out, notebooks = site
    page = offline_page
    page.goto((out / "index.html").as_uri())
    lab.shoot(page, "site-1-index", full_page=True)
    lists = page.locator("ol")
    assert lists.count() == 2, "the index should list the core series, then the appendices"
    core, appendices = (lists.nth(i).locator("li") for i in (0, 1))
    expected_core = [nb.stem for nb in notebooks if int(nb.name[:2]) <= CORE_LAST]
    expected_appendices = [nb.stem for nb in notebooks if int(nb.name[:2]) > CORE_LAST]
    for items, stems in ((core, expected_core), (appendices, expected_appendices)):
        hrefs = [items.nth(i).locator("a").get_attribute("href") for i in range(items.count())]
        assert hrefs == [f"{stem}.html" for stem in stems] or (not stems and items.count() == 1)
        for i in range(len(stems)):
            summary = items.nth(i).locator(".summary").inner_text().strip()
            assert len(summary) > 20, f"{stems[i]} has no one-line summary on the index"


def test_every_page_renders_its_figures_offline(site, offline_page):
    out, notebooks = site
    page = offline_page
    for notebook in notebooks:
        html_page = out / f"{notebook.stem}.html"
        assert html_page.is_file(), f"`make site` wrote no page for {notebook.name}"
        page.goto(html_page.as_uri())
        page.wait_for_load_state("load")
        remote = page.locator("script[src^='http'], link[href^='http']").count()
        assert remote == 0, f"{html_page.name} loads {remote} script(s) or style(s) from the web"
        expected = images_in(notebook)
        page.wait_for_function("[...document.images].every((img) => img.complete)")
        sizes = page.evaluate("[...document.images].map((img) => img.naturalWidth)")
        assert len(sizes) >= expected, (
            f"{html_page.name} shows {len(sizes)} images, the notebook has {expected} figures"
        )
        assert all(width > 0 for width in sizes), f"{html_page.name} has a broken image: {sizes}"
        if has_math(notebook):
            assert local_mathjax() is not None, (
                "the site needs jupyter-server-mathjax (MathJax for offline equations): "
                "pip install jupyter-server-mathjax"
            )
            page.wait_for_function(
                "document.querySelectorAll('.MathJax, .MathJax_Display').length > 0",
                timeout=20_000,
            )
        lab.shoot(page, f"site-2-{notebook.stem}")


def test_saved_widget_state_becomes_a_static_panel(site, offline_page):
    out, notebooks = site
    with_widgets = [
        nb for nb in notebooks
        if "widgets" in json.loads(nb.read_text(encoding="utf-8"))["metadata"]
    ]
    if not with_widgets:
        pytest.skip("no notebook of the reading edition stores widget state yet")
    page = offline_page
    for notebook in with_widgets:
        page.goto((out / f"{notebook.stem}.html").as_uri())
        snapshot = page.locator(".mlm-snapshot").first
        snapshot.scroll_into_view_if_needed()
        assert snapshot.locator("input[type=range]").count() >= 1, "the saved sliders are missing"
        images = snapshot.locator("img")
        assert images.count() >= 1 and images.first.evaluate("img => img.naturalWidth") > 0, (
            "the saved panel image is missing"
        )
        assert "JupyterLab" in snapshot.inner_text(), "the snapshot does not say how to run it"
        page.evaluate("document.querySelector('.mlm-snapshot').scrollIntoView({block: 'start'})")
        lab.shoot(page, f"site-3-{notebook.stem}-widget-snapshot")
