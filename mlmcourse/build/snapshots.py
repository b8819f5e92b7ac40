"""Saved widget state drawn as static HTML, for the reading site (no widget manager, no kernel).

A live panel needs a kernel, so the site shows the panel as it was saved when the edition was
built: the sliders at their values (disabled, each with a visible label, an accessible name and
its readout as ``aria-valuetext``), the chosen option of the mix menu, the picture and its
caption (an HTML widget beside it whose ``data-figure-name`` names the picture, as
:func:`mlmcourse.teaching.describe.live_caption_html` writes it).
Every picture must say what it is: one without a name is a build error, never a placeholder.
"""

from __future__ import annotations

import html
import math
import re

from mlmcourse.course.layout import SERIES
from mlmcourse.course.nbio import WIDGET_STATE

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# `make lab` serves the student's own copies (work/<assignment>/), not notebooks/; away from the
# course, the page's zip holds the notebook with what it needs.
SNAPSHOT_NOTE = (
    "A snapshot of the interactive panel as saved when this edition was built. The sliders "
    "need a running kernel and your own functions: in the course folder, run "
    "<code>make lab</code>, open <code>{assignment}/{name}</code> in JupyterLab (your copy of the "
    "release, kept in <code>work/</code>), finish the notebooks it loads your functions from, "
    "and run all cells to move them; elsewhere, download this notebook's zip (at the top of "
    "the page)."
)
BOXES = ("VBoxModel", "HBoxModel", "BoxModel", "GridBoxModel", "AccordionModel", "TabModel")
CHOICES = ("DropdownModel", "SelectModel", "RadioButtonsModel", "ToggleButtonsModel")


class UndescribedFigure(ValueError):
    """A picture on the way to the site says nothing about what it shows."""


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


def _control_id(model_id: str) -> str:
    return "mlm-w-" + re.sub(r"[^A-Za-z0-9_-]", "", model_id)


def _label(state: dict, control: str) -> str:
    text = html.escape(str(state.get("description", "")))
    return f'<label class="mlm-slider-label" for="{control}">{text}</label>'


def _slider_html(name: str, state: dict, model_id: str) -> str:
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
    control = _control_id(model_id)
    shown = html.escape(readout)
    return (
        f'<div class="mlm-slider">{_label(state, control)}'
        f'<input type="range" id="{control}" disabled min="{low}" max="{high}" step="{step}" '
        f'value="{position}" aria-valuetext="{shown}">'
        f'<span class="mlm-slider-readout" aria-hidden="true">{shown}</span></div>'
    )


def _choice_html(state: dict, model_id: str) -> str:
    """A saved choice widget (the mix menu) as a disabled select showing the chosen option."""
    options = state.get("_options_labels", [])
    chosen = state.get("index")
    items = "".join(
        f'<option{" selected" if i == chosen else ""}>{html.escape(str(label))}</option>'
        for i, label in enumerate(options))
    control = _control_id(model_id)
    return (f'<div class="mlm-slider">{_label(state, control)}'
            f'<select id="{control}" disabled>{items}</select></div>')


_FIGURE_NAME = re.compile(r'data-figure-name="([^"]*)"')


def _figure_name(state: dict, children: list[str]) -> str:
    """The name a box's caption gives its picture, if one of its children is such a caption."""
    for child in children:
        found = _FIGURE_NAME.search(str(state.get(child, {}).get("state", {}).get("value", "")))
        if found:
            return html.unescape(found.group(1))
    return ""


def _image_html(model: dict, model_id: str, figure_name: str) -> str:
    data = _buffer(model, "value")
    if not data:
        return ""
    name = (model["state"].get("tooltip") or figure_name).strip()
    if not name:
        raise UndescribedFigure(f"the saved picture of widget {model_id} has no name: put a "
                                "caption with data-figure-name beside it, as the course's "
                                "panels do (mlmcourse.teaching.describe.live_caption_html)")
    kind = model["state"].get("format", "png")
    return f'<img alt="{html.escape(name)}" src="data:image/{kind};base64,{data}">'


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


def output_html(output: dict, where: str) -> str:
    """One saved output (inside an Output widget): its HTML when it has some (the course's
    figures are a <figure> with alt text and a caption), else its text."""
    data = output.get("data", {})
    if "text/html" in data:
        return "".join(data["text/html"])
    if "image/png" in data:
        raise UndescribedFigure(f"{where}: a picture with no description (show it with "
                                "mlmcourse.teaching.describe.show_figure)")
    text = "".join(data.get("text/plain", output.get("text", "")))
    return f"<pre>{html.escape(text)}</pre>" if text else ""


def widget_snapshot(state: dict, model_id: str, depth: int = 0, figure_name: str = "") -> str:
    """Static HTML for one widget of a saved widget state (boxes, sliders, text, images)."""
    model = state.get(model_id)
    if model is None or depth > 20:
        return ""
    name, values = model.get("model_name", ""), model.get("state", {})
    if name in BOXES:
        children = [c for c in map(_model_ref, values.get("children", [])) if c]
        caption_name = _figure_name(state, children) or figure_name
        inner = "".join(widget_snapshot(state, c, depth + 1, caption_name) for c in children)
        kind = "mlm-hbox" if name == "HBoxModel" else "mlm-vbox"
        return f'<div class="{kind}">{inner}</div>'
    if name.endswith("SliderModel"):
        return _slider_html(name, values, model_id)
    if name in ("HTMLModel", "HTMLMathModel"):
        return f'<div class="mlm-html">{values.get("value", "")}</div>'
    if name == "LabelModel":
        return f'<div class="mlm-html">{html.escape(str(values.get("value", "")))}</div>'
    if name == "ImageModel":
        return _image_html(model, model_id, figure_name)
    if name in CHOICES:
        return _choice_html(values, model_id)
    if name == "ButtonModel":
        return f'<button disabled>{html.escape(str(values.get("description", "")))}</button>'
    if name == "OutputModel":
        return "".join(output_html(output, f"widget {model_id}")
                       for output in values.get("outputs", []))
    return ""


def snapshot_widgets(nb, notebook_name: str) -> int:
    """Replace each widget view by a static snapshot of its saved state; drop the state."""
    saved = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    replaced = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                continue
            body = widget_snapshot(saved, view.get("model_id", ""))
            note = SNAPSHOT_NOTE.format(assignment=SERIES, name=html.escape(notebook_name))
            output["data"] = {
                "text/html": f'<div class="mlm-snapshot"><p class="mlm-note">{note}</p>{body}</div>'
            }
            replaced += 1
    return replaced


def undescribed_figures(nb, notebook_name: str) -> list[str]:
    """Cells whose picture output has no HTML figure around it (the site refuses them)."""
    return [f"{notebook_name} cell {index} (counting from 0; "
            f"In [{cell.get('execution_count') or ' '}])"
            for index, cell in enumerate(nb.cells) for output in cell.get("outputs", [])
            if "image/png" in output.get("data", {}) and "text/html" not in output["data"]]


__all__ = ["UndescribedFigure", "output_html", "snapshot_widgets", "undescribed_figures",
           "widget_snapshot"]
