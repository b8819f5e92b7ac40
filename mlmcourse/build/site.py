"""`make site`: the reading edition (notebooks/) as static HTML pages, readable offline.

One page per notebook (nbconvert's lab template, images embedded) and an index with the
learning path: the core series first, then the appendices. Nothing is fetched from the
internet when a page is read:

- equations are typeset by a local copy of MathJax 2 (from the `jupyter-server-mathjax`
  package), copied next to the pages;
- a live widget needs a kernel, so its saved state is drawn as a static snapshot (the sliders
  at their saved values and the saved image), with a note on how to run it for real;
- the scripts nbconvert would load from CDNs (require.js, the widget manager, mermaid) are
  left out.

The page and index templates, their CSS and the MathJax configuration are Jinja files in
mlmcourse/build/templates/ (package data).
"""

from __future__ import annotations

import html
import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jinja2 import Environment, FileSystemLoader

from mlmcourse.course.layout import find_root
from mlmcourse.course.nbio import WIDGET_STATE

SITE = Path("build") / "site"
NOTEBOOKS = "notebooks"
CORE_LAST = 4  # notebooks 01-04 are the core series; later numbers are appendices
MATHJAX_DIR = "mathjax"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SNAPSHOT_NOTE = (
    "A snapshot of the interactive panel as saved when this edition was built. The sliders "
    "need a running kernel: open <code>notebooks/{name}</code> in JupyterLab "
    "(<code>make lab</code>) and run all cells to move them."
)


@dataclass(frozen=True)
class Page:
    number: int
    stem: str
    title: str
    summary: str  # markdown: one sentence from the notebook's first paragraph

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


