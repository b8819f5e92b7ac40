"""A first draft of the mean that counts its sites with a literal -100, not with ignore_index."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "masked_mean_nll": [
            ("num_selected = (labels != ignore_index).sum()",
             "num_selected = (labels != -100).sum()"),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 14}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "not by the 1 whose label is not ignore_index (-1)",
}
