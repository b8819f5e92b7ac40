"""The reading edition as a static site (`make site`), read in Chromium with no network: served
from 127.0.0.1, every other request blocked. Navigation (sidebar, table of contents, previous /
next), downloads, equations, figures and the folded solutions."""

from __future__ import annotations

import functools
import io
import json
import re
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import labdriver as lab
import nbformat
import pytest
from conftest import ROOT, run_course
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from mlmcourse.build.bundles import BUNDLES, HOW_TO_RUN
from mlmcourse.build.docs_pages import read_docs
from mlmcourse.build.site import CORE_LAST, DOWNLOADS, local_mathjax
from mlmcourse.course.layout import SERIES

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """`python -m mlmcourse site` on the committed reading edition and release, written
    outside the course (the site reads only notebooks/ and release/, which the freshness test
    keeps equal to a fresh build)."""
    out = tmp_path_factory.mktemp("site") / "site"
    done = run_course(ROOT, "site", "--out", str(out), timeout=600)
    assert done.returncode == 0, f"`mlmcourse site` failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    assert "only you can read it" in done.stdout, done.stdout
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert notebooks, "the course has no reading edition (make build)"
    return out, notebooks


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no request log on the test's stderr
        pass


@pytest.fixture(scope="module")
def served(site):
    """The site over HTTP on 127.0.0.1 (a thread of this process, shut down after the module)."""
    out, _ = site
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser_page(served):
    """A Chromium page that reaches nothing but 127.0.0.1: every other request is aborted and
    recorded, as is every request that failed or answered with an error."""
    with lab.chromium_page() as page:
        blocked, failed = [], []

        def only_local(route):
            if urlsplit(route.request.url).hostname == "127.0.0.1":
                route.continue_()
            else:
                blocked.append(route.request.url)
                route.abort()

        page.context.route("**/*", only_local)
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400
                else None)
        page.blocked, page.failed = blocked, failed
        yield page


def open_page(page, served: str, name: str) -> None:
    page.blocked.clear()
    page.failed.clear()
    page.goto(served + name)
    page.wait_for_load_state("load")


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


def test_the_site_is_its_owners_alone_whatever_the_umask(site):
    """The pages and downloads hold the worked solutions: on a class hub, a site a TA builds in
    /tmp must not be readable by a student (the hub term walks the machine as one)."""
    out, _ = site
    assert out.stat().st_mode & 0o077 == 0, oct(out.stat().st_mode)


def test_index_shows_the_learning_path(site, served, browser_page):
    _, notebooks = site
    page = browser_page
    open_page(page, served, "index.html")
    lab.shoot(page, "site-1-index", full_page=True)
    lists = page.locator("ol")
    assert lists.count() == 2, "the index should list the core series, then the appendices"
    core, appendices = (lists.nth(i).locator("li") for i in (0, 1))
    expected_core = [nb.stem for nb in notebooks if int(nb.name[:2]) <= CORE_LAST]
    expected_appendices = [nb.stem for nb in notebooks if int(nb.name[:2]) > CORE_LAST]
    for items, stems in ((core, expected_core), (appendices, expected_appendices)):
        hrefs = [items.nth(i).locator("a").first.get_attribute("href")
                 for i in range(items.count())]
        assert hrefs == [f"{stem}.html" for stem in stems] or (not stems and items.count() == 1)
        for i in range(len(stems)):
            summary = items.nth(i).locator(".summary").inner_text().strip()
            written = json.loads((ROOT / "notebooks" / f"{stems[i]}.ipynb").read_text(
                encoding="utf-8"))["metadata"]["mlmcourse"]["summary"]
            assert summary == written, f"{stems[i]}: the index should show its written summary"
            downloads = items.nth(i).locator("a.download")
            assert downloads.count() == 3, (
                f"{stems[i]}: the index should offer both notebooks and the zip")
    sidebar = page.locator("nav.mlm-sidebar a[href$='.html']")
    assert sidebar.count() == len(notebooks) + 1 + len(read_docs(ROOT)), (
        "the index should have the pages' sidebar: the notebooks and the guides")
    assert page.blocked == [] and page.failed == [], (page.blocked, page.failed)


