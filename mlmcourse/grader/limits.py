"""What one student's code may use while one notebook is graded.

`Limits` is made once (the engine's caller, nbgrader's configuration) and travels to the
processes that enforce it as JSON, in the ``MLM_LIMITS`` environment variable of the trusted
kernel and in the student process requests the kernel sends the zygote. `Limits.to_json` and
`Limits.from_json` are the only writer and reader of that text, so every process sees the same
values, validated, with the defaults defined here and nowhere else.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

GIB = 1 << 30

# The trusted kernel runs the course's tests (and holds copies of what the student's code
# returned), so it gets this many times the memory the student's code may allocate.
TRUSTED_KERNEL_MEMORY_FACTOR = 4


def _limit(default, help: str):
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Limits:
    """Limits for one notebook: the one declaration of each (its default and what it means).
    A TA sets them as `c.Grading.<name>` in nbgrader_config.py (`grader.config.Grading` makes
    one setting of each field here); every way in reads them from there."""

    cell_timeout_s: float = _limit(120.0, "Seconds one cell of the trusted kernel may run.")
    memory_bytes: int = _limit(
        2 * GIB, "Memory the student's code may allocate (RLIMIT_DATA beyond the student process's "
        "inherited torch); the trusted kernel gets TRUSTED_KERNEL_MEMORY_FACTOR times it.")
    cpu_seconds: int = _limit(
        120, "CPU seconds one student process may use (RLIMIT_CPU; a restart renews it).")
    call_timeout_s: float = _limit(30.0, "Seconds one call of a student's function may take.")
    student_time_s: float = _limit(
        120.0, "Seconds the student's code may use in one notebook in all; past it, further "
        "calls fail at once (a hang costs at most this much).")
    student_cpus: float = _limit(
        1.0, "CPUs' worth of time a student process and every process it starts may use at once (a "
        "cgroup's CPU quota, where the grader can make cgroups).")
    student_tasks: int = _limit(
        64, "Processes and threads a student process and its children may have at once (the "
        "cgroup's pids.max; RLIMIT_NPROC of the student process's own user in the fallback).")

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            whole = spec.type == "int"
            allowed = (int,) if whole else (int, float)
            if isinstance(value, bool) or not isinstance(value, allowed):
                kind = "a whole number" if whole else "a number"
                raise ValueError(f"Limits.{spec.name} must be {kind}, not {value!r}")
            if not value > 0:
                raise ValueError(f"Limits.{spec.name} must be positive, not {value!r}")
            if not whole:
                object.__setattr__(self, spec.name, float(value))

    @property
    def trusted_kernel_memory_bytes(self) -> int:
        """The memory limit of the trusted kernel that runs the tests."""
        return TRUSTED_KERNEL_MEMORY_FACTOR * self.memory_bytes

    @property
    def student_group_memory_bytes(self) -> int:
        """The memory of a student process and all its children together (the cgroup's limit: a
        second line behind RLIMIT_DATA, which each process gets anew): twice `memory_bytes`, room
        for the pages of the inherited torch that a student process copies when it writes to
        them."""
        return 2 * self.memory_bytes

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Limits:
        """The limits `to_json` wrote; a field left out takes its default, an unknown one is an
        error (a typo must not silently grade with the default)."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"limits must be a JSON object, not {text[:80]!r}")
        unknown = set(data) - {spec.name for spec in fields(cls)}
        if unknown:
            raise ValueError(f"unknown limits: {', '.join(sorted(unknown))}")
        return cls(**data)


@dataclass(frozen=True)
class Caps:
    """How much of what the student's process sends the trusted side keeps and shows: the one
    declaration of each cap (fixed for the course; the output caps bound what a TA's pages and
    a student's feedback hold)."""

    output_chars: int = 20_000  # the student's stdout / stderr kept per cell or call
    notebook_output_chars: int = 200_000  # the student's output shown in one notebook, in all
    error_headline_chars: int = 200  # of an error's message, shown even past that budget
    feedback_output_chars: int = 4_000  # of one text output, in the feedback page
    # What the autograded notebook keeps of the trusted kernel's text outputs (a test's message,
    # a print, a traceback line), which a test may build from whatever a student's function
    # returned: each text, and all of one notebook's (past that, each keeps its headline).
    trusted_text_chars: int = 20_000
    trusted_notebook_chars: int = 400_000
    message_chars: int = 2_000  # of a check's message in the verdict (the feedback, the report)
    request_header_bytes: int = 16 << 20  # a request (the cells of every notebook travel in one)
    reply_header_bytes: int = 4 << 20  # a student process's reply header (honest: far smaller)
    notebook_bytes: int = 32 << 20  # a submitted notebook file: a larger one is not read
    scanned_chars: int = 1_000_000  # of a notebook's answer cells, read by the trusted scan
    scan_seconds: float = 10.0  # the trusted scan of one notebook (charged to its time cap)


CAPS = Caps()
