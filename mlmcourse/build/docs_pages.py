"""The course's guides (docs/*.md) as pages of the reading site, beside the notebooks.

Every ``docs/*.md`` becomes ``<name>.html`` with the same sidebar, search and page chrome as the
notebooks (``docs/index.md`` or ``docs/README.md``, if there is one, becomes ``guides.html`` and
comes first; the others follow in name order). The list comes from the folder, never by hand.
Markdown is CommonMark with tables (mistune, which nbconvert already uses); each heading gets
GitHub's anchor (``## Grading`` -> ``#grading``), so a link written for GitHub,
``ta.md#grading``, works on the site as ``ta.html#grading``. A link to ``../README.md`` goes to
the site's index; a link to a notebook of ``notebooks/`` or ``source/`` goes to its page; a
link to another file of the course (``../CHANGELOG.md``) names the file instead, since the site
does not hold it.
Pictures and other files beside the guides are copied next to the pages.
"""

from __future__ import annotations

import html
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

DOCS = "docs"
FRONT_PAGES = ("index", "README")  # docs/index.md or docs/README.md: the guides' own front page
FRONT_HTML = "guides.html"
_TAG = re.compile(r"<[^>]+>")
_NOTEBOOK = re.compile(r"(?:^|/)(\d\d_\w+)\.ipynb$")


@dataclass(frozen=True)
class DocPage:
    stem: str
    title: str
    markdown: str

    @property
    def html_name(self) -> str:
        return FRONT_HTML if self.stem in FRONT_PAGES else f"{self.stem}.html"


def github_anchor(heading_text: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen
    (underscores and runs of hyphens kept, as GitHub keeps them)."""
    return re.sub(r"[^\w\- ]", "", heading_text.strip().lower()).replace(" ", "-")


def read_docs(root: Path) -> list[DocPage]:
    """Every docs/*.md, the front page first, then by name; its title is its first H1."""
    folder = root / DOCS
    paths = sorted(folder.glob("*.md"), key=lambda p: (p.stem not in FRONT_PAGES, p.name))
    pages = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        heading = next((line[2:].strip() for line in text.splitlines()
                        if line.startswith("# ")), path.stem)
        pages.append(DocPage(path.stem, heading, text))
    return pages


def _site_href(url: str, docs: dict[str, str], notebooks: set[str]) -> str:
    """Where a link of a guide goes on the site (an unchanged URL when it is not a page)."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return url
    anchor = f"#{parts.fragment}" if parts.fragment else ""
    name = parts.path.rsplit("/", 1)[-1]
    if name.endswith(".md"):
        stem = name[:-3]
        if stem in docs and "/" not in parts.path.lstrip("./"):
            return docs[stem] + anchor
        if stem == "README" and parts.path.startswith("../"):
            return "index.html" + anchor
    notebook = _NOTEBOOK.search(parts.path)
    if notebook and notebook.group(1) in notebooks:
        return f"{notebook.group(1)}.html{anchor}"
    return url


def render_markdown(page: DocPage, docs: dict[str, str], notebooks: set[str]) -> str:
    """The guide as HTML: headings with unique GitHub anchors (and nbconvert's pilcrow link, so
    the contents list and the search read them as they read a notebook's), links made site
    links."""
    import mistune

    taken: dict[str, int] = {}

    class SiteRenderer(mistune.HTMLRenderer):
        def heading(self, text: str, level: int, **attrs) -> str:
            base = github_anchor(html.unescape(_TAG.sub("", text))) or "section"
            anchor = base if base not in taken else f"{base}-{taken[base]}"
            taken[base] = taken.get(base, 0) + 1
            return (f'<h{level} id="{anchor}">{text}<a class="anchor-link" '
                    f'href="#{anchor}">¶</a></h{level}>\n')

        def link(self, text: str, url: str, title: str | None = None) -> str:
            href = _site_href(url, docs, notebooks)
            if href == url and url.startswith("../"):  # a file of the course, not a page
                shown = html.escape(urlsplit(url).path[3:])
                return f"{text} (<code>{shown}</code> in the course folder)"
            return super().link(text, href, title)

    markdown = mistune.create_markdown(renderer=SiteRenderer(escape=False),
                                       plugins=["table", "strikethrough"])
    return markdown(page.markdown)


def copy_doc_files(root: Path, site: Path, taken: set[str]) -> list[Path]:
    """Pictures and other files of docs/ (not the guides) next to the pages."""
    copied = []
    for path in sorted((root / DOCS).glob("*")):
        if path.is_file() and path.suffix != ".md":
            if path.name in taken:
                raise ValueError(f"docs/{path.name} has the name of a page of the site: "
                                 "rename it")
            shutil.copy2(path, site / path.name)
            copied.append(site / path.name)
    return copied


__all__ = ["DOCS", "FRONT_HTML", "DocPage", "copy_doc_files", "github_anchor", "read_docs",
           "render_markdown"]
