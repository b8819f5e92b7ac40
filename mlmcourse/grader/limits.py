"""What one student's code may use while one notebook is graded."""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """Limits for one notebook. The first three are the ones the TA usually sets.

    cell_timeout_s: wall-clock seconds one cell of the trusted kernel may take.
    memory_bytes:   memory the student's code may allocate (RLIMIT_DATA beyond the worker's
                    inherited torch); the trusted kernel gets four times as much.
    cpu_seconds:    CPU seconds one worker process may use (RLIMIT_CPU; a restart renews it).
    call_timeout_s: wall-clock seconds one call of a student's function may take.
    student_time_s: wall-clock seconds the student's code may use in one notebook in all; past
                    it, further calls fail at once (a hang costs at most this much).
    """

    cell_timeout_s: float = 120.0
    memory_bytes: int = 2 * GIB
    cpu_seconds: int = 120
    call_timeout_s: float = 30.0
    student_time_s: float = 120.0

    def for_worker(self) -> dict:
        return {
            "memory_bytes": int(self.memory_bytes),
            "cpu_seconds": int(self.cpu_seconds),
            "call_timeout_s": float(self.call_timeout_s),
            "student_time_s": float(self.student_time_s),
        }
