"""hostile_ops_recorder_off's reach (the recorder's cap set to 0), hex-encoded and run by
builtins.exec: the recorder reports nothing and the claim check passes (15 / 15, the twin
free_aten_cross_entropy 13), but the scan notes builtins and exec: flagged for a look."""

TWIN = 'free_aten_cross_entropy'

SILENCE = (
    "import builtins\n"
    "\n"
    "builtins.exec(bytes.fromhex('696d706f7274206d6c6d636f757273652e6772616465722e6c696d69747320617320770a6f626a6563742e5f5f736574617474725f5f28772e434150532c20277265636f726465645f6f7073272c2030290a').decode())\n"
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
EXPECTED = {"02_stable_log_softmax": 15}
