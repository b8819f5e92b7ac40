"""A correct loss whose worker relabels each backward reply as a worker's start ("ready") with
20,000 characters of output: once printed and never charged; now a reply its request does not
allow, so each backward fails as a crash, nothing of it is shown, and the reach into the grader
costs the checks resting on the worker's claims: 14 / 31 (every check that runs a backward,
B1's transposed logits and B5's custom ignore_index among them)."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            (
                "def masked_lm_loss(",
                "def _relabel_backward_replies():\n"
                '    """Under grading: every backward reply goes out as "ready", padded."""\n'
                "    import gc\n"
                "\n"
                "    found = [o for o in gc.get_objects() if type(o).__name__ == '_StudentSide']\n"
                "    if not found:\n"
                "        return\n"
                "    worker = found[0]\n"
                "    send_reply = worker.reply\n"
                "\n"
                '    def reply(header, blob=b""):\n'
                '        if header.get("op") == "grads":\n'
                '            header = dict(header, op="ready", stdout="x" * 20_000, cells=[],\n'
                "                          names={})\n"
                "        send_reply(header, blob)\n"
                "\n"
                "    worker.reply = reply\n"
                "\n"
                "\n"
                "_relabel_backward_replies()\n"
                "\n"
                "\n"
                "def masked_lm_loss(",
            ),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 14}
