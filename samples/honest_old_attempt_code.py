"""Kept an old attempt as a code cell below the answer, renamed so that it redefines nothing.

A copy of the answer cell keeps its nbgrader metadata, so two code cells carry the grade_id
`make_mlm_inputs`: the right answer, then the old attempt as `make_mlm_inputs_first_try`. The
kernel ran both, in order, and `make_mlm_inputs` is the right one; so does the grader: full marks
(taking the last copy alone once left `make_mlm_inputs` undefined: 0 / 24).
"""

import copy

BASE = "reference"
EXPECTED = {"01_corruption": 24}

WRONG = [
    ("def make_mlm_inputs(", "def make_mlm_inputs_first_try("),
    ("to_mask = selected & (draws < 0.8)", "to_mask = selected & (draws <= 0.8)"),
]


def transform(name, nb):
    """Below the (right) answer cell, a code copy with the first, wrong try, renamed."""
    if name != "01_corruption":
        return
    [index] = [i for i, cell in enumerate(nb.cells)
               if cell.metadata.get("nbgrader", {}).get("grade_id") == "make_mlm_inputs"]
    old = copy.deepcopy(nb.cells[index])
    for before, after in WRONG:
        assert old.source.count(before) == 1, before
        old.source = old.source.replace(before, after)
    old.id = "make-mlm-inputs-old-attempt"
    nb.cells.insert(index + 1, old)
