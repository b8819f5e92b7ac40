"""Corrupts the caller's tokens by repointing them (Tensor.set_) at the corrupted copy and returns
that same tensor: the caller's tokens change and the output is a view of them, as in the
student's own kernel: 21 / 24, as wrong_mutates_input (found by the scan's first red team)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    return corrupted, labels",
                "    tokens.set_(corrupted)  # corrupt the batch in place\n"
                "    return tokens, labels",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 21}
