"""What a reader of the site sees of a notebook, decided before nbconvert renders it.

- A heading that repeats on a page ("Predict, then run", once per question) gets its own anchor,
  from its cell's stable ``grade_id``, and its own title, the question it asks (the last sentence
  of its first paragraph that ends in "?"), so the page's contents list and a search hit go to
  that question and no other.
- What only a graded student needs is marked for folding (the page template puts it in a closed
  ``<details>``; the page's "Show the grading" button opens it all and shows the points):
  a cell that only imports, a self-check cell, the list of what the hidden tests check.
"""

from __future__ import annotations

import ast
import html
import re
from collections import Counter

import nbformat

from mlmcourse.build.editions import HIDDEN_TESTS_TITLE

FOLD = "mlm_fold"  # cell metadata key the page template reads: why the cell is folded
FOLD_SUMMARIES = {
    "imports": "Imports: the libraries and the course's helpers",
    "check": "Self-check: the graded copy's check of this step",
    "hidden_tests": f"{HIDDEN_TESTS_TITLE} (points of the graded copy)",
}
_HEADING_LINE = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_CHECK_COMMENT = re.compile(r"#\s*(visible\s+)?checks?\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z*`$(])")
SHORT_QUESTION = 4  # words: "Where?" is titled with the sentence before it
POINTS = re.compile(r"\((\d+) points?\)")


def slug(text: str) -> str:
    """An anchor from a name: lower case, words joined by hyphens (GitHub's way)."""
    text = re.sub(r"[^\w\s-]", "", text.strip().lower())
    return re.sub(r"[\s_]+", "-", text).strip("-")


def _heading(cell) -> tuple[str, str] | None:
    """(hashes, title) of the first line of a markdown cell, when it is a heading."""
    if cell.cell_type != "markdown" or not cell.source:
        return None
    match = _HEADING_LINE.match(cell.source.splitlines()[0])
    return (match.group(1), match.group(2)) if match else None


def question_of(markdown: str) -> str:
    """The question a cell asks: the last sentence ending in "?" of its first paragraph that
    holds one (markdown, as written)."""
    for paragraph in re.split(r"\n\s*\n", markdown):
        text = " ".join(re.sub(r"\*\*[^*]+\.\*\*", "", paragraph).split())  # "**Question.**"
        sentences = _SENTENCE_END.split(text)
        asks = [i for i, sentence in enumerate(sentences) if sentence.endswith("?")]
        if asks:
            last = asks[-1]
            first = last - 1 if len(sentences[last].split()) < SHORT_QUESTION and last else last
            return " ".join(sentences[first:last + 1])
    return ""


def _inline(markdown: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return re.sub(r"^<p>(.*)</p>$", r"\1", markdown2html_mistune(markdown).strip(), flags=re.S)


def name_repeated_headings(nb: nbformat.NotebookNode) -> int:
    """Give each heading that repeats on the page its own anchor and title (see above): its
    heading line becomes the HTML nbconvert would write, with the new id. Returns how many."""
    counts = Counter(title for cell in nb.cells if (h := _heading(cell)) for title in [h[1]])
    taken: set[str] = set()
    renamed = 0
    for number, cell in enumerate(nb.cells):
        found = _heading(cell)
        if not found or counts[found[1]] < 2:
            continue
        hashes, title = found
        rest = cell.source.split("\n", 1)[1] if "\n" in cell.source else ""
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        anchor = slug(grade_id) or f"{slug(title)}-{number}"
        while anchor in taken:
            anchor += "-again"
        taken.add(anchor)
        question = question_of(rest)
        shown = _inline(f"{title}: {question}" if question else f"{title} ({len(taken)})")
        level = len(hashes)
        cell.source = (f'<h{level} id="{anchor}">{shown}<a class="anchor-link" '
                       f'href="#{anchor}">¶</a></h{level}>\n\n{rest}')
        renamed += 1
    return renamed


def _only_imports(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return bool(body) and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in body)


def _is_self_check(source: str) -> bool:
    """A cell that says it is a check (its first line), or whose statements mostly call
    `expect...` (the course's checks)."""
    lines = source.lstrip().splitlines()
    if lines and _CHECK_COMMENT.match(lines[0]):
        return True
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    checking = sum(_checks(statement) for statement in body)
    return bool(body) and checking * 2 >= len(body)


def _checks(statement: ast.stmt) -> bool:
    """A call of `expect...`, or a loop of them (not a block that computes, then checks)."""
    if isinstance(statement, ast.For):
        return all(_checks(inner) for inner in statement.body)
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            and getattr(statement.value.func, "id", "").startswith("expect"))


def fold_reason(cell) -> str | None:
    if cell.cell_type == "code" and not cell.metadata.get("jupyter", {}).get("source_hidden"):
        if _only_imports(cell.source):
            return "imports"
        if _is_self_check(cell.source):
            return "check"
    if cell.cell_type == "markdown" and cell.source.startswith(f"**{HIDDEN_TESTS_TITLE}**"):
        return "hidden_tests"
    return None


def mark_graded_parts(nb: nbformat.NotebookNode) -> int:
    """Mark each cell that only a graded student needs (metadata FOLD); returns how many."""
    marked = 0
    for cell in nb.cells:
        reason = fold_reason(cell)
        if reason:
            cell.metadata[FOLD] = reason
            marked += 1
    return marked


_HEADING_HTML = re.compile(r"(<h[1-6]\b[^>]*>)(.*?)(</h[1-6]>)", re.S)


_POINTS_PARAGRAPH = re.compile(r"<p>(?=<strong>Points\b)")  # "**Points available: 15** (...)"


def mark_points(body: str) -> str:
    """Mark what the reader's view hides: "(N points)" of each rendered heading, and a
    paragraph that opens with the notebook's points ("**Points available: 15**")."""
    def one(match: re.Match) -> str:
        inner = POINTS.sub(r'<span class="mlm-points">\g<0></span>', match.group(2))
        return match.group(1) + inner + match.group(3)
    return _POINTS_PARAGRAPH.sub('<p class="mlm-points">', _HEADING_HTML.sub(one, body))


def fold_summary(reason: str) -> str:
    return html.escape(FOLD_SUMMARIES[reason])


__all__ = ["FOLD", "fold_reason", "fold_summary", "mark_graded_parts", "mark_points",
           "name_repeated_headings", "question_of", "slug"]
