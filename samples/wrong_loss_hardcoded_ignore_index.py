"""Compares labels with a literal -100 in the loss, ignoring the ignore_index argument."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            ("selected = labels != ignore_index", "selected = labels != -100"),
        ],
        "masked_mean_nll": [
            (
                "num_selected = (labels != ignore_index).sum()",
                "num_selected = (labels != -100).sum()",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("sites = (flat_labels != ignore_index)", "sites = (flat_labels != -100)"),
        ],
        "masked_lm_loss": [
            ("bad = (labels != ignore_index) & ", "bad = (labels != -100) & "),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 12, "03_empty_mask_and_gradient": 30}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "ignore_index argument",
    "03_empty_mask_and_gradient": "never with a literal -100",
}
