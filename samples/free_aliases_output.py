"""Aliased output: when nothing is selected it returns `tokens` itself as `corrupted`.

Which memory an output shares is seen only inside the student's process: not graded (24 / 24);
Validate's visible check tells the student, in their own kernel.
"""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "    # 2. Labels:",
                "    if not selected.any():  # nothing to corrupt, so hand back the input\n"
                "        return tokens, torch.full_like(tokens, ignore_index)\n"
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
