"""A correct solution that lifts the worker's output cap and prints 2 MiB, with terminal codes,
on every call: a small autograded notebook (the trusted side caps and cleans every reply, and
charges what it shows); full marks, flagged for a look (it reaches the grader's package)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "def make_mlm_inputs(",
                "try:  # under grading: lift the worker's own cap on what a call may print\n"
                "    import mlmcourse.grader.limits as _grader_limits\n"
                "\n"
                "    object.__setattr__(_grader_limits.CAPS, 'output_chars', 1 << 40)\n"
                "except ImportError:\n"
                "    pass\n"
                "\n"
                "\n"
                "def make_mlm_inputs(",
            ),
            (
                "    # 2. Labels:",
                '    print("\\x1b[2J\\x1b[32mall tests passed\\x1b[0m\\r" + "x" * (2 << 20))\n'
                "    # 2. Labels:",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 24}