def test_the_search_ranks_hits_and_keeps_the_query_where_it_goes(site, served, browser_page):
    """"logsumexp" lists notebook 2's section on it first; snippets show equations as text;
    following a hit opens its section with the same search shown again."""
    page = browser_page
    open_page(page, served, "index.html")
    page.get_by_label("Search the course").press_sequentially("logsumexp")
    count = page.locator("#mlm-search-count")
    assert count.get_attribute("aria-live") == "polite"
    assert "sections hold logsumexp" in count.inner_text()
    hits = page.locator("#mlm-search-results a")
    hrefs = [hits.nth(i).get_attribute("href") for i in range(hits.count())]
    assert hrefs[0].startswith("02_stable_log_softmax.html?q=logsumexp#"), hrefs[:3]
    snippets = page.locator("#mlm-search-results .mlm-search-where").all_inner_texts()
    raw = [text for text in snippets if re.search(r"\\[A-Za-z]+|\$", text)]
    assert raw == [], f"snippets show raw LaTeX: {raw[:2]}"
    lab.shoot(page, "site-5-search")
    hits.first.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/02_stable_log_softmax\.html\?q=logsumexp#.+"))
    assert page.get_by_label("Search the course").input_value() == "logsumexp"
    assert page.locator("#mlm-search-results a").count() == len(hrefs), "the query was lost"
    page.get_by_label("Search the course").fill("zqxv qwzk")  # in no section
    assert count.inner_text().startswith("No section holds")
    guide = next((doc for doc in read_docs(ROOT) if "\n## " in doc.markdown), None)
    if guide is not None:  # the guides are searched too
        section = guide.markdown.split("\n## ", 1)[1].splitlines()[0].strip().strip("`")
        page.get_by_label("Search the course").fill(section)
        found = page.locator("#mlm-search-results a").evaluate_all(
            "(links) => links.map((a) => a.getAttribute('href'))")
        assert any(href.startswith(guide.html_name + "?") for href in found), (section, found)
    assert page.blocked == [] and page.failed == [], (page.blocked, page.failed)


