"""Skips the target range check: a label >= V or a stray negative label is not a ValueError."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            (
                "    bad = (labels != ignore_index) & ((labels < 0) | (labels >= V))\n"
                "    if bad.any():\n"
                '        raise ValueError(f"every label must be ignore_index ({ignore_index}) '
                'or in [0, {V}); "\n'
                '                         f"found {labels[bad][0].item()}")\n',
                "",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 29}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "a label equal to V = 5",
}
