"""Pads an answer cell with 12,000 comment lines and 100 `%pwd` magics: IPython's input transformer
re-reads the whole cell once per magic, so turning the cell into Python takes ~14 s on a 2-core
machine, on the trusted side too.
Now: a cell with more magic lines than CAPS.scanned_magics is not run through IPython's
transform (its text is still read) and the budget is checked before each cell: the scan takes
milliseconds; the worker's start times out as before (0 / 15)."""

PADDING = "#\n" * 12_000 + "%pwd\n" * 100
BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "masked_mean_nll": [("sum() / num_selected", "sum() / num_selected\n" + PADDING)],
    },
}
EXPECTED = {"02_stable_log_softmax": 0}
