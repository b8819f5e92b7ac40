"""A correct answer cell under `%%capture` that times itself with a `%time` line: full marks."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            # %%capture keeps the timing (different on every run) out of the graded notebook
            ("def make_mlm_inputs(", "%%capture timing\ndef make_mlm_inputs("),
            (
                "    return corrupted, labels",
                "    return corrupted, labels\n"
                "\n"
                "\n"
                "%time _ = make_mlm_inputs(torch.tensor([[5, 6]]), torch.tensor([[True, False]]), "
                "torch.tensor([[0.5, 0.5]]), torch.tensor([[1, 1]]), 4)\n",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
