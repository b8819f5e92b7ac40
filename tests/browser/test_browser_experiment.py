"""The panels of notebooks 4 and 5 in JupyterLab: every slider and menu redraws the one figure,
fast enough."""

from __future__ import annotations

import json
import shutil
import statistics

import labdriver as lab
import pytest
from conftest import ROOT
from playwright.sync_api import TimeoutError as PlaywrightTimeout

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The reading edition (answers filled in): each panel notebook and where its timings go.
PANELS = {
    "notebooks/04_experiment.ipynb": ROOT / "build" / "experiment-slider-latency.json",
    "notebooks/05_why_80_10_10.ipynb": ROOT / "build" / "mix-panel-latency.json",
}
TARGET_MS = 300.0

# In the page: the time of the key press or menu choice (capture phase, before the control sees
# it) and of the first plot image that replaces the old one in the panel's cell, once decoded
# (ready to paint).
# A redraw makes a new <img> element even when the picture is the same, so both count.
WATCH = """
(cell) => {
    const state = {t0: null, t1: null, elements: new Set(), sources: new Set()};
    const images = () => [...cell.querySelectorAll('.jp-OutputArea-output img')];
    document.addEventListener('keydown', (event) => {
        if (event.key.startsWith('Arrow') && state.t0 === null) state.t0 = performance.now();
    }, {capture: true});
    document.addEventListener('change', (event) => {
        if (event.target.tagName === 'SELECT' && state.t0 === null) state.t0 = performance.now();
    }, {capture: true});
    const check = () => {
        if (state.t0 === null || state.t1 !== null) return;
        const fresh = images().find(
            (img) => !state.elements.has(img) || !state.sources.has(img.src));
        if (fresh) fresh.decode().then(() => {
            if (state.t1 === null) state.t1 = performance.now();
        }, () => {});
    };
    new MutationObserver(check).observe(cell, {subtree: true, childList: true,
                                                attributes: true, attributeFilter: ['src']});
    window.__slider = {
        arm() {
            state.t0 = null;
            state.t1 = null;
            state.elements = new Set(images());
            state.sources = new Set(images().map((img) => img.src));
        },
        done() { return state.t1 !== null; },
        elapsed() { return state.t1 - state.t0; },
        count() { return images().length; },
        // The pictures themselves: the widget's blob: URLs are new even for the same bytes.
        async signatures() {
            const digest = async (img) => {
                const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
                let hash = 2166136261;
                for (const byte of bytes) hash = Math.imul(hash ^ byte, 16777619) >>> 0;
                return `${bytes.length}:${hash}`;
            };
            return Promise.all(images().map(digest));
        },
    };
}
"""


