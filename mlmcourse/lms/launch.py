"""What the hub takes from a checked LTI 1.3 launch: the user name (from the stable `sub`, never
the display name), the course's groups from the roles claim (every launch: a role changed in the
LMS changes here next time), and the record of name, e-mail and sub that passback reads.

The hub's LTI mode (deploy/hub/lti_auth.py) calls these from its post_auth_hook; the id_token
itself is checked by LTI13Authenticator before.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
# LIS role names (the fragment or last path part of the role URI) that make a user staff.
STAFF_ROLES = {"Instructor", "TeachingAssistant", "ContentDeveloper", "Administrator"}
USERS_FILE = "lti-users.json"


def user_name(sub: str, prefix: str = "lti-") -> str:
    """A valid, stable Unix and hub user name from the LMS's `sub`: lower-case letters, digits
    and dashes; a long or unusual sub keeps its meaning through a short hash."""
    if not sub:
        raise ValueError("the launch has no sub claim")
    plain = re.sub(r"[^a-z0-9]+", "-", sub.lower()).strip("-")
    digest = hashlib.sha256(sub.encode()).hexdigest()[:8]
    if plain and len(plain) <= 20 and plain == sub:
        return f"{prefix}{plain}"
    return f"{prefix}{plain[:12].strip('-')}-{digest}" if plain else f"{prefix}{digest}"


def role_names(claims: dict) -> set[str]:
    """'Instructor' for http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor, also for
    the institution roles (.../institution/person#Instructor) and the short LTI 1.1 names."""
    roles = claims.get(ROLES_CLAIM)
    if not isinstance(roles, list):  # malformed: no role at all, so a student
        return set()
    return {re.split(r"[#/]", role)[-1] for role in roles if isinstance(role, str)}


def is_staff(claims: dict) -> bool:
    """Staff only for a membership role of the course's staff; a Learner, a Mentor or no role
    at all is a student (a launch never gets the formgrader by default)."""
    names = role_names(claims)
    return bool(names & STAFF_ROLES) and "Learner" not in names


def course_groups(claims: dict, course_id: str) -> list[str]:
    """The hub groups of this launch: exactly one of <course>-staff or <course>-students."""
    return [f"{course_id}-staff" if is_staff(claims) else f"{course_id}-students"]


def record_launch(folder: Path, name: str, claims: dict) -> None:
    """user name -> sub, name, e-mail, in lti-users.json (mode 0600: e-mail addresses),
    replaced whole so a reader never sees half a file."""
    path = folder / USERS_FILE
    users = json.loads(path.read_text()) if path.exists() else {}
    users[name] = {"sub": claims["sub"], "name": claims.get("name", ""),
                   "email": claims.get("email", ""), "staff": is_staff(claims)}
    partial = path.with_suffix(".json.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(users, handle, indent=2, sort_keys=True)
    os.replace(partial, path)