def notebook_summary(nb: nbformat.NotebookNode) -> str:
    """One sentence of the first paragraph (not a heading or a quote): the one saying what
    the notebook does ('In this notebook ...', 'Here ...') when there is one, else the first."""
    paragraphs = re.split(r"\n\s*\n", _first_markdown(nb))
    for paragraph in paragraphs:
        text = paragraph.strip()
        if not text or text.startswith(("#", ">", "**Points", "|", "-", "*  ")):
            continue
        sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z`*$])", " ".join(text.split()))
        for sentence in sentences:
            if re.match(r"(In this notebook|Here)\b", sentence):
                return sentence
        return sentences[0]
    return ""


def read_pages(folder: Path) -> list[tuple[Page, nbformat.NotebookNode]]:
    pages = []
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        page = Page(int(path.name[:2]), path.stem, notebook_title(nb, path.stem),
                    notebook_summary(nb))
        pages.append((page, nb))
    return pages


# ---------------------------------------------------------------------------------------------
# Saved widget state, drawn without a widget manager


def _model_ref(value: object) -> str | None:
    if isinstance(value, str) and value.startswith("IPY_MODEL_"):
        return value[len("IPY_MODEL_"):]
    return None


def _buffer(model: dict, key: str) -> str | None:
    for buffer in model.get("buffers", []):
        if buffer.get("path") == [key] and buffer.get("encoding") == "base64":
            return buffer["data"]
    value = model["state"].get(key)
    return value if isinstance(value, str) and value else None


def _slider_html(name: str, state: dict) -> str:
    low, high, step, value = (state.get(k) for k in ("min", "max", "step", "value"))
    if name == "FloatLogSliderModel":
        base = state.get("base", 10)
        position = _log(value, base)
        readout = _readout(value, state.get("readout_format", ".3g"))
    elif name == "SelectionSliderModel":
        options = state.get("_options_labels", [])
        low, high, step, position = 0, max(len(options) - 1, 0), 1, state.get("index", 0)
        readout = options[position] if options else ""
    else:
        position = value
        readout = _readout(value, state.get("readout_format", "g"))
    return (
        '<div class="mlm-slider">'
        f'<span class="mlm-slider-label">{html.escape(str(state.get("description", "")))}</span>'
        f'<input type="range" disabled min="{low}" max="{high}" step="{step}" value="{position}">'
        f'<span class="mlm-slider-readout">{html.escape(readout)}</span></div>'
    )


def _readout(value: object, spec: str) -> str:
    """The slider's own readout format (d3-style, e.g. '.2f'), as far as Python shares it."""
    if re.fullmatch(r"\.\d+g", spec):
        spec = "#" + spec  # d3's 'g' keeps trailing zeros, like JavaScript's toPrecision
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def _log(value: float, base: float) -> float:
    return math.log(value, base) if value and value > 0 else 0.0


def _output_html(output: dict) -> str:
    data = output.get("data", {})
    if "image/png" in data:
        return f'<img alt="figure" src="data:image/png;base64,{"".join(data["image/png"])}">'
    if "text/html" in data:
        return "".join(data["text/html"])
    text = "".join(data.get("text/plain", output.get("text", "")))
    return f"<pre>{html.escape(text)}</pre>" if text else ""


def widget_snapshot(state: dict, model_id: str, depth: int = 0) -> str:
    """Static HTML for one widget of a saved widget state (boxes, sliders, text, images)."""
    model = state.get(model_id)
    if model is None or depth > 20:
        return ""
    name, values = model.get("model_name", ""), model.get("state", {})
    if name in ("VBoxModel", "HBoxModel", "BoxModel", "GridBoxModel", "AccordionModel",
                "TabModel"):
        children = [_model_ref(child) for child in values.get("children", [])]
        inner = "".join(widget_snapshot(state, c, depth + 1) for c in children if c)
        kind = "mlm-hbox" if name == "HBoxModel" else "mlm-vbox"
        return f'<div class="{kind}">{inner}</div>'
    if name.endswith("SliderModel"):
        return _slider_html(name, values)
    if name in ("HTMLModel", "HTMLMathModel"):
        return f'<div class="mlm-html">{values.get("value", "")}</div>'
    if name == "LabelModel":
        return f'<div class="mlm-html">{html.escape(str(values.get("value", "")))}</div>'
    if name == "ImageModel":
        data = _buffer(model, "value")
        kind = values.get("format", "png")
        return f'<img alt="saved panel" src="data:image/{kind};base64,{data}">' if data else ""
    if name == "ButtonModel":
        return f'<button disabled>{html.escape(str(values.get("description", "")))}</button>'
    if name == "OutputModel":
        return "".join(_output_html(output) for output in values.get("outputs", []))
    return ""


def snapshot_widgets(nb: nbformat.NotebookNode, notebook_name: str) -> int:
    """Replace each widget view by a static snapshot of its saved state; drop the state."""
    saved = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    replaced = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                continue
            body = widget_snapshot(saved, view.get("model_id", ""))
            note = SNAPSHOT_NOTE.format(name=html.escape(notebook_name))
            output["data"] = {
                "text/html": f'<div class="mlm-snapshot"><p class="mlm-note">{note}</p>{body}</div>'
            }
            replaced += 1
    return replaced


# ---------------------------------------------------------------------------------------------
# Pages

# The templates and the CSS are package data (mlmcourse/build/templates/, see pyproject.toml).
TEMPLATES = Path(__file__).parent / "templates"
PAGE_TEMPLATE = "mlm_site.html.j2"  # extends nbconvert's lab template
INDEX_TEMPLATE = "mlm_index.html.j2"
MATHJAX_CDN = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/MathJax.js"


def local_mathjax() -> Path | None:
    """MathJax 2 as shipped by jupyter-server-mathjax, when that package is installed."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        return None
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    return static if (static / "MathJax.js").is_file() else None


def copy_mathjax(site: Path) -> bool:
    """Copy MathJax into the site, less its accessibility add-ons and translations."""
    static = local_mathjax()
    target = site / MATHJAX_DIR
    if target.exists():
        shutil.rmtree(target)
    if static is None:
        return False
    keep = ("MathJax.js", "LICENSE", "config", "extensions", "jax", "fonts")
    for part in keep:
        source = static / part
        if source.is_dir():
            shutil.copytree(source, target / part,
                            ignore=shutil.ignore_patterns("a11y", "mathmaps"))
        elif source.is_file():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / part)
    return True


def nav_html(pages: list[Page], index: int) -> str:
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
    return (f'<nav class="mlm-nav"><span>{left}</span>'
            f'<span class="mlm-where">{html.escape(part)}</span><span>{right}</span></nav>')


def _link_text(page: Page) -> str:
    return f"{page.number}. {_inline_markdown(page.title)}"


def _inline_markdown(text: str) -> str:
    """Markdown of one line (code spans, emphasis) as HTML without a wrapping paragraph."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    rendered = markdown2html_mistune(text).strip()
    return re.sub(r"^<p>(.*)</p>$", r"\1", rendered, flags=re.S)


def render_page(nb: nbformat.NotebookNode, page: Page, nav: str, mathjax_url: str) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[FileSystemLoader(TEMPLATES)],
        template_file=PAGE_TEMPLATE,
        embed_images=True,
    )
    resources = {
        "metadata": {"name": f"{page.number}. {page.title}"},
        "mlm_nav": nav,
        "mlm_mathjax_url": mathjax_url,
    }
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return body


# ---------------------------------------------------------------------------------------------
# The index


def index_html(pages: list[Page], title: str) -> str:
    def entry(page: Page) -> dict:
        return {
            "number": page.number,
            "href": page.html_name,
            "title": _inline_markdown(page.title),
            "summary": _inline_markdown(page.summary) if page.summary else "",
        }

    # Values arrive as HTML (markdown rendered above), so no autoescaping; the template's final
    # newline is part of the page.
    templates = Environment(loader=FileSystemLoader(TEMPLATES), keep_trailing_newline=True)
    appendices = [entry(p) for p in pages if p.appendix]
    return templates.get_template(INDEX_TEMPLATE).render(
        title=html.escape(title),
        core=[entry(p) for p in pages if not p.appendix],
        appendices=appendices,
        first_appendix=appendices[0]["number"] if appendices else CORE_LAST + 1,
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
    """Write one HTML page per notebook of notebooks/ and index.html; return what was written."""
    source = root / NOTEBOOKS
    site = out or root / SITE
    entries = read_pages(source)
    if not entries:
        raise FileNotFoundError(f"no notebooks in {source}: run `make build` first")
    site.mkdir(parents=True, exist_ok=True)
    for stale in site.glob("*.html"):
        stale.unlink()
    if copy_mathjax(site):
        mathjax_url = f"{MATHJAX_DIR}/MathJax.js"
    else:
        log("site: jupyter-server-mathjax is not installed, so equations load MathJax from the "
            "internet (pip install jupyter-server-mathjax for an offline site)")
        mathjax_url = MATHJAX_CDN
    pages = [page for page, _ in entries]
    written = []
    for index, (page, nb) in enumerate(entries):
        snapshot_widgets(nb, f"{page.stem}.ipynb")
        target = site / page.html_name
        page_html = render_page(nb, page, nav_html(pages, index), mathjax_url)
        target.write_text(page_html, encoding="utf-8")
        written.append(target)
    index_path = site / "index.html"
    index_path.write_text(index_html(pages, course_title(root)), encoding="utf-8")
    written.append(index_path)
    return written


def main(out: str | None = None) -> int:
    root = find_root()
    written = build_site(root, Path(out).resolve() if out else None)
    site = written[-1].parent
    shown = site.relative_to(root) if site.is_relative_to(root) else site
    print(f"site: {len(written) - 1} pages and index.html in {shown}/ (open index.html)")
    return 0
