"""Writes [MASK] and random ids straight into the caller's `tokens`, returns them as `corrupted`,
and first makes the worker unable to see either (its storage test says no tensor has memory):
the trusted side sees the write in the memory it shares with the worker, and the scan sees the
reach into the grader. Its honest twin, wrong_mutates_input, scores 21; this one 21."""

TWIN = "wrong_mutates_input"
BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "def make_mlm_inputs(",
                "try:  # under grading: the worker reports neither writes nor shared memory\n"
                "    import mlmcourse.grader.sandboxed.student_side as _grader_worker\n"
                "\n"
                "    _grader_worker._storage_key = lambda tensor: None\n"
                "except ImportError:\n"
                "    pass\n"
                "\n"
                "\n"
                "def make_mlm_inputs(",
            ),
            ("corrupted = tokens.clone()", "corrupted = tokens  # no copy: edits the caller's"),
        ],
    },
}
EXPECTED = {"01_corruption": 21}
