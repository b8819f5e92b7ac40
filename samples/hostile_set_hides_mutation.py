"""Rewrites the caller's labels in place with Tensor.set_ (no byte of the shared memory changes):
the worker reports every input whose storage, offset, sizes or strides changed, and the caller's
tensor changes as it would in the student's own kernel: every _call_unchanged check fails, 5 / 15
(found by the scan's first red team)."""

BASE = "reference"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [
            (
                "    safe_labels = torch.where(selected, labels, torch.zeros_like(labels))  # never gather ignore_index\n",  # noqa: E501
                "    labels.set_(torch.where(selected, labels, torch.zeros_like(labels)))  # sanitise in place\n"  # noqa: E501
                "    safe_labels = labels\n",
            ),
        ],
    },
}
EXPECTED = {"02_stable_log_softmax": 5}
