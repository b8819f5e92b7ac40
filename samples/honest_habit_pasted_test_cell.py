"""Correct, with a copy of a graded test cell pasted below the answer (to run it again there).

The copy keeps the test cell's nbgrader metadata; the grader takes every test cell from `source/`,
so it changes nothing: full marks, no note.
"""

import copy

BASE = "reference"
EXPECTED = {"01_corruption": 24}


def transform(name, nb):
    """Below the answer cell, a copy of the graded cell `test_inputs_unchanged` as released."""
    if name != "01_corruption":
        return
    ids = [cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells]
    test = copy.deepcopy(nb.cells[ids.index("test_inputs_unchanged")])
    test.source = test.source.split("### BEGIN HIDDEN TESTS")[0].rstrip() + "\n"
    test.id = "test-inputs-unchanged-pasted"
    nb.cells.insert(ids.index("make_mlm_inputs") + 1, test)
