"""A first draft whose backward divides the saved exps in place: right once, wrong at a rerun."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("        grad_rows = exps / sums.unsqueeze(1)  # softmax of each selected row\n",
             "        grad_rows = exps.div_(sums.unsqueeze(1))  # in place: less memory\n"),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 29}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "changes a tensor saved in forward, in place",
}
