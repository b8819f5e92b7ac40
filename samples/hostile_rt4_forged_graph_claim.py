"""Returns wrong_detached_zero's detached torch.tensor(0.) and, through the course package reached
by assignment (`_course = mlmcourse`), replaces the worker's requires-grad / grad-fn readers and
its autograd.grad so the zero is reported connected and its backward answers zeros.
Now: the scan reads the assignment and the package's internals: flagged for a look, the claim
checks' points marked (31 / 31 until a TA decides; twin wrong_detached_zero 27)."""

TWIN = "wrong_detached_zero"
FORGE = (
    "import mlmcourse.teaching.checks\n"
    "\n"
    "_course = mlmcourse\n"
    "try:  # under grading: a detached zero is reported as connected, its gradient as zeros\n"
    "    _w = _course.grader.student_side\n"
    "    _requires, _grad_fn, _grad = _w._REQUIRES_GRAD, _w._GRAD_FN, _w._AUTOGRAD_GRAD\n"
    "\n"
    "    def _detached_zero(t):\n"
    "        return t.dim() == 0 and not _requires(t) and float(t) == 0.0\n"
    "\n"
    "    def _forged_grad(outputs, inputs, grads, **kwargs):\n"
    "        if any(not _requires(o) for o in outputs):\n"
    "            return tuple(torch.zeros_like(i) for i in inputs)\n"
    "        return _grad(outputs, inputs, grads, **kwargs)\n"
    "\n"
    "    _w._REQUIRES_GRAD = lambda t: _requires(t) or _detached_zero(t)\n"
    "    _w._GRAD_FN = lambda t: _grad_fn(t) or (\"connected\" if _detached_zero(t) else None)\n"
    "    _w._AUTOGRAD_GRAD = _forged_grad\n"
    "except AttributeError:\n"
    "    pass\n"
    "\n"
    "\n"
)
BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss": [
            ("def masked_lm_loss(", FORGE + "def masked_lm_loss("),
            (
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
                "    if not (labels != ignore_index).any():\n"
                "        return torch.tensor(0.0)\n"
                "    return MaskedLMLoss.apply(logits, labels, ignore_index)",
            ),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 31}