def test_every_page_renders_its_figures_and_math_offline(site, served, browser_page):
    _, notebooks = site
    page = browser_page
    for notebook in notebooks:
        name = f"{notebook.stem}.html"
        open_page(page, served, name)
        remote = page.locator("script[src^='http'], link[href^='http']").count()
        assert remote == 0, f"{name} loads {remote} script(s) or style(s) from the web"
        expected = images_in(notebook)
        page.wait_for_function("[...document.images].every((img) => img.complete)")
        sizes = page.evaluate("[...document.images].map((img) => img.naturalWidth)")
        assert len(sizes) >= expected, (
            f"{name} shows {len(sizes)} images, the notebook has {expected} figures"
        )
        assert all(width > 0 for width in sizes), f"{name} has a broken image: {sizes}"
        if has_math(notebook):
            assert local_mathjax() is not None, (
                "the site needs django-static-mathjax (MathJax for offline equations): "
                "pip install -c requirements/constraints.txt django-static-mathjax"
            )
            page.wait_for_function(
                "window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20_000)
            page.evaluate("MathJax.startup.promise")  # resolves once the page is typeset
            typeset = page.evaluate("document.querySelectorAll('mjx-container svg').length")
            errors = page.evaluate("document.querySelectorAll('mjx-merror').length")
            assert typeset > 0, f"{name}: MathJax typeset no equation"
            assert errors == 0, f"{name}: {errors} equation(s) failed to typeset"
            raw = page.evaluate(
                "[...document.querySelectorAll('.jp-RenderedMarkdown p')]"
                ".filter((p) => /\\$[^$\\s][^$]*\\$/.test(p.textContent)).length")
            assert raw == 0, f"{name}: {raw} paragraph(s) still show $...$ as text"
        assert page.blocked == [], f"{name} tried to reach the network: {page.blocked[:3]}"
        assert page.failed == [], f"{name}: requests failed (a missing file?): {page.failed[:3]}"
        lab.shoot(page, f"site-2-{notebook.stem}")


def test_the_sidebar_links_to_every_page(site, served, browser_page):
    _, notebooks = site
    page = browser_page
    every_page = [f"{nb.stem}.html" for nb in notebooks]
    for notebook in notebooks:
        name = f"{notebook.stem}.html"
        open_page(page, served, name)
        links = page.locator("nav.mlm-sidebar ul:not(.mlm-guides) li a")
        hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
        assert hrefs == every_page, f"{name}: the sidebar lists {hrefs}"
        guides = page.locator("nav.mlm-sidebar ul.mlm-guides li a")
        assert guides.count() == len(read_docs(ROOT)), f"{name}: the sidebar misses a guide"
        current = page.locator("nav.mlm-sidebar li.mlm-current a")
        assert current.count() == 1 and current.get_attribute("href") == name
        assert page.locator("nav.mlm-sidebar .mlm-side-title a").get_attribute("href") == (
            "index.html")
    open_page(page, served, every_page[0])
    for target in every_page[1:]:  # follow the sidebar itself, page to page
        page.locator(f"nav.mlm-sidebar a[href='{target}']").click()
        page.wait_for_url(served + target)
        assert page.locator("h1").first.is_visible()
    lab.shoot(page, "site-4-sidebar")


def test_the_table_of_contents_jumps_to_each_heading(site, served, browser_page):
    _, notebooks = site
    page = browser_page
    viewport = lab.VIEWPORT["height"]
    for notebook in notebooks:
        name = f"{notebook.stem}.html"
        open_page(page, served, name)
        links = page.locator("nav.mlm-toc a")
        headings = page.locator("main h2, main h3").count()
        assert links.count() == headings, (
            f"{name}: {links.count()} contents entries for {headings} headings")
        for i in range(links.count()):
            link = links.nth(i)
            href = link.get_attribute("href")
            link.click()
            page.wait_for_function("(h) => location.hash === h", arg=href)
            top = page.evaluate(
                "(h) => document.querySelector('a.anchor-link[href=\"' + h + '\"]')"
                ".parentElement.getBoundingClientRect().top", href)
            assert -2 <= top < viewport - 40, (
                f"{name}: after clicking {link.inner_text()!r} the heading is at y={top}")
    open_page(page, served, f"{notebooks[0].stem}.html")
    page.locator("nav.mlm-toc a").nth(3).click()
    page.wait_for_timeout(200)
    lab.shoot(page, "site-5-toc-jump")


def test_download_links_serve_the_notebooks(site, served, browser_page):
    out, notebooks = site
    page = browser_page
    for notebook in notebooks:
        name = f"{notebook.stem}.html"
        open_page(page, served, name)
        links = page.locator("p.mlm-downloads a")
        hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
        expected = {
            f"{DOWNLOADS}/worked/{notebook.name}": notebook,
            f"{DOWNLOADS}/release/{notebook.name}": ROOT / "release" / SERIES / notebook.name,
        }
        bundle = f"{BUNDLES}/{notebook.stem}.zip"
        assert sorted(hrefs) == sorted([*expected, bundle]), f"{name}: download links {hrefs}"
        for href, original in expected.items():
            reply = page.request.get(served + href)
            assert reply.ok, f"{name}: {href} answered {reply.status}"
            assert reply.body() == original.read_bytes(), f"{href} is not {original.name}"
            nbformat.reads(reply.text(), as_version=4)  # a notebook JupyterLab can open
    open_page(page, served, f"{notebooks[0].stem}.html")
    with page.expect_download() as download:
        page.locator("p.mlm-downloads a").first.click()
    assert download.value.suggested_filename == notebooks[0].name


def test_show_the_solution_lines_up_with_the_text(site, served, browser_page):
    page = browser_page
    open_page(page, served, "01_corruption.html")
    summary = page.locator("details.mlm-solution > summary").first
    summary.scroll_into_view_if_needed()
    left = summary.evaluate("el => el.getBoundingClientRect().left")
    text = page.evaluate(
        "document.querySelector('.jp-MarkdownCell .jp-RenderedMarkdown p')"
        ".getBoundingClientRect().left")
    assert abs(left - text) <= 2, f"'Show the solution' starts at x={left}, the text at x={text}"
    code = page.locator("details.mlm-solution").first.locator(".jp-InputArea-editor")
    assert not code.is_visible(), "the solution should be folded at first"
    summary.click()
    assert code.is_visible(), "clicking 'Show the solution' should unfold the code"
    page.evaluate("document.querySelector('details.mlm-solution').scrollIntoView()")
    page.evaluate("window.scrollBy(0, -160)")
    lab.shoot(page, "site-6-solution-unfolded")


def test_a_question_opens_to_say_why_each_choice_is_right_or_wrong(site, served, browser_page):
    """Predict, then run: a choice is folded, and opens to say Right or Not quite, and why."""
    page = browser_page
    open_page(page, served, "03_empty_mask_and_gradient.html")
    question = page.locator(".jp-MarkdownCell", has_text="Predict, then run").first
    question.scroll_into_view_if_needed()
    choices = question.locator(".jp-RenderedMarkdown details")
    assert choices.count() == 4
    right = choices.filter(has_text="zeros, of the logits' shape").first
    assert "Right." not in right.inner_text() or not right.locator("p").first.is_visible()
    right.locator("summary").click()
    assert right.locator("p", has_text="Right.").is_visible()
    wrong = choices.first
    wrong.locator("summary").click()
    assert wrong.locator("p", has_text="Not quite.").is_visible()
    lab.shoot(page, "site-8-question-opened")


def test_saved_widget_state_becomes_a_static_panel(site, served, browser_page):
    _, notebooks = site
    with_widgets = [
        nb for nb in notebooks
        if "widgets" in json.loads(nb.read_text(encoding="utf-8"))["metadata"]
    ]
    if not with_widgets:
        pytest.skip("no notebook of the reading edition stores widget state yet")
    page = browser_page
    for notebook in with_widgets:
        open_page(page, served, f"{notebook.stem}.html")
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
        sliders = snapshot.locator("input[type=range]")
        for i in range(sliders.count()):
            slider = sliders.nth(i)
            control = slider.get_attribute("id")
            assert page.locator(f"label[for='{control}']").is_visible(), f"{control}: no label"
            assert slider.get_attribute("aria-valuetext"), f"{control}: no aria-valuetext"
        alts = images.evaluate_all("(imgs) => imgs.map((img) => img.alt.trim())")
        assert all(alt and alt.lower() not in ("figure", "saved panel") for alt in alts), alts


def test_every_page_links_to_the_previous_and_the_next(site, served, browser_page):
    _, notebooks = site
    page = browser_page
    names = ["index.html"] + [f"{nb.stem}.html" for nb in notebooks]
    for here, name in enumerate(names):
        open_page(page, served, name)
        links = page.locator("nav.mlm-nav a")
        hrefs = {links.nth(i).get_attribute("href") for i in range(links.count())}
        if here + 1 < len(names):
            assert names[here + 1] in hrefs, f"{name}: no link to the next page ({hrefs})"
        if here > 0:
            assert names[here - 1] in hrefs, f"{name}: no link to the previous page ({hrefs})"
    open_page(page, served, "index.html")
    page.locator("nav.mlm-nav a", has_text="next").first.click()
    page.wait_for_url(served + names[1])


def test_a_code_block_that_scrolls_is_reached_and_scrolled_by_keyboard(site, served,
                                                                       browser_page):
    """Tab reaches each code block wider than the column (a named region) and the arrow keys
    scroll it; a block that fits is no Tab stop."""
    page = browser_page
    page.set_viewport_size({"width": 1366, "height": 768})  # a common laptop screen
    try:
        open_page(page, served, "02_stable_log_softmax.html")
        regions = page.locator("main [role=region][tabindex='0']")
        assert regions.count() >= 1, "no long code line scrolls on notebook 2's page"
        labels = regions.evaluate_all("(els) => els.map((el) => el.getAttribute('aria-label'))")
        assert all(re.fullmatch(r"(Code|Output) of cell \d+|Equation in cell \d+", label)
                   for label in labels), labels
        stops = page.evaluate("document.querySelectorAll('main [tabindex=\"0\"]').length")
        assert stops == regions.count(), "a Tab stop in the notebook with no name"
        page.locator("nav.mlm-nav a").first.focus()
        for _ in range(300):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.getAttribute('role') === 'region'"):
                break
        else:
            pytest.fail("Tab never reached a scrolling code block")
        for _ in range(5):
            page.keyboard.press("ArrowRight")
        try:  # Chromium animates keyboard scrolling, so the offset arrives a frame or more later
            page.wait_for_function("document.activeElement.scrollLeft > 0", timeout=5000)
        except PlaywrightTimeout:
            pytest.fail("arrows do not scroll the focused code block")
        outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline != "none", "the focused code block shows no focus outline"
        lab.shoot(page, "site-9-code-focus")
        page.evaluate("document.querySelectorAll('main details').forEach((d) => { d.open = true })")
        fits = page.evaluate(
            "[...document.querySelectorAll('main .jp-InputArea-editor')]"
            ".filter((e) => Math.max(...e.innerText.split('\\n').map((l) => l.length)) <= 100)"
            ".every((e) => e.scrollWidth <= e.clientWidth + 1)")
        assert fits, "a code line of 100 characters or fewer does not fit the column at 1366px"
    finally:
        page.set_viewport_size(lab.VIEWPORT)


# ---------------------------------------------------------------------------------------------
# Every screen: a phone (390 px) and a laptop (1366 px)

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}


