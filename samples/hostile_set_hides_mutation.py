"""Rewrites the caller's labels in place with Tensor.set_ (no byte of the shared memory changes):
only the student's process sees an input repointed, so it is not graded (taking that process's
word for it paid whoever hid it): 15 / 15."""

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
EXPECTED = {"02_stable_log_softmax": 15}
