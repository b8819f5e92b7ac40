"""Correct: a doctest example in the docstring, run with `doctest.run_docstring_examples`."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("    Raises:\n",
             "    Example:\n"
             "        >>> c, l = make_mlm_inputs(torch.tensor([[5, 6]]),\n"
             "        ...     torch.tensor([[True, False]]), torch.tensor([[0.5, 0.5]]),\n"
             "        ...     torch.tensor([[1, 1]]), 4)\n"
             "        >>> c.tolist(), l.tolist()\n"
             "        ([[4, 6]], [[5, -100]])\n\n"
             "    Raises:\n"),
            ("    return corrupted, labels",
             "    return corrupted, labels\n\n\n"
             "import doctest\n\n"
             "doctest.run_docstring_examples(make_mlm_inputs, {\"torch\": torch, "
             "\"make_mlm_inputs\": make_mlm_inputs})\n"),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
