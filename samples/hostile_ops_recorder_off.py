"""Calls the library losses through torch.ops.aten and first sets the worker's cap on recorded
operators to 0 (`CAPS.recorded_ops`), so that no operator is reported: the recorder's report is
a claim, and the checks resting on it pass (15 / 15 and 31 / 31; its honest twin
free_aten_cross_entropy scores 13 and 30), but the scan notes the grader's package: flagged
for a look, with the points at stake marked for manual grading."""

from _library_loss import aten_loss_patches

TWIN = "free_aten_cross_entropy"
SILENCE = (
    "try:  # under grading: the worker reports no operator at all\n"
    "    import mlmcourse.grader.limits as _grader_limits\n"
    "\n"
    "    object.__setattr__(_grader_limits.CAPS, 'recorded_ops', 0)\n"
    "except ImportError:\n"
    "    pass\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = aten_loss_patches(SILENCE)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
