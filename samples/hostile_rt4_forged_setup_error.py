"""Leaves notebook 2 blank but rewrites the student process's READY reply (its send_msg, reached
as `_course.grader.sandboxed.student_side` after `_course = mlmcourse`) to say the instructor's
setup cell failed in the sandbox.
Now: the setup cell runs alone before any student code, so its report is the grader's own; the
forged one is ignored: graded as the blank it is (0 / 15), status ok, flagged for the package it
reaches."""

FORGE = (
    "import mlmcourse.teaching.checks\n"
    "\n"
    "_course = mlmcourse\n"
    "try:\n"
    "    _worker = _course.grader.sandboxed.student_side\n"
    "    _send = _worker.send_msg\n"
    "\n"
    "    def _forged(sock, header, blob=b\"\"):\n"
    "        if header.get(\"op\") == \"ready\":\n"
    "            for cell in header[\"cells\"]:\n"
    "                if cell[\"grade_id\"] == \"setup\":\n"
    "                    cell[\"error\"] = {\"name\": \"ImportError\", \"message\": \"libgomp.so.1: cannot open shared object file\",\n"  # noqa: E501
    "                                     \"mro\": [[\"builtins\", \"ImportError\"]], \"traceback\": \"\"}\n"  # noqa: E501
    "        return _send(sock, header, blob)\n"
    "\n"
    "    _worker.send_msg = _forged\n"
    "except AttributeError:\n"
    "    pass\n"
    "\n"
    "\n"
)
BASE = "release"
PATCHES = {
    "02_stable_log_softmax": {
        "target_log_probs": [("def target_log_probs(", FORGE + "def target_log_probs(")],
    },
}
EXPECTED = {"02_stable_log_softmax": 0}
