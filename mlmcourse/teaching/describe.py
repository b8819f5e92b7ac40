"""Figures that say what they show: a picture, its description in words, and its numbers.

A reader who cannot see a figure (a screen reader, a text browser, a printout in grey) must get
what it shows, not a placeholder. Every figure of the course is displayed through
:func:`show_figure`, which writes one output that carries all three:

- ``text/html``: ``<figure>`` with the picture (``alt`` = what the figure is), a ``figcaption``
  with what it shows, made from the same data as the picture, and, where the numbers matter, a
  small table behind a ``<details>`` disclosure. JupyterLab and the reading site both prefer
  this part; JupyterLab ignores the ``alt`` metadata of a bare ``image/png``, so the HTML is what
  gives the picture a name there;
- ``image/png`` with that description as its ``alt`` metadata, for tools that read only images;
- ``text/plain``: the description, for a terminal or a text export.

The words come from the functions next to each figure (``describe_*`` in
:mod:`~mlmcourse.teaching.plots`, :mod:`~mlmcourse.teaching.captions`,
:mod:`~mlmcourse.teaching.mixlab`), so the notebook, the site and the report say the same.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure

FIGURE_CLASS = "mlm-figure"
DESCRIPTION_CLASS = "mlm-figure-description"  # the slider panels' live caption
_ATTRIBUTE = "_mlm_description"  # where a plot_* function leaves its figure's description
GRADING_NOTE = "[figure not drawn while grading] "


@dataclass(frozen=True)
class Table:
    """The numbers behind a figure, as text: a header and rows of already formatted cells."""

    caption: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f"a row of the table '{self.caption}' has {len(row)} cells, "
                                 f"the header {len(self.header)}")


@dataclass(frozen=True)
class Description:
    """What a figure is (``name``: short, the picture's alt text), what it shows (``text``:
    sentences made from its data) and, optionally, its numbers (``table``)."""

    name: str
    text: str
    table: Table | None = None

    def __post_init__(self) -> None:
        if not self.name.strip() or not self.text.strip():
            raise ValueError("a figure's description needs a name and a text that say what it "
                             "shows")


def attach(fig: Figure, description: Description) -> Figure:
    """Leave `description` on `fig` for :func:`show_figure`; returns the figure."""
    setattr(fig, _ATTRIBUTE, description)
    return fig


def description_of(fig: Figure) -> Description | None:
    return getattr(fig, _ATTRIBUTE, None)


def table_html(table: Table) -> str:
    head = "".join(f'<th scope="col">{html.escape(cell)}</th>' for cell in table.header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in table.rows)
    return (f"<details><summary>The numbers: {html.escape(table.caption)}</summary>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>")


def caption_html(description: Description) -> str:
    """The description as the inside of a caption: its text, then its table (if any)."""
    table = table_html(description.table) if description.table else ""
    return f"<p>{html.escape(description.text)}</p>{table}"


def figure_html(image_base64: str, description: Description, mime: str = "image/png") -> str:
    """One ``<figure>``: the picture named by `description`, and the description beneath it."""
    return (f'<figure class="{FIGURE_CLASS}">'
            f'<img src="data:{mime};base64,{image_base64}" alt="{html.escape(description.name)}"'
            ' style="max-width:100%;height:auto">'
            f"<figcaption>{caption_html(description)}</figcaption></figure>")


def live_caption_html(description: Description) -> str:
    """The caption of a picture that changes (a slider panel): read out when it changes. It
    carries the picture's name too (``data-figure-name``): an ipywidgets Image has no alt text
    (and setting its tooltip breaks its view in ipywidgets 8.1), so the reading site takes the
    name of the panel's saved picture from here."""
    return (f'<div class="{DESCRIPTION_CLASS}" role="status" aria-live="polite" '
            f'data-figure-name="{html.escape(description.name)}">'
            f"{caption_html(description)}</div>")


def figure_bundle(fig: Figure, description: Description) -> tuple[dict, dict]:
    """The (data, metadata) of one display output for `fig`, as the inline backend draws it."""
    from IPython.core.pylabtools import print_figure

    image = print_figure(fig, "png", bbox_inches="tight", base64=True)
    # A text that opens with the figure's name says it once (a screen reader reads all of it).
    plain = (description.text if description.text.startswith(description.name)
             else f"{description.name}. {description.text}")
    data = {"text/html": figure_html(image, description), "image/png": image,
            "text/plain": plain}
    return data, {"image/png": {"alt": plain}}


def show_figure(fig: Figure, description: Description | None = None) -> None:
    """Display `fig` with its description (passed here, or left on it by a ``plot_*``
    function) and close it, so the inline backend does not show it a second time, bare."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    description = description or description_of(fig)
    if description is None:
        plt.close(fig)
        raise ValueError("this figure has no description: pass show_figure(fig, "
                         "Description(name, text)) saying what it shows")
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        # No point rests on a picture, and drawing one costs about 0.2 s of CPU per graded
        # notebook: the graded copy keeps the figure's words (the student's own copy, Validate
        # and the reading edition draw it).
        plt.close(fig)
        display({"text/plain": f"{GRADING_NOTE}{description.name}. {description.text}"},
                raw=True)
        return
    data, metadata = figure_bundle(fig, description)
    plt.close(fig)
    display(data, metadata=metadata, raw=True)


__all__ = ["Description", "Table", "attach", "caption_html", "description_of", "figure_bundle",
           "figure_html", "live_caption_html", "show_figure", "table_html"]
