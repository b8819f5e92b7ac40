"""The reading site's full-text search: an index built with the pages, searched in the browser.

The site must work from a folder on disk, where a page cannot ``fetch`` a JSON file (file://),
so the index is a script, ``search-index.js``, that sets ``window.MLM_SEARCH`` to one entry per
section of each page (the text under one h1/h2/h3 heading, prose, code and outputs alike). The
search box in every page's sidebar (``templates/mlm_search.js``) filters and ranks it: an
entry matches when it holds every word of the query. Equations are indexed as text
(:func:`tex_as_text`: ``\\frac{a}{b}`` reads ``(a)/(b)``, ``\\sum`` reads ``Σ``), so a snippet never
shows raw LaTeX.
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


# inline math may wrap onto the next line of its paragraph (never across a blank line)
_MATH = re.compile(r"\$\$(.+?)\$\$|\$((?:[^$\n]|\n(?!\n))+?)\$|\\\[(.+?)\\\]|\\\((.+?)\\\)", re.S)
_GROUP = r"\{((?:[^{}]|\{[^{}]*\})*)\}"  # a {group}, holding {groups} one level deep
_FRAC = re.compile(r"\\[dt]?frac\s*" + _GROUP + r"\s*" + _GROUP)
_SQRT = re.compile(r"\\sqrt\s*" + _GROUP)
_ENVIRONMENT = re.compile(r"\\(?:begin|end)\s*\{[^{}]*\}")
_WRAPPER = re.compile(r"\\(?:text|mathrm|mathbf|mathit|mathsf|mathtt|operatorname|boldsymbol|"
                      r"textbf|textit|mathcal|mathbb|hat|bar|tilde|vec|overline)\s*\{([^{}]*)\}")
_COMMAND = re.compile(r"\\([A-Za-z]+)")
_SYMBOLS = {
    "sum": "Σ", "prod": "Π", "cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥",
    "geq": "≥", "ne": "≠", "neq": "≠", "in": "∈", "notin": "∉", "to": "→", "rightarrow": "→",
    "leftarrow": "←", "infty": "∞", "approx": "≈", "partial": "∂", "nabla": "∇", "mid": "|",
    "lvert": "|", "rvert": "|", "ldots": "…", "dots": "…", "cdots": "⋯", "quad": " ",
    "qquad": " ", "left": "", "right": "", "big": "", "Big": "", "displaystyle": "",
    "mathbb": "", "lbrace": "{", "rbrace": "}", "{": "{", "}": "}", "top": "ᵀ", "pm": "±",
    "cap": "∩", "cup": "∪", "subset": "⊂", "forall": "∀", "exists": "∃", "neg": "¬",
    "land": "∧", "lor": "∨", "wedge": "∧", "vee": "∨", "equiv": "≡", "propto": "∝",
}
_GREEK = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
          "rho sigma tau upsilon phi chi psi omega").split()
for _offset, _name in enumerate(_GREEK):
    _SYMBOLS[_name] = chr(0x3B1 + _offset + (_offset > 16))  # no final sigma in the table
    _SYMBOLS[_name.capitalize()] = chr(0x391 + _offset + (_offset > 16))
_SYMBOLS["varepsilon"] = "ε"


def _command_as_text(match: re.Match) -> str:
    """A symbol for a symbol (\\sum: Σ); a name (\\log) keeps a space after it."""
    name = match.group(1)
    symbol = _SYMBOLS.get(name, name)
    return symbol + " " if symbol.isascii() and symbol.isalpha() else symbol


def tex_as_text(tex: str) -> str:
    """An equation as a reader would say it in plain text: fractions as (a)/(b), commands as
    their symbols or names, no braces or backslashes."""
    text = _ENVIRONMENT.sub(" ", tex).replace("\\\\", "; ")
    for pattern, replacement in ((_FRAC, r"(\1)/(\2)"), (_SQRT, r"√(\1)"), (_WRAPPER, r"\1")):
        while pattern.search(text):
            text = pattern.sub(replacement, text)
    text = _COMMAND.sub(_command_as_text, text)
    text = re.sub(r"\\[,;:! ]", " ", text).replace("\\", " ")
    return " ".join(text.replace("{", "").replace("}", "").replace("&", " ").split())


def plain_text(fragment: str) -> str:
    text = _TAG.sub(" ", _SKIP.sub(" ", _IMAGE_DATA.sub("", fragment)))
    text = html.unescape(text).replace("¶", " ")
    text = _MATH.sub(lambda m: tex_as_text(next(g for g in m.groups() if g is not None)), text)
    return " ".join(text.split())


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


__all__ = ["SEARCH_SCRIPT", "page_sections", "plain_text", "tex_as_text", "write_search_index"]
