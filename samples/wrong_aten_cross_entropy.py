"""Calls the library loss under another name: torch.ops.aten._log_softmax, cross_entropy_loss."""

from _library_loss import aten_loss_patches

BASE = "reference"
PATCHES = aten_loss_patches()
EXPECTED = {"02_stable_log_softmax": 13, "03_empty_mask_and_gradient": 30}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "02_stable_log_softmax": "ran aten::_log_softmax",
    "03_empty_mask_and_gradient": "ran aten::_log_softmax",
}