def site_pages(notebooks) -> list[str]:
    return (["index.html"] + [f"{nb.stem}.html" for nb in notebooks]
            + [doc.html_name for doc in read_docs(ROOT)])


def overflow(page) -> int:
    """How far the page is wider than the window (0: no sideways scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def test_no_page_scrolls_sideways_and_the_phone_folds_the_navigation(site, served,
                                                                     browser_page):
    _, notebooks = site
    page = browser_page
    try:
        for size, name in ((PHONE, "phone"), (LAPTOP, "laptop")):
            page.set_viewport_size(size)
            for target in site_pages(notebooks):
                open_page(page, served, target)
                page.evaluate("window.MathJax && MathJax.startup && MathJax.startup.promise")
                assert overflow(page) <= 0, f"{target} at {size['width']}px: {overflow(page)}px"
                menu = page.locator(".mlm-menu-button")
                sidebar = page.locator("nav.mlm-sidebar")
                if name == "phone":
                    assert menu.is_visible() and not sidebar.is_visible(), (
                        f"{target}: the navigation should fold behind Menu on a phone")
                else:
                    assert not menu.is_visible() and sidebar.is_visible(), target
            open_page(page, served, "02_stable_log_softmax.html")
            lab.shoot(page, f"site-10-{name}-notebook-2")
        page.set_viewport_size(PHONE)
        open_page(page, served, "02_stable_log_softmax.html")
        page.locator(".mlm-menu-button").click()
        assert page.locator("nav.mlm-sidebar").is_visible()
        assert page.locator(".mlm-menu-button").get_attribute("aria-expanded") == "true"
        lab.shoot(page, "site-11-phone-menu-open")
        page.keyboard.press("Escape")
        assert not page.locator("nav.mlm-sidebar").is_visible()
        wide = page.locator("main mjx-container[display=true][data-mlm-scrolls]")
        assert wide.count() >= 1, "no equation scrolls on a phone (do they shrink instead?)"
        glyphs = wide.first.evaluate("e => e.querySelector('svg').getBoundingClientRect().height")
        assert glyphs >= 14, f"a wide equation is drawn {glyphs}px high on a phone"
        figure = page.locator("main figure img").first
        figure.scroll_into_view_if_needed()
        page.locator("main .mlm-zoom").first.click()
        opened = page.locator("dialog.mlm-lightbox img")
        assert opened.evaluate("img => img.getBoundingClientRect().width") == (
            figure.evaluate("img => img.naturalWidth")), "the figure did not open full size"
        lab.shoot(page, "site-12-phone-figure-full-size")
        page.keyboard.press("Escape")
    finally:
        page.set_viewport_size(lab.VIEWPORT)


def test_the_skip_link_is_the_first_tab_stop_and_goes_to_the_content(site, served,
                                                                     browser_page):
    _, notebooks = site
    page = browser_page
    for target in ("index.html", f"{notebooks[0].stem}.html", read_docs(ROOT)[0].html_name):
        open_page(page, served, target)
        page.keyboard.press("Tab")
        first = page.evaluate("document.activeElement.textContent.trim()")
        assert first == "Skip to the content", f"{target}: the first Tab stop is {first!r}"
        if target == "index.html":
            lab.shoot(page, "site-13-skip-link")
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "mlm-content", target


def test_every_question_has_its_own_anchor_from_the_contents_and_the_search(site, served,
                                                                          browser_page):
    """Each "Predict, then run" has its own anchor and title, listed by the page's contents and
    found by the search (every hit reachable: the rest are one button away)."""
    _, notebooks = site
    page = browser_page
    every_question = []
    for notebook in notebooks:
        name = f"{notebook.stem}.html"
        open_page(page, served, name)
        ids = page.locator("main h3[id]").evaluate_all(
            "(hs) => hs.filter((h) => h.textContent.startsWith('Predict, then run'))"
            ".map((h) => [h.id, h.textContent.replace('¶', '').trim()])")
        anchors = [anchor for anchor, _ in ids]
        titles = [title for _, title in ids]
        assert len(set(anchors)) == len(anchors) and len(set(titles)) == len(titles), ids
        contents = page.locator("nav.mlm-toc a").evaluate_all(
            "(links) => links.map((a) => a.getAttribute('href'))")
        for anchor in anchors:
            assert f"#{anchor}" in contents, f"{name}: the contents do not list #{anchor}"
        every_question += [f"{name}#{anchor}" for anchor in anchors]
        if notebook == notebooks[0] and anchors:
            page.locator(f"nav.mlm-toc a[href='#{anchors[1]}']").click()
            page.wait_for_function("(h) => location.hash === h", arg=f"#{anchors[1]}")
    expected_questions = sum(
        cell["source"].startswith("### Predict, then run") if isinstance(cell["source"], str)
        else "".join(cell["source"]).startswith("### Predict, then run")
        for nb in notebooks for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"])
    assert len(every_question) == expected_questions, every_question
    open_page(page, served, "index.html")
    page.get_by_label("Search the course").fill("predict then run")
    more = page.locator("#mlm-search-more")
    if more.is_visible():
        more.click()
    hrefs = page.locator("#mlm-search-results a").evaluate_all(
        "(links) => links.map((a) => a.getAttribute('href').replace(/\\?q=[^#]*/, ''))")
    missing = [question for question in every_question if question not in hrefs]
    assert missing == [], f"the search does not reach {missing}"


def test_the_readers_view_folds_what_only_a_graded_student_needs(site, served, browser_page):
    page = browser_page
    open_page(page, served, "01_corruption.html")
    graded = page.locator("main details.mlm-graded")
    assert graded.count() >= 3, "imports, self-checks and hidden-test lists should fold"
    assert graded.evaluate_all("(ds) => ds.every((d) => !d.open)")
    points = page.locator("main .mlm-points")
    assert points.count() >= 1 and not points.first.is_visible(), "points show in reader's view"
    toggle = page.get_by_role("button", name="Show the grading")
    toggle.click()
    assert toggle.get_attribute("aria-pressed") == "true"
    assert points.first.is_visible()
    assert graded.evaluate_all("(ds) => ds.every((d) => d.open)")


def test_each_notebook_downloads_as_a_zip_with_what_it_needs(site, served, browser_page):
    """The zip runs away from the course: the notebook, the notebooks it loads, the course's
    helpers it imports, and how to run it; the page says how too."""
    _, notebooks = site
    page = browser_page
    for notebook in notebooks:
        reply = page.request.get(f"{served}{BUNDLES}/{notebook.stem}.zip")
        assert reply.ok, f"{notebook.stem}.zip answered {reply.status}"
        names = zipfile.ZipFile(io.BytesIO(reply.body())).namelist()
        assert notebook.name in names and HOW_TO_RUN in names, names
        imported = {m.replace(".", "/") for m in re.findall(
            r"from (mlmcourse[\w.]*) import", notebook.read_text(encoding="utf-8"))}
        for module in imported:
            assert f"{module}.py" in names or f"{module}/__init__.py" in names, (
                f"{notebook.stem}.zip lacks {module}")
        if "load_student_functions" in notebook.read_text(encoding="utf-8"):
            siblings = [name for name in names if re.fullmatch(r"\d\d_\w+\.ipynb", name)]
            assert len(siblings) >= 2, f"{notebook.stem}.zip lacks the notebooks it loads"
    open_page(page, served, f"{notebooks[0].stem}.html")
    page.locator("details.mlm-run-note > summary").click()
    assert "jupyter lab" in page.locator("details.mlm-run-note").inner_text()


def test_the_site_gives_the_check_command_with_the_courses_environment(site, served,
                                                                      browser_page):
    page = browser_page
    open_page(page, served, "index.html")
    text = page.locator("main").inner_text()
    assert ".venv/bin/python -m mlmcourse check" in text
    assert not re.search(r"(?<![/\w.])python -m mlmcourse check", text), text
