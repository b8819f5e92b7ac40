"""The class as the school's roster gives it: one CSV file, read the same way by `make
new-class` (a class on one machine) and by the hub's `hubctl.py` (accounts, groups, gradebook).

Columns: id, first_name, last_name, email (nbgrader's `db student import` columns) and role
(`student`, the default, or `ta`).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

ROLES = ("student", "ta")


class RosterError(ValueError):
    """The roster cannot be read as a class; the message names the file and line."""


@dataclass(frozen=True)
class Member:
    """One line of the roster: a user name and what the gradebook shows of them."""

    id: str
    role: str = "student"  # or "ta"
    first_name: str = ""
    last_name: str = ""
    email: str = ""


def read_roster(path: Path) -> list[Member]:
    """Every member of the roster, in its order; refuses a line without an id, an unknown role
    and an id that appears twice."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    members = []
    for number, row in enumerate(rows, start=2):
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
        role = row.get("role") or "student"
        if not row.get("id"):
            raise RosterError(f"{path}, line {number}: no id (columns: id, first_name, "
                              "last_name, email, role)")
        if role not in ROLES:
            raise RosterError(f"{path}, line {number}: role {role!r}; use one of "
                              f"{', '.join(ROLES)}")
        members.append(Member(row["id"], role, row.get("first_name", ""),
                              row.get("last_name", ""), row.get("email", "")))
    ids = [m.id for m in members]
    if len(set(ids)) != len(ids):
        raise RosterError(f"{path}: an id appears twice")
    return members
