"""`make site`: the reading edition (notebooks/) as static HTML pages, readable offline.

One page per notebook (nbconvert's lab template, images embedded) and an index with the
learning path: the core series first, then the appendices. Each page has what a d2l reader
expects: a sidebar with every notebook, a table of contents of the page, and download links for
the notebook itself (the worked edition from notebooks/, the student release, and a zip with
what it needs to run: :mod:`mlmcourse.build.bundles`). The course's guides (docs/*.md) become
pages of the same site (:mod:`mlmcourse.build.docs_pages`). Every page opens with a skip link;
on a phone the navigation folds away behind a Menu button. A notebook's page starts in the
reader's view (:mod:`mlmcourse.build.reading_view`): what only a graded student needs is folded,
and each "Predict, then run" question has its own anchor and title. Nothing is fetched from the
internet when a page is read:

- equations are typeset by a local copy of MathJax 3 (its single-file TeX-to-SVG build, from the
  pinned `django-static-mathjax` package), copied next to the pages: SVG output draws glyphs
  from paths inside that one script, so there are no font files to go missing;
- a live widget needs a kernel, so its saved state is drawn as a static snapshot
  (:mod:`mlmcourse.build.snapshots`), with a note on how to run it for real;
- every figure is the notebook's own ``<figure>`` (alt text, a caption from its data); a
  picture without a description stops the build;
- the search box in the sidebar reads a prebuilt index (:mod:`mlmcourse.build.search_index`);
- the scripts nbconvert would load from CDNs (require.js, the widget manager, mermaid) are
  left out.

The page and index templates, the sidebar, their CSS and scripts (search, keyboard-scrollable
code) and the MathJax configuration are files in mlmcourse/build/templates/ (package data).
"""

from __future__ import annotations

import html
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jinja2 import Environment, FileSystemLoader

from mlmcourse.build.bundles import BUNDLES, write_bundle
from mlmcourse.build.docs_pages import DocPage, copy_doc_files, read_docs, render_markdown
from mlmcourse.build.reading_view import (
    FOLD_SUMMARIES,
    mark_graded_parts,
    mark_points,
    name_repeated_headings,
)
from mlmcourse.build.search_index import plain_text, write_search_index
from mlmcourse.build.snapshots import UndescribedFigure, snapshot_widgets, undescribed_figures
from mlmcourse.course.layout import SERIES, find_root, private_folder
from mlmcourse.course.nbio import COURSE_METADATA

SITE = Path("build") / "site"
NOTEBOOKS = "notebooks"
CORE_LAST = 4  # notebooks 01-04 are the core series; later numbers are appendices
MATHJAX_DIR = "mathjax"
MATHJAX_SCRIPT = "tex-svg-full.js"  # MathJax 3: TeX input, SVG output, every TeX extension
DOWNLOADS = "downloads"  # downloads/worked/NN.ipynb and downloads/release/NN.ipynb
TOC_MARK = "<!--mlm-toc-->"  # where the page's table of contents goes once it is rendered
DOC_TEMPLATE = "mlm_doc.html.j2"
# The self-check as a reader must type it: with the course's environment (make lab makes it),
# where a bare `python` lacks the course's libraries.
CHECK_COMMAND = ".venv/bin/python -m mlmcourse check"
_BARE_CHECK = re.compile(r"(?<![/\w.])python -m mlmcourse check")
# nbconvert makes every cell and output a Tab stop with no name; the page's script
# (templates/mlm_scroll.js) makes a named region of each one that actually scrolls instead.
_UNNAMED_TAB_STOP = re.compile(
    r'(<div class="[^"]*\b(?:jp-Cell-inputWrapper|jp-OutputArea-output)\b[^"]*"[^>]*?)'
    r' tabindex="0"')


@dataclass(frozen=True)
class Page:
    number: int
    stem: str
    title: str
    summary: str  # markdown: one sentence for a reader, from the notebook's metadata

    @property
    def html_name(self) -> str:
        return f"{self.stem}.html"

    @property
    def appendix(self) -> bool:
        return self.number > CORE_LAST


# ---------------------------------------------------------------------------------------------
# What the index says about each notebook


def _first_markdown(nb: nbformat.NotebookNode) -> str:
    return next((c.source for c in nb.cells if c.cell_type == "markdown"), "")


def notebook_title(nb: nbformat.NotebookNode, fallback: str) -> str:
    """The first heading, without a leading 'Notebook N ·' (the index numbers the list)."""
    for line in _first_markdown(nb).splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip()
            return re.sub(r"^Notebook\s+\d+\s*[·:.-]\s*", "", title) or fallback
    return fallback


