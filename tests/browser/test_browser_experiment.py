"""The panels of notebooks 4 and 5 in JupyterLab: every slider and menu redraws the one figure,
fast enough; and a keyboard alone reaches, opens and moves them (Tab, Enter/Space, arrows), each
change said to a screen reader."""

from __future__ import annotations

import json
import math
import re
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


# The keyboard walk: each control of the panel and each choice of the question before it is
# tagged (data-walk) so that document.activeElement says which one Tab reached.
TAG_TARGETS = """
([panel, question]) => {
    const handles = [...panel.querySelectorAll('.widget-slider .noUi-handle')];
    const menus = [...panel.querySelectorAll('.widget-dropdown select')];
    const choices = [...question.querySelectorAll('.jp-RenderedMarkdown details > summary')];
    handles.forEach((el, i) => { el.dataset.walk = `slider ${i}`; });
    menus.forEach((el, i) => { el.dataset.walk = `menu ${i}`; });
    choices.forEach((el, i) => { el.dataset.walk = `choice ${i}`; el.parentElement.open = false; });
    return [handles.length, menus.length, choices.length];
}
"""
ACTIVE = """() => {
    const el = document.activeElement;
    if (!el || el === document.body) return 'body';
    const classes = String(el.className).split(' ');
    const cells = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')];
    const cell = cells.indexOf(el.closest('.jp-Cell'));
    const where = cell >= 0 ? ` (cell ${cell})` : '';
    const name = classes.find((c) => c.startsWith('jp-')) || classes[0];
    return el.dataset.walk || `${el.tagName.toLowerCase()}.${name}${where}`;
}"""
LIVE = ".jp-OutputArea-output [role=status]"
TABS = 80  # Tab presses at most from the question to past the panel


def accessible_name(locator) -> str:
    """What a screen reader calls the control: Chromium's own accessibility tree."""
    snapshot = locator.aria_snapshot()  # '- slider "seed": 163' or '- slider'
    match = re.search(r'"((?:[^"\\]|\\.)*)"', snapshot.splitlines()[0] if snapshot else "")
    return match.group(1) if match else ""


def test_the_panel_and_a_question_by_keyboard_alone(experiment):
    """From the question before the panel (its cell selected), Tab alone reaches each choice,
    which Enter or Space opens, then every slider and menu of the panel; an arrow key moves each
    one, which keeps the focus, says its new value in its accessible value, and the panel's live
    caption (the same role=status element) says what changed. Every problem is listed at once."""
    page, notebook = experiment
    short = notebook.split("/")[-1].split("_")[0]
    if page.locator(f"{lab.NOTEBOOK} .widget-slider").count() == 0:
        lab.run_all(page)  # run alone: the panel is not there yet
    panel = page.locator(f"{lab.NOTEBOOK} .widget-slider").first.locator(
        "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' jp-Cell ')][1]")
    questions = panel.locator("xpath=preceding-sibling::div[contains(@class, 'jp-MarkdownCell')]"
                              "[.//details]")
    if questions.count() == 0:
        pytest.skip(f"{notebook} asks no question before its panel")
    question = questions.last
    sliders, menus, choices = page.evaluate(
        TAG_TARGETS, [panel.element_handle(), question.element_handle()])
    assert sliders >= 1 and choices >= 2, (sliders, choices)
    assert panel.locator(LIVE).count() == 1, (
        "the panel has no live caption (role=status) to say what a change did")
    controls = [f"slider {i}" for i in range(sliders)] + [f"menu {i}" for i in range(menus)]

    question.locator(".jp-RenderedMarkdown p").first.click()  # the cell selected, command mode
    reached, opened, moved, path, problems = set(), [], [], [], []
    for _ in range(TABS):
        page.keyboard.press("Tab")
        target = page.evaluate(ACTIVE)
        path.append(target)
        if target in reached:
            continue
        reached.add(target)
        control = page.locator(f"[data-walk='{target}']")
        kind = target.split()[0]
        if kind == "choice" and len(opened) < 2:
            key = ("Enter", "Space")[len(opened)]
            page.keyboard.press(key)
            opened.append(key)
            if not control.evaluate("summary => summary.parentElement.open"):
                problems.append(f"{key} on choice '{control.inner_text()}' did not open it")
            if len(opened) == 1:
                lab.shoot(page, f"panel-{short}-keyboard-1-question-opened")
        elif kind in ("slider", "menu"):
            problems += move_by_keyboard(page, panel, control, target, moved)
            if len(moved) == 1:  # the panel in view: the moved slider keeps the focus
                control.evaluate("(el) => el.scrollIntoView({block: 'center'})")
                lab.shoot(page, f"panel-{short}-keyboard-2-slider-focused")
        if all(c in reached for c in controls):
            break
    missing = [c for c in controls + [f"choice {i}" for i in range(choices)] if c not in reached]
    if missing:
        problems.append(f"Tab never reached {missing}; it went: " + " > ".join(path))
    if opened != ["Enter", "Space"]:
        problems.append(f"only {opened} reached a choice to open")
    problems = list(dict.fromkeys(problems))  # one line for what every control does alike
    known = [p for p in problems if any(mark in p for mark in UPSTREAM)]
    record = ROOT / "build" / "accessibility" / f"keyboard-walk-{short}.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"known_upstream": known, "moved": moved}, indent=1) + "\n")
    problems = [p for p in problems if p not in known]
    assert not problems, (f"{notebook} by keyboard, {len(problems)} problem(s):\n  - "
                          + "\n  - ".join(problems) + "\nmoved: " + "; ".join(moved))