@pytest.fixture(scope="module", params=list(PANELS))
def experiment(request, built_course, tmp_path_factory):
    """JupyterLab on a copy of the built course (the shared build stays untouched), one panel
    notebook open; yields the page and the notebook's path."""
    notebook = request.param
    if not (built_course / notebook).is_file():
        pytest.skip(f"{notebook} does not exist yet")
    course = tmp_path_factory.mktemp("experiment") / "course"
    shutil.copytree(built_course, course, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    with lab.chromium_page() as page, lab.serve_lab(course, course.parent / "lab") as url:
        lab.open_notebook(page, url, notebook)
        yield page, notebook


BACK = {"ArrowRight": "ArrowLeft", "ArrowLeft": "ArrowRight"}


def slider_key(handle) -> str:
    """Move right, or left when the slider already sits at its maximum."""
    now, top = (float(handle.get_attribute(a) or 0) for a in ("aria-valuenow", "aria-valuemax"))
    return "ArrowLeft" if now >= top else "ArrowRight"


def test_every_slider_redraws_the_one_figure(experiment, capsys):
    page, notebook = experiment
    short = notebook.split("/")[-1].split("_")[0]  # "04", "05"
    lab.run_all(page)
    errors = lab.error_outputs(page)
    assert errors.count() == 0, f"a cell of {notebook} failed:\n{errors.first.inner_text()}"
    sliders = page.locator(f"{lab.NOTEBOOK} .widget-slider")
    assert sliders.count() >= 1, f"{notebook} shows no sliders after Run All"
    cell = sliders.first.locator(
        "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' jp-Cell ')][1]"
    )
    sliders = cell.locator(".widget-slider")
    menus = cell.locator(".widget-dropdown select")
    cell.scroll_into_view_if_needed()
    cell.evaluate(WATCH)
    figures = page.evaluate("window.__slider.count()")
    assert figures >= 1, "the panel's cell shows no figure after Run All"
    all_images = page.locator(f"{lab.NOTEBOOK} .jp-OutputArea-output img").count()
    lab.shoot(page, f"panel-{short}-1-after-run-all")

    timings, names = [], []

    def redraw(name: str, act) -> None:
        """Do one change; it must draw one new picture in place of the old one."""
        before = page.evaluate("window.__slider.signatures()")
        page.evaluate("window.__slider.arm()")
        act()
        try:
            page.wait_for_function("window.__slider.done()", timeout=30_000, polling=20)
        except PlaywrightTimeout:
            pytest.fail(f"changing '{name}' drew no new plot within 30 s")
        after = page.evaluate("window.__slider.signatures()")
        if after == before:
            pytest.fail(f"changing '{name}' redrew the same picture: the plot ignores it")
        assert len(after) == figures, (
            f"changing '{name}' left {len(after)} figures in the cell (expected {figures})"
        )
        timings.append(page.evaluate("window.__slider.elapsed()"))
        names.append(name)

    for index in range(sliders.count()):
        slider = sliders.nth(index)
        name = slider.locator(".widget-label").inner_text().strip() or f"slider {index}"
        handle = slider.locator(".noUi-handle").first
        there = slider_key(handle)
        for key in (there, BACK[there]):  # there and back: two samples per slider
            readout = slider.locator(".widget-readout").inner_text()

            def press(key=key, handle=handle) -> None:
                handle.focus()
                page.keyboard.press(key)

            redraw(name, press)
            assert slider.locator(".widget-readout").inner_text() != readout, (
                f"slider '{name}' did not move"
            )
        lab.shoot(page, f"panel-{short}-2-slider-{index + 1}")
    for index in range(menus.count()):  # the mix menu: another mix, then back
        menu = menus.nth(index)
        first = menu.input_value()
        options = menu.locator("option")
        other = next(options.nth(i).get_attribute("value") for i in range(options.count())
                     if options.nth(i).get_attribute("value") != first)
        for value in (other, first):
            redraw(f"menu {index + 1}", lambda value=value, menu=menu: menu.select_option(value))
            assert menu.input_value() == value, "the menu did not take the choice"
        lab.shoot(page, f"panel-{short}-3-menu-{index + 1}")
    assert page.locator(f"{lab.NOTEBOOK} .jp-OutputArea-output img").count() == all_images, (
        "a control added a figure somewhere in the notebook"
    )
    assert lab.error_outputs(page).count() == 0, "a control change raised an error"

    median = statistics.median(timings)
    result = PANELS[notebook]
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_text(json.dumps({
        "what": f"{notebook}: control change (key press or menu choice) to the new plot image "
                "decoded, JupyterLab + Chromium",
        "median_ms": round(median, 1),
        "target_ms": TARGET_MS,
        "samples_ms": {f"{n} #{i}": round(t, 1)
                       for i, (n, t) in enumerate(zip(names, timings, strict=True))},
    }, indent=1) + "\n")
    with capsys.disabled():
        print(f"\n{notebook}: median {median:.0f} ms from control change to new image "
              f"over {len(timings)} changes (target {TARGET_MS:.0f} ms); written to "
              f"{result.relative_to(ROOT)}")
