"""What one student's code may use while one notebook is graded.

`Limits` is made once (the engine's caller, nbgrader's configuration) and travels to the
processes that enforce it as JSON, in the ``MLM_LIMITS`` environment variable of the trusted
kernel and in the worker requests the kernel sends the zygote. `Limits.to_json` and
`Limits.from_json` are the only writer and reader of that text, so every process sees the same
values, validated, with the defaults defined here and nowhere else.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

GIB = 1 << 30

# The trusted kernel runs the course's tests (and holds copies of what the student's code
# returned), so it gets this many times the memory the student's code may allocate.
TRUSTED_KERNEL_MEMORY_FACTOR = 4


@dataclass(frozen=True)
class Limits:
    """Limits for one notebook. The first three are the ones the TA usually sets.

    cell_timeout_s: wall-clock seconds one cell of the trusted kernel may take.
    memory_bytes:   memory the student's code may allocate (RLIMIT_DATA beyond the worker's
                    inherited torch); the trusted kernel gets `trusted_kernel_memory_bytes`.
    cpu_seconds:    CPU seconds one worker process may use (RLIMIT_CPU; a restart renews it).
    call_timeout_s: wall-clock seconds one call of a student's function may take.
    student_time_s: wall-clock seconds the student's code may use in one notebook in all; past
                    it, further calls fail at once (a hang costs at most this much).
    worker_cpus:    CPUs' worth of time a worker and every process it starts may use at once
                    (a cgroup's CPU quota, where the machine lets the grader make cgroups): one
                    student's spinning children cannot slow another student down.
    worker_tasks:   processes and threads a worker and its children may have at once (the
                    cgroup's pids.max; RLIMIT_NPROC of the worker's own user in the fallback).
    """

    cell_timeout_s: float = 120.0
    memory_bytes: int = 2 * GIB
    cpu_seconds: int = 120
    call_timeout_s: float = 30.0
    student_time_s: float = 120.0
    worker_cpus: float = 1.0
    worker_tasks: int = 64

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
    def worker_group_memory_bytes(self) -> int:
        """The memory of a worker and all its children together (the cgroup's limit: a second
        line behind RLIMIT_DATA, which each process gets anew): twice `memory_bytes`, room
        for the pages of the inherited torch that a worker copies when it writes to them."""
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