def notebook_summary(nb: nbformat.NotebookNode, name: str) -> str:
    """The sentence the course wrote for a reader: what the notebook teaches."""
    summary = nb.metadata.get(COURSE_METADATA, {}).get("summary", "").strip()
    if not summary:
        raise ValueError(f"{name} has no summary for the index: add one sentence saying what "
                         f'it teaches to its source\'s metadata, "{COURSE_METADATA}": '
                         '{"summary": ...}, and run make build')
    return summary


def read_pages(folder: Path) -> list[tuple[Page, nbformat.NotebookNode]]:
    pages = []
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        page = Page(int(path.name[:2]), path.stem, notebook_title(nb, path.stem),
                    notebook_summary(nb, path.name))
        pages.append((page, nb))
    return pages


# ---------------------------------------------------------------------------------------------
# Pages

# The templates and the CSS are package data (mlmcourse/build/templates/, see pyproject.toml).
TEMPLATES = Path(__file__).parent / "templates"
PAGE_TEMPLATE = "mlm_site.html.j2"  # extends nbconvert's lab template
INDEX_TEMPLATE = "mlm_index.html.j2"
MATHJAX_CDN = "https://cdn.jsdelivr.net/npm/mathjax@3.2.2/es5/tex-svg-full.js"


def local_mathjax() -> Path | None:
    """MathJax 3 as shipped by django-static-mathjax (the `mathjax` module), when installed."""
    try:
        import mathjax
    except ImportError:
        return None
    static = Path(mathjax.__file__).parent / "static" / "mathjax"
    return static if (static / "es5" / MATHJAX_SCRIPT).is_file() else None


def copy_mathjax(site: Path) -> bool:
    """Copy MathJax's one script (and its licence) into the site."""
    static = local_mathjax()
    target = site / MATHJAX_DIR
    if target.exists():
        shutil.rmtree(target)
    if static is None:
        return False
    target.mkdir(parents=True)
    shutil.copy2(static / "es5" / MATHJAX_SCRIPT, target / MATHJAX_SCRIPT)
    shutil.copy2(static / "LICENSE", target / "LICENSE")
    return True


# ---------------------------------------------------------------------------------------------
# Navigation: the sidebar, the page's table of contents, the download links


def sidebar_entries(pages: list[Page], current: int) -> list[dict]:
    """Every notebook for the sidebar, in order, the current one marked."""
    return [{"href": page.html_name, "label": _link_text(page), "current": index == current,
             "appendix": page.appendix} for index, page in enumerate(pages)]


def docs_entries(docs: list[DocPage], current: str = "") -> list[dict]:
    """Every guide for the sidebar, in the order of docs_pages.read_docs."""
    return [{"href": doc.html_name, "label": html.escape(doc.title),
             "current": doc.html_name == current} for doc in docs]


def copy_downloads(root: Path, site: Path, pages: list[Page]) -> dict[str, list[dict]]:
    """Copy each notebook's worked edition and student release into the site; return the
    links of each page (stem -> [{href, label}]), only for files that exist."""
    target = site / DOWNLOADS
    if target.exists():
        shutil.rmtree(target)
    sources = (("worked", root / NOTEBOOKS, "the worked notebook"),
               ("release", root / "release" / SERIES, "the student release"))
    links: dict[str, list[dict]] = {page.stem: [] for page in pages}
    for kind, folder, label in sources:
        for page in pages:
            notebook = folder / f"{page.stem}.ipynb"
            if notebook.is_file():
                (target / kind).mkdir(parents=True, exist_ok=True)
                shutil.copy2(notebook, target / kind / notebook.name)
                links[page.stem].append({"href": f"{DOWNLOADS}/{kind}/{notebook.name}",
                                         "label": f"Download {label} {page.number} "
                                                  "(.ipynb)"})
    return links


def write_bundles(root: Path, site: Path, pages: list[Page],
                  links: dict[str, list[dict]]) -> dict[str, str]:
    """A zip per notebook (what it needs to run), added to its links; returns each page's line
    that says how to run it."""
    notes = {}
    for page in pages:
        worked = root / NOTEBOOKS / f"{page.stem}.ipynb"
        bundle, note = write_bundle(root, worked, site / BUNDLES)
        links[page.stem].append({"href": bundle.relative_to(site).as_posix(),
                                 "label": f"Download notebook {page.number} with what it needs "
                                          "(.zip)"})
        notes[page.stem] = ("The zip holds the notebook, the notebooks it loads and the course's "
                            f"helpers it imports. <code>{html.escape(note)}</code>")
    return notes


