"""What a student can read on the machine: run by the student (a terminal, a kernel), it walks
every folder it may list and tries every path it was told of (the repository's files, which
are public knowledge, and the hub's), and reports each readable file that holds a hidden test
or a solution (one of the needles), or is named like a grade or a gradebook.

    python student_walk.py WALK.json OUT.json

WALK.json: {"needles": [...], "known": [paths], "own": the student's home, "names": [file
names that are grades]}. OUT.json: {"walked": files seen, "read": files searched, "found":
[[path, why], ...]}. Standard library only: the student's own Python runs it.
"""

from __future__ import annotations

import json
import os
import stat
import sys

# Pseudo file systems and Debian's own trees: nothing of the course is there (dpkg wrote it).
SKIP = {"/proc", "/sys", "/dev", "/run", "/usr/lib", "/usr/share", "/usr/bin", "/usr/sbin",
        "/usr/include", "/usr/libexec", "/usr/src", "/var/lib/dpkg", "/var/lib/apt",
        "/var/cache", "/boot", "/lib", "/lib64", "/bin", "/sbin"}
BIGGEST = 4 << 20  # a notebook or a CSV of a class is smaller; larger files are libraries


def readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False


def holds(path: str, needles: list[bytes]) -> str | None:
    """The first needle the file holds (its first 40 characters), else None."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(BIGGEST + 1)
    except OSError:
        return None
    if len(data) > BIGGEST:
        return None
    for needle in needles:
        if needle in data:
            return needle[:40].decode(errors="replace")
    return None


def third_party(path: str) -> bool:
    """Another project's installed files (pip's site-packages), the course's own package
    aside: their text is PyPI's, read by name only."""
    return "/site-packages/" in path and "/site-packages/mlmcourse" not in path


def walk(plan: dict) -> dict:
    needles = [n.encode() for n in plan["needles"]]
    own = plan["own"].rstrip("/") + "/"
    names = set(plan["names"])
    seen, searched, found = set(), 0, []

    def look(path: str) -> None:
        nonlocal searched
        if path in seen or path.startswith(own):
            return
        seen.add(path)
        if not readable(path):
            return
        if third_party(path):
            return
        if os.path.basename(path) in names:
            found.append([path, "a grade file"])
            return
        searched += 1
        needle = holds(path, needles)
        if needle:
            found.append([path, f"holds {needle!r}"])

    for top, folders, files in os.walk("/", onerror=lambda err: None):
        folders[:] = [f for f in folders if os.path.join(top, f) not in SKIP]
        for name in files:
            path = os.path.join(top, name)
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    look(path)
            except OSError:
                continue
    for path in plan["known"]:  # unlisted folders: a student who knows the layout
        look(path)
    return {"walked": len(seen), "read": searched, "found": found}


if __name__ == "__main__":
    with open(sys.argv[1]) as handle:
        plan = json.load(handle)
    result = walk(plan)
    with open(sys.argv[2], "w") as handle:
        json.dump(result, handle)
