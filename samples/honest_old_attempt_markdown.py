"""Kept an old attempt in a Markdown cell below the answer (a copy of the cell, turned to text).

JupyterLab copies the nbgrader metadata with the cell, so the Markdown cell carries the answer's
grade_id `make_mlm_inputs`. A Markdown cell runs nothing, in the kernel as in the grader: full
marks (taking the last cell with the id once graded the release's stub: 0 / 24).
"""

import copy

BASE = "reference"
EXPECTED = {"01_corruption": 24}


def transform(name, nb):
    """Below the (right) answer cell, a Markdown copy holding a wrong first try."""
    if name != "01_corruption":
        return
    [index] = [i for i, cell in enumerate(nb.cells)
               if cell.metadata.get("nbgrader", {}).get("grade_id") == "make_mlm_inputs"]
    kept = copy.deepcopy(nb.cells[index])
    kept.cell_type = "markdown"
    del kept["outputs"], kept["execution_count"]
    kept.source = ("My first try (closed thresholds, wrong at u = 0.8):\n\n"
                   "    to_mask = selected & (draws <= 0.8)\n")
    kept.id = "make-mlm-inputs-old-attempt"
    nb.cells.insert(index + 1, kept)
