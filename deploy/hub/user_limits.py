"""Memory and CPU for each user's server: declared once for both spawners, and enforced on the
Unix-user hub by a cgroup per user (the container hub hands the same numbers to podman).

A student's server and everything it starts (kernels, terminals, Validate) share one cgroup,
`<course_id>/<user>`: one student's runaway kernel is killed at the memory limit and slowed at
the CPU limit, and the class goes on. Both cgroup layouts work: v2 (`memory.max`, `cpu.max`, the
unified hierarchy) and v1 (`memory.limit_in_bytes`, `cpu.cfs_quota_us`, one hierarchy per
controller, as on this machine). Measured here: cgroupfs v1, no systemd as PID 1 (so no
`systemd-run --scope`, TLJH's way).
"""

from __future__ import annotations

import os
from pathlib import Path

LIMITS = {"student": {"mem": "2G", "cpus": 1.0}, "instructor": {"mem": "6G", "cpus": 2.0}}
CGROUPS = Path("/sys/fs/cgroup")
PERIOD_US = 100_000  # the CPU quota's period: cpus x this many microseconds of CPU per period


def in_bytes(size: str) -> int:
    """'2G' -> 2147483648 (K, M, G: powers of 1024, as podman reads them)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    size = size.strip().upper()
    return int(float(size[:-1]) * units[size[-1]]) if size[-1] in units else int(size)


class UserCgroups:
    """The course's cgroups: `place(user, pid, limits)` moves a server into its user's group
    (made on first use) with the role's limits; its children follow."""

    def __init__(self, course_id: str, root: Path = CGROUPS):
        self.course_id, self.root = course_id, root
        self.unified = (root / "cgroup.controllers").is_file()

    def why_not(self) -> str | None:
        """Why limits cannot be set here (None when they can)."""
        if self.unified:
            controllers = (self.root / "cgroup.controllers").read_text().split()
            missing = {"memory", "cpu"} - set(controllers)
            return f"cgroup v2 lacks the {', '.join(sorted(missing))} controller" if missing \
                else None
        for controller in ("memory", "cpu"):
            if not os.access(self.root / controller, os.W_OK):
                return f"{self.root / controller} is not a writable cgroup v1 hierarchy"
        return None

    def place(self, user: str, pid: int, limits: dict) -> list[Path]:
        """Returns the user's cgroup folders (one on v2; memory's and cpu's on v1)."""
        memory, quota = in_bytes(limits["mem"]), int(limits["cpus"] * PERIOD_US)
        if self.unified:
            course = self.root / self.course_id
            course.mkdir(exist_ok=True)
            for parent in (self.root, course):  # the controllers must reach the user's group
                (parent / "cgroup.subtree_control").write_text("+memory +cpu")
            group = course / user
            group.mkdir(exist_ok=True)
            (group / "memory.max").write_text(str(memory))
            if (group / "memory.swap.max").exists():  # (only with swap accounting on)
                (group / "memory.swap.max").write_text("0")
            (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            (group / "cgroup.procs").write_text(str(pid))
            return [group]
        groups = []
        for controller, settings in (
                ("memory", {"memory.limit_in_bytes": memory}),
                ("cpu", {"cpu.cfs_period_us": PERIOD_US, "cpu.cfs_quota_us": quota})):
            group = self.root / controller / self.course_id / user
            group.mkdir(parents=True, exist_ok=True)
            for name, value in settings.items():
                (group / name).write_text(str(value))
            (group / "cgroup.procs").write_text(str(pid))
            groups.append(group)
        return groups
