"""A first draft of the loss that range-checks labels with max() and min() (fail when empty)."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            ("    bad = (labels != ignore_index) & ((labels < 0) | (labels >= V))\n"
             "    if bad.any():\n"
             '        raise ValueError(f"every label must be ignore_index ({ignore_index}) '
             'or in [0, {V}); "\n'
             '                         f"found {labels[bad][0].item()}")\n',
             "    if labels.max() >= V or labels[labels != ignore_index].min() < 0:\n"
             '        raise ValueError(f"every label must be ignore_index or in [0, {V})")\n'),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 26}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "min() and max() of the selected labels fail",
}