# What the walk finds in ipywidgets 8.1 and JupyterLab 4 themselves, not in the course's panels
# (README, "Accessibility": known not to conform). They are written down, not failed on; any
# other problem fails the walk.
UPSTREAM = (
    "has no accessible name",  # an ipywidgets slider handle is not tied to its visible label
    "but a screen reader says",  # a log slider's aria-valuetext is its exponent
    "replaces the live caption",  # an ipywidgets HTML widget re-creates its content on change
    # JupyterLab's command mode takes ArrowUp/Down from a <select> in an output (it moves to
    # the next cell); Home, End and Page keys, and Alt+Down to open the list, still work.
    "(menu 0) changed neither",
)


def move_by_keyboard(page, panel, control, target: str, moved: list[str]) -> list[str]:
    """One arrow key on a focused slider or menu; the problems it shows (none when it worked).
    Where the focus left the control, it is put back so that the walk goes on from there."""
    kind = target.split()[0]
    problems = []
    name = accessible_name(control)
    if not name:
        problems.append(f"{target} ('{label_of(control)}') has no accessible name: a screen "
                        f"reader says only {control.aria_snapshot().splitlines()[0]!r}")
    name = name or label_of(control)
    before = [control_value(control, kind), caption(panel)]
    region = panel.locator(LIVE).element_handle()
    press = slider_key(control) if kind == "slider" else menu_key(control)
    page.keyboard.press(press)
    try:
        page.wait_for_function(
            f"([el, panel, before]) => ({VALUE_JS}) !== before[0] && ({CAPTION_JS}) !== before[1]",
            arg=[control.element_handle(), panel.element_handle(), before],
            timeout=10_000, polling=50)
    except PlaywrightTimeout:
        problems.append(f"{press} on '{name}' ({target}) changed neither its value "
                        f"({before[0]!r}) nor the live caption; the focus went to "
                        f"{page.evaluate(ACTIVE)}")
    else:
        said = control_value(control, kind)
        moved.append(f"{name}: {before[0]} -> {said}")
        shown = readout_of(control) if kind == "slider" else said
        if not same_number(said, shown):
            problems.append(f"'{name}' shows {shown!r} but a screen reader says {said!r} "
                            "(aria-valuetext)")
        if not region.evaluate("(el) => el.isConnected"):
            problems.append(
                "a change replaces the live caption by a new element: a screen reader announces "
                "a change inside a live region it already knows, not a region put in place of "
                "the old one (keep the role=status element, change its text)")
    if page.evaluate(ACTIVE) != target:
        if not any(press in p for p in problems):
            problems.append(f"{press} on '{name}' moved the focus to {page.evaluate(ACTIVE)}")
        control.focus()
    return problems

# A slider's accessible value (what a screen reader says it is), or a menu's chosen option.
VALUE_JS = ("el.tagName === 'SELECT' ? el.value : "
            "(el.getAttribute('aria-valuetext') || el.getAttribute('aria-valuenow'))")


CAPTION_JS = f"(panel.querySelector('{LIVE}')?.textContent || '').trim()"


def caption(panel) -> str:
    return panel.evaluate(f"(panel) => {CAPTION_JS}")


def label_of(control) -> str:
    """The label a sighted user sees beside the control (ipywidgets' .widget-label)."""
    return control.evaluate("(el) => el.closest('.widget-inline-hbox')"
                            "?.querySelector('.widget-label')?.textContent || ''")


def readout_of(slider) -> str:
    return slider.evaluate("(el) => el.closest('.widget-slider')"
                           "?.querySelector('.widget-readout')?.textContent.trim() || ''")


def same_number(said: str, shown: str) -> bool:
    try:
        return math.isclose(float(said), float(shown), rel_tol=1e-3, abs_tol=1e-9)
    except ValueError:
        return said.strip() == shown.strip()


def control_value(control, kind: str) -> str:
    return control.evaluate(f"(el) => {VALUE_JS}")


def menu_key(menu) -> str:
    """Down to the next choice, or up from the last one."""
    last = menu.evaluate("(el) => el.selectedIndex === el.options.length - 1")
    return "ArrowUp" if last else "ArrowDown"
