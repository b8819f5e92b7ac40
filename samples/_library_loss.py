"""What the recorder samples share (not a sample: its name starts with _): the library
log-softmax and cross-entropy in notebooks 2 and 3, called through a `_hidden` helper that the
sample's HELPER text defines (a plain call in the twin, a call with the recorder silenced in the
hostile samples), or by their dispatcher names (torch.ops.aten), after a text that silences the
recorder or after nothing."""


def library_loss_patches(helper: str) -> dict:
    """PATCHES of notebooks 2 and 3: `helper` before the answer, the library losses through it."""
    return {
    "02_stable_log_softmax": {
        "target_log_probs": [
            ("def target_log_probs(", helper + "def target_log_probs("),
            (
                "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                "log_probs = _hidden(torch.log_softmax, logits, dim=-1)"
                ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
            ),
        ],
    },
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("class MaskedLMLoss(", helper + "class MaskedLMLoss("),
            (
                "return (torch.log(sums) - shifted_targets).sum() / ctx.count",
                "selected_rows = logits.detach().reshape(-1, V).index_select(0, sites)\n"
                "        return _hidden(F.cross_entropy, "
                'selected_rows, targets, reduction="sum") / ctx.count',
            ),
        ],
    },
}


def aten_loss_patches(before: str = "") -> dict:
    """PATCHES of notebooks 2 and 3: the library losses by their dispatcher names, `before` (a
    reach into the recorder, or nothing) ahead of each answer."""
    first = ({"target_log_probs": [("def target_log_probs(", before + "def target_log_probs(")],
              "masked_lm_loss": [("def masked_lm_loss(", before + "def masked_lm_loss(")]}
             if before else {"target_log_probs": [], "masked_lm_loss": []})
    return {
        "02_stable_log_softmax": {
            "target_log_probs": [
                *first["target_log_probs"],
                (
                    "log_probs = target_logits - torch.logsumexp(logits, dim=-1)",
                    "log_probs = torch.ops.aten._log_softmax(logits, -1, False)"
                    ".gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)",
                ),
            ],
        },
        "03_empty_mask_and_gradient": {
            "masked_lm_loss": [
                *first["masked_lm_loss"],
                (
                    "return MaskedLMLoss.apply(logits, labels, ignore_index)",
                    "count = max(int((labels != ignore_index).sum()), 1)\n"
                    "    summed = torch.ops.aten.cross_entropy_loss(  # reduction 2: the sum\n"
                    "        logits.reshape(-1, V), labels.reshape(-1), None, 2, ignore_index)\n"
                    "    return summed / count",
                ),
            ],
        },
    }
