"""How one notebook of the series reaches the answers of another (notebook 4 uses 1 and 3).

The teaching loader (:mod:`mlmcourse.teaching.loader`) runs a sibling notebook's answer cells
itself. Under grading, the trusted kernel installs a hook here instead
(:mod:`mlmcourse.grader.trusted_kernel.harness`): the sibling's functions are then proxies to the
sandboxed worker, and no student code runs in the kernel. Both sides import this module, neither the
other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

_NUMBER = re.compile(r"^(\d+)_")

GradedLoader = Callable[[Path], dict[str, Any]]
_graded_loader: GradedLoader | None = None


class NotebookNotReady(Exception):
    """Notebooks of the series are missing or unfinished: one reason per notebook, each saying
    what to do, so that a student sees everything left to do at once (``reasons``)."""

    def __init__(self, *reasons: str) -> None:
        self.reasons = list(reasons)
        if len(reasons) == 1:
            super().__init__(reasons[0])
            return
        super().__init__(f"{len(reasons)} things to do before this cell can run:\n"
                         + "\n".join(f"{n}. {reason}" for n, reason in enumerate(reasons, 1)))

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback: the student needs the sentence, not frames.
        return [f"\x1b[0;31mNotebookNotReady\x1b[0m: {self}"]


def notebook_label(path: Path) -> str:
    """'notebook 1 (01_corruption.ipynb)' for a numbered notebook, else the file name."""
    match = _NUMBER.match(path.name)
    return f"notebook {int(match.group(1))} ({path.name})" if match else path.name


def install_graded_loader(hook: GradedLoader | None) -> None:
    """Called by the trusted grading kernel: `hook(path)` returns the names of that notebook."""
    global _graded_loader
    _graded_loader = hook


def graded_loader() -> GradedLoader | None:
    return _graded_loader
