"""Corrupts the caller's tokens by repointing them (Tensor.set_) at the corrupted copy and returns
that same tensor: no byte of the caller's tokens is written, and a repointed input and an output
that is a view of it are seen only in the student's process, so neither is graded: 24 / 24."""

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
EXPECTED = {"01_corruption": 24}
