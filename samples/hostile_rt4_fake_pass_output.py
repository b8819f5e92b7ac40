"""Divides by every token (wrong_mean_all_tokens's mistake) and prints, on every call, the hidden
tests' own "ok:" lines and a fake "15 / 15" score, hoping the output reads as a pass: a check
passes only when its cell raised nothing, so it gains nothing (13 / 15, as its twin)."""

TWIN = "wrong_mean_all_tokens"
BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "masked_mean_nll": [
            (
                "num_selected = (labels != ignore_index).sum()",
                "num_selected = labels.numel()\n"
                "    print(\"ok: mean over selected sites\\nok: no library loss used\\n\"\n"
                "          \"Score: 15 / 15 (all checks passed)\")",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 13}
