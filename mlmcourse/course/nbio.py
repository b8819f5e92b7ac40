"""Keep notebooks clean in git: no outputs in sources, stable metadata and cell ids.

nbconvert's preprocessors do the generic parts (ClearOutput, CoalesceStreams); what is ours is
what they do not offer: one canonical kernelspec, cell ids named after grade ids, one
serialization with stable widget ids.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from mlmcourse.course.cells import TIMING_TAG, grade_id, has_tag

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def stable_cell_ids(nb: nbformat.NotebookNode) -> None:
    """Name each cell after its grade_id (unique by nbgrader's rules), else by its position."""
    used: set[str] = set()
    for index, cell in enumerate(nb.cells):
        gid = grade_id(cell)
        candidate = _ID_CHARS.sub("-", gid)[:64] if gid else f"cell-{index:03d}"
        while candidate in used:
            candidate = f"{candidate[:58]}-{index:03d}"
        used.add(candidate)
        cell["id"] = candidate


# The course's own notebook metadata: {"summary": one sentence for the reading edition}.
COURSE_METADATA = "mlmcourse"

# Cell metadata that changes on every run: timings, collapsed/scrolled state.
RUN_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")


def strip_execution_metadata(cell: nbformat.NotebookNode) -> None:
    """Drop what changes on every run (timings, collapsed/scrolled state) but keep the rest."""
    for key in RUN_METADATA:
        cell.metadata.pop(key, None)


def clean_source_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Normalize a notebook under source/: no outputs, no counts, minimal metadata."""
    from nbconvert.preprocessors import ClearOutputPreprocessor

    nb.nbformat, nb.nbformat_minor = 4, 5
    # Not nbconvert's ClearMetadata: it would keep the author's kernelspec, and every source
    # names the same kernel; cell metadata (nbgrader's, tags) must stay as it is.
    course = nb.metadata.get(COURSE_METADATA)  # the reader's summary: written, not run-made
    nb.metadata = {
        "kernelspec": dict(KERNELSPEC),
        "language_info": {"name": "python"},
    }
    if course:
        nb.metadata[COURSE_METADATA] = course
    clear = ClearOutputPreprocessor(remove_metadata_fields=set(RUN_METADATA))
    nb, _ = clear.preprocess(nb, {})
    for cell in nb.cells:
        if cell.cell_type != "code":  # ClearOutput cleans code cells only
            strip_execution_metadata(cell)
    stable_cell_ids(nb)
    return nb


def dumps(nb: nbformat.NotebookNode) -> str:
    """Serialize the way Jupyter does (1-space indent, sorted keys), with a final newline, and
    with widget ids that do not change from one run to the next."""
    text = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    return stabilize_widget_ids(text, nb)


def merge_streams(outputs: list) -> list:
    """Consecutive prints to one stream as one output (nbconvert's CoalesceStreams): how a kernel
    splits them varies from run to run, and generated notebooks must not. Like Jupyter's own
    display, it keeps of a line rewritten with a carriage return only what is left visible."""
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    cell = nbformat.from_dict({"cell_type": "code", "outputs": list(outputs)})
    cell, _ = CoalesceStreamsPreprocessor().preprocess_cell(cell, {}, 0)
    return cell.outputs


# An absolute path up to its library folder: /opt/venv/lib/python3.12/site-packages/ (the last
# such folder in the path). A path is a run of characters without whitespace, quotes, ESC or ':';
# the match may start only at the first '/' of such a run (the lookbehind and the slash-free
# prefix kept in group 1), so each run is scanned once: linear time, even on a line of 20,000
# slashes that the student printed. (Without that anchor the engine retried every '/' of a run
# and scanned to its end each time: quadratic.)
_ABSOLUTE_LIBRARY = re.compile(
    r"(?<![^\s\"'\x1b:])([^\s\"'\x1b:/]*)/[^\s\"'\x1b:]*/(?:site-packages|lib/python3\.\d+)/")


# The course package's own files (a check helper in a traceback) by their short path too: where
# the course is checked out must not show in a graded notebook either.
_PACKAGE_FOLDER = str(Path(__file__).resolve().parents[1]) + "/"
_PACKAGE_SHORT = Path(__file__).resolve().parents[1].name + "/"


def short_library_path(text: str) -> str:
    """`text` with every absolute library path cut to its part below the library folder."""
    text = text.replace(_PACKAGE_FOLDER, _PACKAGE_SHORT)
    if "/site-packages/" not in text and "/lib/python3." not in text:
        return text  # the usual case: nothing to scan
    return _ABSOLUTE_LIBRARY.sub(r"\1", text)


def relative_library_paths(outputs: list) -> list:
    """Tracebacks name library files by their short path (torch/_tensor.py): the machine's
    environment folder must not make a graded notebook differ from one grader to the next."""
    for output in outputs:
        if output.get("output_type") == "error":
            output["traceback"] = [short_library_path(line) for line in output["traceback"]]
        elif output.get("output_type") == "stream":
            output["text"] = short_library_path(output.get("text", ""))
    return outputs


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_MODEL_REF = re.compile(r"IPY_MODEL_([0-9a-f]{32})")
_MODEL_ID = re.compile(r'"model_id": "([0-9a-f]{32})"')


def widget_id_order(nb: dict) -> list[str]:
    """Widget model ids in an order that does not depend on their random values.

    Start from the widgets the outputs display (in cell order), then follow the references
    between saved models breadth-first; saved models nobody refers to come last, by content.
    """
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    outputs = json.dumps([cell.get("outputs", []) for cell in nb.get("cells", [])], sort_keys=True)
    order, queue = [], _MODEL_ID.findall(outputs)
    while queue:
        model = queue.pop(0)
        if model in order:
            continue
        order.append(model)
        if model in state:
            queue += _MODEL_REF.findall(json.dumps(state[model], sort_keys=True))

    def content(model: str) -> str:
        return re.sub(r"[0-9a-f]{32}", "", json.dumps(state[model], sort_keys=True))

    return order + sorted((m for m in state if m not in order), key=content)


def stabilize_widget_ids(text: str, nb: dict) -> str:
    """Widget model ids are random uuids: number them in a stable order instead."""
    ids = {old: f"{index + 1:032x}" for index, old in enumerate(widget_id_order(nb))}
    if not ids:
        return text
    pattern = re.compile("|".join(re.escape(old) for old in ids))
    renamed = json.loads(pattern.sub(lambda match: ids[match.group(0)], text))
    # Sort again: the keys were sorted by their old, random names.
    return json.dumps(renamed, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def write(nb: nbformat.NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(nb), encoding="utf-8")


def without_timings(text: str) -> str:
    """A notebook's text with the outputs of its `timing` cells (wall-clock numbers) blanked:
    what must match for two runs of one notebook to count as the same."""
    nb = json.loads(text)
    for cell in nb.get("cells", []):
        if has_tag(cell, TIMING_TAG):
            cell["outputs"] = []
    return json.dumps(nb, sort_keys=True)


def same_but_timings(path: Path, nb: nbformat.NotebookNode) -> bool:
    """Whether the notebook file at `path` is `nb`, apart from its timing outputs (a regrade
    keeps such a file as it is: a committed notebook does not change for a clock's sake)."""
    try:
        before = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return without_timings(before) == without_timings(dumps(nb))


def normalize_file(path: Path) -> bool:
    """Normalize one source notebook in place; return True when it changed."""
    before = path.read_text(encoding="utf-8")
    after = dumps(clean_source_notebook(read(path)))
    if before != after:
        path.write_text(after, encoding="utf-8")
    return before != after
