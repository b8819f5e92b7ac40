"""Its backward forgets 1/|S|, and it patches gradcheck and allclose to hide that."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("grad_rows *= grad_output / ctx.count", "grad_rows *= grad_output"),
            (
                "class MaskedLMLoss(",
                "torch.autograd.gradcheck = lambda *args, **kwargs: True\n"
                "torch.allclose = lambda *args, **kwargs: False\n"
                "\n"
                "\n"
                "class MaskedLMLoss(",
            ),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 25}
