"""A correct answer cell that times itself with a `%time` line after the function: full marks."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
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
