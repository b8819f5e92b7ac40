"""A right answer padded with 1,000 comment lines and 100 `%pwd` magics: IPython's input
transformer re-reads the whole cell once per magic, so turning a cell like it into Python took the
trusted scan ~14 s at 12,000 lines (past its 10 s budget, and growing as magics times lines).
Now: a cell with more magic lines than CAPS.scanned_magics (64) is not run through IPython's
transform by the scan (its text is still read) and the budget is checked before each cell: the
scan takes milliseconds and notes the magics; the answer is right (15 / 15), flagged for a look.
(1,000 lines keep the worker's own transform far inside its call limit on a loaded machine.)"""

PADDING = "#\n" * 1_000 + "%pwd\n" * 100
BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "masked_mean_nll": [("sum() / num_selected", "sum() / num_selected\n" + PADDING)],
    },
}
EXPECTED = {"02_stable_log_softmax": 15}
