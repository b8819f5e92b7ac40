"""A correct solution whose two contract functions write a line to stderr on every call: full marks.

Notebook 4 runs both of them hundreds of times (the experiment, the slider panel, the hidden
tests), so every cell there gets stderr output while widgets are on the page: nothing a student's
function prints may stop the grading kernel or cost a point.
"""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("def make_mlm_inputs(", "import sys\n\n\ndef make_mlm_inputs("),
            (
                "    # 1. Validate:",
                '    print("make_mlm_inputs: called", file=sys.stderr)\n'
                "    # 1. Validate:",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            ("def masked_lm_loss(", "import sys\n\n\ndef masked_lm_loss("),
            (
                "    if not isinstance(logits, torch.Tensor) or not isinstance(labels,",
                '    print("masked_lm_loss: called", file=sys.stderr)\n'
                "    if not isinstance(logits, torch.Tensor) or not isinstance(labels,",
            ),
        ],
    },
}
# Notebook 4 loads the student's notebooks 1 and 3, so all three are handed in (and graded).
EXPECTED = {"01_corruption": 24, "03_empty_mask_and_gradient": 31, "04_experiment": 5}