_HEADING = re.compile(
    r'<h([23]) id="([^"]+)">(.*?)<a class="anchor-link" href="(#[^"]+)">', re.S)


def toc_html(body: str) -> str:
    """The page's table of contents, from the h2 and h3 headings nbconvert rendered (their own
    anchors, so a TOC link goes where the heading's pilcrow goes)."""
    items = [
        f'<li class="mlm-toc-h{level}"><a href="{html.escape(href)}">{text.strip()}</a></li>'
        for level, _, text, href in _HEADING.findall(body)
    ]
    if not items:
        return ""
    return ('<nav class="mlm-toc" aria-label="On this page"><p class="mlm-side-title">'
            f'On this page</p><ul>{"".join(items)}</ul></nav>')


def nav_html(pages: list[Page], index: int, label: str = "Previous and next") -> str:
    page = pages[index]
    previous = pages[index - 1] if index > 0 else None
    following = pages[index + 1] if index + 1 < len(pages) else None
    part = "Appendix" if page.appendix else f"Core series, {page.number} of {CORE_LAST}"
    left = '<a href="index.html">&larr; All notebooks</a>'
    if previous:
        left += f' &middot; <a href="{previous.html_name}">previous: {_link_text(previous)}</a>'
    right = ""
    if following:
        right = f'<a href="{following.html_name}">next: {_link_text(following)} &rarr;</a>'
    return (f'<nav class="mlm-nav" aria-label="{label}"><span>{left}</span>'
            f'<span class="mlm-where">{html.escape(part)}</span><span>{right}</span></nav>')


def _link_text(page: Page) -> str:
    return f"{page.number}. {_inline_markdown(page.title)}"


def _inline_markdown(text: str) -> str:
    """Markdown of one line (code spans, emphasis) as HTML without a wrapping paragraph."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    rendered = markdown2html_mistune(text).strip()
    return re.sub(r"^<p>(.*)</p>$", r"\1", rendered, flags=re.S)


def render_page(nb: nbformat.NotebookNode, page: Page, context: dict) -> str:
    """One page: nbconvert's lab template with ours on top (context: nav, sidebar, downloads,
    mathjax_url, course title, each passed to the template as resources.mlm_<name>)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[FileSystemLoader(TEMPLATES)],
        template_file=PAGE_TEMPLATE,
        embed_images=True,
    )
    nb = nbformat.from_dict(nb)  # a copy: the reader's view changes cells
    name_repeated_headings(nb)
    folded = mark_graded_parts(nb)
    resources = {"metadata": {"name": f"{page.number}. {page.title}"}}
    resources.update({f"mlm_{key}": value for key, value in context.items()})
    resources.update(mlm_folded=folded, mlm_fold_summaries=FOLD_SUMMARIES)
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    body = mark_points(_UNNAMED_TAB_STOP.sub(r"\1", body))
    return _with_check_command(body.replace(TOC_MARK, toc_html(body), 1))


def _with_check_command(page_html: str) -> str:
    return _BARE_CHECK.sub(CHECK_COMMAND, page_html)


def _templates() -> Environment:
    # Values arrive as HTML (markdown rendered by the caller), so no autoescaping; the template's
    # final newline is part of the page.
    return Environment(loader=FileSystemLoader(TEMPLATES), keep_trailing_newline=True)


def render_doc(doc: DocPage, body: str, chrome: dict) -> str:
    """A guide's page: its HTML in the site's chrome, with its contents list."""
    page = _templates().get_template(DOC_TEMPLATE).render(title=doc.title, body=body, **chrome)
    return _with_check_command(page.replace(TOC_MARK, toc_html(body), 1))


# ---------------------------------------------------------------------------------------------
# The index


def index_html(pages: list[Page], title: str,
               downloads: dict[str, list[dict]] | None = None,
               docs: list[DocPage] | None = None) -> str:
    """The learning path, with the sidebar of every page (no notebook marked current)."""
    def entry(page: Page) -> dict:
        return {
            "number": page.number,
            "href": page.html_name,
            "title": _inline_markdown(page.title),
            "summary": _inline_markdown(page.summary) if page.summary else "",
            "downloads": (downloads or {}).get(page.stem, []),
        }

    appendices = [entry(p) for p in pages if p.appendix]
    guides = docs_entries(docs or [])
    return _templates().get_template(INDEX_TEMPLATE).render(
        guides=guides, docs_sidebar=guides, check_command=CHECK_COMMAND,
        title=html.escape(title),
        core=[entry(p) for p in pages if not p.appendix],
        appendices=appendices,
        first_appendix=appendices[0]["number"] if appendices else CORE_LAST + 1,
        sidebar=sidebar_entries(pages, current=-1), course_title=title,
        first={"href": pages[0].html_name, "label": _link_text(pages[0])} if pages else None,
    )


