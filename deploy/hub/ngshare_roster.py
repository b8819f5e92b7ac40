"""The class in ngshare's database: who teaches the course (instructor and TAs) and who takes it.

ngshare decides every exchange request by these two lists (a student may fetch the release,
submit as themselves and read their own feedback; staff may release, collect and hand back).
`hubctl.py setup` and `hubctl.py roster` keep them equal to the roster, through ngshare's own
models on its database (the same file the running service uses; SQLite serialises the writes),
so the lists are right before the hub starts and change while it runs, without a restart.
"""

from __future__ import annotations

from collections import namedtuple
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Person:
    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""


def locations(hub: Path) -> tuple[str, str]:
    """ngshare's database URL and file store: the hub's state/ (root only), for the service,
    set-up and roster, and the launches."""
    return f"sqlite:///{hub / 'state' / 'ngshare.sqlite'}", str(hub / "state" / "ngshare-files")


def prepare(db_url: str, storage: str) -> None:
    """ngshare's tables (its own migrations), before the first service start or roster."""
    from ngshare import dbutil

    dbutil.upgrade(db_url, cmd_opts=namedtuple("CmdOpts", ["x"])(
        ["data=true", f"storage={storage}"]))


def apply(db_url: str, course_id: str, staff: list[Person], students: list[Person]) -> dict:
    """Make the course's instructors and students what the lists say (names and e-mail too);
    a student who left loses access (their submissions stay). Returns who was added/removed."""
    with course_session(db_url, course_id) as (db, course):
        change = {"added": [], "removed": []}
        staff_ids, student_ids = {p.id for p in staff}, {p.id for p in students}
        for member in list(course.instructors):
            if member.id not in staff_ids:
                course.instructors.remove(member)
                change["removed"].append(member.id)
        for member in list(course.students):
            if member.id not in student_ids:
                course.students.remove(member)
                change["removed"].append(member.id)
        for people, teaches in ((staff, True), (students, False)):
            for person in people:
                if place(db, course, person, teaches):
                    change["added"].append(person.id)
        db.commit()
        return change


def enrol(db_url: str, course_id: str, person: Person, teaches: bool) -> bool:
    """One person as staff or student of the course, the others left as they are (the hub's
    LTI mode, at each launch: the LMS's roles decide). True if they were not there as that."""
    with course_session(db_url, course_id) as (db, course):
        added = place(db, course, person, teaches)
        db.commit()
        return added


@contextmanager
def course_session(db_url: str, course_id: str):
    """A session on ngshare's database and the course's row (made if missing)."""
    from ngshare.database import Course
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    engine = create_engine(db_url)
    db = sessionmaker(bind=engine)()
    try:
        course = db.query(Course).filter(Course.id == course_id).one_or_none()
        if course is None:
            course = Course(course_id)
            db.add(course)
        yield db, course
    finally:
        db.close()
        engine.dispose()


def place(db, course, person: Person, teaches: bool) -> bool:
    """The person in the course's instructors (teaches) or students, out of the other list
    (a student who became a TA, or the other way), with their names and e-mail."""
    from ngshare.database import InstructorAssociation, StudentAssociation, User

    account = db.query(User).filter(User.id == person.id).one_or_none()
    if account is None:
        account = User(person.id)
        db.add(account)
    members, other = ((course.instructors, course.students) if teaches
                      else (course.students, course.instructors))
    association = InstructorAssociation if teaches else StudentAssociation
    if account in other:
        other.remove(account)
    added = account not in members
    if added:
        members.append(account)
    db.flush()
    entry = association.find(db, account, course)
    entry.first_name, entry.last_name = person.first_name, person.last_name
    entry.email = person.email
    return added
