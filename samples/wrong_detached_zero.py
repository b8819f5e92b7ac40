"""Returns a detached torch.tensor(0.) when nothing is selected, so backward() fails."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            (
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
                "    if not (labels != ignore_index).any():\n"
                "        return torch.tensor(0.0)\n"
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 26}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "a detached zero",
}