def course_title(root: Path) -> str:
    readme = root / "README.md"
    if readme.is_file():
        for line in readme.read_text(encoding="utf-8").splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return "BERT's masked-LM objective"


# ---------------------------------------------------------------------------------------------


def build_site(root: Path, out: Path | None = None, log=print) -> list[Path]:
    """Write one HTML page per notebook of notebooks/ and per guide of docs/, and index.html;
    return what was written (index.html last)."""
    source = root / NOTEBOOKS
    site = out or root / SITE
    entries = read_pages(source)
    if not entries:
        raise FileNotFoundError(f"no notebooks in {source}: run `make build` first")
    private_folder(site)  # its pages and downloads hold the worked solutions; publishing is a chmod
    for stale in site.glob("*.html"):
        stale.unlink()
    if copy_mathjax(site):
        mathjax_url = f"{MATHJAX_DIR}/{MATHJAX_SCRIPT}"
    else:
        log("site: django-static-mathjax is not installed, so equations load MathJax from the "
            "internet (pip install django-static-mathjax for an offline site)")
        mathjax_url = MATHJAX_CDN
    bare = [where for page, nb in entries for where in undescribed_figures(nb, page.html_name)]
    if bare:
        raise UndescribedFigure("pictures with no description: " + ", ".join(bare) + " (show "
                                "them with mlmcourse.teaching.describe.show_figure)")
    pages = [page for page, _ in entries]
    downloads = copy_downloads(root, site, pages)
    run_notes = write_bundles(root, site, pages, downloads)
    docs = read_docs(root)
    _refuse_name_clashes(pages, docs)
    title = course_title(root)
    written, searchable = [], []
    for index, (page, nb) in enumerate(entries):
        snapshot_widgets(nb, f"{page.stem}.ipynb")
        target = site / page.html_name
        context = {"nav": nav_html(pages, index),
                   "nav_end": nav_html(pages, index, "Previous and next, end of page"),
                   "sidebar": sidebar_entries(pages, index), "docs_sidebar": docs_entries(docs),
                   "downloads": downloads[page.stem], "run_note": run_notes[page.stem],
                   "mathjax_url": mathjax_url, "course_title": title}
        rendered = render_page(nb, page, context)
        target.write_text(rendered, encoding="utf-8")
        searchable.append((page.html_name, plain_text(_link_text(page)), rendered))
        written.append(target)
    written += write_docs(root, site, docs, pages, title, searchable)
    write_search_index(site, searchable)
    index_path = site / "index.html"
    index_path.write_text(index_html(pages, title, downloads, docs), encoding="utf-8")
    written.append(index_path)
    return written


def _refuse_name_clashes(pages: list[Page], docs: list[DocPage]) -> None:
    names = [page.html_name for page in pages] + [doc.html_name for doc in docs] + ["index.html"]
    clashes = sorted({name for name in names if names.count(name) > 1})
    if clashes:
        raise ValueError(f"two pages of the site would be {', '.join(clashes)}: rename the "
                         "guide in docs/")


def write_docs(root: Path, site: Path, docs: list[DocPage], pages: list[Page], title: str,
               searchable: list[tuple[str, str, str]]) -> list[Path]:
    """Each guide of docs/ as a page (and its pictures beside it); adds them to `searchable`."""
    links = {doc.stem: doc.html_name for doc in docs}
    notebooks = {page.stem for page in pages}
    written = []
    for doc in docs:
        chrome = {"sidebar": sidebar_entries(pages, -1),
                  "docs_sidebar": docs_entries(docs, doc.html_name), "course_title": title}
        page_html = render_doc(doc, render_markdown(doc, links, notebooks), chrome)
        target = site / doc.html_name
        target.write_text(page_html, encoding="utf-8")
        searchable.append((doc.html_name, doc.title, page_html))
        written.append(target)
    taken = {p.html_name for p in pages} | {d.html_name for d in docs} | {"index.html"}
    copy_doc_files(root, site, taken)
    return written


def main(out: str | None = None) -> int:
    root = find_root()
    written = build_site(root, Path(out).resolve() if out else None)
    site = written[-1].parent
    shown = site.relative_to(root) if site.is_relative_to(root) else site
    print(f"site: {len(written) - 1} pages and index.html in {shown}/ (open index.html); it "
          f"holds the solutions, so only you can read it (`chmod -R a+rX {shown}` to publish)")
    return 0
