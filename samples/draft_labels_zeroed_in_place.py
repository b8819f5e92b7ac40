"""A first draft that gives ignored sites a safe index by writing 0 into the caller's labels
(`safe = labels` is the same tensor, not a copy): every value is right, and the labels are
changed. A learner's draft passed Validate with it and lost 8 points to the hidden tests."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            ("    safe_labels = torch.where(selected, labels, torch.zeros_like(labels))"
             "  # never gather ignore_index\n",
             "    safe_labels = labels\n"
             "    safe_labels[~selected] = 0  # never gather ignore_index\n"),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 7}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "your function changed the labels it was given",
}
