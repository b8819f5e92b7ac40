"""Sets the worker's recorder cap to 0 through the course package reached by an assignment
(`_course = mlmcourse` after importing the allowed mlmcourse.teaching), then calls the library
losses through torch.ops.aten.
Now: assignments are followed and `grader` is noted on any object: flagged for a look (15 / 15
and 31 / 31; twin 13 and 30)."""

from _library_loss import aten_loss_patches

TWIN = "free_aten_cross_entropy"
SILENCE = (
    "import mlmcourse.teaching.checks\n"
    "\n"
    "_course = mlmcourse\n"
    "try:  # under grading: the worker reports no operator at all\n"
    "    object.__setattr__(_course.grader.limits.CAPS, 'recorded_ops', 0)\n"
    "except AttributeError:\n"
    "    pass\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = aten_loss_patches(SILENCE)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
