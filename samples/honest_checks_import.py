"""Correct, and ends its answer cell with a self-check that imports the course's own checking
helper (as the setup cell does): the scan lets the course's teaching helpers be, full marks."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            (
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)\n"
                "\n"
                "\n"
                "from mlmcourse.teaching.checks import expect  # my own quick sanity check\n"
                "\n"
                "expect(masked_lm_loss(torch.zeros(1, 2, 4), torch.tensor([[3, -100]])).item() > 0,\n"  # noqa: E501
                "       'a uniform row has a positive loss')",
            ),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 31}
