"""A class of one's own, apart from the sample students (`make new-class`).

The repository is the course's own course folder: its `submitted/`, `autograded/` and
`feedback/` hold the sample students that `make build` grades, so grading a class there mixes
them in. A new class is a folder with the instructor notebooks (`source/`), the course's
`nbgrader_config.py` (the same grader, feedback and export) and a gradebook holding the roster:
the students who were expected, so the report lists those who handed nothing in. The folder is
its owner's alone (mode 0700, whatever the umask): it will hold submissions and grades.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mlmcourse.course.layout import assignments, private_folder
from mlmcourse.course.roster import read_roster


class ClassExists(FileExistsError):
    """The folder is already a course folder: a new class would overwrite its grades."""


def new_class(course: Path, folder: Path, roster: Path | None = None) -> list[str]:
    """Make `folder` a class of the course at `course` (the repository); returns the students
    of the roster put in its gradebook."""
    folder = folder.resolve()
    if (folder / "nbgrader_config.py").exists() or (folder / "gradebook.db").exists():
        raise ClassExists(f"{folder} is already a class (its nbgrader_config.py or gradebook.db "
                          f"is there); grade it with `make grade CLASS={folder}`")
    if folder == course.resolve() or course.resolve() in folder.parents:
        raise ValueError(f"{folder} is inside the course's repository: choose a folder outside "
                         "it (e.g. ~/my_class), where the samples cannot mix in")
    members = read_roster(roster) if roster else []
    private_folder(folder)
    for assignment in assignments(course):  # every assignment of source/
        shutil.copytree(course / "source" / assignment, folder / "source" / assignment,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    shutil.copy2(course / "nbgrader_config.py", folder / "nbgrader_config.py")
    return import_students(folder, members)


def import_students(folder: Path, members) -> list[str]:
    """The roster's students into the class's gradebook (TAs grade; they are not graded)."""
    from mlmcourse.grader.config import GradingConfig

    students = [m for m in members if m.role == "student"]
    with GradingConfig.load(folder).gradebook() as gradebook:
        for member in students:
            gradebook.update_or_create_student(
                member.id, first_name=member.first_name, last_name=member.last_name or member.id,
                email=member.email or None)
    return [m.id for m in students]
