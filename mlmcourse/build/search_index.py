"""The reading site's full-text search: an index built with the pages, searched in the browser.

The site must work from a folder on disk, where a page cannot ``fetch`` a JSON file (file://),
so the index is a script, ``search-index.js``, that sets ``window.MLM_SEARCH`` to one entry per
section of each page (the text under one h1/h2/h3 heading, prose, code and outputs alike). The
search box in every page's sidebar (``templates/mlm_search.js``) filters it: an entry matches
when it holds every word of the query.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

SEARCH_SCRIPT = "search-index.js"
_HEADING = re.compile(r'<h([123]) id="([^"]+)"[^>]*>(.*?)</h\1>', re.S)
_SKIP = re.compile(r"<(script|style)\b.*?</\1>", re.S)
_TAG = re.compile(r"<[^>]+>")
_IMAGE_DATA = re.compile(r'src="data:[^"]*"')  # pictures are words only through their alt


def plain_text(fragment: str) -> str:
    text = _TAG.sub(" ", _SKIP.sub(" ", _IMAGE_DATA.sub("", fragment)))
    return " ".join(html.unescape(text).replace("¶", " ").split())


def page_sections(page_html: str, page: str, title: str) -> list[dict]:
    """One entry per heading of the page: its title, its anchor and the text under it."""
    body = page_html.split("<main", 1)[-1]
    headings = list(_HEADING.finditer(body))
    sections = []
    for here, following in zip(headings, [*headings[1:], None], strict=True):
        end = following.start() if following else len(body)
        sections.append({"page": page, "title": title,
                         "section": plain_text(here.group(3)),
                         "anchor": here.group(2),
                         "text": plain_text(body[here.end():end])})
    return sections


def write_search_index(site: Path, pages: list[tuple[str, str, str]]) -> Path:
    """`pages`: (file name, page title, its HTML). Writes search-index.js next to them."""
    entries = [entry for name, title, page_html in pages
               for entry in page_sections(page_html, name, title)]
    target = site / SEARCH_SCRIPT
    payload = json.dumps(entries, ensure_ascii=False, separators=(",", ":"))
    target.write_text(f"window.MLM_SEARCH = {payload};\n", encoding="utf-8")
    return target


__all__ = ["SEARCH_SCRIPT", "page_sections", "plain_text", "write_search_index"]
