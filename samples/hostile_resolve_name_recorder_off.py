"""hostile_ops_recorder_off, reaching the worker's caps through pkgutil.resolve_name and a split
string: the claim checks pass (15 / 15 and 31 / 31, the twin free_aten_cross_entropy 13 and
30); importing pkgutil is noted: flagged for a look, the points at stake marked."""

from _library_loss import aten_loss_patches

TWIN = 'free_aten_cross_entropy'

SILENCE = (
    "import pkgutil\n"
    "try:  # under grading: the worker reports no operator at all\n"
    "    _caps = pkgutil.resolve_name('mlm' + 'course.grader.limits:CAPS')\n"
    "    object.__setattr__(_caps, 'recorded_ops', 0)\n"
    "except ImportError:\n"
    "    pass\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = aten_loss_patches(SILENCE)
EXPECTED = {"02_stable_log_softmax": 15, "03_empty_mask_and_gradient": 31}
