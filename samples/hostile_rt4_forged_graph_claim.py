"""Returns wrong_detached_zero's detached torch.tensor(0.) and, through the course package reached
by assignment (`_course = mlmcourse`), replaces the student process's requires-grad / grad-fn
readers and its autograd.grad so the zero is answered as connected and its backward answers zeros.
No point rests on the report any more: the check is the backward through the trusted proxy and the
gradients it returns, and those are right (zeros of the logits' shape), as a correct connected
zero's are. So the reach no longer forges a claim but the answer itself, and it is graded as the
answer it gives: 31 / 31, as the reference, the code it behaves as under grading (in the student's
own kernel the backward fails, which Validate's visible check says; writing `logits.sum() * 0`
costs less than this reach). The scan notes the grader's package for the TA."""

# The same answers without the reach: a zero connected to the graph (the reference).
TWIN = "reference"
FORGE = (
    "import mlmcourse.teaching.checks\n"
    "\n"
    "_course = mlmcourse\n"
    "try:  # under grading: a detached zero is reported as connected, its gradient as zeros\n"
    "    _w = _course.grader.sandboxed.student_side\n"
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
