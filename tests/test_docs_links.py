"""The documentation holds together: every relative link and anchor in README.md, AUTHORING.md,
CHANGELOG.md and docs/*.md resolves (files and headings, with GitHub's anchors; external links
are not fetched), the README stays a front page, and no page names an internal work item."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
ROLES = ("students", "self-study", "ta", "hub-admin", "lms-admin", "authoring")


def pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "AUTHORING.md", ROOT / "CHANGELOG.md",
            *sorted((ROOT / "docs").glob("*.md"))]


def prose(text: str) -> str:
    """The text a reader sees as prose: fenced code blocks and code spans left out."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, punctuation dropped, spaces to
    hyphens (code spans keep their text, links their label)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: dict[str, int] = {}
    result = set()
    for _, title in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(title)
        count = found.get(base, 0)
        found[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if EXTERNAL.match(target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with that anchor")
    return broken


def test_every_relative_link_and_anchor_in_the_docs_resolves():
    broken = {page.relative_to(ROOT).as_posix(): broken_links(page) for page in pages()}
    assert not {page: links for page, links in broken.items() if links}


def test_the_link_check_finds_a_missing_page_and_a_missing_heading(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## Set-up, step 1: `lti.json`\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[ok](other.md#set-up-step-1-ltijson) [ok](#page) "
                    "[gone](missing.md) [wrong](other.md#setup) `[code](nowhere.md)` "
                    "[web](https://example.org/x)\n")
    assert broken_links(page) == ["missing.md: no such file",
                                  "other.md#setup: no heading with that anchor"]


def test_the_readme_is_a_front_page_with_a_guide_for_each_role():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert readme.count("\n# ") == 0 and readme.startswith("# ")
    for role in ROLES:
        assert f"(docs/{role}.md)" in readme, f"the README links no guide for {role}"


def test_each_docs_page_has_one_title():
    for page in sorted((ROOT / "docs").glob("*.md")):
        titles = [h for h, _ in HEADING.findall(FENCE.sub("", page.read_text())) if h == "#"]
        assert len(titles) == 1, page.name


def test_no_page_names_an_internal_work_item():
    named = {page.name: re.findall(r"\bissues? \d+", page.read_text(encoding="utf-8"), re.I)
             for page in pages()}
    assert not {page: items for page, items in named.items() if items}
