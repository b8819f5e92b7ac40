"""Returns a 16 MB buffer in place of corrupted: each check that reads corrupted fails, and its
message shows the value's size and first entries, never 2 million numbers (the autograded
notebook, the feedback page and the class report stay under 1 MB; they once grew to 108, 69 and
36 MB). The input checks still pass: 11 / 24."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            ("    return corrupted, labels",
             "    trace = torch.zeros(2_000_000, dtype=torch.int64)  # 16 MB, for debugging\n"
             "    trace[: corrupted.numel()] = corrupted.reshape(-1).cpu()\n"
             "    return trace, labels"),
        ],
    },
}
EXPECTED = {"01_corruption": 11}
