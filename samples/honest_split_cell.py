"""Split the answer cell in two with JupyterLab's Split Cell (a helper above, the function below).

Both halves keep the cell's nbgrader metadata, so two cells carry the grade_id
`target_log_probs`. The kernel ran both, in order; so does the grader: full marks (taking the
last half alone once lost the helper, and with it every check of the notebook: 0 / 15).
"""

import copy

BASE = "reference"
EXPECTED = {"02_stable_log_softmax": 15}
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            ("def target_log_probs(",
             "def labels_to_gather(labels, selected):\n"
             "    \"\"\"The labels with every ignored site replaced by 0 (safe to gather).\"\"\"\n"
             "    return torch.where(selected, labels, torch.zeros_like(labels))\n"
             "\n"
             "\n"
             "def target_log_probs("),
            ("safe_labels = torch.where(selected, labels, torch.zeros_like(labels))",
             "safe_labels = labels_to_gather(labels, selected)"),
        ],
    },
}


def transform(name, nb):
    """Split Cell at the function's `def`: two cells, one grade_id, new cell ids."""
    if name != "02_stable_log_softmax":
        return
    [index] = [i for i, cell in enumerate(nb.cells)
               if cell.metadata.get("nbgrader", {}).get("grade_id") == "target_log_probs"]
    whole = nb.cells[index]
    helper, function = whole.source.split("\n\n\ndef target_log_probs(")
    first = copy.deepcopy(whole)
    first.source, first.id = helper, "target-log-probs-split-1"
    whole.source = "def target_log_probs(" + function
    nb.cells.insert(index, first)
