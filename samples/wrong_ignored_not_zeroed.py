"""Gathers with a safe index but never zeroes the ignored sites, so they count as token 0."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "return torch.where(selected, log_probs, torch.zeros_like(log_probs))",
                "return log_probs",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 11, "03_empty_mask_and_gradient": 31}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "log p at an ignored site",
}
