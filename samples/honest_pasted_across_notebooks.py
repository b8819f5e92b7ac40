"""Pasted notebook 2's answer cell into notebook 3 (to have target_log_probs at hand there).

The pasted cell keeps its nbgrader metadata: notebook 3 holds an answer cell with the grade_id
`target_log_probs`, which notebook 3 does not have. It runs as Run All ran it and nothing is
graded from it: full marks on every way in (plain `nbgrader autograde` once failed the whole
assignment on it: 0).
"""

import nbformat

BASE = "reference"
EXPECTED = {"03_empty_mask_and_gradient": 31}

PASTED = '''def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    selected = labels != ignore_index
    safe_labels = torch.where(selected, labels, torch.zeros_like(labels))
    target_logits = logits.gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)
    log_probs = target_logits - torch.logsumexp(logits, dim=-1)
    return torch.where(selected, log_probs, torch.zeros_like(log_probs))'''


def transform(name, nb):
    """Notebook 3 gains, after its setup cell, notebook 2's answer cell with its metadata."""
    if name != "03_empty_mask_and_gradient":
        return
    [index] = [i for i, cell in enumerate(nb.cells)
               if cell.metadata.get("nbgrader", {}).get("grade_id") == "setup"]
    pasted = nbformat.v4.new_code_cell(PASTED, metadata={"nbgrader": {
        "grade": False, "grade_id": "target_log_probs", "locked": False, "schema_version": 3,
        "solution": True, "task": False}})
    pasted.id = "target-log-probs-pasted"
    nb.cells.insert(index + 1, pasted)
