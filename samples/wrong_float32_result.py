"""Casts the selected rows to float32, so float64 logits give a float32 loss and gradient."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("index_select(0, sites)  # [|S|, V]", "index_select(0, sites).float()  # [|S|, V]"),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 23}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "float32 for float64 logits",
}
