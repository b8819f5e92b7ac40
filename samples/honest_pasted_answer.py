"""Pasted a copy of the answer cell below a wrong first try, fixed the copy: both run, in order.

JupyterLab's copy and paste keeps a cell's nbgrader metadata, so the notebook holds two answer
cells with the grade_id `make_mlm_inputs`: the first with closed thresholds (22 / 24 on its own,
see wrong_closed_thresholds), the pasted one below it right. The kernel ran both, the later one
last, and so does every way in: the right definition stands, full marks, and `nbgrader
autograde` grades the submission (and the students after it) instead of failing.
"""

import copy

BASE = "reference"
EXPECTED = {"01_corruption": 24}

WRONG = [
    ("to_mask = selected & (draws < 0.8)", "to_mask = selected & (draws <= 0.8)"),
    ("to_random = selected & (draws >= 0.8) & (draws < 0.9)",
     "to_random = selected & (draws > 0.8) & (draws <= 0.9)"),
]


def transform(name, nb):
    """Insert, above the (right) answer cell, a copy of it with the first, wrong try."""
    if name != "01_corruption":
        return
    [index] = [i for i, cell in enumerate(nb.cells)
               if cell.metadata.get("nbgrader", {}).get("grade_id") == "make_mlm_inputs"]
    first_try = copy.deepcopy(nb.cells[index])
    for old, new in WRONG:
        assert first_try.source.count(old) == 1, old
        first_try.source = first_try.source.replace(old, new)
    first_try.id = "make-mlm-inputs-first-try"  # a pasted cell: a new cell id, the same grade_id
    nb.cells.insert(index, first_try)
