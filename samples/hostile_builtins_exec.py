"""hostile_ops_recorder_off's reach, hex-encoded and run by builtins.exec: importing builtins is
no answer's business (the notebooks say so), so the scan finds it and the check resting on the
recorder earns nothing: 13 / 15, as the twin wrong_aten_cross_entropy."""

TWIN = 'wrong_aten_cross_entropy'

SILENCE = (
    "import builtins\n"
    "\n"
    "builtins.exec(bytes.fromhex('696d706f7274206d6c6d636f757273652e6772616465722e776f726b657220617320770a772e4d41585f5245434f524445445f4f5053203d20300a').decode())\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            ("def target_log_probs(", SILENCE + "def target_log_probs("),
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = torch.ops.aten._log_softmax(logits, -1, False)"
                ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 13}
