"""Calls the library loss under another name: torch.ops.aten._log_softmax, cross_entropy_loss.

A correct library call is graded as what it returns: full marks (no check can tell it from a
loss written by hand); Validate's visible check tells the student and the scan notes it for the TA.
"""

from _library_loss import aten_loss_patches

BASE = "reference"
PATCHES = aten_loss_patches()
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
